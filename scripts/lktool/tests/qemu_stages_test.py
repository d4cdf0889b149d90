# SPDX-License-Identifier: GPL-2.0
"""Tests of lk's QEMU stages: the harness runs in lk's process and its rows
join lk's results as they come."""

import argparse
import os
import tempfile
import threading
import time
import unittest
from unittest import mock

from .. import apply, boot, common, fuzz, kunit, qemu, qemu_stages
from .qemu_support import (
    boot_code,
    record_when_running,
    sigterm_while_booting,
    sleeping_qemu,
)


class InProcessStages(unittest.TestCase):
    def rows_of(self, harness, name="qemu x86_64"):
        results = common.Results(echo=False)
        results.passed("apply")
        qemu_stages.in_process(results, name, lambda: harness(results))
        return [(r[0], r[1]) for r in results.rows[1:]]

    def test_rows_that_name_the_failure_need_no_more(self):
        def harness(results):
            results.passed("qemu x86_64: boot")
            results.failed("qemu x86_64/64: t", "exit 1")

        self.assertEqual(
            self.rows_of(harness),
            [("PASS", "qemu x86_64: boot"), ("FAIL", "qemu x86_64/64: t")],
        )

    def test_a_failure_under_another_name_is_named_once_more(self):
        def harness(results):
            results.failed("qemu build/64: t", "did not compile")
            results.passed("qemu x86_64: boot")

        self.assertEqual(
            self.rows_of(harness),
            [
                ("FAIL", "qemu build/64: t"),
                ("PASS", "qemu x86_64: boot"),
                ("FAIL", "qemu x86_64"),
            ],
        )

    def test_an_error_that_stops_the_harness_is_a_failure(self):
        def harness(results):
            raise common.Failure("configs/qemu/x.conf: missing 'kernel'")

        results = common.Results(echo=False)
        qemu_stages.in_process(results, "fuzz", lambda: harness(results))
        self.assertEqual(
            results.rows, [("FAIL", "fuzz", "configs/qemu/x.conf: missing 'kernel'")]
        )

    def test_a_bug_in_the_harness_fails_the_stage_not_lk(self):
        def harness(results):
            results.passed("qemu x86_64: boot")
            raise KeyError("abis")

        with mock.patch.object(common, "log") as logged:
            self.assertEqual(
                self.rows_of(harness),
                [("PASS", "qemu x86_64: boot"), ("FAIL", "qemu x86_64")],
            )
        self.assertIn("KeyError", logged.call_args[0][0])

    def test_passing_rows_add_nothing(self):
        self.assertEqual(
            self.rows_of(lambda r: r.passed("bench: build"), "bench"),
            [("PASS", "bench: build")],
        )


class QemuStage(unittest.TestCase):
    def test_each_built_guest_boots_in_process_with_its_rows(self):
        out = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, out)
        for guest in ("x86_64", "i386"):
            kernel = qemu_stages.guest_kernel(guest, out)
            os.makedirs(os.path.dirname(kernel))
            open(kernel, "w").close()
        calls = []

        def fake_run(results, where, names, cache):
            calls.append((where, names, cache))
            cache.setdefault("built", []).append(names[0])
            results.passed("qemu %s: boot" % names[0])

        results = common.Results(echo=False)
        with mock.patch.object(apply, "applied_tree"), mock.patch.object(
            qemu, "run_guests", fake_run
        ), mock.patch.object(common, "log"):
            qemu_stages.do_qemu(argparse.Namespace(out=out), results)
        self.assertEqual([c[:2] for c in calls], [(out, ["i386"]), (out, ["x86_64"])])
        self.assertEqual(
            results.rows,
            [("PASS", "qemu i386: boot", ""), ("PASS", "qemu x86_64: boot", "")],
        )
        # one cache for the run: the programs of an ABI that both guests
        # run (32-bit x86) are built once
        self.assertIs(calls[0][2], calls[1][2])
        self.assertEqual(calls[1][2]["built"], ["i386", "x86_64"])

    def test_fuzz_passes_its_options_to_the_harness(self):
        calls = []
        results = common.Results(echo=False)
        args = argparse.Namespace(out="/o", minutes=2.0, seed=7, phase=["root-time"])
        with mock.patch.object(apply, "applied_tree"), mock.patch.object(
            fuzz, "fuzz_guests", lambda *a: calls.append(a[1:])
        ), mock.patch.object(common, "log"):
            qemu_stages.do_fuzz(args, results, ["x86_64"], ci=True)
        self.assertEqual(calls, [("/o", ["x86_64"], True, 2.0, 7, ["root-time"])])


class BootProgressLines(unittest.TestCase):
    def test_end_markers_are_counted_once_across_reads(self):
        p = boot.BootProgress("x86_64", "t0k", 3, 0.0)
        first = b"lk-qemu t0k begin 64/a\nlk-qemu t0k end 64/a exit=0\nlk-qemu t0k en"
        p.feed(0, first)
        tail = first[-128:]
        p.feed(len(tail), tail + b"d 64/b exit=0\n")
        self.assertEqual(p.done, 2)
        said = []
        with mock.patch.object(common, "log", said.append), mock.patch.object(
            common, "PROGRESS_SECS", 60
        ):
            p.tick(30.0)
            p.tick(61.0)
        self.assertEqual(said, ["progress: boot x86_64: 2 of 3 tests done after 61s"])


class Lane(unittest.TestCase):
    """qemu_stages.GuestLane: `lk test` boots each guest once its kernel is
    built, beside the next builds."""

    def test_each_guest_boots_once_its_kernel_is_built(self):
        booted, nice = [], []

        def fake_qemu(args, results, guests, cache):
            nice.append(common.NICE)
            booted.append((guests, id(cache)))
            results.passed("qemu %s: boot" % guests[0])

        results = common.Results(echo=False)
        with mock.patch.object(qemu_stages, "do_qemu", fake_qemu), mock.patch.object(
            common, "log"
        ):
            old = common.NICE
            lane = qemu_stages.GuestLane(argparse.Namespace(), nice=7, workers=1)
            lane.built("i386")
            lane.built("um")  # no guest boots it
            lane.built("arm64-guest")
            ran = lane.finish(results)
            lane.abort()  # after finish(): nothing left to do
        self.assertEqual(common.NICE, old)
        self.assertEqual(ran, ["i386", "arm64", "arm64-max"])
        self.assertEqual([b[0] for b in booted], [["i386"], ["arm64"], ["arm64-max"]])
        # the builds beside the boots are niced; one cache for the lane
        self.assertEqual(nice, [7, 7, 7])
        self.assertEqual(len({b[1] for b in booted}), 1)
        self.assertEqual(
            [r[1] for r in results.rows],
            ["qemu i386: boot", "qemu arm64: boot", "qemu arm64-max: boot"],
        )

    def test_fuzz_guests_are_fuzzed_right_after_their_boot(self):
        done = []

        def fake_qemu(args, results, guests, cache):
            done.append("boot " + guests[0])
            if guests == ["x86_64"]:
                raise common.Failure("no boot")

        def fake_fuzz(args, results, guests, ci):
            done.append("fuzz %s%s" % (guests[0], " ci" if ci else ""))
            if guests == ["i386"]:
                raise OSError("no trinity")
            results.passed("fuzz %s: phase" % guests[0])

        results = common.Results(echo=False)
        with mock.patch.object(qemu_stages, "do_qemu", fake_qemu), mock.patch.object(
            qemu_stages, "do_fuzz", fake_fuzz
        ), mock.patch.object(common, "log"):
            lane = qemu_stages.GuestLane(
                argparse.Namespace(), fuzz_guests=("x86_64", "i386"), workers=1
            )
            lane.built("x86_64")
            lane.built("arm-guest")
            lane.built("i386")
            ran = lane.finish(results)
        # a failed boot is still fuzzed, as the fuzz stage did; an error
        # of the fuzz run is a FAIL row and the lane goes on
        self.assertEqual(
            done,
            ["boot x86_64", "fuzz x86_64 ci", "boot arm", "boot i386", "fuzz i386 ci"],
        )
        self.assertEqual(ran, ["x86_64", "arm", "i386"])
        self.assertEqual(lane.fuzzed, ["x86_64", "i386"])
        self.assertEqual(
            [r[:2] for r in results.rows],
            [("FAIL", "qemu x86_64"), ("PASS", "fuzz x86_64: phase"), ("FAIL", "fuzz")],
        )

    def test_a_guest_that_raises_fails_and_the_next_boots(self):
        def fake_qemu(args, results, guests, cache):
            if guests == ["arm"]:
                raise KeyError("bug")
            results.passed("qemu %s: boot" % guests[0])

        results = common.Results(echo=False)
        with mock.patch.object(qemu_stages, "do_qemu", fake_qemu), mock.patch.object(
            common, "log"
        ):
            lane = qemu_stages.GuestLane(argparse.Namespace())
            lane.built("arm-guest")
            lane.built("x86_64")
            lane.finish(results)
        self.assertEqual(
            [r[:2] for r in results.rows],
            [("FAIL", "qemu arm"), ("PASS", "qemu x86_64: boot")],
        )

    def test_two_guests_boot_side_by_side_and_keep_their_rows_apart(self):
        """Two workers: the second guest boots while the first one is
        still running, a failure of one is not blamed on the other, and
        the rows come guest by guest in the order the kernels were built."""
        both = threading.Barrier(2, timeout=20)
        failed = threading.Event()

        def fake_qemu(args, results, guests, cache):
            g = guests[0]

            def harness():
                both.wait()  # both guests are booting now
                if g == "i386":
                    results.failed("qemu i386/32: futex_y2038", "exit 1")
                    failed.set()
                else:
                    failed.wait(20)
                    results.passed("qemu %s/64: futex_y2038" % g)

            qemu_stages.in_process(results, "qemu " + g, harness)

        results = common.Results(echo=False)
        with mock.patch.object(qemu_stages, "do_qemu", fake_qemu), mock.patch.object(
            common, "log"
        ):
            lane = qemu_stages.GuestLane(argparse.Namespace(), workers=2)
            lane.built("x86_64")
            lane.built("i386")
            ran = lane.finish(results)
        self.assertEqual(ran, ["x86_64", "i386"])
        self.assertEqual(
            [r[:2] for r in results.rows],
            [
                ("PASS", "qemu x86_64/64: futex_y2038"),
                ("FAIL", "qemu i386/32: futex_y2038"),
            ],
        )

    def test_guests_of_one_abi_build_its_programs_once(self):
        """Two guests of one ABI that start together (two workers) build
        its programs once: qemu.run_guest() builds them under a lock."""
        calls = []

        def build_tests(specs, abi, scratch, blog, tree, results):
            calls.append(abi)
            time.sleep(0.3)  # long enough for the other guest to come in
            return ["prog-" + abi]

        class Stop(Exception):
            pass

        packed = []

        def make_initramfs(path, init, tests, scale):
            packed.append(tests)
            raise Stop  # what follows is the boot

        cache: dict = {}

        def one(name):
            guest = {"name": name, "abis": ["32"], "tests": None, "init_abi": "32"}
            try:
                qemu.run_guest(
                    guest,
                    [],
                    "/t",
                    "/s",
                    "/l",
                    common.Results(echo=False),
                    built_cache=cache,
                )
            except Stop:
                pass

        with mock.patch.object(
            qemu, "guest_kernel", return_value=("/b/bzImage", "/b")
        ), mock.patch.object(
            qemu.boot, "missing_kernel", return_value=None
        ), mock.patch.object(
            qemu.qemu_conf, "debug_scale", return_value=(1, None)
        ), mock.patch.object(
            qemu.qemu_conf, "guest_tests", side_effect=lambda g, s: s
        ), mock.patch.object(
            qemu.qemu_conf, "load_abi", side_effect=lambda a: a
        ), mock.patch.object(
            qemu.userspace, "build_tests", build_tests
        ), mock.patch.object(
            qemu.userspace, "build_init", return_value="init"
        ), mock.patch.object(
            qemu.userspace, "make_initramfs", make_initramfs
        ):
            threads = [
                threading.Thread(target=one, args=(n,)) for n in ("x86_64", "i386")
            ]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        self.assertEqual(calls, ["32"])
        self.assertEqual(packed, [["prog-32"], ["prog-32"]])

    def overlaps(self, calls, *patches):
        """How many of calls() ran at once at most, in two threads, with
        each mock.patch.object of patches (target, name) a function
        that takes 0.2 s."""
        now, most, lock = [0], [0], threading.Lock()

        def slow(*a, **kw):
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
            time.sleep(0.2)
            with lock:
                now[0] -= 1
            return ""

        ctx = [mock.patch.object(t, n, slow) for t, n in patches]
        for c in ctx:
            c.start()
        try:
            threads = [threading.Thread(target=calls) for _ in range(2)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        finally:
            for c in ctx:
                c.stop()
        return most[0]

    def test_two_guests_check_the_tree_out_one_at_a_time(self):
        """Both guests of a lane call apply.applied_tree(), which checks the
        series out: two git checkouts at once found the index locked
        ("Unable to create .../index.lock: File exists", arm64-max in a
        CI run)."""
        args = argparse.Namespace(out="/lk-out", series_dir="/s")
        with mock.patch.object(apply, "is_managed", return_value=True), mock.patch(
            "os.path.isdir", return_value=True
        ), mock.patch.object(
            apply, "series_stamp", return_value="stamp"
        ), mock.patch.object(
            common, "run", return_value=mock.Mock(stdout="stamp\n")
        ):
            most = self.overlaps(lambda: apply.applied_tree(args), (common, "git"))
        self.assertEqual(most, 1)

    def test_two_guests_parse_their_kunit_output_one_at_a_time(self):
        """kunit.parse_guest_kunit() replaces kunit.py in the tree, which
        the other guest's parse may be running from."""
        args = argparse.Namespace(out="/lk-out")
        with mock.patch.object(apply, "applied_tree", return_value="/t"):
            most = self.overlaps(
                lambda: kunit.parse_guest_kunit(
                    args, common.Results(echo=False), "x86_64", "/l"
                ),
                (kunit, "install_kunit_tool"),
                (kunit, "parse_kunit_log"),
            )
        self.assertEqual(most, 1)

    def test_sigterm_while_another_thread_starts_qemu_kills_it(self):
        """The signal comes after the lane's thread has started qemu and
        before it has recorded it (a loaded machine; here the thread is
        held there for a second): the handler waits for the record and
        kills that qemu too."""
        here = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        with tempfile.TemporaryDirectory() as d:
            fake, pidfile, kernel, log = sleeping_qemu(d)
            slow = record_when_running(pidfile, before="time.sleep(1)")
            code = boot_code(here, fake, kernel, log, before=slow, in_thread=True)
            sigterm_while_booting(self, code, pidfile)

    def test_sigterm_kills_the_qemu_of_a_boot_in_another_thread(self):
        """The main thread builds while the lane boots: SIGTERM to lk kills
        that qemu (a session of its own) and lk exits 143."""
        here = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
        with tempfile.TemporaryDirectory() as d:
            fake, pidfile, kernel, log = sleeping_qemu(d)
            code = boot_code(here, fake, kernel, log, in_thread=True)
            sigterm_while_booting(self, code, pidfile)
