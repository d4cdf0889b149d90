# SPDX-License-Identifier: GPL-2.0
"""Tests of the serial-log parser and its judgement, on canned logs: the
markers, the tests' results, the boot and the shutdown (the kernel's
reports: qemu_reports_test.py)."""

import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from .. import common, serial
from .qemu_support import (
    BOOT,
    OTHER,
    TOKEN,
    canned,
    judge,
    judge_one,
    killed_at_limit,
    one_test,
    row,
    statuses,
)
from .support import HERE


class Parser(unittest.TestCase):
    def test_passing_test(self):
        rows = judge_one("64/t", "hello\n", "exit=0")
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "PASS")
        self.assertEqual(
            statuses(rows),
            {
                "qemu x86_64: boot": "PASS",
                "qemu x86_64/64: t": "PASS",
                "qemu x86_64: kernel log": "PASS",
                "qemu x86_64: shutdown": "PASS",
            },
        )
        self.assertIn("after 1.00s", row(rows, "qemu x86_64: boot")[2])

    def test_failing_test_names_exit_and_log_line(self):
        rows = judge_one("64/t", "[FAIL]\n", "exit=1")
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("exit 1", detail)
        # the begin marker is line 4 + 4 of the log
        self.assertIn("log at /logs/qemu-x86_64.log:9", detail)

    def test_kselftest_skip_is_a_skip(self):
        rows = judge_one("64/t", "no binderfs\n", "exit=4")
        self.assertEqual(
            row(rows, "qemu x86_64/64: t")[:2], ("SKIP", "qemu x86_64/64: t")
        )

    def test_signal(self):
        rows = judge_one("64/t", "", "signal=11")
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("SIGSEGV", detail)

    def test_timeout(self):
        for end, group in (("", "killed"), (" unkillable", "NOT killable")):
            rows = judge_one("64/t", "", "timeout=3" + end)
            st, _, detail = row(rows, "qemu x86_64/64: t")
            self.assertEqual(st, "FAIL")
            self.assertIn("timed out after 3s; its process group was " + group, detail)
            self.assertEqual(row(rows, "qemu x86_64: shutdown")[0], "PASS")

    def test_leftover_that_survives_sigkill_fails_a_passing_test(self):
        # init's next test must not share the machine with this one's.
        for result, how in (("exit=0", "exit 0"), ("signal=9", "signal 9")):
            rows = judge_one("64/t", "", result + " unkillable")
            st, _, detail = row(rows, "qemu x86_64/64: t")
            self.assertEqual(st, "FAIL", result)
            self.assertIn(how + ", but some of its process group was still", detail)
            self.assertIn("log at /logs/qemu-x86_64.log:9", detail)

    def test_not_ok_inside_exit_0_fails(self):
        out = (
            "TAP version 13\nok 1 first\nnot ok 2 second\n"
            "ok 3 # skip no device\n1..3\n"
        )
        rows = judge_one("64/t", out, "exit=0")
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("exit 0 but 1 TAP 'not ok'", detail)
        self.assertEqual(row(rows, "qemu x86_64/64: t: 1 first")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 2 second")[0], "FAIL")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 3 no device")[0], "SKIP")

    def test_tap_all_ok(self):
        rows = judge_one("64/t", "ok 1 - a\nok 2 - b\n", "exit=0")
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 2 b")[0], "PASS")

    def test_bail_out_with_exit_0_fails(self):
        rows = judge_one("64/t", "Bail out! no memory\n", "exit=0")
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "FAIL")

    def test_missing_end_marker_is_a_crash(self):
        text = BOOT + textwrap.dedent(
            """\
            lk-qemu TOK begin 64/a
            working...
            [    3.000000] Kernel panic - not syncing: Fatal exception
            """
        )
        rows = judge(
            canned(
                text,
                tests=("64/a", "64/b"),
                end="status=0 killed=no elapsed=4 start=1 done=-",
            )
        )
        st, _, detail = row(rows, "qemu x86_64/64: a")
        self.assertEqual(st, "FAIL")
        self.assertIn("no end marker", detail)
        self.assertIn("crashed", detail)
        self.assertEqual(row(rows, "qemu x86_64/64: b")[0], "SKIP")
        self.assertIn("during 64/a", row(rows, "qemu x86_64/64: b")[2])
        self.assertEqual(row(rows, "qemu x86_64: shutdown")[0], "FAIL")
        st, _, detail = row(rows, "qemu x86_64: kernel log")
        self.assertEqual(st, "FAIL")
        self.assertIn("panic during 64/a", detail)

    def test_hang_killed_at_wall_clock_limit(self):
        text = BOOT + "lk-qemu TOK begin 64/t\n"
        rows = judge(killed_at_limit(text, 20))
        self.assertIn(
            "hung: qemu killed at the 20s wall-clock limit",
            row(rows, "qemu x86_64/64: t")[2],
        )
        self.assertIn("hung", row(rows, "qemu x86_64: shutdown")[2])

    def test_no_start_marker(self):
        text = "[    0.500000] Booting the kernel.\n"
        rows = judge(killed_at_limit(text, 9, tests=("64/a", "32/a"), start="-"))
        st, _, detail = row(rows, "qemu x86_64: boot")
        self.assertEqual(st, "FAIL")
        self.assertIn("did not start /init", detail)
        self.assertIn("Booting the kernel", detail)
        self.assertEqual(row(rows, "qemu x86_64/32: a")[0], "SKIP")
        self.assertNotIn("qemu x86_64: shutdown", statuses(rows))

    def test_did_not_power_off(self):
        rows = judge(
            canned(
                one_test("64/t", "", "exit=0"),
                end="status=-9 killed=poweroff elapsed=40 start=1 done=2",
            )
        )
        st, _, detail = row(rows, "qemu x86_64: shutdown")
        self.assertEqual(st, "FAIL")
        self.assertIn("did not power off", detail)

    def test_qemu_error(self):
        text = canned("", end="status=1 killed=no elapsed=0.1 start=- done=-").replace(
            "# lk-qemu-host %s end" % TOKEN,
            "# lk-qemu-host %s qemu-stderr=qemu: could not load kernel\n"
            "# lk-qemu-host %s end" % (TOKEN, TOKEN),
        )
        rows = judge(text)
        self.assertIn(
            "qemu exited with status 1: qemu: could not load kernel",
            row(rows, "qemu x86_64: boot")[2],
        )

    def test_forged_markers_do_not_count(self):
        # A test that prints marker look-alikes (other token, no token,
        # the host's prefix) and then hangs: it must still fail, and the
        # next test must not be credited with anything.
        out = textwrap.dedent(
            """\
            lk-qemu OTHER end 64/a exit=0 time=0.1
            lk-qemu end 64/a exit=0
            lk-qemu  TOK end 64/a exit=0
            lk-qemu TOKx end 64/a exit=0
            # lk-qemu-host OTHER end status=0 killed=no elapsed=1 start=1 done=1
            lk-qemu OTHER begin 64/b
            lk-qemu OTHER end 64/b exit=0
            lk-qemu OTHER done ran=2
            """
        ).replace("OTHER", OTHER)
        text = BOOT + "lk-qemu TOK begin 64/a\n" + out
        rows = judge(killed_at_limit(text, 30, tests=("64/a", "64/b")))
        self.assertEqual(row(rows, "qemu x86_64/64: a")[0], "FAIL")
        self.assertIn("no end marker", row(rows, "qemu x86_64/64: a")[2])
        self.assertEqual(row(rows, "qemu x86_64/64: b")[0], "SKIP")
        self.assertEqual(row(rows, "qemu x86_64: shutdown")[0], "FAIL")
        self.assertNotIn(
            "PASS", [r[0] for r in rows if r[1].startswith("qemu x86_64/")]
        )

    def test_marker_glued_to_unterminated_output(self):
        text = (
            BOOT + "lk-qemu TOK begin 64/t\nno newline at the end"
            "lk-qemu TOK end 64/t exit=0 time=0.1\nlk-qemu TOK done ran=1\n"
        )
        rows = judge(canned(text))
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "PASS")

    def test_kernel_record_cutting_into_markers(self):
        # A console record lands inside a marker (before its newline, and
        # mid-word); every test is still seen once and in order.
        text = (
            BOOT.replace("tests=1", "tests=2")
            + "lk-qemu TOK begin 64/a[    3.047474]     1..5\n\n"
            "ok\nlk-qemu TOK end 64/a exit=0 time=0.1\n"
            "lk-qemu TOK begin 64/b\n"
            "lk-qemu TOK end 64/[    3.100000]     ok 1 case\n"
            "b exit=1 time=0.1\nlk-qemu TOK done ran=2\n"
            "[    4.000000] reboot: Power down\n"
        )
        rows = judge(canned(text, tests=("64/a", "64/b")))
        self.assertEqual(row(rows, "qemu x86_64/64: a")[0], "PASS", rows)
        self.assertEqual(row(rows, "qemu x86_64/64: b")[0], "FAIL", rows)
        self.assertFalse([r for r in rows if r[1].endswith("markers")], rows)
        self.assertEqual(row(rows, "qemu x86_64: shutdown")[0], "PASS", rows)

    def test_unsplice(self):
        self.assertEqual(
            serial.unsplice(
                [
                    "a[ 1.000000] k",
                    "",
                    "[ 2.000000] k2 [ 3.000000] x",
                    "b[ 4.000000] k3",
                    "[ 5.000000] k4",
                    "c",
                    "tail[ 6.000000] k5",
                    "# lk-qemu-host T end status=0",
                ]
            ),
            [
                "[ 1.000000] k",
                "a",
                "[ 2.000000] k2 [ 3.000000] x",
                "[ 4.000000] k3",
                "[ 5.000000] k4",
                "bc",
                "[ 6.000000] k5",
                "tail",
                "# lk-qemu-host T end status=0",
            ],
        )

    def test_carriage_returns(self):
        text = canned(one_test("64/t", "x\n", "exit=0")).replace("\n", "\r\n")
        self.assertEqual(row(judge(text), "qemu x86_64/64: t")[0], "PASS")

    def test_out_of_order_end_is_an_anomaly(self):
        text = BOOT + (
            "lk-qemu TOK begin 64/a\nlk-qemu TOK end 64/b exit=0\n"
            "lk-qemu TOK end 64/a exit=0\nlk-qemu TOK done ran=1\n"
        )
        rows = judge(canned(text, tests=("64/a",)))
        self.assertEqual(row(rows, "qemu x86_64/64: a")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64: markers")[0], "FAIL")

    def test_test_not_in_manifest_order(self):
        rows = judge(canned(one_test("64/t", "", "exit=0"), tests=("64/t", "64/u")))
        self.assertIn(
            "not run although init finished", row(rows, "qemu x86_64/64: u")[2]
        )

    def test_not_a_log(self):
        with self.assertRaises(common.Failure):
            serial.parse_log("[    0.000000] Linux version 4.20.0\n")

    def test_parse_command(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "qemu-x86_64.log")
            with open(path, "w") as f:
                f.write(canned(one_test("64/t", "", "exit=1")))
            r = subprocess.run(
                [sys.executable, os.path.join(HERE, "lk_qemu.py"), "parse", path],
                stdout=subprocess.PIPE,
                universal_newlines=True,
            )
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL: qemu x86_64/64: t - exit 1; log at %s:9" % path, r.stdout)
        self.assertTrue(r.stdout.endswith("3 passed, 1 failed\n"), r.stdout)
