# SPDX-License-Identifier: GPL-2.0
"""Tests of the stages' plumbing: tracing, build lanes, progress, the
selftest stage."""

import collections
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

from unittest import mock

from .. import (
    apply,
    build,
    checkpatch,
    cli,
    common,
    kunit,
    lint,
    percheck,
    pipeline,
    qemu_stages,
    selftest,
    series,
    systable,
    targetconf,
    topics,
)
from .support import TOP


class Trace(unittest.TestCase):
    """LK_TRACE=FILE: a line per command, failed ones included."""

    def test_each_command_is_traced(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace")
            with mock.patch.dict(os.environ, {"LK_TRACE": path}):
                common.run(["true"])
                common.run(["false"], check=False)
                common.run_watched(
                    ["true"], os.path.join(d, "log"), "t", re.compile("x"), "lines"
                )
            with open(path) as f:
                lines = f.read().splitlines()
        self.assertEqual([l.split(" ", 3)[3] for l in lines], ["true", "false", "true"])
        for line in lines:
            start, secs = (float(w) for w in line.split()[:2])
            self.assertLessEqual(start, time.time() + 0.1)
            self.assertGreaterEqual(secs, 0)

    def test_no_trace_without_the_variable(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(
            os.environ, {"LK_TRACE": ""}
        ):
            common.run(["true"], cwd=d)
            self.assertEqual(os.listdir(d), [])


class BuildLanes(unittest.TestCase):
    """do_build(): full builds in one lane, partial builds and side tasks
    in another, every row counted once."""

    def run_build(self, names, side_tasks=(), target=None):
        calls = []
        lock = threading.Lock()

        def fake_build(t, tree, out, goals, results, baseline_dir, **kw):
            with lock:
                calls.append((t["name"], threading.current_thread().name))
            results.passed("build: " + t["name"])

        args = collections.namedtuple("Args", "out series_dir target matrix fresh")(
            "/nonexistent", TOP, target, "ci", True
        )
        results = common.Results(echo=False)
        with mock.patch.object(
            apply, "applied_tree", return_value="/t"
        ), mock.patch.object(common, "git", return_value=""), mock.patch.object(
            targetconf, "matrix", return_value=names
        ), mock.patch.object(
            targetconf, "baseline_stamp", return_value="s"
        ), mock.patch.object(
            build, "target_config", return_value={}
        ), mock.patch.object(
            build, "build_target", fake_build
        ), mock.patch.object(
            common, "log"
        ), mock.patch.object(
            systable, "report", lambda t, d, r: self.read_back.append((t["name"], d))
        ):
            build.do_build(args, results, side_tasks)
        return calls, [r[1] for r in results.rows]

    def setUp(self):
        self.read_back = []

    def test_the_tables_are_read_back_after_each_build(self):
        self.run_build(["x86_64", "arm"])
        self.assertEqual(
            sorted(self.read_back),
            [
                ("arm", "/nonexistent/build/arm"),
                ("x86_64", "/nonexistent/build/x86_64"),
            ],
        )

    def test_partial_builds_and_side_tasks_run_beside_the_full_ones(self):
        seen = []

        def task(results):
            seen.append(threading.current_thread().name)
            results.passed("checkpatch: p")

        calls, rows = self.run_build(["x86_64", "arm", "i386", "arm64"], [task])
        main = threading.current_thread().name
        self.assertEqual(
            [c for c in calls if c[1] == main], [("x86_64", main), ("i386", main)]
        )
        self.assertEqual([c[0] for c in calls if c[1] != main], ["arm", "arm64"])
        self.assertEqual(seen, ["side-lane"])
        # the full lane's rows first, then the side lane's, each once
        self.assertEqual(
            rows,
            [
                "build: x86_64",
                "build: i386",
                "checkpatch: p",
                "build: arm",
                "build: arm64",
            ],
        )

    def test_a_failing_lane_is_a_failed_row_not_a_lost_one(self):
        def task(results):
            raise common.Failure("side went wrong")

        _, rows = self.run_build(["x86_64", "arm"], [task])
        self.assertEqual(rows, ["build: x86_64", "build"])

    def test_named_targets_build_in_order_in_one_lane(self):
        calls, rows = self.run_build([], target=["arm", "x86_64"])
        main = threading.current_thread().name
        self.assertEqual(calls, [("arm", main), ("x86_64", main)])


class TestStages(unittest.TestCase):
    """Where `lk test` runs checkpatch: beside the builds, or in the check
    stage when it builds nothing; never twice, never not at all.  Where
    it boots guests and runs the tools' own tests."""

    @staticmethod
    def lk_test(argv, *fakes):
        """`lk test ARGV` with the series checked and applied by fakes, and
        each (module, name, value) of fakes patched in: (exit code, the
        mock of common.log)."""
        with contextlib.ExitStack() as stack:
            d = stack.enter_context(tempfile.TemporaryDirectory())
            for module, name, value in (
                (series, "do_series", mock.Mock(return_value=True)),
                (apply, "do_apply", mock.Mock(return_value=("/t", [], {}))),
                (topics, "do_topics", mock.Mock()),
            ) + fakes:
                stack.enter_context(mock.patch.object(module, name, value))
            log = stack.enter_context(mock.patch.object(common, "log"))
            return cli.main(["--out", d, "test"] + list(argv)), log

    def checkpatch_runs(self, *flags):
        runs, topic_runs = [], []

        def fake_check(args, results, tree, entries, commits, with_checkpatch=True):
            if with_checkpatch:
                runs.append("check")

        def fake_build(args, results, side_tasks=(), on_built=None):
            for task in side_tasks:
                task(results)

        self.lk_test(
            ["--no-qemu", "--no-kunit", "--no-selftest"] + list(flags),
            (percheck, "do_check", fake_check),
            (build, "do_build", fake_build),
            (checkpatch, "do_checkpatch", lambda *a: runs.append("build")),
            (topics, "do_topics", lambda *a: topic_runs.append(len(runs))),
        )
        # the topics check runs once, whatever else is left out
        self.assertEqual(len(topic_runs), 1)
        return runs

    def test_checkpatch_runs_beside_the_builds(self):
        self.assertEqual(self.checkpatch_runs(), ["build"])

    def test_checkpatch_runs_in_the_check_stage_without_builds(self):
        self.assertEqual(self.checkpatch_runs("--no-build"), ["check"])

    def test_no_check_means_no_checkpatch(self):
        self.assertEqual(self.checkpatch_runs("--no-check"), [])

    def test_guests_boot_as_their_kernels_are_built(self):
        """lk test boots a guest once the build stage has built its kernel,
        beside the builds after it, and fuzzes the x86 guests that booted."""
        events = []

        def fake_build(args, results, side_tasks=(), on_built=None):
            events.append(("nice", common.NICE))
            results.passed("build: i386")
            on_built("i386")
            results.passed("build: um")
            on_built("um")

        def fake_qemu(args, results, guests, cache):
            events.append(("boot", guests))
            results.passed("qemu %s: boot" % guests[0])

        def fake_fuzz(args, results, guests, ci):
            events.append(("fuzz", guests, ci))

        code, log = self.lk_test(
            ["--no-check", "--no-kunit", "--no-selftest"],
            (build, "do_build", fake_build),
            (qemu_stages, "do_qemu", fake_qemu),
            (qemu_stages, "do_fuzz", fake_fuzz),
        )
        self.assertEqual(code, 0)
        self.assertEqual(
            events, [("nice", 19), ("boot", ["i386"]), ("fuzz", ["i386"], True)]
        )
        self.assertEqual(common.NICE, 0)
        table = [c.args[0] for c in log.call_args_list if "stage times" in c.args[0]]
        self.assertRegex(table[0], r"\n  qemu +\d+s +1 passed, 0 failed")

    def test_the_tools_tests_start_beside_the_guest_lane(self):
        """Once the kernels are built (and um's KUnit run, whose build
        directory the tools' KUnit cases share), the selftest stage starts
        while guests still boot; it is waited for at the end, and its rows
        are counted in its own line."""
        events = []
        started = threading.Event()

        def fake_build(args, results, side_tasks=(), on_built=None):
            results.passed("build: i386")
            on_built("i386")

        def fake_qemu(args, results, guests, cache):
            # The guest is still booting when the tests start.
            self.assertTrue(started.wait(10), "the selftest stage did not start")
            events.append("boot done")
            results.passed("qemu %s: boot" % guests[0])

        def fake_kunit(args, results, arch, configs):
            events.append("kunit")
            results.passed("kunit %s: suite" % arch)
            return True

        def fake_selftest(args, results, qemu_ran=(), guests_done=None):
            events.append("selftest started")
            started.set()
            events.append(("selftest heard", guests_done()))
            results.passed("selftest: one")
            results.passed("selftest: two")

        code, log = self.lk_test(
            ["--no-check", "--no-fuzz"],
            (build, "do_build", fake_build),
            (qemu_stages, "do_qemu", fake_qemu),
            (kunit, "kunit_runs", mock.Mock(return_value=[("um", ["all"])])),
            (kunit, "do_kunit", fake_kunit),
            (selftest, "do_selftest", fake_selftest),
        )
        self.assertEqual(code, 0)
        self.assertEqual(
            events,
            ["kunit", "selftest started", "boot done", ("selftest heard", ["i386"])],
        )
        table = [c.args[0] for c in log.call_args_list if "stage times" in c.args[0]]
        self.assertRegex(
            table[0],
            r"\n  selftest +\d+s +2 passed, 0 failed, 0 skipped  \(beside qemu\)\n",
        )
        self.assertRegex(table[0], r"\n  qemu +\d+s +1 passed, 0 failed")
        summary = [c.args[0] for c in log.call_args_list if " passed, " in c.args[0]]
        self.assertEqual(summary[-1], "5 passed, 0 failed")


class Progress(unittest.TestCase):
    """Long steps say how far they got; `lk test` times its stages."""

    def test_a_long_step_reports_progress(self):
        with tempfile.TemporaryDirectory() as d:
            logfile = os.path.join(d, "log")
            script = (
                "import time\n"
                "for i in range(3):\n"
                "    print('  CC      a%d.o' % i, flush=True)\n"
                "    time.sleep(0.6)\n"
                "print('warning: not counted')\n"
            )
            printed = []
            with mock.patch.object(common, "PROGRESS_SECS", 0.5), mock.patch.object(
                common, "log", printed.append
            ):
                r = common.run_watched(
                    [sys.executable, "-c", script],
                    logfile,
                    "build x",
                    build.BUILD_STEP_RE,
                    "files built",
                )
            self.assertEqual(r.returncode, 0)
            self.assertGreaterEqual(len(printed), 2, printed)
            counts = [
                int(
                    re.match(
                        r"progress: build x: (\d+) files built " r"after \d+s$", p
                    ).group(1)
                )
                for p in printed
            ]
            self.assertEqual(counts, sorted(counts))
            self.assertLessEqual(counts[-1], 3)
            self.assertGreaterEqual(counts[-1], 1)
            with open(logfile) as f:
                self.assertIn("warning: not counted", f.read())

    def test_a_step_past_its_time_is_stopped(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(
            common, "PROGRESS_SECS", 0.2
        ), mock.patch.object(common, "log"):
            t0 = time.time()
            with self.assertRaises(subprocess.TimeoutExpired):
                common.run_watched(
                    ["sleep", "30"],
                    os.path.join(d, "log"),
                    "x",
                    build.BUILD_STEP_RE,
                    "files",
                    timeout=1,
                )
            self.assertLess(time.time() - t0, 10)

    def test_stage_table(self):
        results = common.Results(echo=False)
        stages = pipeline.Stages(results)
        with mock.patch.object(common, "log"):
            stages.run("check", lambda: results.passed("a"))
            stages.run(
                "build",
                lambda: (_ for _ in ()).throw(common.Failure("no compiler")),
                common.Failure,
            )
        self.assertEqual(results.rows[-1], ("FAIL", "build", "no compiler"))
        table = stages.table()
        self.assertRegex(
            table, r"(?m)^  check +\d+s +1 passed, 0 failed, " r"0 skipped$"
        )
        self.assertRegex(
            table, r"(?m)^  build +\d+s +0 passed, 1 failed, " r"0 skipped$"
        )
        self.assertRegex(table, r"(?m)^  total +\d+s$")


def ran(tests, verdict="OK"):
    """The lines that end `unittest -v` output after that many tests."""
    return "-----\nRan %d test%s in 0.1s\n\n%s\n" % (
        tests,
        "" if tests == 1 else "s",
        verdict,
    )


class SelftestOutput(unittest.TestCase):
    """Reading `unittest -v` output into one result per test."""

    LOG = textwrap.dedent(
        """\
        test_a (__main__.One.test_a) ... ok
        test_b (__main__.One.test_b) ... /x/lk:1: ResourceWarning: unclosed
          have = open(path).read()
        ResourceWarning: Enable tracemalloc
        ok
        test_c (__main__.Two.test_c) ... skipped 'no base tree'
        test_d (__main__.Two.test_d) ... FAIL
        test_e (__main__.Two.test_e) ... [sub] ERROR
        """
    )

    def test_outcome_split_over_lines_is_read(self):
        self.assertEqual(
            list(selftest.unittest_outcomes(self.LOG)),
            [
                ("One.test_a", "ok"),
                ("One.test_b", "ok"),
                ("Two.test_c", "skipped 'no base tree'"),
                ("Two.test_d", "FAIL"),
                ("Two.test_e", "ERROR"),
            ],
        )

    @staticmethod
    def selftest_results(log):
        """The Results of run_selftest_script() on a canned unittest log."""

        def fake_run(cmd, logfile, *args, **kw):
            with open(logfile, "a") as f:
                f.write(log)
            return subprocess.CompletedProcess(cmd, 0)

        results = common.Results()
        with tempfile.TemporaryDirectory() as out, mock.patch.object(
            common, "run_watched", fake_run
        ):
            args = collections.namedtuple("Args", "out quick")(out, True)
            rc, logfile = selftest.run_selftest_script(args, "lk", "selftest")
            selftest.report_selftest_script(results, "lk", "selftest", rc, logfile)
        return results

    @staticmethod
    def run_groups(fake_run, **kw):
        """do_selftest(**kw) with each group's run faked by fake_run."""
        results = common.Results()
        with tempfile.TemporaryDirectory() as out, mock.patch.object(
            common, "run_watched", fake_run
        ), mock.patch.object(
            lint, "do_lint", lambda args, results: results.passed("lint: all")
        ):
            args = collections.namedtuple("Args", "out quick")(out, True)
            selftest.do_selftest(args, results, **kw)
        return results

    def test_every_script_runs_and_hears_which_guests_booted(self):
        seen = {}

        def fake_run(cmd, logfile, label, *args, env=None, **kw):
            seen[label] = env["LK_QEMU_STAGE_GUESTS"]
            with open(logfile, "a") as f:
                f.write(
                    "test_a (__main__.%s.test_a) ... ok\n" % label.rpartition("-")[2]
                    + ran(1)
                )
            return subprocess.CompletedProcess(cmd, 0)

        results = self.run_groups(fake_run, qemu_ran=["x86_64", "i386"])
        self.assertEqual(
            seen,
            {
                "selftest": "x86_64 i386",
                "selftest-broken": "x86_64 i386",
                "selftest-broken-series": "x86_64 i386",
                "selftest-qemu": "x86_64 i386",
                "selftest-qemu-arm": "x86_64 i386",
                "selftest-fuzz": "x86_64 i386",
                "selftest-bench": "x86_64 i386",
                "selftest-lava": "x86_64 i386",
                "selftest-mlist": "x86_64 i386",
            },
        )
        self.assertEqual(
            [r[1] for r in results.rows],
            [
                "selftest: selftest.test_a",
                "selftest-broken: broken.test_a",
                "selftest-broken-series: series.test_a",
                "selftest-qemu: qemu.test_a",
                "selftest-qemu-arm: arm.test_a",
                "selftest-fuzz: fuzz.test_a",
                "selftest-bench: bench.test_a",
                "selftest-lava: lava.test_a",
                "selftest-mlist: mlist.test_a",
                "lint: all",
            ],
        )
        self.assertRegex(results.summary(), r"^10 passed, 0 failed")

    def test_guest_groups_wait_for_the_lane_and_the_others_do_not(self):
        """Beside the guest lane (guests_done given): the groups that read
        the lane's guests start once it returns, the others at once."""
        seen = {}
        others = [
            t for s, t in selftest.SELFTEST_SCRIPTS if s not in selftest.GUEST_GROUPS
        ]
        all_others = threading.Event()
        lock = threading.Lock()

        def fake_run(cmd, logfile, label, *args, env=None, **kw):
            with lock:
                seen[label] = (all_others.is_set(), env["LK_QEMU_STAGE_GUESTS"])
                if all(t in seen for t in others):
                    all_others.set()
            with open(logfile, "a") as f:
                f.write(
                    "test_a (__main__.%s.test_a) ... ok\n" % label.rpartition("-")[2]
                    + ran(1)
                )
            return subprocess.CompletedProcess(cmd, 0)

        def guests_done():
            # The lane ends only once every other group has started.
            self.assertTrue(all_others.wait(10), "a group waited for the lane")
            return ["x86_64"]

        results = self.run_groups(fake_run, guests_done=guests_done)
        self.assertEqual(
            seen,
            {
                "selftest": (False, ""),
                "selftest-broken": (False, ""),
                "selftest-broken-series": (False, ""),
                "selftest-qemu": (True, "x86_64"),
                "selftest-qemu-arm": (True, "x86_64"),
                "selftest-fuzz": (False, ""),
                "selftest-bench": (False, ""),
                "selftest-lava": (True, "x86_64"),
                "selftest-mlist": (False, ""),
            },
        )
        self.assertRegex(results.summary(), r"^10 passed, 0 failed")

    def test_outcome_after_a_docstring_is_read(self):
        log = (
            "test_a (__main__.One.test_a)\n"
            "What test_a checks ... ok\n"
            "test_b (__main__.One.test_b)\n"
            "What test_b checks ... FAIL\n"
        )
        self.assertEqual(
            list(selftest.unittest_outcomes(log)),
            [("One.test_a", "ok"), ("One.test_b", "FAIL")],
        )

    def test_skipped_class_is_not_a_lost_outcome(self):
        log = (
            "setUpClass (__main__.Real) ... skipped 'no base tree'\n"
            "test_a (__main__.One.test_a) ... ok\n" + ran(1, "OK (skipped=1)")
        )
        results = self.selftest_results(log)
        self.assertFalse(results.has_failure("selftest"), results.rows)
        self.assertRegex(results.summary(), r"^1 passed, 0 failed, 1 skipped")

    def test_a_group_of_skipped_classes_ran_and_an_empty_one_did_not(self):
        # The boots of the arm guests without their kernels: each class
        # skips, which is a SKIP row each and no failure...
        log = (
            "setUpClass (__main__.BootArm64) ... skipped 'no arm64 kernel'\n"
            "setUpClass (__main__.BootArm) ... skipped 'no arm kernel'\n"
            + ran(0, "OK (skipped=2)")
        )
        results = self.selftest_results(log)
        self.assertFalse(results.has_failure("selftest"), results.rows)
        self.assertRegex(results.summary(), r"^0 passed, 0 failed, 2 skipped")
        # ...but a script that reports nothing at all failed to run.
        results = self.selftest_results(ran(0, "OK"))
        self.assertTrue(results.has_failure("selftest"), results.rows)

    def test_unread_outcome_fails_the_run(self):
        # A test whose outcome cannot be read must not vanish from the count.
        log = (
            "test_a (__main__.One.test_a) ... ok\n"
            "test_b (__main__.One.test_b) ... \n\n" + ran(2)
        )
        results = self.selftest_results(log)
        self.assertIn(("PASS", "selftest: One.test_a", ""), results.rows)
        self.assertTrue(results.has_failure("selftest"), results.rows)
        self.assertRegex(results.summary(), r"^1 passed, 1 failed")

    def test_failure_rows_say_why(self):
        # CI keeps the result lines, not the log: they carry the exception.
        rule, dash = "=" * 70, "-" * 70
        log = "\n".join(
            [
                "test_a (__main__.One.test_a)",
                "What test_a checks ... FAIL",
                "test_b (__main__.One.test_b) ... ERROR",
                "test_c (__main__.One.test_c) ... FAIL",
                "",
                rule,
                "FAIL: test_a (__main__.One.test_a)",
                "What test_a checks",
                dash,
                "Traceback (most recent call last):",
                '  File "/x/t.py", line 9, in test_a',
                '    self.assertEqual(r[0], "PASS", msg)',
                "    ^^^^^^^^^^^^^^^^",
                "AssertionError: 'FAIL' != 'PASS'",
                "- FAIL",
                "+ PASS",
                " : ('FAIL', 'qemu x86_64/32: after', 'exit 1'); it printed:",
                "left over: 851 (hang) S 1 850",
                "",
                rule,
                "ERROR: test_b (__main__.One.test_b)",
                dash,
                "Traceback (most recent call last):",
                '  File "/x/t.py", line 12, in test_b',
                "    1 / 0",
                "ZeroDivisionError: division by zero" + " and more" * 100,
                "",
                ran(3, "FAILED (failures=2, errors=1)"),
            ]
        )
        rows = {r[1]: r for r in self.selftest_results(log).rows}
        a = rows["selftest: One.test_a"][2]
        self.assertTrue(
            a.startswith(
                "AssertionError: 'FAIL' != 'PASS' - FAIL + PASS : ('FAIL', "
                "'qemu x86_64/32: after', 'exit 1'); it printed: left over: "
                "851 (hang) S 1 850; log at "
            ),
            a,
        )
        b = rows["selftest: One.test_b"][2]
        self.assertTrue(b.startswith("ZeroDivisionError: division by zero"), b)
        self.assertIn("...; log at ", b)
        self.assertLess(len(b), selftest.FAILURE_TEXT + 200)
        # No block (the log was cut): the row still points at the log.
        self.assertRegex(rows["selftest: One.test_c"][2], r"^see .*selftest\.log$")
        self.assertEqual(self.selftest_results(log).count("FAIL"), 3)


class PackageLists(unittest.TestCase):
    """CI's setup installs scripts/packages.txt only; the emulators of the
    guests outside CI are in scripts/packages-full.txt."""

    def installs(self, argv):
        args = cli.parser().parse_args(argv)
        calls = []

        def run(cmd, **kw):
            calls.append(cmd)
            # dpkg-query: nothing installed, so every package is missing
            return subprocess.CompletedProcess(cmd, 0, "", "")

        with mock.patch.object(common, "run", run), mock.patch.object(
            common, "log", lambda *a: None
        ):
            pipeline.do_deps(args)
        return calls[-1][calls[-1].index("--no-install-recommends") + 1 :]

    def test_ci_setup_leaves_out_the_full_list(self):
        base, full = pipeline.package_list(False), pipeline.package_list(True)
        extra = full[len(base) :]
        self.assertEqual(full[: len(base)], base)
        self.assertIn("qemu-system-misc", extra)
        self.assertFalse(set(base) & set(extra))
        self.assertEqual(self.installs(["setup", "--no-build"]), base)
        self.assertEqual(self.installs(["deps"]), base)
        self.assertEqual(self.installs(["deps", "--full"]), full)
        self.assertEqual(self.installs(["setup"]), full)

    def test_ci_run_sets_up_without_building(self):
        with open(os.path.join(TOP, ".ci", "run")) as f:
            self.assertIn("scripts/lk setup --no-build\n", f.read().replace(";", "\n"))
