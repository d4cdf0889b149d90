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
scripts/qemu/bench.c (with bench_cases.c) built statically for the
guest's user-space ABIs (x86_64 guest: 64, and 32 through IA32
emulation; i386 guest: 32), against the uapi headers exported from the
tip tree, as manifest entries "<abi>/bench".  bench.c times batches of
raw system calls with clock_gettime(CLOCK_MONOTONIC) (see its comment
for the method, and bench_cases.c for the cases): per case the median,
min and max per call over the batches, less the median of an empty loop
(printed as the case "empty", raw).
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

from __future__ import annotations

from typing import Callable

import argparse
import math
import os
import time

from . import bench_judge, bench_output
from . import boot, common, qemu, qemu_conf, qemu_tool, serial, userspace, verdict


BENCH_SOURCES = userspace.program_sources("bench")
DEFAULT_GUESTS = qemu_conf.X86_GUESTS

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
TOKEN = "1b2e4c7f00bec4e5"


def bench_guest(name: str, conf_dir: str = qemu_conf.QEMU_CONF_DIR) -> common.Guest:
    """A guest of configs/qemu/ with one CPU, no NUMA, in icount mode."""
    g = qemu_conf.load_guest(name, conf_dir)
    overrides = dict(OVERRIDES)
    overrides["append"] = " ".join(
        w for w in g["append"].split() if not w.startswith("maxcpus=")
    )
    g = qemu_conf.load_guest(name, conf_dir, overrides)
    g["qemu_args"] = g["qemu_args"] + list(ICOUNT)
    return g


def bench_timeout(calls: int, batches: int) -> int:
    """A bench program's limit in the guest, in guest seconds."""
    insns = CASES * (batches + 2) * (calls * CALL_INSNS + TICK_INSNS)
    return max(MIN_TIMEOUT, int(math.ceil(2 * insns / 1e9)))


def wall_limit(
    guest: common.Guest, timeouts: list[int], scale: int = 1, kmemleak: bool = False
) -> int:
    """The host's limit for a boot whose programs have these guest limits
    (lk_qemu.wall_limit() with guest seconds turned into wall seconds)."""
    return boot.wall_limit(
        guest,
        [("", int(math.ceil(t * 1e9 / ICOUNT_RATE))) for t in timeouts],
        scale,
        kmemleak,
    )


def manifest_lines(
    abis: list[str], calls: int, batches: int, timeout: int
) -> list[str]:
    return [
        "%d %s /lk-qemu/%s --calls %d --batches %d\n"
        % (
            timeout,
            userspace.manifest_name(abi, bench_judge.PROGRAM),
            userspace.manifest_name(abi, bench_judge.PROGRAM),
            calls,
            batches,
        )
        for abi in abis
    ]


def bench_initramfs(
    path: str, init: str, programs: list[tuple[str, str]], lines: list[str]
) -> None:
    """programs: [(abi, host path of its bench)]."""
    c = userspace.base_cpio(init)
    for abi, src in programs:
        with open(src, "rb") as f:
            c.file(
                "lk-qemu/" + userspace.manifest_name(abi, bench_judge.PROGRAM),
                f.read(),
                0o755,
            )
    c.file("lk-qemu/manifest", "".join(lines).encode())
    userspace.write_initramfs(path, c)


def build(
    abis: set[str], init_abis: set[str], tree: str, scratch: str, logs: str
) -> tuple[dict[str, str], dict[str, str]]:
    """{abi: bench binary}, {abi: init binary}; raises Failure."""
    benches, inits = {}, {}
    for name in sorted(set(abis) | set(init_abis)):
        abi = qemu_conf.load_abi(name)
        blog = os.path.join(logs, "bench-build-%s.log" % name)
        if os.path.exists(blog):
            os.unlink(blog)
        if name in abis:
            benches[name] = userspace.build_program(
                abi, BENCH_SOURCES, "bench", tree, scratch, blog
            )
        if name in init_abis:
            inits[name] = userspace.build_init(abi, scratch, blog)
    return benches, inits


def boot_one(
    guest: common.Guest,
    label: str,
    kernel: str,
    bdir: str,
    initramfs: str,
    logs: str,
    results: common.Results,
    calls: int,
    batches: int,
    echo: bool = False,
) -> tuple[dict[str, bench_judge.Run | None], str | None]:
    """Boot one kernel; return ({abi: Run or None}, why missing or None)."""
    name = guest["name"]
    abis = guest["abis"]
    prefix = "bench %s %s" % (name, label)
    missing = boot.missing_kernel(
        guest, kernel, "baseline" if label == "base" else None
    )
    if missing:
        results.failed("%s: boot" % prefix, missing)
        return {a: None for a in abis}, "no kernel at %s" % kernel
    scale, kmemleak = qemu_conf.debug_scale(guest, bdir)
    names = [userspace.manifest_name(a, bench_judge.PROGRAM) for a in abis]
    log_path = os.path.join(logs, "bench-%s-%s.log" % (name, label))
    limit = wall_limit(
        guest, [bench_timeout(calls, batches) * scale for _ in abis], scale, kmemleak
    )
    t0 = time.monotonic()
    try:
        boot.boot(
            guest, kernel, initramfs, log_path, names, limit, token=TOKEN, echo=echo
        )
        report = serial.parse_log_file(log_path)
    except (common.Failure, OSError) as e:
        results.failed("%s: boot" % prefix, str(e))
        return {a: None for a in abis}, str(e)
    bad = [row for row in verdict.judge(report, prefix="bench") if row[0] != "PASS"]
    old = "bench %s" % name
    for status, rname, detail in bad:
        results.add(status, rname.replace(old, prefix, 1), detail)
    runs = bench_judge.runs_of(report, abis)
    for row in bench_judge.run_problems(name, label, runs, calls, batches):
        results.add(*row)
    took = time.monotonic() - t0
    if not bad:
        results.passed(
            "%s: boot" % prefix,
            "%s ran; %.0fs; log at %s"
            % (
                " and ".join("%s/%s" % (a, bench_judge.PROGRAM) for a in abis),
                took,
                log_path,
            ),
        )
    why = None
    if any(r is None or not r.done for r in runs.values()):
        why = "the guest did not finish; log at %s" % log_path
    return runs, why


def bench_one_guest(
    guest: common.Guest,
    args: argparse.Namespace,
    benches: dict[str, str],
    inits: dict[str, str],
    scratch: str,
    logs: str,
    results: common.Results,
) -> list[bench_judge.Row]:
    """Boot base once and tip --repeat times; return the guest's Rows."""
    name = guest["name"]
    abis = guest["abis"]
    # one initramfs for base and tip: the limit in the guest allows for a
    # debug kernel whichever it is
    lines = manifest_lines(
        abis,
        args.calls,
        args.batches,
        bench_timeout(args.calls, args.batches) * guest["debug_scale"],
    )
    initramfs = os.path.join(scratch, name, "bench.cpio.gz")
    bench_initramfs(
        initramfs, inits[guest["init_abi"]], [(a, benches[a]) for a in abis], lines
    )

    def boot_kernel(
        kind: str, label: str, build_root: str, note: str = ""
    ) -> tuple[dict[str, bench_judge.Run | None], str | None]:
        """boot_one() of the guest's kernel in build_root (kind: base or
        tip), its log named after label (base, tip1, ...)."""
        kernel, bdir = qemu.guest_kernel(guest, build_root)
        common.log("bench %s: %s kernel %s%s" % (name, kind, kernel, note))
        return boot_one(
            guest,
            label,
            kernel,
            bdir,
            initramfs,
            logs,
            results,
            args.calls,
            args.batches,
            args.echo,
        )

    why = {}
    base, why["base"] = boot_kernel("base", "base", args.base_build_root)
    tips = []
    for k in range(args.repeat):
        runs, w = boot_kernel(
            "tip",
            "tip%d" % (k + 1),
            args.tip_build_root,
            " (boot %d of %d)" % (k + 1, args.repeat),
        )
        why["tip"] = why.get("tip") or w
        tips.append(runs)
    rows = bench_judge.judge_guest(name, abis, base, tips, why)
    for r in rows:
        results.add(r.status, bench_judge.row_name(r), r.detail)
    return rows


def bench_guests(results: common.Results, out: str, opts: argparse.Namespace) -> None:
    """Boot each guest's base and tip kernels and judge every case: `lk
    bench` and `lk_bench.py`.  opts holds the command line's options
    (guest, base_build_root, tip_build_root, batches, calls, repeat, tree,
    echo; see main()).  Rows go to results as they come; the table goes
    to the log and to <out>/bench/bench.csv and bench.png."""
    opts.base_build_root = os.path.abspath(
        opts.base_build_root or os.path.join(out, "baseline", "build")
    )
    opts.tip_build_root = os.path.abspath(
        opts.tip_build_root or os.path.join(out, "build")
    )
    tree, scratch, logs = qemu.places(out, opts.tree)
    bench_dir = os.path.join(out, "bench")
    os.makedirs(bench_dir, exist_ok=True)
    guests = [bench_guest(g) for g in (opts.guest or DEFAULT_GUESTS)]
    for g in guests:
        if not set(g["abis"]) <= set(X86_ABIS):
            raise common.Failure(
                "guest %s runs the %s ABIs: bench.c is for x86 guests only "
                "(ABIs %s)" % (g["name"], " ".join(g["abis"]), " ".join(X86_ABIS))
            )
    try:
        benches, inits = build(
            set(a for g in guests for a in g["abis"]),
            set(g["init_abi"] for g in guests),
            tree,
            scratch,
            logs,
        )
    except (common.Failure, OSError) as e:
        results.failed("bench: build", str(e))
        return
    results.passed(
        "bench: build",
        "bench for %s, /init for %s"
        % (" ".join(sorted(benches)), " ".join(sorted(inits))),
    )
    common.log(
        "bench: %d batches of %d calls per case; one QEMU at a time (%s)"
        % (opts.batches, opts.calls, " ".join(ICOUNT))
    )
    rows = []
    for g in guests:
        rows += bench_one_guest(g, opts, benches, inits, scratch, logs, results)
    for line in bench_output.table(rows):
        common.log(line)
    csv_path = os.path.join(bench_dir, "bench.csv")
    bench_output.write_csv(csv_path, rows)
    common.log("bench: table at %s" % csv_path)
    png = os.path.join(bench_dir, "bench.png")
    if bench_output.chart(png, rows, csv_path):
        common.log("bench: chart at %s" % png)
    else:
        results.skipped(
            "bench: chart", "python3-matplotlib is not installed (scripts/packages.txt)"
        )
    rep = bench_judge.repeat_summary(rows, opts.repeat)
    if rep:
        common.log("bench: reproducibility: %s" % rep)


def positive(limit: int) -> Callable[[str], int]:
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = 0
        if not 1 <= v <= limit:
            raise argparse.ArgumentTypeError("wants a number from 1 to %d" % limit)
        return v

    return parse


def main(argv: list[str] | None = None) -> int:
    p = qemu_tool.tool_parser(
        "lk_bench.py", __doc__, "; results go to <out>/bench/", DEFAULT_GUESTS
    )
    p.add_argument(
        "--base-build-root",
        help="directory of the base "
        "kernels' build directories (default: "
        "<out>/baseline/build)",
    )
    p.add_argument(
        "--tip-build-root",
        help="directory of the tip kernels' "
        "build directories (default: <out>/build)",
    )
    p.add_argument(
        "--batches",
        type=positive(MAX_BATCHES),
        default=DEFAULT_BATCHES,
        help="timed batches per case (default: %d)" % DEFAULT_BATCHES,
    )
    p.add_argument(
        "--calls",
        type=positive(MAX_CALLS),
        default=DEFAULT_CALLS,
        help="calls per batch (default: %d)" % DEFAULT_CALLS,
    )
    p.add_argument(
        "--repeat",
        type=positive(10),
        default=DEFAULT_REPEAT,
        help="tip boots, all of whose medians must agree "
        "(default: %d; 1: no check)" % DEFAULT_REPEAT,
    )
    p.add_argument(
        "--tree",
        help="kernel tree whose uapi headers bench.c "
        "is built against (default: <out>/tree)",
    )
    p.add_argument(
        "--echo", action="store_true", help="copy the serial console to stdout"
    )
    p.add_argument(
        "--chart",
        nargs=2,
        metavar=("CSV", "PNG"),
        help="only draw the chart of a bench.csv (exit 1 without matplotlib)",
    )
    args = p.parse_args(argv)
    if args.chart:
        return (
            0
            if bench_output.chart(
                args.chart[1], bench_output.read_csv_ratios(args.chart[0])
            )
            else 1
        )
    return qemu_tool.run_tool(
        "lk_bench",
        lambda results: bench_guests(results, common.out_dir(args.out), args),
    )
