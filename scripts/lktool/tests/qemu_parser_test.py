# SPDX-License-Identifier: GPL-2.0
"""Tests of the serial-log parser and its judgement, on canned logs."""

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
    crash_report_kinds,
    judge,
    one_test,
    row,
    statuses,
)
from .support import HERE


class Parser(unittest.TestCase):
    def test_passing_test(self):
        rows = judge(canned(one_test("64/t", "hello\n", "exit=0")))
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
        rows = judge(canned(one_test("64/t", "[FAIL]\n", "exit=1")))
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("exit 1", detail)
        # the begin marker is line 4 + 4 of the log
        self.assertIn("log at /logs/qemu-x86_64.log:9", detail)

    def test_kselftest_skip_is_a_skip(self):
        rows = judge(canned(one_test("64/t", "no binderfs\n", "exit=4")))
        self.assertEqual(
            row(rows, "qemu x86_64/64: t")[:2], ("SKIP", "qemu x86_64/64: t")
        )

    def test_signal(self):
        rows = judge(canned(one_test("64/t", "", "signal=11")))
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("SIGSEGV", detail)

    def test_timeout(self):
        rows = judge(canned(one_test("64/t", "", "timeout=3")))
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("timed out after 3s", detail)
        self.assertEqual(row(rows, "qemu x86_64: shutdown")[0], "PASS")

    def test_not_ok_inside_exit_0_fails(self):
        out = (
            "TAP version 13\nok 1 first\nnot ok 2 second\n"
            "ok 3 # skip no device\n1..3\n"
        )
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("exit 0 but 1 TAP 'not ok'", detail)
        self.assertEqual(row(rows, "qemu x86_64/64: t: 1 first")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 2 second")[0], "FAIL")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 3 no device")[0], "SKIP")

    def test_tap_all_ok(self):
        rows = judge(canned(one_test("64/t", "ok 1 - a\nok 2 - b\n", "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 2 b")[0], "PASS")

    def test_bail_out_with_exit_0_fails(self):
        rows = judge(canned(one_test("64/t", "Bail out! no memory\n", "exit=0")))
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
        rows = judge(
            canned(
                text, end="status=-9 killed=limit elapsed=20 start=1 done=-", limit=20
            )
        )
        self.assertIn(
            "hung: qemu killed at the 20s wall-clock limit",
            row(rows, "qemu x86_64/64: t")[2],
        )
        self.assertIn("hung", row(rows, "qemu x86_64: shutdown")[2])

    def test_no_start_marker(self):
        text = "[    0.500000] Booting the kernel.\n"
        rows = judge(
            canned(
                text,
                tests=("64/a", "32/a"),
                end="status=-9 killed=limit elapsed=9 start=- done=-",
                limit=9,
            )
        )
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

    def test_kasan_report(self):
        out = textwrap.dedent(
            """\
            [    5.100000] ==================================================================
            [    5.100001] BUG: KASAN: slab-out-of-bounds in compat_get_timex+0x52/0x90
            [    5.100002] Write of size 8 at addr ffff88801c8e8f40 by task t/61
            [    5.100003] Call Trace:
            """
        )
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        st, _, detail = row(rows, "qemu x86_64: kernel log")
        self.assertEqual(st, "FAIL")
        self.assertIn(
            "KASAN during 64/t: BUG: KASAN: slab-out-of-bounds in compat_get_timex",
            detail,
        )
        self.assertIn("qemu-x86_64.log:11", detail)

    def test_oops_is_one_report_panic_another(self):
        out = textwrap.dedent(
            """\
            [    5.1] ignored: not a printk time stamp
            [    5.100000] BUG: unable to handle kernel NULL pointer dereference at 0000000000000000
            [    5.100001] PGD 0 P4D 0
            [    5.100002] Oops: 0002 [#1] SMP PTI
            [    5.100003] Call Trace:
            [    5.200000] Kernel panic - not syncing: Fatal exception
            """
        )
        self.assertEqual(crash_report_kinds("64/t", out), ["BUG", "panic"])

    def test_general_protection_fault(self):
        out = "[    5.100000] general protection fault: 0000 [#1] SMP\n"
        rows = judge(canned(one_test("64/t", out, "signal=11")))
        self.assertIn("Oops during 64/t", row(rows, "qemu x86_64: kernel log")[2])

    def test_warning_needs_a_call_trace(self):
        warn = textwrap.dedent(
            """\
            [    5.100000] WARNING: CPU: 1 PID: 61 at kernel/time/time.c:1 foo+0x1/0x2
            [    5.100001] Modules linked in:
            [    5.100002] Call Trace:
            """
        )
        rows = judge(canned(one_test("64/t", warn, "exit=0")))
        self.assertIn(
            "WARNING during 64/t: WARNING: CPU: 1 PID: 61",
            row(rows, "qemu x86_64: kernel log")[2],
        )
        plain = "[    5.100000] WARNING: this line has no trace\n"
        rows = judge(canned(one_test("64/t", plain, "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64: kernel log")[0], "PASS")

    def test_arm_and_arm64_warnings_have_their_own_call_traces(self):
        # arm's unwinder prints no heading, its frame-pointer walk
        # "Backtrace:", arm64 "Call trace:".
        for trace in (
            "[<c010f4a4>] (unwind_backtrace) from [<c010bb7c>] "
            "(show_stack+0x10/0x14)",
            "Backtrace: ",
            "Call trace:",
        ):
            with self.subTest(trace=trace):
                warn = (
                    textwrap.dedent(
                        """\
                    [    5.100000] WARNING: CPU: 1 PID: 61 at kernel/time/time.c:1 foo+0x1/0x2
                    [    5.100001] Modules linked in:
                    [    5.100002] Hardware name: linux,dummy-virt (DT)
                    [    5.100003] %s
                    """
                    )
                    % trace
                )
                rows = judge(canned(one_test("arm/t", warn, "exit=0")))
                self.assertIn(
                    "WARNING during arm/t: WARNING: CPU: 1",
                    row(rows, "qemu x86_64: kernel log")[2],
                )

    def test_arm_oops(self):
        # die() on arm and arm64; after "kernel BUG at", the same report.
        oops = textwrap.dedent(
            """\
            [    5.100000] Unable to handle kernel NULL pointer dereference at virtual address 00000000
            [    5.100001] pgd = (ptrval)
            [    5.100002] Internal error: Oops: 817 [#1] SMP ARM
            [    5.200000] Kernel panic - not syncing: Fatal exception
            """
        )
        self.assertEqual(crash_report_kinds("arm/t", oops), ["Oops", "panic"])
        bug = textwrap.dedent(
            """\
            [    5.100000] kernel BUG at fs/aio.c:10!
            [    5.100001] Internal error: Oops - BUG: 0 [#1] PREEMPT SMP
            """
        )
        rows = judge(canned(one_test("arm64/t", bug, "signal=11")))
        kinds = [
            r[2].split(" during")[0] for r in rows if r[1] == "qemu x86_64: kernel log"
        ]
        self.assertEqual(kinds, ["BUG"])

    def test_user_space_text_is_not_a_kernel_report(self):
        out = "BUG: the test says so\nWARNING: user\nKernel panic - joke\n"
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64: kernel log")[0], "PASS")

    def test_other_kernel_reports(self):
        for line, kind in (
            ("INFO: task t:61 blocked for more than 120 seconds.", "hung task"),
            ("rcu: INFO: rcu_sched self-detected stall on CPU", "RCU stall"),
            ("watchdog: BUG: soft lockup - CPU#0 stuck for 22s!", "BUG"),
            ("kernel BUG at mm/slub.c:3878!", "BUG"),
            ("UBSAN: Undefined behaviour in lib/x.c:1:2", "UBSAN"),
            (
                "BUG: sleeping function called from invalid context at "
                "kernel/locking/mutex.c:908",
                "BUG",
            ),
            ("BUG: MAX_LOCKDEP_KEYS too low!", "BUG"),
            (
                "kmemleak: Early log buffer exceeded (4021), please "
                "increase DEBUG_KMEMLEAK_EARLY_LOG_SIZE",
                "kmemleak",
            ),
        ):
            with self.subTest(kind=kind):
                rows = judge(
                    canned(one_test("64/t", "[    5.000000] %s\n" % line, "exit=0"))
                )
                self.assertIn(
                    "%s during 64/t" % kind, row(rows, "qemu x86_64: kernel log")[2]
                )

    def test_a_repeated_report_is_one_row(self):
        line = (
            "[    5.000000] BUG: sleeping function called from invalid "
            "context at arch/x86/mm/fault.c:1369\n"
        )
        rows = judge(
            canned(one_test("64/t", line * 3 + line.replace("1369", "1370"), "exit=0"))
        )
        details = [r[2] for r in rows if r[1] == "qemu x86_64: kernel log"]
        self.assertEqual(len(details), 2, details)
        self.assertIn(
            "fault.c:1369 (and 2 more like it, the last during 64/t)", details[0]
        )
        self.assertNotIn("more like it", details[1])

    def test_lockdep_reports(self):
        for title in (
            "possible circular locking dependency detected",
            "inconsistent lock state",
            "possible recursive locking detected",
        ):
            report = "".join(
                "[    5.000000] %s\n" % l
                for l in (
                    "=" * 54,
                    "WARNING: " + title,
                    "4.20.0+ #1 Not tainted",
                    "-" * 54,
                    "t/61 is trying to acquire lock:",
                    "",
                    "stack backtrace:",
                    "CPU: 0 PID: 61 Comm: t Not tainted 4.20.0+ #1",
                    "Call Trace:",
                    " dump_stack+0x5c/0x7b",
                )
            )
            with self.subTest(title=title):
                rows = judge(canned(one_test("64/t", report, "exit=0")))
                r = row(rows, "qemu x86_64: kernel log")
                self.assertEqual(r[0], "FAIL")
                self.assertIn("WARNING during 64/t: WARNING: " + title, r[2])

    def kmemleak_log(self, leaks, base=2):
        text = (
            BOOT
            + textwrap.dedent(
                """\
            lk-qemu TOK kmemleak-baseline begin
            [    2.000000] kmemleak: {base} new suspected memory leaks (see /sys/kernel/debug/kmemleak)
            unreferenced object 0xffff88801c8e8f40 (size 64):
            unreferenced object 0xffff88801c8e8f80 (size 64):
            lk-qemu TOK kmemleak-baseline end leaks={base}
            lk-qemu TOK begin 64/t
            lk-qemu TOK end 64/t exit=0 time=0.1
            lk-qemu TOK kmemleak begin
            """
            ).format(base=base)
        )
        if leaks:
            text += (
                "[   12.000000] kmemleak: %d new suspected memory leaks "
                "(see /sys/kernel/debug/kmemleak)\n" % leaks
            )
            text += (
                "unreferenced object 0xffff88801c8e9000 (size 32):\n"
                '  comm "t", pid 61, jiffies 4294893202 (age 6.1s)\n'
            ) * leaks
        text += "lk-qemu TOK kmemleak end leaks=%d\nlk-qemu TOK done ran=1\n" % leaks
        return canned(text)

    def test_kmemleak_report(self):
        rows = judge(self.kmemleak_log(1))
        st, _, detail = row(rows, "qemu x86_64: kmemleak")
        self.assertEqual(st, "FAIL")
        self.assertIn(
            "1 new suspected leak after the tests: unreferenced "
            "object 0xffff88801c8e9000 (size 32)",
            detail,
        )
        self.assertIn("2 boot-time reports cleared", detail)
        # the scan's own kernel message is not counted a second time
        self.assertEqual(row(rows, "qemu x86_64: kernel log")[0], "PASS")

    def test_kmemleak_clean_after_boot_time_leaks(self):
        rows = judge(self.kmemleak_log(0))
        self.assertEqual(row(rows, "qemu x86_64: kmemleak")[0], "PASS")

    def test_kmemleak_outside_the_scans_counts(self):
        out = (
            "[   70.000000] kmemleak: 3 new suspected memory leaks (see "
            "/sys/kernel/debug/kmemleak)\n"
        )
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        self.assertIn("kmemleak during 64/t", row(rows, "qemu x86_64: kernel log")[2])

    def test_kmemleak_scan_that_never_finished(self):
        text = BOOT + "lk-qemu TOK kmemleak begin\n"
        rows = judge(
            canned(
                text,
                tests=(),
                end="status=-9 killed=limit elapsed=9 start=1 done=-",
                limit=9,
            )
        )
        self.assertEqual(row(rows, "qemu x86_64: kmemleak")[0], "FAIL")

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
        rows = judge(
            canned(
                text,
                tests=("64/a", "64/b"),
                end="status=-9 killed=limit elapsed=30 start=1 done=-",
                limit=30,
            )
        )
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
