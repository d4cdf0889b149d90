# SPDX-License-Identifier: GPL-2.0
"""Read a built system call table back from its object (SPEC Part 11).

A target's .conf names the tables the series wires (syscall_tables); after
its build, `lk build` reads each table's relocations with readelf (the
host's: GNU readelf reads every ELF machine) and compares the entries
393-423 with what SPEC Parts 7 and 11 say they must be.  The expectation
comes from the spec's rules, not from the series' own tables:

- 403-423 (415 unused): the 64-bit entry (sys_clock_gettime, ...) in a
  native 32-bit table and in a compat one, but compat_sys_*_time64 for
  pselect6, ppoll, io_pgetevents, recvmmsg and rt_sigtimedwait in a
  compat table;
- 393-402, the split SysV IPC calls, on the tables whose architecture
  had only the ipc() multiplexer (x86-32, m68k, mips o32, powerpc, s390,
  sh, sparc; option `ipc`): sys_* natively, compat_sys_* in compat for
  semctl, shmctl, shmat, msgsnd, msgrcv and msgctl;
- every old number takes the _time32 entry: none of the twenty 403-423
  entries may appear at any other number of the table;
- the 5.1 names of time, stime, utime, utimes and futimesat: no entry is
  sys_time, compat_sys_utimes and the like any more.

A table is OBJECT:SYMBOL:ABI[:OPTION...], ABI `native` or `compat`, the
options `base=N` (the number of entry 0: 4000 for mips o32, 6000 for
n32), `size=N` (bytes of an entry; by default those of the ELF class),
`stride=N` and `at=N` (an entry every N bytes, the table's own N bytes
into it: ppc64 interleaves its native and compat entries), `prefix=P`
(the entry points' wrapper prefix: __ia32_, __arm64_, or . for ppc64's
function entry symbols), `wrap=P` (a compat entry that is the 64-bit one
may be its wrapper P+sys_*: s390's compat_wrapper.c names the wrapper
that zero- or sign-extends a 31-bit task's arguments compat_sys_*) and
`ipc`.
"""

from __future__ import annotations

import os
import re
from typing import Any, NamedTuple

from . import common

# (native entry, compat entry or None for the same) of SPEC Part 7's table
TIME64 = {
    403: ("sys_clock_gettime", None),
    404: ("sys_clock_settime", None),
    405: ("sys_clock_adjtime", None),
    406: ("sys_clock_getres", None),
    407: ("sys_clock_nanosleep", None),
    408: ("sys_timer_gettime", None),
    409: ("sys_timer_settime", None),
    410: ("sys_timerfd_gettime", None),
    411: ("sys_timerfd_settime", None),
    412: ("sys_utimensat", None),
    413: ("sys_pselect6", "compat_sys_pselect6_time64"),
    414: ("sys_ppoll", "compat_sys_ppoll_time64"),
    416: ("sys_io_pgetevents", "compat_sys_io_pgetevents_time64"),
    417: ("sys_recvmmsg", "compat_sys_recvmmsg_time64"),
    418: ("sys_mq_timedsend", None),
    419: ("sys_mq_timedreceive", None),
    420: ("sys_semtimedop", None),
    421: ("sys_rt_sigtimedwait", "compat_sys_rt_sigtimedwait_time64"),
    422: ("sys_futex", None),
    423: ("sys_sched_rr_get_interval", None),
}
UNUSED = 415
IPC = {
    393: ("sys_semget", None),
    394: ("sys_semctl", "compat_sys_semctl"),
    395: ("sys_shmget", None),
    396: ("sys_shmctl", "compat_sys_shmctl"),
    397: ("sys_shmat", "compat_sys_shmat"),
    398: ("sys_shmdt", None),
    399: ("sys_msgget", None),
    400: ("sys_msgsnd", "compat_sys_msgsnd"),
    401: ("sys_msgrcv", "compat_sys_msgrcv"),
    402: ("sys_msgctl", "compat_sys_msgctl"),
}
# the names 5.1 gave up for sys_time32, sys_stime32, sys_utime32,
# sys_utimes_time32 and sys_futimesat_time32 (d33c577cccd0)
RENAMED = tuple(
    p + c
    for c in ("time", "stime", "utime", "utimes", "futimesat")
    for p in ("sys_", "compat_sys_")
)


class Table(NamedTuple):
    obj: str
    symbol: str
    abi: str
    base: int = 0
    size: int = 0
    stride: int = 0
    at: int = 0
    prefix: str = ""
    wrap: str = ""
    ipc: bool = False

    def label(self) -> str:
        return "%s %s" % (self.obj, self.symbol)


def parse_tables(value: str) -> list[Table]:
    """The tables of a target's syscall_tables value."""
    tables = []
    for item in value.split():
        parts = item.split(":")
        if len(parts) < 3 or parts[2] not in ("native", "compat"):
            raise common.Failure(
                "syscall_tables: %r is not OBJECT:SYMBOL:native|compat[:OPTION...]"
                % item
            )
        kw: dict[str, Any] = {}
        for opt in parts[3:]:
            key, eq, val = opt.partition("=")
            if opt == "ipc":
                kw["ipc"] = True
            elif eq and key in ("prefix", "wrap"):
                kw[key] = val
            elif eq and key in ("base", "size", "stride", "at") and val.isdigit():
                kw[key] = int(val)
            else:
                raise common.Failure(
                    "syscall_tables: unknown option %r in %r" % (opt, item)
                )
        tables.append(Table(parts[0], parts[1], parts[2], **kw))
    return tables


def expected(t: Table) -> dict[int, tuple[str, ...]]:
    """{index in the table: the entry points it may name} of 393-423 on
    table t: one, or with `wrap` also the wrapper of a 64-bit entry."""
    want: dict[int, tuple[str, ...]] = {}
    rows = dict(TIME64)
    if t.ipc:
        rows.update(IPC)
    for nr, (native, compat) in sorted(rows.items()):
        if t.abi == "compat" and compat:
            want[nr] = (t.prefix + compat,)
        elif t.abi == "compat" and t.wrap:
            want[nr] = (t.prefix + native, t.prefix + t.wrap + native)
        else:
            want[nr] = (t.prefix + native,)
    return want


class Elf(NamedTuple):
    elf64: bool
    sections: dict[int, tuple[str, int]]  # index: (name, size)
    symbols: list[tuple[str, int, int, int]]  # (name, value, size, section index)
    relocs: dict[str, dict[int, str]]  # section: {offset: symbol[+addend]}


SECTION_RE = re.compile(
    r"^\s*\[\s*(\d+)\]\s+(\S*)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)"
)
RELSEC_RE = re.compile(r"^Relocation section '\.rela?([^']*)'")
RELOC_RE = re.compile(
    r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+(R_\S+)"
    r"(?:\s+[0-9a-f]+\s+(\S+)(?:\s*([+-])\s*([0-9a-f]+))?)?"
)
SYMBOL_RE = re.compile(
    r"^\s*\d+:\s+([0-9a-f]+)\s+(\d+|0x[0-9a-f]+)\s+\S+\s+\S+\s+\S+\s+(\S+)\s+(\S+)\s*$"
)


def parse_readelf(text: str) -> Elf:
    """The sections, symbols and relocations of `readelf -W -h -S -r -s`."""
    elf64 = False
    sections: dict[int, tuple[str, int]] = {}
    symbols = []
    relocs: dict[str, dict[int, str]] = {}
    part, current = "", ""
    for line in text.splitlines():
        if re.match(r"^\s*Class:\s+ELF64", line):
            elf64 = True
        if line.startswith("Section Headers:"):
            part = "sections"
            continue
        m = RELSEC_RE.match(line)
        if m:
            part, current = "relocs", m.group(1)
            relocs.setdefault(current, {})
            continue
        if line.startswith("Symbol table "):
            part = "symbols"
            continue
        if line.startswith("There are no relocations") or not line.strip():
            if part == "sections":
                part = ""
            continue
        if part == "sections":
            m = SECTION_RE.match(line)
            if m:
                sections[int(m.group(1))] = (m.group(2), int(m.group(3), 16))
        elif part == "relocs":
            m = RELOC_RE.match(line)
            if m and m.group(3):
                name = m.group(3)
                if m.group(5) and int(m.group(5), 16):
                    name += "%s0x%x" % (m.group(4), int(m.group(5), 16))
                relocs[current][int(m.group(1), 16)] = name
        elif part == "symbols":
            m = SYMBOL_RE.match(line)
            if m and m.group(3).isdigit():
                size = m.group(2)
                symbols.append(
                    (
                        m.group(4),
                        int(m.group(1), 16),
                        int(size, 16) if size.startswith("0x") else int(size),
                        int(m.group(3)),
                    )
                )
    return Elf(elf64, sections, symbols, relocs)


def read_table(t: Table, elf: Elf) -> tuple[dict[int, str], int]:
    """({index: entry point} of every entry of table t, index bound) or a
    Failure.  The table ends with its symbol's size, else at the next
    symbol of its section or at the section's end."""
    found = [s for s in elf.symbols if s[0] == t.symbol]
    if not found:
        raise common.Failure("no symbol %s" % t.symbol)
    _, start, size, shndx = found[0]
    secname, secsize = elf.sections.get(shndx, ("", 0))
    if not size:
        later = [s[1] for s in elf.symbols if s[3] == shndx and s[1] > start]
        size = (min(later) if later else secsize) - start
    stride = t.stride or t.size or (8 if elf.elf64 else 4)
    relocs = elf.relocs.get(secname, {})
    entries = {}
    for off, name in relocs.items():
        rel = off - start - t.at
        if 0 <= off - start < size and rel % stride == 0:
            entries[rel // stride] = name
    return entries, size // stride


def is_unused(name: str | None) -> bool:
    return name is None or "ni_syscall" in name


def check(t: Table, elf: Elf) -> list[str]:
    """What is wrong with table t in the object elf (empty: nothing)."""
    try:
        entries, bound = read_table(t, elf)
    except common.Failure as e:
        return [str(e)]
    problems = []
    want = expected(t)
    for idx in range(min(want), max(want) + 1):
        nr = t.base + idx
        got = entries.get(idx)
        if idx == UNUSED:
            if not is_unused(got):
                problems.append("%d (unused) is %s" % (nr, got))
            continue
        if idx not in want:
            continue
        if idx >= bound:
            problems.append("%d missing: the table has %d entries" % (nr, bound))
        elif got not in want[idx]:
            problems.append(
                "%d is %s, want %s" % (nr, got or "no entry", " or ".join(want[idx]))
            )
    time64 = {name: i for i in TIME64 for name in want[i]}
    for idx, name in sorted(entries.items()):
        if name in time64 and idx != time64[name]:
            problems.append(
                "%s also at %d (an old number takes the _time32 entry)"
                % (name, t.base + idx)
            )
        bare = name[len(t.prefix) :] if name.startswith(t.prefix) else name
        if bare in RENAMED:
            problems.append("%d is %s (5.1 name: _time32)" % (t.base + idx, name))
    return problems


def readelf(path: str) -> str:
    r = common.run(["readelf", "-W", "-h", "-S", "-r", "-s", path], capture=True)
    return r.stdout


SHOWN = 8  # problems a row names (a shifted table has dozens)


def report(t: common.Target, build_dir: str, results: common.Results) -> None:
    """One PASS/FAIL/SKIP row per table of target t read back from its
    build directory."""
    for table in parse_tables(t.get("syscall_tables", "")):
        row = "syscall table: %s %s" % (t["name"], table.symbol)
        path = os.path.join(build_dir, table.obj)
        if not os.path.exists(path):
            results.skipped(row, "%s not built" % table.obj)
            continue
        try:
            elf = parse_readelf(readelf(path))
        except common.Failure as e:
            results.failed(row, str(e))
            continue
        problems = check(table, elf)
        if problems:
            more = len(problems) - SHOWN
            results.failed(
                row,
                "%s: %s%s"
                % (
                    table.obj,
                    "; ".join(problems[:SHOWN]),
                    "; and %d more" % more if more > 0 else "",
                ),
            )
            continue
        want = expected(table)
        results.passed(
            row,
            "%s: %d-%d as SPEC Part 11 (%s), no 64-bit entry at an old number, "
            "the 5.1 _time32 names"
            % (table.obj, table.base + min(want), table.base + max(want), table.abi),
        )
