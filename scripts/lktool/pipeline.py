# SPDX-License-Identifier: GPL-2.0
"""The chained stages: deps, setup and test."""

from __future__ import annotations

import argparse

from typing import Any, Callable, IO

import fcntl
import os
import subprocess
import threading
import time

from . import (
    apply,
    basetree,
    boot,
    build,
    checkpatch,
    cocci,
    common,
    fuzz,
    kunit,
    percheck,
    qemu_stages,
    selftest,
    series,
    topics,
)


# What every run needs (.ci/run's `lk setup --no-build`, `lk deps`), and
# what only `lk test --full` needs besides: the guests outside CI
# (configs/qemu/*.conf with outside_ci) boot in emulators that no CI guest
# uses, large packages that a fresh CI machine should not install.
PACKAGES = os.path.join(common.TOP, "scripts", "packages.txt")
PACKAGES_FULL = os.path.join(common.TOP, "scripts", "packages-full.txt")


def package_list(full: bool) -> list[str]:
    """The Debian packages of scripts/packages.txt, and with full those of
    scripts/packages-full.txt after them."""
    pkgs = []
    for path in (PACKAGES, PACKAGES_FULL) if full else (PACKAGES,):
        with open(path) as f:
            pkgs += [l.split("#", 1)[0].strip() for l in f]
    return [p for p in pkgs if p]


def do_deps(args: argparse.Namespace) -> None:
    """Install what is missing of package_list(): with the full list for
    `lk deps --full` and for a `lk setup` that builds (the full matrix),
    not for `lk setup --no-build` (CI)."""
    full = getattr(args, "full", False) or (args.cmd == "setup" and not args.no_build)
    pkgs = package_list(full)
    r = common.run(
        ["dpkg-query", "-W", "-f", "${Package} ${Status}\\n"] + pkgs,
        capture=True,
        check=False,
    )
    have = set(
        l.split()[0]
        for l in r.stdout.splitlines()
        if l.endswith("install ok installed")
    )
    missing = [p for p in pkgs if p not in have]
    if not missing:
        common.log("deps: all %d packages installed" % len(pkgs))
        return
    common.log("deps: installing %s" % " ".join(missing))
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    common.run(sudo + ["apt-get", "update", "-qq"], env=env)
    common.run(
        sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing,
        env=env,
    )


def finish(results: common.Results) -> int:
    common.log(results.summary())
    return 0 if results.ok() else 1


class Stages:
    """Times the stages of `lk test` and prints them as a table at the end,
    with the results each stage added.

    A stage started with start() runs in a thread beside the stages after
    it, with rows of its own; join() waits for it and adds them.  Its line
    in the table says which stages it ran beside, and the total is the
    time from the first stage to the end, not the sum of the lines.
    """

    def __init__(self, results: common.Results) -> None:
        self.results = results
        self.rows: list[tuple[str, float, list[int]]] = []
        self.t0 = time.time()
        self.beside: dict[str, list[str]] = {}
        self.running: list[Background] = []

    def run(
        self,
        name: str,
        fn: Callable[[], Any],
        *exceptions: type[BaseException],
        fail_name: str | None = None,
    ) -> Any:
        """Run fn(); a listed exception becomes a FAIL row (fail_name, or
        the stage's name)."""
        common.log("stage: %s" % name)
        for bg in self.running:
            self.beside[bg.name].append(name)
        n0, t0 = len(self.results.rows), time.time()
        value = None
        try:
            value = fn()
        except exceptions as e:
            self.results.failed(fail_name or name, str(e))
        self.add_row(name, t0, self.results.rows[n0:])
        return value

    def add_row(self, name: str, t0: float, rows: list[tuple[str, str, str]]) -> None:
        self.rows.append(
            (
                name,
                time.time() - t0,
                [sum(1 for r in rows if r[0] == s) for s in ("PASS", "FAIL", "SKIP")],
            )
        )
        common.log("stage: %s took %ds" % (name, self.rows[-1][1]))

    def start(self, name: str, fn: Callable[[common.Results], Any]) -> Background:
        """Start fn(results of its own) in a thread; join() it."""
        common.log("stage: %s (beside the next stages)" % name)
        bg = Background(name, fn)
        self.beside[name] = []
        self.running.append(bg)
        return bg

    def join(self, bg: Background) -> None:
        """Wait for a stage start() began; its rows join the run's, its
        exception is raised here."""
        bg.thread.join()
        self.running.remove(bg)
        self.results.rows.extend(bg.results.rows)
        self.add_row(bg.name, bg.t0, bg.results.rows)
        if bg.error is not None:
            raise bg.error

    def table(self) -> str:
        lines = ["stage times:"]
        for name, secs, (p, f, s) in self.rows:
            line = "  %-10s %5ds  %4d passed, %d failed, %d skipped" % (
                name,
                secs,
                p,
                f,
                s,
            )
            if self.beside.get(name):
                line += "  (beside %s)" % ", ".join(self.beside[name])
            lines.append(line)
        lines.append("  %-10s %5ds" % ("total", time.time() - self.t0))
        return "\n".join(lines)


class Background:
    """A stage running in a thread: its rows (printed as they come) and
    the exception that stopped it, for Stages.join()."""

    def __init__(self, name: str, fn: Callable[[common.Results], Any]) -> None:
        self.name, self.t0 = name, time.time()
        self.results = common.Results()
        self.error: BaseException | None = None

        def body() -> None:
            try:
                fn(self.results)
            except BaseException as e:  # raised again by join()
                self.error = e

        self.thread = threading.Thread(target=body, name=name, daemon=True)
        self.thread.start()


class GuestsDone:
    """What the guest lane has run, for the stages that wait for it:
    wait() blocks until set() (or release(), when lk stops early)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.guests: list[str] = []

    def set(self, guests: list[str]) -> None:
        self.guests = list(guests)
        self.event.set()

    def release(self) -> None:
        self.event.set()

    def wait(self) -> list[str]:
        self.event.wait()
        return self.guests


def cmd_test(args: argparse.Namespace) -> int:
    if args.full:
        # What CI leaves out for its time: the x86 defconfigs,
        # x86_64-nocompat, arm and arm64 in full, and all of vmlinux at
        # every patch.  Run before a series is mailed.
        args.matrix, args.bisect = "full", "full"
    results = common.Results()
    stages = Stages(results)
    t0 = time.time()
    if not stages.run("series", lambda: series.do_series(args, results)):
        common.log(stages.table())
        return finish(results)
    applied = stages.run(
        "apply", lambda: apply.do_apply(args, results), common.Failure, OSError
    )
    if applied is None:
        common.log(stages.table())
        return finish(results)
    tree, entries, commits = applied
    qemu_ran: list[str] = []
    # checkpatch reads the tree at the tip, which the build stage leaves
    # alone: it runs there, beside the builds, not before the check
    # stage's per-patch checkouts.  So does the topics check (git am in a
    # worktree of its own).
    side = []
    if args.no_build:
        stages.run(
            "topics",
            lambda: topics.do_topics(args, results, tree, entries),
            common.Failure,
            OSError,
        )
    else:
        side.append(lambda r: topics.do_topics(args, r, tree, entries))
    if not args.no_check:
        if not args.no_build:
            side.append(lambda r: checkpatch.do_checkpatch(args, r, tree, entries))
            side.append(lambda r: cocci.guarded_cocci(args, r, tree, entries, commits))
        stages.run(
            "check",
            lambda: percheck.do_check(
                args, results, tree, entries, commits, with_checkpatch=not side
            ),
            common.Failure,
            OSError,
        )
    # Always from empty build directories: an incremental build would not
    # print the warnings of the objects it did not rebuild.  Unless
    # --rebuild, a build directory that still holds the full build of the
    # same inputs (build.KeptBuild) is reported as it is.
    args.fresh = True
    args.keep_builds = not getattr(args, "rebuild", False)
    # Each guest boots as soon as its kernel is built, beside the next
    # builds (qemu_stages.GuestLane): the qemu stage is what is left of
    # the boots when the last build is done.
    # The x86 guests are fuzzed there too, each right after its boot.
    lane = None
    if not args.no_build and not args.no_qemu:
        lane = qemu_stages.GuestLane(
            args, fuzz_guests=() if args.no_fuzz else fuzz.CI_GUESTS
        )
    kunit_done = False

    def run_kunit() -> None:
        for arch, configs in kunit.kunit_runs():
            stages.run(
                "kunit " + arch,
                lambda: kunit.do_kunit(args, results, arch, configs),
                common.Failure,
                OSError,
                subprocess.TimeoutExpired,
                fail_name="kunit: " + arch,
            )

    # The tools' own tests start once the kernels are built, beside what
    # is left of the guest lane (whose guests leave two thirds of the CPU
    # idle); the groups that read the lane's guests wait for it.
    guests_done = GuestsDone()
    tests = None
    try:
        if not args.no_build:
            with boot.sigterm_kills_boots():
                stages.run(
                    "build",
                    lambda: build.do_build(
                        args, results, side, on_built=lane.built if lane else None
                    ),
                    common.Failure,
                    OSError,
                )
                if lane:
                    if not args.no_kunit:
                        # Before the tools' tests: their KUnit cases build in
                        # um's build directory too.
                        run_kunit()
                        kunit_done = True
                    if not args.no_selftest:
                        tests = stages.start(
                            "selftest",
                            lambda r: selftest.do_selftest(
                                args, r, guests_done=guests_done.wait
                            ),
                        )
                    wait_for_guests = lane.finish
                    qemu_ran = (
                        stages.run("qemu", lambda: wait_for_guests(results)) or []
                    )
                    guests_done.set(qemu_ran)
    finally:
        if lane:
            lane.abort()
        guests_done.release()
    if qemu_ran:
        # What the guest lane has not fuzzed (none, unless it stopped).
        fuzzed = [
            g
            for g in fuzz.CI_GUESTS
            if g in qemu_ran and not (lane and g in lane.fuzzed)
        ]
        if fuzzed and not args.no_fuzz:
            stages.run(
                "fuzz",
                lambda: qemu_stages.do_fuzz(args, results, fuzzed, ci=True),
                common.Failure,
                OSError,
            )
    if not args.no_kunit and not kunit_done:
        run_kunit()
    if tests:
        stages.join(tests)
    elif not args.no_selftest:
        stages.run("selftest", lambda: selftest.do_selftest(args, results, qemu_ran))
    common.log(stages.table())
    common.log("test: finished in %ds" % (time.time() - t0))
    return finish(results)


def cmd_setup(args: argparse.Namespace) -> int:
    if not args.no_deps:
        do_deps(args)
    basetree.find_base(allow_download=not args.no_download)
    if args.no_build:
        return 0
    results = common.Results()
    if not series.do_series(args, results):
        return finish(results)
    try:
        apply.do_apply(args, results)
        build.do_build(args, results)
    except common.Failure as e:
        results.failed("setup", str(e))
    return finish(results)


def lock_out(args: argparse.Namespace) -> IO[str]:
    """Hold $LK_OUT/.lock for this process: one lk at a time per work dir."""
    out = common.out_dir(args)
    os.makedirs(out, exist_ok=True)
    f = open(os.path.join(out, ".lock"), "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        raise common.Failure("another lk is working in %s; wait for it to finish" % out)
    return f
