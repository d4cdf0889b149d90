# SPDX-License-Identifier: GPL-2.0
"""The QEMU stages as lk runs them: boot, fuzz and bench the built kernels."""

import collections
import os
import re
import subprocess
import sys
import time

from . import apply, build, common, kunit, targetconf, warns


QEMU_ROW_RE = re.compile(r"^(PASS|FAIL|SKIP): (.*?)(?: - (.*))?$")


def guest_kernel(guest, out=None):
    conf = common.read_kv(os.path.join(common.TOP, "configs", "qemu", guest + ".conf"))
    return os.path.join(
        out or common.out_dir(None), "build", conf["target"], conf["kernel"]
    )


def qemu_guests():
    d = os.path.join(common.TOP, "configs", "qemu")
    return sorted(fn[:-5] for fn in os.listdir(d) if fn.endswith(".conf"))


def do_qemu(args, results, guests=None):
    """Boot the built kernels, run the selftests, check their KUnit output."""
    out = common.out_dir(args)
    apply.applied_tree(args)
    if not guests:
        # Those whose kernel has been built (`lk build --target ...`).
        guests = [g for g in qemu_guests() if os.path.exists(guest_kernel(g, out))]
        if not guests:
            raise common.Failure(
                "no guest kernel has been built; run 'scripts/lk "
                "build --target x86_64 --target i386' first"
            )
    for guest in guests:
        conf = common.read_kv(
            os.path.join(common.TOP, "configs", "qemu", guest + ".conf")
        )
        build_dir = os.path.join(out, "build", conf["target"])
        if not os.path.exists(os.path.join(build_dir, conf["kernel"])):
            results.failed(
                "qemu " + guest,
                "no kernel at %s: build target %s"
                " first" % (os.path.join(build_dir, conf["kernel"]), conf["target"]),
            )
            continue
        cmd = [
            sys.executable,
            os.path.join(common.TOP, "scripts", "lk_qemu.py"),
            "run",
            "--guest",
            guest,
        ]
        t0 = time.time()
        stream_rows(cmd, results, "qemu " + guest, out)
        common.log("qemu: %s took %ds" % (guest, time.time() - t0))
        if kunit.conf_has_kunit(build_dir):
            kunit.parse_guest_kunit(
                args, results, guest, os.path.join(out, "logs", "qemu-%s.log" % guest)
            )


def stream_rows(cmd, results, name, out):
    """Run a tool that prints result rows; report them as they come.

    A boot and its tests take minutes, and each row is progress.  Other
    lines are logged.  An exit status the rows do not explain is a
    failure named `name`.
    """
    p = subprocess.Popen(
        cmd,
        env=dict(os.environ, LK_OUT=out),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        universal_newlines=True,
        errors="replace",
    )
    rows, tail = 0, collections.deque(maxlen=20)
    for line in p.stdout:
        line = line.rstrip("\n")
        m = QEMU_ROW_RE.match(line)
        if m:
            rows += 1
            results.add(m.group(1), m.group(2), m.group(3) or "")
        elif line.strip():
            tail.append(line)
            common.log(line)
    returncode = p.wait()
    if returncode and (not rows or not results.has_failure(name)):
        results.failed(
            name,
            "%s exited %d: %s"
            % (os.path.basename(cmd[1]), returncode, "\n".join(tail)[-500:]),
        )


def do_fuzz(args, results, guests=None, ci=False):
    """trinity in the x86 guests, under their kernels' sanitizers.

    See scripts/lk_fuzz.py.  ci: the short fixed-seed run of `lk test`.
    """
    out = common.out_dir(args)
    apply.applied_tree(args)
    cmd = [sys.executable, os.path.join(common.TOP, "scripts", "lk_fuzz.py")]
    if ci:
        cmd.append("--ci")
    for g in guests or ():
        cmd += ["--guest", g]
    for opt in ("minutes", "seed"):
        if getattr(args, opt, None) is not None:
            cmd += ["--" + opt, str(getattr(args, opt))]
    for ph in getattr(args, "phase", None) or ():
        cmd += ["--phase", ph]
    t0 = time.time()
    stream_rows(cmd, results, "fuzz", out)
    common.log("fuzz: took %ds" % (time.time() - t0))


# The kernels `lk bench` compares: the x86 guests' targets.
BENCH_TARGETS = ("x86_64", "i386")


def do_bench(args, results):
    """scripts/lk_bench.py: the prerequisite-only kernels against the tip.

    Base kernels are built in $LK_OUT/baseline/build/<target> (where `lk
    baseline` builds the prerequisite-only tree) and reused while a
    complete build of the current prerequisite commit is there; tip
    kernels are $LK_OUT/build/<target>, built if missing.
    """
    out = common.out_dir(args)
    tree = apply.applied_tree(args)
    prereq = common.git(["rev-parse", "prereq"], cwd=tree)
    series_dir = os.path.abspath(args.series_dir)
    base_out = os.path.join(out, "baseline")
    stale = []
    for name in BENCH_TARGETS:
        t = targetconf.load_target(name)
        kernel = os.path.join(base_out, "build", name, "arch", "x86", "boot", "bzImage")
        if (
            os.path.exists(kernel)
            and warns.complete_log_of(
                base_out,
                name,
                prereq,
                t["goals"],
                targetconf.baseline_stamp(series_dir, t),
            )
            is not None
        ):
            common.log("bench: reusing the prerequisite-only %s kernel" % name)
        else:
            stale.append(t)
    if stale:
        common.git(["checkout", "-q", "-f", "prereq"], cwd=tree)
        try:
            for t in stale:
                build.build_target(
                    t,
                    tree,
                    base_out,
                    t["goals"],
                    results,
                    None,
                    stamp=targetconf.baseline_stamp(series_dir, t),
                    before_tip=True,
                )
        finally:
            common.git(["checkout", "-q", "-f", "series"], cwd=tree)
    missing = [
        n
        for n in BENCH_TARGETS
        if not os.path.exists(
            os.path.join(out, "build", n, "arch", "x86", "boot", "bzImage")
        )
    ]
    if missing:
        args.target, args.matrix, args.goal, args.fresh = (missing, None, None, False)
        build.do_build(args, results)
    cmd = [
        sys.executable,
        os.path.join(common.TOP, "scripts", "lk_bench.py"),
        "--base-build-root",
        os.path.join(base_out, "build"),
    ]
    for opt in ("guest", "repeat", "batches", "calls"):
        v = getattr(args, opt, None)
        for x in v if isinstance(v, list) else [] if v is None else [v]:
            cmd += ["--" + opt, str(x)]
    t0 = time.time()
    stream_rows(cmd, results, "bench", out)
    common.log("bench: took %ds" % (time.time() - t0))
