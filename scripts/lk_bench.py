#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""lk_bench: what the series costs a system call, counted in instructions.

For each guest (default: x86_64 and i386) the tool boots two kernels, one
after the other, under QEMU's TCG in instruction-counting mode:

  base  <base build root>/<target>/<kernel>, by default
        $LK_OUT/baseline/build/<target>/arch/x86/boot/bzImage: the
        prerequisite-only tree that `scripts/lk baseline` builds
  tip   <tip build root>/<target>/<kernel>, by default $LK_OUT/build/...:
        the tree with the series; booted --repeat times (default 2)

Each boot runs the guest's configs/qemu/<guest>.conf with these changes:
one CPU (smp=1), no NUMA and no network (qemu_args "-nic none"), no
maxcpus= on the command line, and "-icount shift=0,sleep=off -rtc
base=2020-01-01T00:00:00,clock=vm" added to qemu_args.  With shift=0 the
guest's clocks advance one nanosecond per guest instruction, so a time
measured in the guest is a count of instructions, the same however busy
the host is.

Determinism.  icount alone does not make two boots alike: the RTC (host
time, read at boot and seeding the kernel's entropy) and lk_qemu's
random per-boot marker token (on the kernel command line, which seeds
it too) change random values, and through them a few instructions here
and there (key serial numbers, hash and tree layouts), and so the
phase at which the guest later reads its clock.  That moved the TSC
calibration the kernel refines at boot (999.999 or 1000.000 MHz) and
the rounding of nanoseconds, and a median by 0.01 now and then.  So the
RTC starts at a fixed date and runs on the virtual clock, and the token
is fixed (TOKEN; only bench runs, and it prints no markers): two boots
of one kernel then write byte-identical serial logs, and the medians of
the --repeat boots must be identical.  bench.c also starts every batch
right after a timer tick, so that a batch shorter than a tick period
(10^6 instructions at HZ=1000) has no timer interrupt in it, whichever
kernel runs.

The initramfs holds the standard /init (scripts/qemu/init.c) and
scripts/qemu/bench.c built statically for the guest's user-space ABIs
(x86_64 guest: 64, and 32 through IA32 emulation; i386 guest: 32),
against the uapi headers exported from the tip tree, as manifest entries
"<abi>/bench".  bench.c times batches of raw system calls with
clock_gettime(CLOCK_MONOTONIC) (see its comment for the cases and the
method): per case the median, min and max per call over the batches,
less the median of an empty loop (printed as the case "empty", raw).
The 32-bit build also measures the series' _time64 calls (numbers
413-422), as cases "<case>-time64".

Results, one per guest, ABI and case:

  PASS: bench x86_64/64: ppoll - base 1234.0, tip 1200.0, ratio 0.97

ratio is tip / base of the medians (instructions per call; below 1.00
the series made the call cheaper).  A case FAILs when it errors on tip,
when a kernel gave no result for it (the guest did not finish: see the
boot rows), or when it errors on base, except that the _time64 cases are
expected to say ENOSYS on base: then tip's value alone is reported, as a
PASS.  With --repeat N >= 2, a case also FAILs unless its median is the
same in all N tip boots (a reproducibility check; the number of identical
cases is printed).  Every boot is judged as `lk_qemu.py run` judges one
(kernel reports, exit status, power-off): "bench <guest> <kernel>: ..."
rows, one PASS per boot when all is well.

Output: the rows, a text table, then $LK_OUT/bench/bench.csv (columns
guest, abi, case, base, tip, ratio: values per call with two decimals,
an error name such as ENOSYS instead of a value, empty when a kernel gave
no result) and $LK_OUT/bench/bench.png (a bar chart of the ratios, a line
at 1.00; needs python3-matplotlib, else it is a SKIP), and last
"N passed, N failed[, N skipped]".  Exit status 1 on any failure, 2 when
the tool cannot run at all.  Serial logs: $LK_OUT/logs/bench-<guest>-
<kernel>.log (kernel: base, tip1, tip2, ...); build logs
$LK_OUT/logs/bench-build-<abi>.log.

Time limits: each bench program gets twice a generous estimate of its
instructions as guest seconds (at least 20); the host allows 20 wall
seconds per guest second (ICOUNT_RATE), plus the guest's boot_timeout.

Environment: LK_OUT (default ~/.cache/linux-v4.20-work), as for lk_qemu.py.
"""

import argparse
import collections
import csv
import math
import os
import re
import subprocess
import sys
import time

import lk_qemu
from lk_qemu import Failure, Results, log

TOP = lk_qemu.TOP
BENCH_C = os.path.join(TOP, "scripts", "qemu", "bench.c")
DEFAULT_GUESTS = ("x86_64", "i386")
# the user-space ABIs bench.c is written for
X86_ABIS = ("64", "32")
DEFAULT_BATCHES = 11
DEFAULT_CALLS = 200
DEFAULT_REPEAT = 2
# bench.c's limits (MAX_BATCHES, MAX_CALLS)
MAX_BATCHES = 101
MAX_CALLS = 1000000
# A bench program's limit in the guest is in guest seconds, which are 10^9
# guest instructions under -icount shift=0: twice a generous estimate of
# what it runs (CASES cases of batches + 2 batches, each a wait for the
# next tick of at most TICK_INSNS and calls of at most CALL_INSNS), at
# least MIN_TIMEOUT.  A run of the defaults takes under one.
CASES = 25
CALL_INSNS = 10000
TICK_INSNS = 1100000
MIN_TIMEOUT = 20
# Guest instructions per second of wall clock, pessimistic (TCG in icount
# mode on a busy host runs 1-3 * 10^8): the host's limit for a program.
ICOUNT_RATE = 5e7
ICOUNT = ("-icount", "shift=0,sleep=off", "-rtc", "base=2020-01-01T00:00:00,clock=vm")
# What a guest's .conf gets overridden with: one CPU, no NUMA, no network.
OVERRIDES = {"smp": "1", "qemu_args": "-nic none"}
PROGRAM = "bench"
TOKEN = "1b2e4c7f00bec4e5"
TIME64_SUFFIX = "-time64"
# What base is expected to say for the _time64 cases.
BASE_TIME64_ERROR = "ENOSYS"
# Errors of v4.20 that the series fixes, expected on the base kernel:
# (guest, abi, case) -> (error, why).  Such a case is judged on tip alone.
BASE_BUGS = {
    ("x86_64", "32", "io_pgetevents-sigmask"): (
        "EINVAL", "v4.20's compat struct __compat_aio_sigset has a 64-bit "
        "pointer, so a 32-bit caller's sigsetsize is read from the wrong "
        "place; the series' 'aio: fix the layout of struct "
        "__compat_aio_sigset' fixes it"),
}

# "bench <abi> <word> key=value ..."; the values have no spaces.
LINE_RE = re.compile(r"^bench (\S+) (\S+)((?: [A-Za-z_]+=\S*)*)\s*$")
CASE_FIELDS = ("median", "min", "max")

Case = collections.namedtuple("Case", "name median min max n batches error "
                              "fields")


class Run:
    """What one bench program printed (one ABI, one boot)."""

    def __init__(self):
        self.abi = None
        self.config = {}
        self.cases = collections.OrderedDict()
        self.done = False
        self.malformed = []         # (line number, text)


# --------------------------------------------------------------------------
# parse


def parse_bench(output):
    """Parse a bench program's output ([(line number, text)]) into a Run.

    Lines that do not start with "bench " (a kernel's console records)
    are not bench's and are left alone; a "bench " line that is not in
    the format is kept in Run.malformed.
    """
    run = Run()
    for n, line in output:
        line = line.rstrip()
        if not line.startswith("bench "):
            continue
        if line == "bench done":
            run.done = True
            continue
        m = LINE_RE.match(line)
        if not m or run.done:
            run.malformed.append((n, line))
            continue
        abi, word, rest = m.group(1), m.group(2), lk_qemu.fields(m.group(3))
        if run.abi is None:
            run.abi = abi
        elif abi != run.abi:
            run.malformed.append((n, line))
            continue
        if word == "config":
            run.config = rest
            continue
        if "error" in rest:
            run.cases[word] = Case(word, None, None, None, None, None,
                                   rest["error"], rest)
            continue
        try:
            vals = [float(rest[k]) for k in CASE_FIELDS]
            n_calls, batches = int(rest["n"]), int(rest["batches"])
        except (KeyError, ValueError):
            run.malformed.append((n, line))
            continue
        run.cases[word] = Case(word, vals[0], vals[1], vals[2], n_calls,
                               batches, None, rest)
    return run


def runs_of(report, abis):
    """{abi: Run or None} of a parsed boot (lk_qemu.Report)."""
    out = {}
    for abi in abis:
        t = report.tests.get(lk_qemu.manifest_name(abi, PROGRAM)) \
            if report is not None else None
        out[abi] = parse_bench(t.output) if t is not None else None
    return out


# --------------------------------------------------------------------------
# judge

def is_time64(case):
    return case.endswith(TIME64_SUFFIX)


def fmt(v):
    return "%.1f" % v


def ratio_of(base, tip):
    """tip / base, or None when it means nothing."""
    if base is None or tip is None or base <= 0:
        return None
    return tip / base


Row = collections.namedtuple("Row", "guest abi case base tip ratio status "
                             "detail identical")


def value(c):
    """A Case as a CSV/table cell: its median, its error or ''."""
    if c is None:
        return ""
    if c.error:
        return c.error
    return "%.2f" % c.median


def judge_case(guest, abi, case, base, tips, why_missing=None):
    """Judge one case: a Row.

    base: its Case on the base kernel or None (no result); tips: its Case
    in each tip boot, or None.  why_missing: {"base": text, "tip": text}
    (why a kernel gave no results), for the details.
    """
    why = why_missing or {}
    tip = tips[0] if tips else None
    rat = None
    identical = None
    status, detail = "PASS", ""
    if tip is None:
        status, detail = "FAIL", "no result on tip%s" % (
            ": " + why["tip"] if why.get("tip") else "")
    elif tip.error:
        status, detail = "FAIL", "error on tip: %s%s" % (
            tip.error, " (base: %s)" % value(base) if base else "")
    elif base is None:
        status, detail = "FAIL", "tip %s, no result on base%s" % (
            fmt(tip.median), ": " + why["base"] if why.get("base") else "")
    elif base.error:
        bug = BASE_BUGS.get((guest, abi, case))
        if is_time64(case) and base.error == BASE_TIME64_ERROR:
            detail = "tip %s (base: %s, as expected)" % (
                fmt(tip.median), base.error)
        elif bug and base.error == bug[0]:
            detail = "tip %s (base: %s, a v4.20 bug: %s)" % (
                fmt(tip.median), base.error, bug[1])
        else:
            status = "FAIL"
            detail = "tip %s, error on base: %s%s" % (
                fmt(tip.median), base.error, " (expected: %s)" %
                BASE_TIME64_ERROR if is_time64(case) else "")
    else:
        rat = ratio_of(base.median, tip.median)
        detail = "base %s, tip %s, ratio %s" % (
            fmt(base.median), fmt(tip.median),
            "%.2f" % rat if rat is not None else "-")
    if len(tips) > 1 and tip is not None and not tip.error:
        meds = [t.median if t is not None and not t.error else None
                for t in tips]
        identical = all(m == meds[0] for m in meds)
        if identical:
            detail += "; identical in %d tip boots" % len(tips)
        else:
            status = "FAIL"
            detail += "; not reproducible: tip medians %s" % ", ".join(
                "%.2f" % m if m is not None else
                (t.error if t is not None else "none")
                for m, t in zip(meds, tips))
    return Row(guest, abi, case, value(base), value(tip), rat, status,
               detail, identical)


def case_names(runs):
    """The case names of some Runs (or None), in order of appearance."""
    names = []
    for r in runs:
        for name in (r.cases if r is not None else ()):
            if name not in names:
                names.append(name)
    return names


def judge_guest(guest, abis, base_runs, tip_runs, why_missing=None):
    """Rows of a guest: base_runs {abi: Run|None}, tip_runs [same]."""
    rows = []
    for abi in abis:
        b = base_runs.get(abi)
        ts = [t.get(abi) for t in tip_runs]
        for case in case_names(ts + [b]):
            rows.append(judge_case(
                guest, abi, case, b.cases.get(case) if b else None,
                [t.cases.get(case) if t else None for t in ts],
                why_missing))
    return rows


def row_name(r):
    return "bench %s/%s: %s" % (r.guest, r.abi, r.case)


def run_problems(guest, label, runs, calls, batches):
    """Rows for a boot's bench output that is incomplete or odd."""
    rows = []
    for abi, run in sorted(runs.items()):
        name = "bench %s %s/%s: output" % (guest, label, abi)
        if run is None:
            continue
        if not run.done:
            rows.append(("FAIL", name, "no 'bench done' line: the program "
                         "stopped early"))
        for n, line in run.malformed:
            rows.append(("FAIL", name, "malformed line %d: %r" % (
                n, line[:120])))
        for c in run.cases.values():
            if c.error is None and (c.n != calls or c.batches != batches):
                rows.append(("FAIL", name, "%s ran n=%s batches=%s, not "
                             "n=%d batches=%d" % (c.name, c.n, c.batches,
                                                  calls, batches)))
    return rows


# --------------------------------------------------------------------------
# output

CSV_COLUMNS = ("guest", "abi", "case", "base", "tip", "ratio")


def write_csv(path, rows):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow((r.guest, r.abi, r.case, r.base, r.tip,
                        "%.4f" % r.ratio if r.ratio is not None else ""))
    os.replace(tmp, path)


def table(rows):
    """The rows as a text table (lines)."""
    head = ("guest/abi", "case", "base", "tip", "ratio", "status")
    body = [("%s/%s" % (r.guest, r.abi), r.case, r.base or "-",
             r.tip or "-", "%.2f" % r.ratio if r.ratio is not None else "-",
             r.status) for r in rows]
    widths = [max(len(x[i]) for x in [head] + body) for i in range(6)]
    lines = []
    for x in [head] + body:
        lines.append("  ".join(
            x[i].ljust(widths[i]) if i < 2 or i == 5 else
            x[i].rjust(widths[i]) for i in range(6)).rstrip())
    return lines


# Debian's python3-matplotlib is for Debian's interpreter; a tool run by
# another python3 (a pyenv one first on PATH, say) draws with this one.
DEBIAN_PYTHON = "/usr/bin/python3"
ChartRow = collections.namedtuple("ChartRow", "guest abi case ratio")


def read_csv_ratios(path):
    """The rows of write_csv() that have a ratio, for chart()."""
    with open(path, newline="") as f:
        return [ChartRow(r["guest"], r["abi"], r["case"], float(r["ratio"]))
                for r in csv.DictReader(f) if r["ratio"]]


def chart(path, rows, csv_path=None):
    """A bar chart of the ratios; False when matplotlib is missing.

    Without matplotlib in this interpreter, and with csv_path, Debian's
    interpreter draws it from the CSV (--chart).
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        if (csv_path and os.path.exists(DEBIAN_PYTHON) and
                os.path.realpath(sys.executable) !=
                os.path.realpath(DEBIAN_PYTHON)):
            r = subprocess.run([DEBIAN_PYTHON, os.path.abspath(__file__),
                                "--chart", csv_path, path],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            return r.returncode == 0
        return False
    bars = [r for r in rows if r.ratio is not None]
    groups = []
    for r in bars:
        g = "%s/%s" % (r.guest, r.abi)
        if g not in groups:
            groups.append(g)
    colors = ["C%d" % (groups.index("%s/%s" % (r.guest, r.abi)) % 10)
              for r in bars]
    fig, ax = plt.subplots(figsize=(max(6, 0.32 * len(bars) + 2), 5.5))
    ax.bar(range(len(bars)), [r.ratio for r in bars], color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels(["%s/%s %s" % (r.guest, r.abi, r.case) for r in bars],
                       rotation=90, fontsize=7)
    ax.set_ylabel("tip / base, instructions per call")
    ax.set_title("System call cost with the series (QEMU -icount, "
                 "median of batches)")
    if bars:
        lo = min(r.ratio for r in bars)
        hi = max(r.ratio for r in bars)
        ax.set_ylim(min(0.9, lo - 0.05), max(1.1, hi + 0.05))
    if groups:
        ax.legend(handles=[Patch(color="C%d" % (i % 10), label=g)
                           for i, g in enumerate(groups)], fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------
# guests and boots

def bench_guest(name, conf_dir=lk_qemu.QEMU_CONF_DIR):
    """A guest of configs/qemu/ with one CPU, no NUMA, in icount mode."""
    g = lk_qemu.load_guest(name, conf_dir)
    overrides = dict(OVERRIDES)
    overrides["append"] = " ".join(w for w in g["append"].split()
                                   if not w.startswith("maxcpus="))
    g = lk_qemu.load_guest(name, conf_dir, overrides)
    g["qemu_args"] = g["qemu_args"] + list(ICOUNT)
    return g


def bench_timeout(calls, batches):
    """A bench program's limit in the guest, in guest seconds."""
    insns = CASES * (batches + 2) * (calls * CALL_INSNS + TICK_INSNS)
    return max(MIN_TIMEOUT, int(math.ceil(2 * insns / 1e9)))


def wall_limit(guest, timeouts, scale=1, kmemleak=False):
    """The host's limit for a boot whose programs have these guest limits
    (lk_qemu.wall_limit() with guest seconds turned into wall seconds)."""
    return lk_qemu.wall_limit(guest, [
        ("", int(math.ceil(t * 1e9 / ICOUNT_RATE))) for t in timeouts],
        scale, kmemleak)


def manifest_lines(abis, calls, batches, timeout):
    return ["%d %s /lk-qemu/%s --calls %d --batches %d\n" % (
        timeout, lk_qemu.manifest_name(abi, PROGRAM),
        lk_qemu.manifest_name(abi, PROGRAM), calls, batches)
        for abi in abis]


def bench_initramfs(path, init, programs, lines):
    """programs: [(abi, host path of its bench)]."""
    c = lk_qemu.base_cpio(init)
    for abi, src in programs:
        with open(src, "rb") as f:
            c.file("lk-qemu/" + lk_qemu.manifest_name(abi, PROGRAM),
                   f.read(), 0o755)
    c.file("lk-qemu/manifest", "".join(lines).encode())
    lk_qemu.write_initramfs(path, c)


def build(abis, init_abis, tree, scratch, logs):
    """{abi: bench binary}, {abi: init binary}; raises Failure."""
    benches, inits = {}, {}
    for name in sorted(set(abis) | set(init_abis)):
        abi = lk_qemu.load_abi(name)
        blog = os.path.join(logs, "bench-build-%s.log" % name)
        if os.path.exists(blog):
            os.unlink(blog)
        if name in abis:
            headers = lk_qemu.export_headers(tree, abi, scratch, blog)
            benches[name] = lk_qemu.compile_program(
                abi, BENCH_C, os.path.join(scratch, "bin", name, "bench"),
                blog, [headers], ["-Wextra"])
        if name in init_abis:
            inits[name] = lk_qemu.build_init(abi, scratch, blog)
    return benches, inits


def boot_one(guest, label, kernel, bdir, initramfs, logs, results, calls,
             batches, echo=False):
    """Boot one kernel; return ({abi: Run or None}, why missing or None)."""
    name = guest["name"]
    abis = guest["abis"]
    prefix = "bench %s %s" % (name, label)
    if not os.path.isfile(kernel):
        why = "no kernel at %s" % kernel
        results.failed("%s: boot" % prefix, "%s; build it with 'scripts/lk "
                       "%s'" % (why, "baseline" if label == "base" else
                                "build --target %s" % guest["target"]))
        return {a: None for a in abis}, why
    debug, kmemleak = lk_qemu.debug_kernel(bdir)
    scale = guest["debug_scale"] if debug else 1
    names = [lk_qemu.manifest_name(a, PROGRAM) for a in abis]
    log_path = os.path.join(logs, "bench-%s-%s.log" % (name, label))
    limit = wall_limit(guest, [bench_timeout(calls, batches) * scale
                               for _ in abis], scale, kmemleak)
    t0 = time.monotonic()
    try:
        lk_qemu.boot(guest, kernel, initramfs, log_path, names, limit,
                     token=TOKEN, echo=echo)
        report = lk_qemu.parse_log_file(log_path)
    except (Failure, OSError) as e:
        results.failed("%s: boot" % prefix, str(e))
        return {a: None for a in abis}, str(e)
    bad = [row for row in lk_qemu.judge(report, prefix="bench")
           if row[0] != "PASS"]
    old = "bench %s" % name
    for status, rname, detail in bad:
        results.add(status, rname.replace(old, prefix, 1), detail)
    runs = runs_of(report, abis)
    for row in run_problems(name, label, runs, calls, batches):
        results.add(*row)
    took = time.monotonic() - t0
    if not bad:
        results.passed("%s: boot" % prefix, "%s ran; %.0fs; log at %s" % (
            " and ".join("%s/%s" % (a, PROGRAM) for a in abis), took,
            log_path))
    why = None
    if any(r is None or not r.done for r in runs.values()):
        why = "the guest did not finish; log at %s" % log_path
    return runs, why


def bench_one_guest(guest, args, benches, inits, scratch, logs, results):
    """Boot base once and tip --repeat times; return the guest's Rows."""
    name = guest["name"]
    abis = guest["abis"]
    # one initramfs for base and tip: the limit in the guest allows for a
    # debug kernel whichever it is
    lines = manifest_lines(abis, args.calls, args.batches, bench_timeout(
        args.calls, args.batches) * guest["debug_scale"])
    initramfs = os.path.join(scratch, name, "bench.cpio.gz")
    bench_initramfs(initramfs, inits[guest["init_abi"]],
                    [(a, benches[a]) for a in abis], lines)
    why = {}
    kernel, bdir = lk_qemu.guest_kernel(guest, args.base_build_root)
    log("bench %s: base kernel %s" % (name, kernel))
    base, why["base"] = boot_one(guest, "base", kernel, bdir, initramfs,
                                 logs, results, args.calls, args.batches,
                                 args.echo)
    kernel, bdir = lk_qemu.guest_kernel(guest, args.tip_build_root)
    tips = []
    for k in range(args.repeat):
        log("bench %s: tip kernel %s (boot %d of %d)" % (
            name, kernel, k + 1, args.repeat))
        runs, w = boot_one(guest, "tip%d" % (k + 1), kernel, bdir,
                           initramfs, logs, results, args.calls,
                           args.batches, args.echo)
        why["tip"] = why.get("tip") or w
        tips.append(runs)
    rows = judge_guest(name, abis, base, tips, why)
    for r in rows:
        results.add(r.status, row_name(r), r.detail)
    return rows


def repeat_summary(rows, repeat):
    """'N of M cases identical in R tip boots', or None without repeats."""
    if repeat < 2:
        return None
    checked = [r for r in rows if r.identical is not None]
    same = sum(1 for r in checked if r.identical)
    return "%d of %d cases identical in %d tip boots" % (
        same, len(checked), repeat)


# --------------------------------------------------------------------------
# command line

def positive(limit):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = 0
        if not 1 <= v <= limit:
            raise argparse.ArgumentTypeError("wants a number from 1 to %d"
                                             % limit)
        return v
    return parse


def main(argv=None):
    p = lk_qemu.tool_parser("lk_bench.py", __doc__,
                            "; results go to <out>/bench/")
    p.add_argument("--guest", action="append", help="x86 guest of "
                   "configs/qemu/ (repeatable; default: %s)"
                   % " ".join(DEFAULT_GUESTS))
    p.add_argument("--base-build-root", help="directory of the base "
                   "kernels' build directories (default: "
                   "<out>/baseline/build)")
    p.add_argument("--tip-build-root", help="directory of the tip kernels' "
                   "build directories (default: <out>/build)")
    p.add_argument("--batches", type=positive(MAX_BATCHES),
                   default=DEFAULT_BATCHES, help="timed batches per case "
                   "(default: %d)" % DEFAULT_BATCHES)
    p.add_argument("--calls", type=positive(MAX_CALLS),
                   default=DEFAULT_CALLS, help="calls per batch (default: "
                   "%d)" % DEFAULT_CALLS)
    p.add_argument("--repeat", type=positive(10), default=DEFAULT_REPEAT,
                   help="tip boots, all of whose medians must agree "
                   "(default: %d; 1: no check)" % DEFAULT_REPEAT)
    p.add_argument("--tree", help="kernel tree whose uapi headers bench.c "
                   "is built against (default: <out>/tree)")
    p.add_argument("--echo", action="store_true",
                   help="copy the serial console to stdout")
    p.add_argument("--chart", nargs=2, metavar=("CSV", "PNG"),
                   help="only draw the chart of a bench.csv (exit 1 "
                   "without matplotlib)")
    args = p.parse_args(argv)
    if args.chart:
        return 0 if chart(args.chart[1], read_csv_ratios(args.chart[0])) \
            else 1
    out = lk_qemu.out_dir(args.out)
    args.base_build_root = os.path.abspath(
        args.base_build_root or os.path.join(out, "baseline", "build"))
    args.tip_build_root = os.path.abspath(
        args.tip_build_root or os.path.join(out, "build"))
    results = Results()
    rows = []
    try:
        tree = os.path.abspath(args.tree or os.path.join(out, "tree"))
        scratch = os.path.join(out, "qemu")
        logs = os.path.join(out, "logs")
        bench_dir = os.path.join(out, "bench")
        for d in (scratch, logs, bench_dir):
            os.makedirs(d, exist_ok=True)
        guests = [bench_guest(g) for g in (args.guest or DEFAULT_GUESTS)]
        for g in guests:
            if not set(g["abis"]) <= set(X86_ABIS):
                raise Failure("guest %s runs the %s ABIs: bench.c is for "
                              "x86 guests only (ABIs %s)" % (
                                  g["name"], " ".join(g["abis"]),
                                  " ".join(X86_ABIS)))
        try:
            benches, inits = build(
                set(a for g in guests for a in g["abis"]),
                set(g["init_abi"] for g in guests), tree, scratch, logs)
        except (Failure, OSError) as e:
            results.failed("bench: build", str(e))
            log(results.summary())
            return 1
        results.passed("bench: build", "bench for %s, /init for %s" % (
            " ".join(sorted(benches)), " ".join(sorted(inits))))
        log("bench: %d batches of %d calls per case; one QEMU at a time "
            "(%s)" % (args.batches, args.calls, " ".join(ICOUNT)))
        for g in guests:
            rows += bench_one_guest(g, args, benches, inits, scratch, logs,
                                    results)
        for line in table(rows):
            log(line)
        csv_path = os.path.join(bench_dir, "bench.csv")
        write_csv(csv_path, rows)
        log("bench: table at %s" % csv_path)
        png = os.path.join(bench_dir, "bench.png")
        if chart(png, rows, csv_path):
            log("bench: chart at %s" % png)
        else:
            results.skipped("bench: chart", "python3-matplotlib is not "
                            "installed (scripts/packages.txt)")
        rep = repeat_summary(rows, args.repeat)
        if rep:
            log("bench: reproducibility: %s" % rep)
    except (Failure, OSError) as e:
        print("lk_bench: %s" % e, file=sys.stderr)
        return 2
    log(results.summary())
    return 0 if results.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
