#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""lk_fuzz: fuzz what the series adds or changes, in the QEMU guests.

The fuzzer is Debian's trinity, unchanged: the x86_64 package installed
on the host (scripts/packages.txt) in the x86_64 guests, where it also
makes 32-bit calls through the ia32 entry (int 0x80), and the i386 build
of the same version in the i386 guests (downloaded with a private apt
state under $LK_OUT/fuzz/, so the host's dpkg gets no foreign
architecture).  Each guest boots once and runs the phases below one
after the other, each as a manifest entry of the guest /init, through
scripts/qemu/fuzz.c (lk-fuzz), which prepares binderfs and cgroup v2,
starts trinity with the phase's system calls and its seed, stops it on
time, and drives binderfs and the cpuset files beside it (trinity has no
model of them).

Phases (each as root, and as uid 65534 that unshared a user namespace):

  time      ppoll, pselect6, epoll_pwait, rt_sigtimedwait, futex,
            recvmmsg, set/get_robust_list, socketcall (32-bit), by name
  time64    the same less pselect6, plus io_pgetevents and the 32-bit
            numbers 403-423 (the _time64 calls), by leaving every other
            call out (see TIME_CALLS for why)
  binderfs  file calls on the devices of a binderfs mount (trinity's
            victim path), with lk-fuzz's binderfs churn beside it
  cpuset    file calls on a cgroup v2 subtree with the cpuset controller
            on, with lk-fuzz's cpuset churn beside it

Every kernel report (KASAN, UBSAN, lockdep, kmemleak, WARNING, BUG, Oops,
hung task, RCU stall) fails the run, as it does for `lk_qemu.py run`; the
serial log is kept in $LK_OUT/logs/fuzz-<guest>-<seed>-<date-time>.log
(no later run, a replay included, overwrites it).  A phase fails when
trinity did not run for its time, made no call, or the kernel became
tainted.  Results: "PASS: fuzz x86_64/64: root-time - 12345 calls (seed
N) in 60s"; last line "N passed, N failed[, N skipped]".

One seed per run (--seed, or a random one, printed first): phase k gets
trinity seed (seed + k) mod 2^32 and churn seed the same, so a run is
replayed with `scripts/lk fuzz --seed N` and the same guests and minutes.
Trinity's children run concurrently, so a replay repeats the calls and
their arguments, not their interleaving.
"""

import collections
import functools
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import lk_qemu
from lk_qemu import Failure, Results, log

TOP = lk_qemu.TOP
FUZZ_C = os.path.join(TOP, "scripts", "qemu", "fuzz.c")
# The long runs boot these; CI runs a short fixed-seed run on x86_64 and
# i386 (the kernels it builds anyway).
DEFAULT_GUESTS = ("x86_64-debug", "i386-debug")
CI_GUESTS = ("x86_64", "i386")
CI_SEED = 20380119
CI_MINUTES = 1

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
TIME_CALLS = ("ppoll", "pselect6", "epoll_pwait", "rt_sigtimedwait",
              "futex", "recvmmsg", "set_robust_list", "get_robust_list",
              "socketcall")
TIME64_NUMBERS = range(403, 424)
FILE_CALLS = ("open", "openat", "close", "read", "write", "newfstat",
              "getdents64", "lseek")
BINDERFS_CALLS = FILE_CALLS + ("ioctl", "mmap", "munmap", "mremap", "poll",
                               "ppoll", "epoll_pwait", "unlink", "unlinkat",
                               "umount")
CPUSET_CALLS = FILE_CALLS + ("pwrite64", "mkdir", "mkdirat", "rmdir",
                             "sched_setaffinity", "sched_getaffinity",
                             "set_mempolicy", "migrate_pages")

# flags: lk-fuzz's options; args: trinity's options that choose the calls
Phase = collections.namedtuple("Phase", "name flags args")
# (name, lk-fuzz options, calls: ("only", names) or ("all-but", names kept))
GROUPS = (
    ("time", (), ("only", TIME_CALLS)),
    ("time64", (), ("all-but", TIME_CALLS + ("io_pgetevents,",))),
    ("binderfs", ("--binderfs",), ("only", BINDERFS_CALLS)),
    ("cpuset", ("--cpuset",), ("only", CPUSET_CALLS)),
)
# trinity's processes doing calls; few, so that a one-CPU TCG guest keeps up
CHILDREN = 4
# Socket families for trinity's socket cache.  As root, trinity 2023.01
# dies while it builds the cache, of SIGBUS or of a segfault in its own
# protocol tables (seen with seeds 1 and 4), so the root phases use only
# AF_INET (TCP and UDP: enough for recvmmsg); the user phases use every
# family but the root-only ones.
ROOT_DOMAIN = "INET"
NO_DOMAINS = "PACKET,KEY,LLC"
# seconds a phase gets in the guest beyond its fuzzing time: lk-fuzz's
# set-up, trinity's start (its socket cache) and its stop (STOP_WAIT in
# fuzz.c is 30), before /init kills the phase as timed out
PHASE_SLACK = 90
RAN_RE = re.compile(r"Ran (\d+) syscalls\. Successes: (\d+)\s+Failures: "
                    r"(\d+)")
CHURN_RE = re.compile(r"lk-fuzz: (\w+) churn ops=(\d+) errors=(\d+)")
APT_SOURCE = ("deb [arch=i386 signed-by=/usr/share/keyrings/"
              "debian-archive-keyring.gpg] http://deb.debian.org/debian "
              "bookworm main\n")


def trinity_tables(listing):
    """{bits: {number: name}} from `trinity -L` output."""
    tables = {"32": {}, "64": {}}
    for m in re.finditer(r"^entrypoint (\d+) (\S+) : \[(32|64)-bit\]",
                         listing, re.M):
        tables[m.group(3)][int(m.group(1))] = m.group(2)
    return tables


def phases(tables, bits):
    """Every phase, in run order: the root ones, then the user ones.

    tables: trinity_tables(); bits: the tables trinity uses in the guest
    ("32", or "32 64" on x86_64).
    """
    names = set()
    for b in bits.split():
        names.update(tables[b].values())
    keep32 = set(tables["32"][n] for n in TIME64_NUMBERS
                 if n in tables["32"])
    out = []
    for mode in ("root", "user"):
        for name, flags, (how, calls) in GROUPS:
            f = flags + (("--user",) if mode == "user" else ())
            if how == "only":
                args = [a for c in calls for a in ("-c", c)]
            else:
                kept = set(calls) | keep32
                # "-x rseq," would read as rseq with a bad bit width
                args = [a for c in sorted(names - kept) if "," not in c
                        for a in ("-x", c)]
            if "--binderfs" in flags:
                args += ["-V", "/tmp/lkfuzz/binderfs"]
            if "--cpuset" in flags:
                args += ["-V", "/sys/fs/cgroup/lkfuzz-%s" % mode]
            if "-V" not in args:
                args += ["-V", "/tmp/lkfuzz/files"]
            out.append(Phase("%s-%s" % (mode, name), f, tuple(args)))
    return out


def phase_seed(seed, k):
    return (seed + k) % (1 << 32)


def args_file(phase):
    """Where a phase's trinity options go in the guest."""
    return "/lk-qemu/fuzz/%s.args" % phase.name


def manifest_lines(plan, seconds, scale=1):
    """Manifest lines for /init: one per phase.

    plan: [(manifest name, Phase, seed, trinity path in the guest)]
    """
    lines = []
    for name, ph, seed, trinity in plan:
        argv = (["/lk-qemu/bin/lk-fuzz"] + list(ph.flags) +
                ["--seconds", str(seconds), "--seed", str(seed),
                 "--args-file", args_file(ph), "--", trinity, "-q", "-l",
                 "off", "--dangerous", "--clowntown", "-s", str(seed),
                 "-C", str(CHILDREN)] + (
                     ["-P", ROOT_DOMAIN] if "--user" not in ph.flags
                     else ["-E", NO_DOMAINS]))
        lines.append("%d %s %s\n" % ((seconds + PHASE_SLACK) * scale, name,
                                     " ".join(argv)))
    return lines


# --------------------------------------------------------------------------
# trinity and what it needs in the guest

def run(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if r.returncode:
        raise Failure("%s failed (exit %d): %s" % (
            " ".join(cmd), r.returncode, r.stdout.strip()[-400:]))
    return r.stdout


def trinity_version():
    try:
        return run(["dpkg-query", "-W", "-f", "${Version}", "trinity"])
    except (Failure, OSError):
        raise Failure("trinity is not installed: run 'scripts/lk deps' "
                      "(scripts/packages.txt lists it)")


def trinity_i386(cache):
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
    opts = ["-q", "-o", "Dir::Etc::SourceList=" + os.path.join(
        apt, "sources.list"), "-o", "Dir::Etc::SourceParts=" +
        os.path.join(apt, "none"), "-o", "Dir::State=" +
        os.path.join(apt, "state"), "-o", "Dir::Cache=" +
        os.path.join(apt, "cache"), "-o", "APT::Architectures::=i386",
        "-o", "Debug::NoLocking=1"]
    if os.geteuid() == 0:
        opts += ["-o", "APT::Sandbox::User=root"]
    debs = os.path.join(apt, "debs")
    log("fuzz: downloading trinity:i386 %s (apt, signed Debian index)"
        % version)
    run(["apt-get"] + opts + ["update"])
    run(["apt-get"] + opts + ["download", "trinity:i386=" + version],
        cwd=debs)
    deb = [f for f in os.listdir(debs) if f.startswith("trinity_") and
           f.endswith("_i386.deb") and version.split(":")[-1] in f]
    if not deb:
        raise Failure("apt-get download left no trinity .deb in " + debs)
    tmp = root + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    run(["dpkg-deb", "-x", os.path.join(debs, deb[0]), tmp])
    os.replace(tmp, root)
    return binary


@functools.lru_cache(maxsize=None)
def trinity_listing():
    """`trinity -L` of the host's trinity: its system call tables.

    The i386 build of the same version has the same 32-bit table.  Run in
    a directory of its own: trinity leaves trinity-child*.log files in
    its working directory even when it only lists.  Once per run: every
    guest's phases come from the same tables.
    """
    with tempfile.TemporaryDirectory(prefix="lk-fuzz-") as d:
        return run([shutil.which("trinity") or "/usr/bin/trinity", "-L"],
                   cwd=d)


def elf_needs(path):
    """(program interpreter or None, [NEEDED sonames]) of an ELF file."""
    out = run(["readelf", "-d", "-l", "-W", path])
    interp = re.search(r"\[Requesting program interpreter: ([^\]]+)\]", out)
    return (interp.group(1) if interp else None,
            re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out))


# Where the guests' dynamic libraries come from, per user-space ABI:
# (host directories searched, guest directory they go to or None for the
# same path as on the host).
LIB_DIRS = {
    "64": (("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"), None),
    "32": (("/usr/i686-linux-gnu/lib",), "/lib"),
}


def runtime_files(binary, abi):
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
            host = next((os.path.join(d, base) for d in dirs
                         if os.path.exists(os.path.join(d, base))), None)
            if host is None:
                raise Failure("%s needs %s, which is not in %s" % (
                    binary, base, " ".join(dirs)))
            guest = n if n.startswith("/") and dest is None else \
                os.path.join(dest or os.path.dirname(host), base)
            files.append((guest, os.path.realpath(host)))
            if n != interp:
                todo.append(host)
    # the interpreter's canonical path is what the binary asks for
    return files


def trinity_for(abi, cache):
    """(host path of trinity, [(guest path, host path)] it needs)."""
    if abi == "64":
        binary = shutil.which("trinity") or "/usr/bin/trinity"
        trinity_version()
    elif abi == "32":
        binary = trinity_i386(cache)
    else:
        raise Failure("no trinity for the %s user-space ABI (x86 guests "
                      "only)" % abi)
    return binary, runtime_files(binary, abi)


# --------------------------------------------------------------------------
# one guest

def fuzz_initramfs(path, init, driver, trinity, libs, lines, plan):
    c = lk_qemu.base_cpio(init)
    for guest_path, src in ([("lk-qemu/bin/lk-fuzz", driver),
                             ("lk-qemu/bin/trinity", trinity)] + libs):
        with open(src, "rb") as f:
            c.file(guest_path, f.read(), 0o755)
    for _, ph, _, _ in plan:
        c.file(args_file(ph), (" ".join(ph.args) + "\n").encode())
    c.file("lk-qemu/manifest", "".join(lines).encode())
    lk_qemu.write_initramfs(path, c)


KNOWN_REPORTS = os.path.join(TOP, "configs", "known-reports.txt")
Known = collections.namedtuple("Known", "name kind match why")


def read_known(path=KNOWN_REPORTS):
    """The entries of configs/known-reports.txt (see its comment)."""
    entries, cur, key = [], {}, None
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f] + [""]
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                if set(cur) != {"name", "kind", "match", "why"}:
                    raise Failure("%s: entry ending at line %d needs name, "
                                  "kind, match and why" % (path, n))
                try:
                    rx = re.compile(cur["match"])
                except re.error as e:
                    raise Failure("%s: %s: bad match: %s" % (
                        path, cur["name"], e))
                entries.append(Known(cur["name"], cur["kind"], rx,
                                     " ".join(cur["why"].split())))
            cur, key = {}, None
            continue
        m = re.match(r"^(\w+):\s+(.*)$", line)
        if m and not line[0].isspace():
            key = m.group(1)
            cur[key] = m.group(2)
        elif line[0].isspace() and key:
            cur[key] += " " + line.strip()
        else:
            raise Failure("%s:%d: not 'key: value'" % (path, n))
    return entries


def known_report(issue, known):
    """The Known entry an lk_qemu Issue is, or None."""
    return next((k for k in known if k.kind == issue.kind and
                 k.match.search(issue.text)), None)


def judge_phases(r, plan, seconds, known=()):
    """Rows for the phases: lk_qemu's judgement plus trinity's call count.

    Kernel reports that are known v4.20 reports (known: read_known()) are
    SKIP rows of their own instead of failures.
    """
    rows = []
    seen = [(i, known_report(i, known)) for i in r.issues]
    r.issues = [i for i, k in seen if k is None]
    for i, k in seen:
        if k is not None:
            rows.append(("SKIP", "fuzz %s: known v4.20 report" % r.guest,
                         "%s during %s: %s (%s in %s); log at %s:%d" % (
                             i.kind, i.during, i.text[:120], k.name,
                             os.path.relpath(KNOWN_REPORTS, TOP),
                             r.log_path, i.line)))
    seeds = {name: seed for name, _, seed, _ in plan}
    keys = {lk_qemu.result_name("fuzz " + r.guest, n): n for n in seeds}
    for status, name, detail in lk_qemu.judge(r, prefix="fuzz"):
        key = keys.get(name)
        if key is None or key not in r.tests:
            rows.append((status, name, detail))
            continue
        text = "\n".join(t for _, t in r.tests[key].output)
        ran = RAN_RE.findall(text)
        churn = CHURN_RE.findall(text)
        calls = sum(int(x[0]) for x in ran)
        what = "%d calls (seed %d) in %ds" % (calls, seeds[key], seconds)
        if churn:
            what += ", %s" % ", ".join("%s churn %s ops" % (c[0], c[1])
                                       for c in churn)
        if status == "PASS" and not ran:
            rows.append(("FAIL", name, "trinity did not report its calls "
                         "(no 'Ran N syscalls' line); log at %s:%d" % (
                             r.log_path, r.tests[key].line)))
        elif status == "PASS" and not calls:
            rows.append(("FAIL", name, "trinity made no call; log at %s:%d"
                         % (r.log_path, r.tests[key].line)))
        elif status == "PASS":
            rows.append((status, name, what))
        else:
            rows.append((status, name, "%s; %s" % (detail, what)))
    return rows


def fuzz_guest(guest, seed, minutes, tree, scratch, logs, results,
               build_root=None, echo=False, only=None):
    name = guest["name"]
    kernel, bdir = lk_qemu.guest_kernel(guest, build_root)
    if not os.path.isfile(kernel):
        results.failed("fuzz %s: boot" % name, "no kernel at %s; build it "
                       "with 'scripts/lk build --target %s'" % (
                           kernel, guest["target"]))
        return None
    debug, kmemleak = lk_qemu.debug_kernel(bdir)
    scale = guest["debug_scale"] if debug else 1
    abi_name = guest["init_abi"]
    abi = lk_qemu.load_abi(abi_name)
    blog = os.path.join(logs, "fuzz-build-%s.log" % abi_name)
    cache = os.path.join(os.path.dirname(scratch), "fuzz")
    try:
        trinity, libs = trinity_for(abi_name, cache)
        init = lk_qemu.build_init(abi, scratch, blog)
        headers = lk_qemu.export_headers(tree, abi, scratch, blog)
        driver = lk_qemu.compile_program(
            abi, FUZZ_C, os.path.join(scratch, "bin", abi_name, "lk-fuzz"),
            blog, [headers], ["-Wextra"])
    except (Failure, OSError) as e:
        results.failed("fuzz %s: build" % name, str(e))
        return None
    results.passed("fuzz %s: build" % name, "lk-fuzz, trinity %s and %d "
                   "librar%s" % (os.path.relpath(trinity, cache)
                                 if trinity.startswith(cache) else trinity,
                                 len(libs), "y" if len(libs) == 1 else "ies"))
    all_phases = phases(trinity_tables(trinity_listing()),
                        "32" if abi_name == "32" else "32 64")
    # a phase keeps its number (and so its seed) when others are left out
    numbered = [(k, ph) for k, ph in enumerate(all_phases)
                if not only or ph.name in only]
    seconds = max(5, int(minutes * 60 / len(numbered)))
    plan = [(lk_qemu.manifest_name(abi_name, ph.name), ph,
             phase_seed(seed, k), "/lk-qemu/bin/trinity")
            for k, ph in numbered]
    lines = manifest_lines(plan, seconds, scale)
    initramfs = os.path.join(scratch, name, "fuzz.cpio.gz")
    fuzz_initramfs(initramfs, init, driver, trinity, libs, lines, plan)
    names = [(n, (seconds + PHASE_SLACK) * scale) for n, _, _, _ in plan]
    log_path = os.path.join(logs, "fuzz-%s-%d-%s.log" % (
        name, seed, time.strftime("%Y%m%d-%H%M%S")))
    limit = lk_qemu.wall_limit(guest, names, scale, kmemleak)
    log("fuzz %s: seed %d, %d phases of %ds; serial log at %s" % (
        name, seed, len(plan), seconds, log_path))
    t0 = time.monotonic()
    try:
        lk_qemu.boot(guest, kernel, initramfs, log_path,
                     [n for n, _ in names], limit, echo=echo)
    except (Failure, OSError) as e:
        results.failed("fuzz %s: boot" % name, str(e))
        return None
    r = lk_qemu.parse_log_file(log_path)
    for row in judge_phases(r, plan, seconds, read_known()):
        results.add(*row)
    log("fuzz %s: took %.0fs; replay with: scripts/lk fuzz --guest %s "
        "--seed %d --minutes %g%s" % (
            name, time.monotonic() - t0, name, seed, minutes,
            "".join(" --phase " + ph.name for _, ph in numbered)
            if only else ""))
    return r


def main(argv=None):
    p = lk_qemu.tool_parser("lk_fuzz.py", __doc__)
    p.add_argument("--guest", action="append", help="x86 guest of "
                   "configs/qemu/ (repeatable; default: %s)"
                   % " ".join(DEFAULT_GUESTS))
    p.add_argument("--ci", action="store_true", help="the CI run: guests "
                   "%s, seed %d, %g minutes each (options given override)"
                   % (" ".join(CI_GUESTS), CI_SEED, CI_MINUTES))
    p.add_argument("--minutes", type=float, help="fuzzing time per guest, "
                   "shared by its phases (default: 30)")
    p.add_argument("--seed", type=int, help="run seed (default: random, "
                   "printed)")
    p.add_argument("--phase", action="append", choices=[
        "%s-%s" % (m, g[0]) for m in ("root", "user") for g in GROUPS],
        help="run only this phase (repeatable; default: all)")
    p.add_argument("--tree", help="kernel tree (default: $LK_OUT/tree)")
    p.add_argument("--build-root", help="directory of the build "
                   "directories (default: $LK_OUT/build)")
    p.add_argument("--echo", action="store_true",
                   help="copy the serial console to stdout")
    args = p.parse_args(argv)
    out = lk_qemu.out_dir(args.out)
    guests = args.guest or list(CI_GUESTS if args.ci else DEFAULT_GUESTS)
    minutes = args.minutes or (CI_MINUTES if args.ci else 30)
    seed = args.seed if args.seed is not None else (
        CI_SEED if args.ci else secrets.randbelow(1 << 31))
    results = Results()
    try:
        tree = os.path.abspath(args.tree or os.path.join(out, "tree"))
        scratch = os.path.join(out, "qemu")
        logs = os.path.join(out, "logs")
        os.makedirs(scratch, exist_ok=True)
        os.makedirs(logs, exist_ok=True)
        loaded = [lk_qemu.load_guest(g) for g in guests]
        log("fuzz: seed %d" % seed)
        for g in loaded:
            fuzz_guest(g, seed, minutes, tree, scratch, logs, results,
                       args.build_root, args.echo, args.phase)
    except (Failure, OSError) as e:
        print("lk_fuzz: %s" % e, file=sys.stderr)
        return 2
    log(results.summary())
    return 0 if results.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
