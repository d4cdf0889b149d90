# SPDX-License-Identifier: GPL-2.0
"""Debian's trinity and what it needs in a guest."""

from __future__ import annotations

import collections
import functools
import os
import re
import shutil
import tempfile

from . import common


# System calls are chosen by trinity's names (-c NAME, or -x NAME to
# leave one out), and trinity 2023.01 has three limits that decide how:
#  - a name selects only the first entry of that name in a table, and the
#    _time64 entries share their names (and entries) with the old calls:
#    "-c ppoll" calls 309 but never the 32-bit ppoll_time64;
#  - its i386 table lacks the unused numbers 387-392 (and 415), so from
#    semget on its entries sit 6 (then 7) numbers below the kernel's: its
#    index 408 "ppoll" is the kernel's timer_gettime64 (408);
#  - io_pgetevents is named "io_pgetevents," (a typo upstream fixed later),
#    which no -c NAME can match.
# So two phases cover the time calls: "time" selects them by name (-c,
# which also reaches pselect6, a call trinity avoids unless named), and
# "time64" runs trinity's default selection less every name but those of
# TIME_CALLS and those its 32-bit table puts at the numbers 403-423
# (TIME64_NUMBERS): every kernel number 403-423 is called except 407
# (clock_nanosleep_time64: trinity's entry there is pselect6, which it
# avoids), with arguments shaped for a neighbouring call, and
# io_pgetevents (32- and 64-bit) too.
TIME_CALLS = (
    "ppoll",
    "pselect6",
    "epoll_pwait",
    "rt_sigtimedwait",
    "futex",
    "recvmmsg",
    "set_robust_list",
    "get_robust_list",
    "socketcall",
)
TIME64_NUMBERS = range(403, 424)
FILE_CALLS = (
    "open",
    "openat",
    "close",
    "read",
    "write",
    "newfstat",
    "getdents64",
    "lseek",
)
BINDERFS_CALLS = FILE_CALLS + (
    "ioctl",
    "mmap",
    "munmap",
    "mremap",
    "poll",
    "ppoll",
    "epoll_pwait",
    "unlink",
    "unlinkat",
    "umount",
)
CPUSET_CALLS = FILE_CALLS + (
    "pwrite64",
    "mkdir",
    "mkdirat",
    "rmdir",
    "sched_setaffinity",
    "sched_getaffinity",
    "set_mempolicy",
    "migrate_pages",
)

# flags: lk-fuzz's options; args: trinity's options that choose the calls
Phase = collections.namedtuple("Phase", "name flags args")

# (name, lk-fuzz options, calls: ("only", names) or ("all-but", names kept))
GROUPS = (
    ("time", (), ("only", TIME_CALLS)),
    ("time64", (), ("all-but", TIME_CALLS + ("io_pgetevents,",))),
    ("binderfs", ("--binderfs",), ("only", BINDERFS_CALLS)),
    ("cpuset", ("--cpuset",), ("only", CPUSET_CALLS)),
)
APT_SOURCE = (
    "deb [arch=i386 signed-by=/usr/share/keyrings/"
    "debian-archive-keyring.gpg] http://deb.debian.org/debian "
    "bookworm main\n"
)


def trinity_tables(listing: str) -> dict[str, dict[int, str]]:
    """{bits: {number: name}} from `trinity -L` output."""
    tables: dict[str, dict[int, str]] = {"32": {}, "64": {}}
    for m in re.finditer(r"^entrypoint (\d+) (\S+) : \[(32|64)-bit\]", listing, re.M):
        tables[m.group(3)][int(m.group(1))] = m.group(2)
    return tables


def phases(tables: dict[str, dict[int, str]], bits: str) -> list[Phase]:
    """Every phase, in run order: the root ones, then the user ones.

    tables: trinity_tables(); bits: the tables trinity uses in the guest
    ("32", or "32 64" on x86_64).
    """
    names: set[str] = set()
    for b in bits.split():
        names.update(tables[b].values())
    keep32 = set(tables["32"][n] for n in TIME64_NUMBERS if n in tables["32"])
    out = []
    for mode in ("root", "user"):
        for name, flags, (how, calls) in GROUPS:
            f = flags + (("--user",) if mode == "user" else ())
            if how == "only":
                args = [a for c in calls for a in ("-c", c)]
            else:
                kept = set(calls) | keep32
                # "-x rseq," would read as rseq with a bad bit width
                args = [
                    a for c in sorted(names - kept) if "," not in c for a in ("-x", c)
                ]
            if "--binderfs" in flags:
                args += ["-V", "/tmp/lkfuzz/binderfs"]
            if "--cpuset" in flags:
                args += ["-V", "/sys/fs/cgroup/lkfuzz-%s" % mode]
            if "-V" not in args:
                args += ["-V", "/tmp/lkfuzz/files"]
            out.append(Phase("%s-%s" % (mode, name), f, tuple(args)))
    return out


def run(cmd: list[str], cwd: str | None = None) -> str:
    """common.run() of cmd, its output; its failure names the exit status
    and ends with the last of what it printed."""
    r = common.run(cmd, cwd=cwd, capture=True, check=False)
    if r.returncode:
        raise common.Failure(
            "%s failed (exit %d): %s"
            % (" ".join(cmd), r.returncode, (r.stdout + r.stderr).strip()[-400:])
        )
    return r.stdout


def trinity_version() -> str:
    try:
        return run(["dpkg-query", "-W", "-f", "${Version}", "trinity"])
    except (common.Failure, OSError):
        raise common.Failure(
            "trinity is not installed: run 'scripts/lk deps' "
            "(scripts/packages.txt lists it)"
        )


def trinity_i386(cache: str) -> str:
    """The i386 build of the installed trinity version, unpacked in cache."""
    version = trinity_version()
    root = os.path.join(cache, "trinity-i386-" + version)
    binary = os.path.join(root, "usr", "bin", "trinity")
    if os.path.exists(binary):
        return binary
    apt = os.path.join(cache, "apt-i386")
    for d in ("state/lists/partial", "cache/archives/partial", "debs"):
        os.makedirs(os.path.join(apt, d), exist_ok=True)
    with open(os.path.join(apt, "sources.list"), "w") as f:
        f.write(APT_SOURCE)
    opts = [
        "-q",
        "-o",
        "Dir::Etc::SourceList=" + os.path.join(apt, "sources.list"),
        "-o",
        "Dir::Etc::SourceParts=" + os.path.join(apt, "none"),
        "-o",
        "Dir::State=" + os.path.join(apt, "state"),
        "-o",
        "Dir::Cache=" + os.path.join(apt, "cache"),
        "-o",
        "APT::Architectures::=i386",
        "-o",
        "Debug::NoLocking=1",
    ]
    if os.geteuid() == 0:
        opts += ["-o", "APT::Sandbox::User=root"]
    debs = os.path.join(apt, "debs")
    common.log("fuzz: downloading trinity:i386 %s (apt, signed Debian index)" % version)
    run(["apt-get"] + opts + ["update"])
    run(["apt-get"] + opts + ["download", "trinity:i386=" + version], cwd=debs)
    deb = [
        f
        for f in os.listdir(debs)
        if f.startswith("trinity_")
        and f.endswith("_i386.deb")
        and version.split(":")[-1] in f
    ]
    if not deb:
        raise common.Failure("apt-get download left no trinity .deb in " + debs)
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    run(["dpkg-deb", "-x", os.path.join(debs, deb[0]), tmp])
    os.replace(tmp, root)
    return binary


@functools.lru_cache(maxsize=None)
def trinity_listing() -> str:
    """`trinity -L` of the host's trinity: its system call tables.

    The i386 build of the same version has the same 32-bit table.  Run in
    a directory of its own: trinity leaves trinity-child*.log files in
    its working directory even when it only lists.  Once per run: every
    guest's phases come from the same tables.
    """
    with tempfile.TemporaryDirectory(prefix="lk-fuzz-") as d:
        return run([shutil.which("trinity") or "/usr/bin/trinity", "-L"], cwd=d)


def elf_needs(path: str) -> tuple[str | None, list[str]]:
    """(program interpreter or None, [NEEDED sonames]) of an ELF file."""
    out = run(["readelf", "-d", "-l", "-W", path])
    interp = re.search(r"\[Requesting program interpreter: ([^\]]+)\]", out)
    return (
        interp.group(1) if interp else None,
        re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out),
    )


# Where the guests' dynamic libraries come from, per user-space ABI:
# (host directories searched, guest directory they go to or None for the
# same path as on the host).
LIB_DIRS = {
    "64": (("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"), None),
    "32": (("/usr/i686-linux-gnu/lib",), "/lib"),
}


def runtime_files(binary: str, abi: str) -> list[tuple[str, str]]:
    """[(guest path, host path)]: the program's interpreter and libraries."""
    dirs, dest = LIB_DIRS[abi]
    files, todo, seen = [], [binary], set()
    while todo:
        interp, needed = elf_needs(todo.pop())
        names = ([interp] if interp else []) + needed
        for n in names:
            base = os.path.basename(n)
            if base in seen:
                continue
            seen.add(base)
            host = next(
                (
                    os.path.join(d, base)
                    for d in dirs
                    if os.path.exists(os.path.join(d, base))
                ),
                None,
            )
            if host is None:
                raise common.Failure(
                    "%s needs %s, which is not in %s" % (binary, base, " ".join(dirs))
                )
            guest = (
                n
                if n.startswith("/") and dest is None
                else os.path.join(dest or os.path.dirname(host), base)
            )
            files.append((guest, os.path.realpath(host)))
            if n != interp:
                todo.append(host)
    # the interpreter's canonical path is what the binary asks for
    return files


def trinity_for(abi: str, cache: str) -> tuple[str, list[tuple[str, str]]]:
    """(host path of trinity, [(guest path, host path)] it needs)."""
    if abi == "64":
        binary = shutil.which("trinity") or "/usr/bin/trinity"
        trinity_version()
    elif abi == "32":
        binary = trinity_i386(cache)
    else:
        raise common.Failure(
            "no trinity for the %s user-space ABI (x86 guests only)" % abi
        )
    return binary, runtime_files(binary, abi)
