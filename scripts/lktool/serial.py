# SPDX-License-Identifier: GPL-2.0
"""Read a serial log that boot() wrote: markers, test output, kernel reports."""

from __future__ import annotations

from typing import Any

import collections
import re

from . import common


# A printk line (printk.time=1 is on the command line), anywhere in a
# serial line: user-space output may precede it.
KLINE_RE = re.compile(r"\[\s*\d+\.\d{6}\] (.*)$")

# Kernel reports that fail a run: (kind, regex on the message).
ISSUE_PATTERNS = [
    ("KASAN", re.compile(r"BUG: KASAN: ")),
    ("UBSAN", re.compile(r"UBSAN: ")),
    # arm's and arm64's die(): "Internal error: Oops: 817 [#1] SMP ARM",
    # or "Internal error: Oops - BUG: 0 [#1]" after "kernel BUG at"
    ("Oops", re.compile(r"^Internal error: ")),
    ("BUG", re.compile(r"(^|\s)BUG: |kernel BUG at ")),
    # x86: "Oops: 0002 [#1]" or "general protection fault: 0000 [#1]"
    ("Oops", re.compile(r"^Oops: |: [0-9a-f]{4} \[#\d+\]")),
    ("panic", re.compile(r"Kernel panic - not syncing")),
    ("kmemleak", re.compile(r"kmemleak: \d+ new suspected memory leaks")),
    (
        "kmemleak",
        re.compile(
            r"kmemleak: (Early log buffer exceeded|"
            r"Kernel memory leak detector disabled)"
        ),
    ),
    ("hung task", re.compile(r"INFO: task .* blocked for more than")),
    (
        "RCU stall",
        re.compile(
            r"rcu: INFO: .*detected stall|" r"INFO: rcu_\w+ (self-)?detected stall"
        ),
    ),
    ("WARNING", re.compile(r"^WARNING: ")),
]

# A WARNING counts when a call trace follows within this many lines.
WARN_TRACE_LINES = 60

# The first line of a call trace: x86 "Call Trace:", arm64 "Call trace:",
# arm's unwinder "[<c010f4a4>] (unwind_backtrace) from [<c010bb7c>] ..."
# (no heading) or its frame-pointer walk "Backtrace:".
WARN_TRACE_RE = re.compile(
    r"Call [Tt]race:|^Backtrace:|" r"^\[<[0-9a-f]{8}>\] \(.*\) from \[<"
)

# An Oops line this close to a BUG/KASAN line is the same report.
SAME_REPORT_LINES = 6
TAP_RE = re.compile(
    r"^(not ok|ok)(?=\s|$)\s*(\d+)?\s*(?:- )?([^#]*?)\s*" r"(?:#\s*(\w+)\b\s*(.*))?$"
)
Issue = collections.namedtuple("Issue", "kind text line during")
TapResult = collections.namedtuple("TapResult", "ok number description directive line")


class TestRun:
    def __init__(self, name: str, line: int) -> None:
        self.name = name
        self.line = line  # log line of the begin marker
        self.end: dict[str, Any] | None = None  # the end marker's fields, or None
        self.output: list[tuple[int, str]] = []  # (line number, text)


class Report:
    """What a serial log says; judge() turns it into results."""

    def __init__(self) -> None:
        self.guest = "?"
        self.token: str | None = None
        self.log_path: str | None = None
        self.expected: list[str] = []
        self.host: dict[str, str] = {}  # keys of the host's 'end' line
        self.qemu_stderr: list[str] = []
        self.limit: int | None = None
        self.start: dict[str, Any] | None = None  # fields of init's start marker
        self.tests: collections.OrderedDict[str, TestRun] = collections.OrderedDict()
        self.done: dict[str, Any] | None = None
        self.issues: list[Issue] = []
        self.kmemleak: dict[
            str, tuple[int | None, list[str]]
        ] = {}  # section -> (leaks or None, [lines])
        self.anomalies: list[str] = []  # out-of-order markers
        self.last_kernel_line = ""
        self.lines: list[str] = []  # the log's lines as parsed (no \r)


def fields(text: str) -> dict[str, Any]:
    """'a=1 b=2 flag' -> {'a': '1', 'b': '2', 'flag': ''}."""
    out = {}
    for w in text.split():
        k, _, v = w.partition("=")
        out[k] = v
    return out


KERNEL_RECORD_RE = re.compile(r"\[ *\d+\.\d{6}\] ")


def unsplice(lines: list[str]) -> list[str]:
    """Take the kernel console records out of user-space lines they cut.

    The kernel writes a console record whole, but it can land between any
    two bytes of what user space writes to the same serial port, e.g.
    "lk-qemu T begin 64/t[    3.047474]     1..5" and then "" (the begin
    marker's newline).  Such a record goes on a line of its own, and the
    user-space text before it is joined to the line that follows it.  A
    test's own output that holds "[ 1.000000] " in mid-line is rearranged
    the same way, which changes no marker.
    """
    out = []
    carry = ""
    for line in lines:
        if carry and line.startswith("# lk-qemu-host "):
            out.append(carry)
        elif carry:
            line = carry + line
        carry = ""
        m = KERNEL_RECORD_RE.search(line)
        if m and m.start() > 0 and not line.startswith("# lk-qemu-host "):
            out.append(line[m.start() :])
            carry = line[: m.start()]
        else:
            out.append(line)
    if carry:
        out.append(carry)
    return out


def parse_log(text: str, log_path: str | None = None) -> Report:
    """Parse a log written by boot(); return a Report."""
    r = Report()
    r.log_path = log_path
    lines = text.replace("\r", "").split("\n")
    first = lines[0] if lines else ""
    lines = lines[:1] + unsplice(lines[1:])
    r.lines = lines
    m = re.match(r"^# lk-qemu-host ([0-9a-f]{16,}) ", first)
    if not m:
        raise common.Failure(
            "%s is not a log written by lk_qemu.py boot (no "
            "'# lk-qemu-host' header)" % (log_path or "log")
        )
    tok = m.group(1)
    r.token = tok
    host_prefix = "# lk-qemu-host %s " % tok
    marker = "lk-qemu %s " % tok
    current = None  # TestRun in progress
    section = None  # kmemleak section in progress
    pending_warn = None  # (issue, line) waiting for a call trace
    for n, line in enumerate(lines, 1):
        if line.startswith(host_prefix):
            body = line[len(host_prefix) :]
            key, _, val = body.partition("=")
            if body.startswith("end "):
                r.host = fields(body[4:])
            elif key == "guest":
                r.guest = val.split()[0]
            elif key == "tests":
                r.expected = [x for x in val.split(",") if x]
            elif key == "limit":
                r.limit = int(val)
            elif key == "qemu-stderr":
                r.qemu_stderr.append(val)
            continue
        i = line.find(marker)
        if i >= 0:
            words = line[i + len(marker) :].split(" ", 2)
            what = words[0]
            arg = words[1] if len(words) > 1 else ""
            rest = words[2] if len(words) > 2 else ""
            if what == "start" and r.start is None:
                r.start = fields(line[i + len(marker) + 6 :])
                r.start["line"] = n
            elif what == "begin" and r.start and not r.done:
                if current is not None:
                    r.anomalies.append(
                        "line %d: begin %s while %s runs" % (n, arg, current.name)
                    )
                elif arg in r.tests:
                    r.anomalies.append("line %d: %s began twice" % (n, arg))
                else:
                    current = TestRun(arg, n)
                    r.tests[arg] = current
            elif what == "end" and current is not None and arg == current.name:
                current.end = fields(rest)
                current.end["line"] = n
                current = None
            elif what in ("kmemleak", "kmemleak-baseline") and current is None:
                if arg == "begin":
                    section = what
                    r.kmemleak[what] = (None, [])
                elif arg == "end" and section == what:
                    leaks = fields(rest).get("leaks")
                    r.kmemleak[what] = (
                        int(leaks) if leaks and leaks.isdigit() else None,
                        r.kmemleak[what][1],
                    )
                    section = None
            elif what == "done" and r.start and current is None:
                r.done = fields(arg + " " + rest)
                r.done["line"] = n
            else:
                r.anomalies.append("line %d: unexpected marker %r" % (n, line[i:]))
            continue
        if current is not None:
            current.output.append((n, line))
        if section is not None:
            r.kmemleak[section][1].append(line)
        km = KLINE_RE.search(line)
        if not km:
            continue
        msg = km.group(1).strip()
        r.last_kernel_line = msg
        if pending_warn and WARN_TRACE_RE.search(msg):
            r.issues.append(pending_warn[0])
            pending_warn = None
        elif pending_warn and n - pending_warn[1] > WARN_TRACE_LINES:
            pending_warn = None
        for kind, rx in ISSUE_PATTERNS:
            if not rx.search(msg):
                continue
            during = (
                current.name
                if current
                else (
                    "kmemleak scan"
                    if section
                    else (
                        "boot"
                        if r.start is None
                        else ("shutdown" if r.done else "init")
                    )
                )
            )
            if kind == "kmemleak" and section is not None:
                break  # the section's own report decides
            issue = Issue(kind, msg, n, during)
            if kind == "WARNING":
                pending_warn = (issue, n)
                break
            prev = r.issues[-1] if r.issues else None
            if (
                kind == "Oops"
                and prev
                and prev.kind in ("BUG", "KASAN")
                and n - prev.line <= SAME_REPORT_LINES
            ):
                break
            r.issues.append(issue)
            break
    return r


def parse_log_file(path: str) -> Report:
    with open(path, "rb") as f:
        return parse_log(f.read().decode("utf-8", "replace"), path)


def parse_tap(
    output: list[tuple[int, str]]
) -> tuple[list[TapResult], tuple[int, str] | None]:
    """TAP result lines of a test's output: [TapResult]; and Bail out!."""
    results, bail = [], None
    for n, line in output:
        if line.startswith("Bail out!"):
            bail = (n, line)
            continue
        m = TAP_RE.match(line)
        if not m:
            continue
        directive = (m.group(4) or "").lower()
        results.append(
            TapResult(
                m.group(1) == "ok",
                m.group(2),
                (m.group(3) or "").strip() or (m.group(5) or "").strip(),
                directive,
                n,
            )
        )
    return results, bail
