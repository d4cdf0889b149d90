# SPDX-License-Identifier: GPL-2.0
"""The QEMU stages as lk runs them: boot, fuzz and bench the built kernels."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import argparse
import os
import queue
import threading
import time
import traceback

from . import (
    apply,
    bench,
    boot,
    qemu_conf,
    build,
    common,
    fuzz,
    kunit,
    qemu,
    targetconf,
    warns,
)


def guest_kernel(guest: str, out: str | None = None) -> str:
    conf = common.read_kv(os.path.join(common.GUESTS, guest + ".conf"))
    return os.path.join(
        out or common.out_dir(None), "build", conf["target"], conf["kernel"]
    )


def qemu_guests() -> list[str]:
    return qemu_conf.guest_names()


def do_qemu(
    args: argparse.Namespace,
    results: common.Results,
    guests: list[str] | None = None,
    cache: dict[Any, Any] | None = None,
) -> None:
    """Boot the built kernels, run the selftests, check their KUnit output.
    cache: the programs built for each ABI, kept by a caller that calls
    this again for more guests (GuestLane)."""
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
    # The guests of one ABI (x86_64 and i386 run 32-bit programs, arm64
    # and arm 32-bit arm ones) share its programs: built once a run.
    cache = {} if cache is None else cache
    for guest in guests:
        conf = common.read_kv(os.path.join(common.GUESTS, guest + ".conf"))
        build_dir = os.path.join(out, "build", conf["target"])
        if not os.path.exists(os.path.join(build_dir, conf["kernel"])):
            results.failed(
                "qemu " + guest,
                "no kernel at %s: build target %s"
                " first" % (os.path.join(build_dir, conf["kernel"]), conf["target"]),
            )
            continue
        t0 = time.time()
        in_process(
            results,
            "qemu " + guest,
            lambda: qemu.run_guests(results, out, [guest], cache=cache),
        )
        common.log("qemu: %s took %ds" % (guest, time.time() - t0))
        if kunit.conf_has_kunit(build_dir):
            kunit.parse_guest_kunit(
                args, results, guest, os.path.join(out, "logs", "qemu-%s.log" % guest)
            )


class GuestLane:
    """`lk test`'s qemu stage beside its build stage: each guest boots, in
    a thread of the lane, as soon as the build stage has built its kernel,
    while the next kernels build.  A guest spends most of a boot waiting
    on its tests' timers (two thirds of the CPU time idle, measured),
    which the builds then use; they run at common.NICE meanwhile, so that
    the guest's timers fire on time.  `workers` guests boot at a time
    (LK_GUEST_LANES, default 2): once the builds are done, one guest
    alone leaves most of the two cores idle.

    A guest of fuzz_guests is fuzzed there too, right after its boot
    (`lk fuzz --ci`: a fixed-seed minute of trinity, in a guest that runs
    on one host thread), so that the builds use the other core meanwhile.

    built() is build.do_build()'s on_built; finish() waits for the last
    guest, adds the lane's rows to results (each guest's together, in the
    order the kernels were built) and returns the guests that booted, in
    that order; `fuzzed` lists those fuzzed.  The rows are printed as they
    come and counted in the stage that calls finish().
    """

    def __init__(
        self,
        args: argparse.Namespace,
        nice: int = 19,
        fuzz_guests: Sequence[str] = (),
        workers: int | None = None,
    ) -> None:
        self.args = args
        self.queue: queue.Queue[tuple[int, str] | None] = queue.Queue()
        self.queued = 0
        self.lock = threading.Lock()
        # Each guest's rows (its boot's, then its fuzz run's) apart: a
        # failure of one guest must not be blamed on another booting
        # beside it (in_process() reads the rows a harness added).
        self.parts: dict[int, common.Results] = {}
        self.done: dict[int, str] = {}
        self.fuzz = set(fuzz_guests)
        self.fuzz_done: dict[int, str] = {}
        self.cache: dict[Any, Any] = {}
        self.by_target: dict[str, list[str]] = {}
        for g in qemu_guests():
            target = common.read_kv(os.path.join(common.GUESTS, g + ".conf"))["target"]
            self.by_target.setdefault(target, []).append(g)
        if workers is None:
            workers = int(os.environ.get("LK_GUEST_LANES") or 2)
        self.old_nice, common.NICE = common.NICE, nice
        self.threads = [
            threading.Thread(target=self.run, name="guest-lane-%d" % i, daemon=True)
            for i in range(max(1, workers))
        ]
        for th in self.threads:
            th.start()

    @property
    def ran(self) -> list[str]:
        return [self.done[k] for k in sorted(self.done)]

    @property
    def fuzzed(self) -> list[str]:
        return [self.fuzz_done[k] for k in sorted(self.fuzz_done)]

    def built(self, target: str) -> None:
        with self.lock:  # the build stage's two lanes call this
            for g in self.by_target.get(target, []):
                self.queue.put((self.queued, g))
                self.queued += 1

    def run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            seq, guest = item
            rows = self.parts[seq] = common.Results()
            self.step(rows, "qemu " + guest, self.boot, guest)
            self.done[seq] = guest
            if guest in self.fuzz:
                self.step(rows, "fuzz", self.fuzz_one, guest)
                self.fuzz_done[seq] = guest

    def boot(self, results: common.Results, guest: str) -> None:
        do_qemu(self.args, results, [guest], cache=self.cache)

    def fuzz_one(self, results: common.Results, guest: str) -> None:
        do_fuzz(self.args, results, [guest], ci=True)

    def step(
        self,
        results: common.Results,
        name: str,
        fn: Callable[[common.Results, str], object],
        guest: str,
    ) -> None:
        """fn(results, guest), its error a FAIL row `name`: the lane goes
        on."""
        try:
            fn(results, guest)
        except (common.Failure, OSError) as e:
            results.failed(name, str(e))
        except Exception as e:  # a bug: this step fails, not lk
            common.log(traceback.format_exc().rstrip())
            results.failed(name, "%s: %s" % (type(e).__name__, e))

    def finish(self, results: common.Results) -> list[str]:
        for _ in self.threads:
            self.queue.put(None)
        for th in self.threads:
            th.join()
        common.NICE = self.old_nice
        for seq in sorted(self.parts):
            results.rows.extend(self.parts[seq].rows)
        return self.ran

    def abort(self) -> None:
        """When lk stops early (an exception in the main thread): the
        guests booting now are killed, none is started after them."""
        if any(th.is_alive() for th in self.threads):
            while not self.queue.empty():
                self.queue.get_nowait()
            for _ in self.threads:
                self.queue.put(None)
            boot.kill_running()
            for th in self.threads:
                th.join(timeout=60)
        common.NICE = self.old_nice


def in_process(
    results: common.Results, name: str, harness: Callable[[], object]
) -> None:
    """Run harness(), which adds its rows to results as they come: a boot
    and its tests take minutes, and each row is progress.

    A failure that its rows do not name (an error that stopped it, or
    only failing rows under other names) is one more FAIL row, `name`;
    so is an exception that a bug raised, with its traceback logged.
    """
    n0 = len(results.rows)
    error = None
    try:
        harness()
    except (common.Failure, OSError) as e:
        error = str(e)
    except Exception as e:
        # A bug in the harness: as when it ran as a command of its own,
        # it fails this stage, not the whole `lk test`.
        common.log(traceback.format_exc().rstrip())
        error = "%s: %s" % (type(e).__name__, e)
    rows = results.rows[n0:]
    failed = [r[1] for r in rows if r[0] == "FAIL"]
    if (error or failed) and (not rows or not results.has_failure(name)):
        results.failed(name, error or "it failed: %s" % ", ".join(failed))


def do_fuzz(
    args: argparse.Namespace,
    results: common.Results,
    guests: Sequence[str] | None = None,
    ci: bool = False,
) -> None:
    """trinity in the x86 guests, under their kernels' sanitizers.

    See fuzz.py.  ci: the short fixed-seed run of `lk test`.
    """
    out = common.out_dir(args)
    apply.applied_tree(args)
    t0 = time.time()
    in_process(
        results,
        "fuzz",
        lambda: fuzz.fuzz_guests(
            results,
            out,
            guests,
            ci,
            getattr(args, "minutes", None),
            getattr(args, "seed", None),
            getattr(args, "phase", None),
        ),
    )
    common.log("fuzz: took %ds" % (time.time() - t0))


# The kernels `lk bench` compares: the x86 guests' targets.
BENCH_TARGETS = ("x86_64", "i386")


def do_bench(args: argparse.Namespace, results: common.Results) -> None:
    """bench.py: the prerequisite-only kernels against the tip.

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
    opts = argparse.Namespace(
        guest=getattr(args, "guest", None),
        base_build_root=os.path.join(base_out, "build"),
        tip_build_root=None,
        batches=getattr(args, "batches", None) or bench.DEFAULT_BATCHES,
        calls=getattr(args, "calls", None) or bench.DEFAULT_CALLS,
        repeat=getattr(args, "repeat", None) or bench.DEFAULT_REPEAT,
        tree=None,
        echo=False,
    )
    t0 = time.time()
    in_process(results, "bench", lambda: bench.bench_guests(results, out, opts))
    common.log("bench: took %ds" % (time.time() - t0))
