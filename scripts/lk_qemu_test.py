#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/lk_qemu.py: the parser on canned serial logs, the data
files, and real boots of the x86_64, i386, arm64 and arm kernels under TCG.

  python3 scripts/lk_qemu_test.py            all tests
  python3 scripts/lk_qemu_test.py --quick    no compiler, no qemu boot

The boot tests use the kernels in $LK_QEMU_BUILD_ROOT/<target> (default
$LK_OUT/build/<target>); without a kernel they are skipped and say so.
The programs they run are written to a temporary directory at run time.
"""

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lk_qemu  # noqa: E402

QUICK = "--quick" in sys.argv
if QUICK:
    sys.argv.remove("--quick")

TOKEN = "0123456789abcdef"
OTHER = "fedcba9876543210"


def canned(body, tests=("64/t",), token=TOKEN, end="status=0 killed=no "
           "elapsed=3.00 start=1.00 done=2.50", limit=300, guest="x86_64"):
    """A log as boot() writes it, around a serial console body."""
    head = ("# lk-qemu-host {t} guest={g} kernel=/k/bzImage\n"
            "# lk-qemu-host {t} tests={tests}\n"
            "# lk-qemu-host {t} limit={limit}\n"
            "# lk-qemu-host {t} command=qemu-system-x86_64 ...\n").format(
                t=token, g=guest, tests=",".join(tests), limit=limit)
    body = textwrap.dedent(body).replace("TOK", token)
    tail = "\n# lk-qemu-host %s end %s\n" % (token, end) if end else ""
    return head + body + tail


BOOT = """\
[    0.000000] Linux version 4.20.0+ (root@vm) (gcc version 12.2.0)
[    0.000000] Command line: console=ttyS0 panic=-1 lkqemu.token=TOK
[    1.000000] Run /init as init process
lk-qemu TOK start abi=64 tests=1 uname=4.20.0+/x86_64
"""


def one_test(name, output, result, done=True):
    text = BOOT + "lk-qemu TOK begin %s\n%s" % (name, output)
    if result is not None:
        text += "lk-qemu TOK end %s %s time=0.100\n" % (name, result)
    if done:
        text += "lk-qemu TOK done ran=1\n[    2.000000] reboot: Power down\n"
    return text


def judge(text, path="/logs/qemu-x86_64.log"):
    return lk_qemu.judge(lk_qemu.parse_log(text, path))


def crash_report_kinds(test, out):
    """The kinds of the kernel reports judged in a log whose guest crashed
    while running test (no "done" marker) after printing out."""
    rows = judge(canned(one_test(test, out, None, done=False),
                        end="status=0 killed=no elapsed=6 start=1 done=-"))
    return [r[2].split(" during")[0] for r in rows
            if r[1] == "qemu x86_64: kernel log"]


def row(rows, name):
    found = [r for r in rows if r[1] == name]
    if len(found) != 1:
        raise AssertionError("%d rows named %r in:\n%s" % (
            len(found), name, "\n".join(map(str, rows))))
    return found[0]


def statuses(rows):
    return {r[1]: r[0] for r in rows}


class Parser(unittest.TestCase):
    def test_passing_test(self):
        rows = judge(canned(one_test("64/t", "hello\n", "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "PASS")
        self.assertEqual(statuses(rows), {
            "qemu x86_64: boot": "PASS", "qemu x86_64/64: t": "PASS",
            "qemu x86_64: kernel log": "PASS",
            "qemu x86_64: shutdown": "PASS"})
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
        self.assertEqual(row(rows, "qemu x86_64/64: t")[:2],
                         ("SKIP", "qemu x86_64/64: t"))

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
        out = ("TAP version 13\nok 1 first\nnot ok 2 second\n"
               "ok 3 # skip no device\n1..3\n")
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        st, _, detail = row(rows, "qemu x86_64/64: t")
        self.assertEqual(st, "FAIL")
        self.assertIn("exit 0 but 1 TAP 'not ok'", detail)
        self.assertEqual(row(rows, "qemu x86_64/64: t: 1 first")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 2 second")[0], "FAIL")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 3 no device")[0],
                         "SKIP")

    def test_tap_all_ok(self):
        rows = judge(canned(one_test("64/t", "ok 1 - a\nok 2 - b\n",
                                     "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64/64: t: 2 b")[0], "PASS")

    def test_bail_out_with_exit_0_fails(self):
        rows = judge(canned(one_test("64/t", "Bail out! no memory\n",
                                     "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "FAIL")

    def test_missing_end_marker_is_a_crash(self):
        text = BOOT + textwrap.dedent("""\
            lk-qemu TOK begin 64/a
            working...
            [    3.000000] Kernel panic - not syncing: Fatal exception
            """)
        rows = judge(canned(text, tests=("64/a", "64/b"),
                            end="status=0 killed=no elapsed=4 start=1 "
                            "done=-"))
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
        rows = judge(canned(text, end="status=-9 killed=limit elapsed=20 "
                            "start=1 done=-", limit=20))
        self.assertIn("hung: qemu killed at the 20s wall-clock limit",
                      row(rows, "qemu x86_64/64: t")[2])
        self.assertIn("hung", row(rows, "qemu x86_64: shutdown")[2])

    def test_no_start_marker(self):
        text = "[    0.500000] Booting the kernel.\n"
        rows = judge(canned(text, tests=("64/a", "32/a"),
                            end="status=-9 killed=limit elapsed=9 start=- "
                            "done=-", limit=9))
        st, _, detail = row(rows, "qemu x86_64: boot")
        self.assertEqual(st, "FAIL")
        self.assertIn("did not start /init", detail)
        self.assertIn("Booting the kernel", detail)
        self.assertEqual(row(rows, "qemu x86_64/32: a")[0], "SKIP")
        self.assertNotIn("qemu x86_64: shutdown", statuses(rows))

    def test_did_not_power_off(self):
        rows = judge(canned(one_test("64/t", "", "exit=0"),
                            end="status=-9 killed=poweroff elapsed=40 "
                            "start=1 done=2"))
        st, _, detail = row(rows, "qemu x86_64: shutdown")
        self.assertEqual(st, "FAIL")
        self.assertIn("did not power off", detail)

    def test_qemu_error(self):
        text = canned("", end="status=1 killed=no elapsed=0.1 start=- "
                      "done=-").replace(
            "# lk-qemu-host %s end" % TOKEN,
            "# lk-qemu-host %s qemu-stderr=qemu: could not load kernel\n"
            "# lk-qemu-host %s end" % (TOKEN, TOKEN))
        rows = judge(text)
        self.assertIn("qemu exited with status 1: qemu: could not load "
                      "kernel", row(rows, "qemu x86_64: boot")[2])

    def test_kasan_report(self):
        out = textwrap.dedent("""\
            [    5.100000] ==================================================================
            [    5.100001] BUG: KASAN: slab-out-of-bounds in compat_get_timex+0x52/0x90
            [    5.100002] Write of size 8 at addr ffff88801c8e8f40 by task t/61
            [    5.100003] Call Trace:
            """)
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        st, _, detail = row(rows, "qemu x86_64: kernel log")
        self.assertEqual(st, "FAIL")
        self.assertIn("KASAN during 64/t: BUG: KASAN: slab-out-of-bounds in "
                      "compat_get_timex", detail)
        self.assertIn("qemu-x86_64.log:11", detail)

    def test_oops_is_one_report_panic_another(self):
        out = textwrap.dedent("""\
            [    5.1] ignored: not a printk time stamp
            [    5.100000] BUG: unable to handle kernel NULL pointer dereference at 0000000000000000
            [    5.100001] PGD 0 P4D 0
            [    5.100002] Oops: 0002 [#1] SMP PTI
            [    5.100003] Call Trace:
            [    5.200000] Kernel panic - not syncing: Fatal exception
            """)
        self.assertEqual(crash_report_kinds("64/t", out), ["BUG", "panic"])

    def test_general_protection_fault(self):
        out = "[    5.100000] general protection fault: 0000 [#1] SMP\n"
        rows = judge(canned(one_test("64/t", out, "signal=11")))
        self.assertIn("Oops during 64/t",
                      row(rows, "qemu x86_64: kernel log")[2])

    def test_warning_needs_a_call_trace(self):
        warn = textwrap.dedent("""\
            [    5.100000] WARNING: CPU: 1 PID: 61 at kernel/time/time.c:1 foo+0x1/0x2
            [    5.100001] Modules linked in:
            [    5.100002] Call Trace:
            """)
        rows = judge(canned(one_test("64/t", warn, "exit=0")))
        self.assertIn("WARNING during 64/t: WARNING: CPU: 1 PID: 61",
                      row(rows, "qemu x86_64: kernel log")[2])
        plain = "[    5.100000] WARNING: this line has no trace\n"
        rows = judge(canned(one_test("64/t", plain, "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64: kernel log")[0], "PASS")

    def test_arm_and_arm64_warnings_have_their_own_call_traces(self):
        # arm's unwinder prints no heading, its frame-pointer walk
        # "Backtrace:", arm64 "Call trace:".
        for trace in ("[<c010f4a4>] (unwind_backtrace) from [<c010bb7c>] "
                      "(show_stack+0x10/0x14)",
                      "Backtrace: ",
                      "Call trace:"):
            with self.subTest(trace=trace):
                warn = textwrap.dedent("""\
                    [    5.100000] WARNING: CPU: 1 PID: 61 at kernel/time/time.c:1 foo+0x1/0x2
                    [    5.100001] Modules linked in:
                    [    5.100002] Hardware name: linux,dummy-virt (DT)
                    [    5.100003] %s
                    """) % trace
                rows = judge(canned(one_test("arm/t", warn, "exit=0")))
                self.assertIn("WARNING during arm/t: WARNING: CPU: 1",
                              row(rows, "qemu x86_64: kernel log")[2])

    def test_arm_oops(self):
        # die() on arm and arm64; after "kernel BUG at", the same report.
        oops = textwrap.dedent("""\
            [    5.100000] Unable to handle kernel NULL pointer dereference at virtual address 00000000
            [    5.100001] pgd = (ptrval)
            [    5.100002] Internal error: Oops: 817 [#1] SMP ARM
            [    5.200000] Kernel panic - not syncing: Fatal exception
            """)
        self.assertEqual(crash_report_kinds("arm/t", oops), ["Oops", "panic"])
        bug = textwrap.dedent("""\
            [    5.100000] kernel BUG at fs/aio.c:10!
            [    5.100001] Internal error: Oops - BUG: 0 [#1] PREEMPT SMP
            """)
        rows = judge(canned(one_test("arm64/t", bug, "signal=11")))
        kinds = [r[2].split(" during")[0] for r in rows
                 if r[1] == "qemu x86_64: kernel log"]
        self.assertEqual(kinds, ["BUG"])

    def test_user_space_text_is_not_a_kernel_report(self):
        out = "BUG: the test says so\nWARNING: user\nKernel panic - joke\n"
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        self.assertEqual(row(rows, "qemu x86_64: kernel log")[0], "PASS")

    def test_other_kernel_reports(self):
        for line, kind in (
                ("INFO: task t:61 blocked for more than 120 seconds.",
                 "hung task"),
                ("rcu: INFO: rcu_sched self-detected stall on CPU",
                 "RCU stall"),
                ("watchdog: BUG: soft lockup - CPU#0 stuck for 22s!", "BUG"),
                ("kernel BUG at mm/slub.c:3878!", "BUG"),
                ("UBSAN: Undefined behaviour in lib/x.c:1:2", "UBSAN"),
                ("BUG: sleeping function called from invalid context at "
                 "kernel/locking/mutex.c:908", "BUG"),
                ("BUG: MAX_LOCKDEP_KEYS too low!", "BUG"),
                ("kmemleak: Early log buffer exceeded (4021), please "
                 "increase DEBUG_KMEMLEAK_EARLY_LOG_SIZE", "kmemleak")):
            with self.subTest(kind=kind):
                rows = judge(canned(one_test(
                    "64/t", "[    5.000000] %s\n" % line, "exit=0")))
                self.assertIn("%s during 64/t" % kind,
                              row(rows, "qemu x86_64: kernel log")[2])

    def test_a_repeated_report_is_one_row(self):
        line = ("[    5.000000] BUG: sleeping function called from invalid "
                "context at arch/x86/mm/fault.c:1369\n")
        rows = judge(canned(one_test("64/t", line * 3 + line.replace(
            "1369", "1370"), "exit=0")))
        details = [r[2] for r in rows if r[1] == "qemu x86_64: kernel log"]
        self.assertEqual(len(details), 2, details)
        self.assertIn("fault.c:1369 (and 2 more like it, the last during "
                      "64/t)", details[0])
        self.assertNotIn("more like it", details[1])

    def test_lockdep_reports(self):
        for title in ("possible circular locking dependency detected",
                      "inconsistent lock state",
                      "possible recursive locking detected"):
            report = "".join("[    5.000000] %s\n" % l for l in (
                "=" * 54, "WARNING: " + title, "4.20.0+ #1 Not tainted",
                "-" * 54, "t/61 is trying to acquire lock:",
                "", "stack backtrace:",
                "CPU: 0 PID: 61 Comm: t Not tainted 4.20.0+ #1",
                "Call Trace:", " dump_stack+0x5c/0x7b"))
            with self.subTest(title=title):
                rows = judge(canned(one_test("64/t", report, "exit=0")))
                r = row(rows, "qemu x86_64: kernel log")
                self.assertEqual(r[0], "FAIL")
                self.assertIn("WARNING during 64/t: WARNING: " + title, r[2])

    def kmemleak_log(self, leaks, base=2):
        text = BOOT + textwrap.dedent("""\
            lk-qemu TOK kmemleak-baseline begin
            [    2.000000] kmemleak: {base} new suspected memory leaks (see /sys/kernel/debug/kmemleak)
            unreferenced object 0xffff88801c8e8f40 (size 64):
            unreferenced object 0xffff88801c8e8f80 (size 64):
            lk-qemu TOK kmemleak-baseline end leaks={base}
            lk-qemu TOK begin 64/t
            lk-qemu TOK end 64/t exit=0 time=0.1
            lk-qemu TOK kmemleak begin
            """).format(base=base)
        if leaks:
            text += ("[   12.000000] kmemleak: %d new suspected memory leaks "
                     "(see /sys/kernel/debug/kmemleak)\n" % leaks)
            text += ("unreferenced object 0xffff88801c8e9000 (size 32):\n"
                     "  comm \"t\", pid 61, jiffies 4294893202 (age 6.1s)\n"
                     ) * leaks
        text += "lk-qemu TOK kmemleak end leaks=%d\nlk-qemu TOK done ran=1\n" \
            % leaks
        return canned(text)

    def test_kmemleak_report(self):
        rows = judge(self.kmemleak_log(1))
        st, _, detail = row(rows, "qemu x86_64: kmemleak")
        self.assertEqual(st, "FAIL")
        self.assertIn("1 new suspected leak after the tests: unreferenced "
                      "object 0xffff88801c8e9000 (size 32)", detail)
        self.assertIn("2 boot-time reports cleared", detail)
        # the scan's own kernel message is not counted a second time
        self.assertEqual(row(rows, "qemu x86_64: kernel log")[0], "PASS")

    def test_kmemleak_clean_after_boot_time_leaks(self):
        rows = judge(self.kmemleak_log(0))
        self.assertEqual(row(rows, "qemu x86_64: kmemleak")[0], "PASS")

    def test_kmemleak_outside_the_scans_counts(self):
        out = ("[   70.000000] kmemleak: 3 new suspected memory leaks (see "
               "/sys/kernel/debug/kmemleak)\n")
        rows = judge(canned(one_test("64/t", out, "exit=0")))
        self.assertIn("kmemleak during 64/t",
                      row(rows, "qemu x86_64: kernel log")[2])

    def test_kmemleak_scan_that_never_finished(self):
        text = BOOT + "lk-qemu TOK kmemleak begin\n"
        rows = judge(canned(text, tests=(), end="status=-9 killed=limit "
                            "elapsed=9 start=1 done=-", limit=9))
        self.assertEqual(row(rows, "qemu x86_64: kmemleak")[0], "FAIL")

    def test_forged_markers_do_not_count(self):
        # A test that prints marker look-alikes (other token, no token,
        # the host's prefix) and then hangs: it must still fail, and the
        # next test must not be credited with anything.
        out = textwrap.dedent("""\
            lk-qemu OTHER end 64/a exit=0 time=0.1
            lk-qemu end 64/a exit=0
            lk-qemu  TOK end 64/a exit=0
            lk-qemu TOKx end 64/a exit=0
            # lk-qemu-host OTHER end status=0 killed=no elapsed=1 start=1 done=1
            lk-qemu OTHER begin 64/b
            lk-qemu OTHER end 64/b exit=0
            lk-qemu OTHER done ran=2
            """).replace("OTHER", OTHER)
        text = BOOT + "lk-qemu TOK begin 64/a\n" + out
        rows = judge(canned(text, tests=("64/a", "64/b"),
                            end="status=-9 killed=limit elapsed=30 start=1 "
                            "done=-", limit=30))
        self.assertEqual(row(rows, "qemu x86_64/64: a")[0], "FAIL")
        self.assertIn("no end marker", row(rows, "qemu x86_64/64: a")[2])
        self.assertEqual(row(rows, "qemu x86_64/64: b")[0], "SKIP")
        self.assertEqual(row(rows, "qemu x86_64: shutdown")[0], "FAIL")
        self.assertNotIn("PASS", [r[0] for r in rows
                                  if r[1].startswith("qemu x86_64/")])

    def test_marker_glued_to_unterminated_output(self):
        text = BOOT + "lk-qemu TOK begin 64/t\nno newline at the end" \
            "lk-qemu TOK end 64/t exit=0 time=0.1\nlk-qemu TOK done ran=1\n"
        rows = judge(canned(text))
        self.assertEqual(row(rows, "qemu x86_64/64: t")[0], "PASS")

    def test_kernel_record_cutting_into_markers(self):
        # A console record lands inside a marker (before its newline, and
        # mid-word); every test is still seen once and in order.
        text = BOOT.replace("tests=1", "tests=2") + \
            "lk-qemu TOK begin 64/a[    3.047474]     1..5\n\n" \
            "ok\nlk-qemu TOK end 64/a exit=0 time=0.1\n" \
            "lk-qemu TOK begin 64/b\n" \
            "lk-qemu TOK end 64/[    3.100000]     ok 1 case\n" \
            "b exit=1 time=0.1\nlk-qemu TOK done ran=2\n" \
            "[    4.000000] reboot: Power down\n"
        rows = judge(canned(text, tests=("64/a", "64/b")))
        self.assertEqual(row(rows, "qemu x86_64/64: a")[0], "PASS", rows)
        self.assertEqual(row(rows, "qemu x86_64/64: b")[0], "FAIL", rows)
        self.assertFalse([r for r in rows if r[1].endswith("markers")], rows)
        self.assertEqual(row(rows, "qemu x86_64: shutdown")[0], "PASS", rows)

    def test_unsplice(self):
        self.assertEqual(lk_qemu.unsplice(
            ["a[ 1.000000] k", "", "[ 2.000000] k2 [ 3.000000] x", "b[ 4.0"
             "00000] k3", "[ 5.000000] k4", "c", "tail[ 6.000000] k5",
             "# lk-qemu-host T end status=0"]),
            ["[ 1.000000] k", "a", "[ 2.000000] k2 [ 3.000000] x",
             "[ 4.000000] k3", "[ 5.000000] k4", "bc", "[ 6.000000] k5",
             "tail", "# lk-qemu-host T end status=0"])

    def test_carriage_returns(self):
        text = canned(one_test("64/t", "x\n", "exit=0")).replace("\n",
                                                                "\r\n")
        self.assertEqual(row(judge(text), "qemu x86_64/64: t")[0], "PASS")

    def test_out_of_order_end_is_an_anomaly(self):
        text = BOOT + ("lk-qemu TOK begin 64/a\nlk-qemu TOK end 64/b exit=0\n"
                       "lk-qemu TOK end 64/a exit=0\nlk-qemu TOK done ran=1\n")
        rows = judge(canned(text, tests=("64/a",)))
        self.assertEqual(row(rows, "qemu x86_64/64: a")[0], "PASS")
        self.assertEqual(row(rows, "qemu x86_64: markers")[0], "FAIL")

    def test_test_not_in_manifest_order(self):
        rows = judge(canned(one_test("64/t", "", "exit=0"),
                            tests=("64/t", "64/u")))
        self.assertIn("not run although init finished",
                      row(rows, "qemu x86_64/64: u")[2])

    def test_not_a_log(self):
        with self.assertRaises(lk_qemu.Failure):
            lk_qemu.parse_log("[    0.000000] Linux version 4.20.0\n")

    def test_parse_command(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "qemu-x86_64.log")
            with open(path, "w") as f:
                f.write(canned(one_test("64/t", "", "exit=1")))
            r = subprocess.run([sys.executable, os.path.join(
                HERE, "lk_qemu.py"), "parse", path], stdout=subprocess.PIPE,
                universal_newlines=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL: qemu x86_64/64: t - exit 1; log at %s:9" % path,
                      r.stdout)
        self.assertTrue(r.stdout.endswith("3 passed, 1 failed\n"), r.stdout)


class DataFiles(unittest.TestCase):
    def test_guests(self):
        names = lk_qemu.guest_names()
        self.assertIn("x86_64", names)
        self.assertIn("i386", names)
        for name in names:
            g = lk_qemu.load_guest(name)
            self.assertIn(g["init_abi"], g["abis"])
            for abi in g["abis"]:
                self.assertTrue(lk_qemu.load_abi(abi)["cc"])
        self.assertEqual(lk_qemu.load_guest("x86_64")["abis"], ["64", "32"])
        self.assertEqual(lk_qemu.load_guest("i386")["abis"], ["32"])
        # arm64 runs 32-bit arm programs through AArch32 compat.
        self.assertEqual(lk_qemu.load_guest("arm64")["abis"],
                         ["arm64", "arm"])
        self.assertEqual(lk_qemu.load_guest("arm")["abis"], ["arm"])
        # Pointer authentication: absent on the Cortex-A57, present on max.
        max_ = lk_qemu.load_guest("arm64-max")
        self.assertEqual(max_["target"], lk_qemu.load_guest("arm64")["target"])
        self.assertEqual(max_["tests"], ["pac_test", "pac_kvm_test"])
        for name, has in (("arm64", "absent"), ("arm64-max", "present")):
            patterns = dict((k, rx.pattern) for k, rx in
                            lk_qemu.load_guest(name)["expects"])
            self.assertEqual(patterns["expect_paca"],
                             "^# HWCAP_PACA: %s$" % has, name)

    def test_abis(self):
        self.assertEqual(lk_qemu.abi_names(), ["32", "64", "arm", "arm64"])
        for name, cc, arch in (("arm", "arm-linux-gnueabihf-gcc", "arm"),
                               ("arm64", "aarch64-linux-gnu-gcc", "arm64")):
            a = lk_qemu.load_abi(name)
            self.assertEqual((a["name"], a["cc"], a["headers_arch"]),
                             (name, cc, arch))
            self.assertIn("-static", a["cflags"])
        # The arm headers' system call numbers are generated from the
        # table in arch/arm/tools.
        self.assertEqual(lk_qemu.load_abi("arm")["headers_inputs"],
                         ["arch/arm/include/uapi", "arch/arm/tools"])
        with self.assertRaisesRegex(lk_qemu.Failure, "ABIs: 32 64 arm "
                                    "arm64"):
            lk_qemu.load_abi("armel")

    def test_abi_header_inputs_are_in_the_tree(self):
        tree = os.path.join(lk_qemu.out_dir(), "tree")
        if not os.path.isdir(tree):
            self.skipTest("no kernel tree at %s (scripts/lk apply)" % tree)
        for name in lk_qemu.abi_names():
            for rel in lk_qemu.load_abi(name)["headers_inputs"]:
                self.assertTrue(os.path.isdir(os.path.join(tree, rel)),
                                (name, rel))

    def test_never_kvm(self):
        g = lk_qemu.load_guest("i386")
        cmd = lk_qemu.qemu_command(g, "/k", "/rd", TOKEN)
        self.assertEqual(cmd[1:3], ["-accel", "tcg"])
        self.assertFalse([c for c in cmd if "kvm" in c])
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "bad.conf"), "w") as f:
                f.write("target = x\nkernel = k\nqemu = q\nabis = 64\n"
                        "init_abi = 64\nqemu_args = -enable-kvm\n")
            with self.assertRaises(lk_qemu.Failure):
                lk_qemu.load_guest("bad", conf_dir=d)

    def test_command_line(self):
        g = lk_qemu.load_guest("x86_64", overrides={"smp": "2"})
        cmd = lk_qemu.qemu_command(g, "/k", "/rd", TOKEN)
        append = cmd[cmd.index("-append") + 1]
        self.assertIn("console=ttyS0 panic=-1", append)
        self.assertIn("lkqemu.token=%s" % TOKEN, append)
        self.assertEqual(cmd[cmd.index("-smp") + 1], "2")
        for arg in ("-nographic", "-no-reboot"):
            self.assertIn(arg, cmd)

    def test_arm_command_lines(self):
        # The virt machine, its CPU, and the console on its PL011 UART.
        for name, qemu, cpu, abi in (
                ("arm", "qemu-system-arm", "cortex-a15", "arm"),
                ("arm64", "qemu-system-aarch64", "cortex-a57", "arm64")):
            g = lk_qemu.load_guest(name)
            cmd = lk_qemu.qemu_command(g, "/k", "/rd", TOKEN)
            self.assertEqual(cmd[:3], [qemu, "-accel", "tcg"])
            self.assertEqual(cmd[cmd.index("-M") + 1], "virt")
            self.assertEqual(cmd[cmd.index("-cpu") + 1], cpu)
            self.assertEqual(cmd[cmd.index("-nic") + 1], "none")
            append = cmd[cmd.index("-append") + 1]
            self.assertTrue(append.startswith("console=ttyAMA0 panic=-1 "),
                            append)
            self.assertIn("lkqemu.abi=%s" % abi, append)
            self.assertEqual(cmd[cmd.index("-kernel") + 1], "/k")

    def test_selftest_list(self):
        specs = lk_qemu.read_selftests()
        self.assertTrue(specs)
        tree = os.path.join(lk_qemu.out_dir(), "tree")
        for s in specs:
            self.assertTrue(set(s.abis) <= set(lk_qemu.abi_names()))
            if os.path.isdir(tree):
                self.assertTrue(os.path.exists(os.path.join(tree, s.source)),
                                s.source)

    def test_selftest_syntax(self):
        specs = lk_qemu.parse_selftests(
            "# comment\n"
            "tools/testing/selftests/x/a.c 64,32 timeout=5 -lrt -DX=1 # c\n"
            "b.c 32 name=bee\n")
        self.assertEqual(specs[0], lk_qemu.TestSpec(
            "tools/testing/selftests/x/a.c", ("64", "32"), "a", 5,
            ("-lrt", "-DX=1")))
        self.assertEqual((specs[1].name, specs[1].timeout), ("bee", 60))
        for bad in ("a.c", "a.c 16", "a.c 64 retries=2", "a.c 64 timeout=0",
                    "a.o 64", "a.c 64\na.c 32", "a.c armel"):
            with self.subTest(bad=bad):
                with self.assertRaises(lk_qemu.Failure):
                    lk_qemu.parse_selftests(bad)

    def test_wall_limit(self):
        g = lk_qemu.load_guest("i386")
        self.assertEqual(lk_qemu.wall_limit(g, [("32/a", 5), ("32/b", 10)]),
                         g["boot_timeout"] + 5 + 10 +
                         2 * (lk_qemu.KILL_WAIT + 2))
        self.assertEqual(lk_qemu.wall_limit(g, [], 4, True),
                         4 * (g["boot_timeout"] + g["kmemleak_timeout"]))

    def test_config_fragments(self):
        # What each debug target's fragments add up to, not one file.
        for target, must in (("x86_64-debug", ("CONFIG_KASAN=y",
                                               "CONFIG_DEBUG_KMEMLEAK=y")),
                             ("i386-debug", ("CONFIG_DEBUG_KMEMLEAK=y",))):
            with open(os.path.join(lk_qemu.TOP, "configs", "targets",
                                   target + ".conf")) as f:
                frags = re.search(r"(?m)^fragments = (.*)$",
                                  f.read()).group(1).split()
            text = ""
            for name in frags:
                with open(os.path.join(lk_qemu.TOP, "configs", name)) as f:
                    text += f.read()
            for opt in must + ("CONFIG_DEBUG_FS=y",):
                self.assertIn(opt + "\n", text)
            self.assertRegex(text, r"CONFIG_DEBUG_KMEMLEAK_EARLY_LOG_SIZE="
                             r"\d{4,5}\n")

    def test_help(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "lk_qemu.py"),
                            "--help"], stdout=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(r.returncode, 0)
        self.assertIn("initramfs", r.stdout)


# A selftest list of the GuestKeys tests' own (sources under /src).
GUEST_SPECS = """\
/src/pac_test.c  arm64  timeout=7
/src/other.c  arm64,arm
/src/x86.c  64,32
"""
# pac_test's report lines in the serial log: CR LF line ends, and a kernel
# record that cuts into one of them.
PAC_OUTPUT = ("# HWCAP_PACA: present\r\n# HWCAP_PACG: pre[    1.500000] "
              "random: crng init done\r\nsent\r\n")


def pac_log(done=True):
    """The serial log of a boot of guest g that ran arm64/pac_test."""
    text = one_test("arm64/pac_test", PAC_OUTPUT, "exit=0" if done else None,
                    done)
    return canned(text, tests=("arm64/pac_test",), guest="g")


class GuestKeys(unittest.TestCase):
    """The optional guest keys tests = and expect[_<x>] =."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lk-qemu-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.specs = lk_qemu.parse_selftests(GUEST_SPECS)

    def guest(self, extra="", name="g"):
        """A guest of a conf of our own: arm64 user space, plus extra."""
        with open(os.path.join(self.tmp, name + ".conf"), "w") as f:
            f.write("target = t\nkernel = Image\nqemu = qemu-system-aarch64"
                    "\nabis = arm64\ninit_abi = arm64\n" + extra)
        return lk_qemu.load_guest(name, conf_dir=self.tmp)

    def expect_rows(self, guest, text, path="/logs/qemu-g.log"):
        r = lk_qemu.parse_log(text, path) if text is not None else None
        return lk_qemu.judge_expects(guest, r, path)

    def test_tests_key_chooses_the_selftests(self):
        names = lambda g: [s.name for s in lk_qemu.guest_tests(g,
                                                                self.specs)]
        self.assertEqual(names(self.guest()), ["pac_test", "other"])
        self.assertEqual(names(self.guest("tests =\n")), ["pac_test",
                                                          "other"])
        # In the list's order, whatever the key's.
        self.assertEqual(names(self.guest("tests = other pac_test\n")),
                         ["pac_test", "other"])
        self.assertEqual(names(self.guest("tests = pac_test\n")),
                         ["pac_test"])

    def test_unknown_test_name_is_an_error(self):
        # x86.c is in the list, but for none of the guest's ABIs.
        for names in ("nosuch", "pac_test x86"):
            with self.subTest(names=names):
                g = self.guest("tests = %s\n" % names)
                with self.assertRaisesRegex(
                        lk_qemu.Failure, r"g\.conf: tests: no selftest "
                        r"(nosuch|x86) for ABI arm64 in the selftest list"):
                    lk_qemu.guest_tests(g, self.specs)

    def test_commands_stop_at_an_unknown_test_name(self):
        # Before anything is built or booted (the real arm64 guest,
        # with our own selftest list).
        tests = os.path.join(self.tmp, "selftests.txt")
        with open(tests, "w") as f:
            f.write(GUEST_SPECS)
        for cmd in ("run", "initramfs", "boot"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = lk_qemu.main(["--out", self.tmp, cmd, "--guest", "arm64",
                                   "--tests", tests, "--set",
                                   "tests=pac_test nosuch"])
            self.assertEqual(rc, 2, cmd)
            self.assertIn("lk_qemu %s: " % cmd, err.getvalue())
            self.assertIn("arm64.conf: tests: no selftest nosuch for ABI "
                          "arm64 or arm", err.getvalue())

    def test_initramfs_command_packs_the_listed_tests(self):
        tests = os.path.join(self.tmp, "selftests.txt")
        with open(tests, "w") as f:
            f.write(GUEST_SPECS)
        scratch = os.path.join(self.tmp, "scratch")
        for abi, name in (("arm64", "init"), ("arm64", "pac_test"),
                          ("arm64", "other"), ("arm", "other")):
            os.makedirs(os.path.join(scratch, "bin", abi), exist_ok=True)
            with open(os.path.join(scratch, "bin", abi, name), "wb") as f:
                f.write(b"\x7fELF")
        packed = []
        real = lk_qemu.make_initramfs
        lk_qemu.make_initramfs = lambda *a: packed.append(real(*a))
        try:
            for tests_key in ("", "pac_test"):
                with contextlib.redirect_stdout(io.StringIO()):
                    self.assertEqual(lk_qemu.main([
                        "--out", self.tmp, "initramfs", "--guest", "arm64",
                        "--tests", tests, "--scratch", scratch,
                        "--set", "tests=" + tests_key]), 0)
        finally:
            lk_qemu.make_initramfs = real
        self.assertEqual(packed, [["arm64/pac_test", "arm64/other",
                                   "arm/other"], ["arm64/pac_test"]])

    def test_run_guest_builds_boots_and_expects_the_listed_tests(self):
        # Compiling and booting faked: a canned log for what was expected.
        os.makedirs(os.path.join(self.tmp, "src"))
        specs = lk_qemu.parse_selftests(GUEST_SPECS.replace(
            "/src/", os.path.join(self.tmp, "src") + "/"))
        for s in specs:
            open(s.source, "w").close()
        kernel = os.path.join(self.tmp, "Image")
        open(kernel, "w").close()
        compiled, booted = [], []

        def fake_compile(abi, source, output, logfile, includes=(),
                         flags=()):
            compiled.append(os.path.basename(output))
            os.makedirs(os.path.dirname(output), exist_ok=True)
            with open(output, "wb") as f:
                f.write(b"\x7fELF")
            return output

        def fake_boot(guest, kernel, initramfs, log_path, expected=(),
                      *args, **kwargs):
            booted.append(list(expected))
            with open(log_path, "w", newline="") as f:
                f.write(pac_log())

        g = self.guest("tests = pac_test\nexpect_paca = ^# HWCAP_PACA: "
                       "present$\nexpect_pacg = ^# HWCAP_PACG: absent$\n")
        real = lk_qemu.compile_program, lk_qemu.boot
        lk_qemu.compile_program, lk_qemu.boot = fake_compile, fake_boot
        try:
            results = lk_qemu.Results(quiet=True)
            with contextlib.redirect_stdout(io.StringIO()):
                lk_qemu.run_guest(g, specs, None, os.path.join(
                    self.tmp, "scratch"), self.tmp, results,
                    build_dir=self.tmp, kernel=kernel)
        finally:
            lk_qemu.compile_program, lk_qemu.boot = real
        self.assertEqual(compiled, ["pac_test", "init"])
        self.assertEqual(booted, [["arm64/pac_test"]])
        st = statuses(results.rows)
        self.assertEqual(st["qemu g/arm64: pac_test"], "PASS", results.rows)
        self.assertEqual(st["qemu g: expect paca"], "PASS", results.rows)
        self.assertEqual(st["qemu g: expect pacg"], "FAIL", results.rows)

    def test_expect_rows(self):
        g = self.guest("expect = ^\\[ +\\d+\\.\\d+\\] random: crng init "
                       "done$\nexpect_paca = ^# HWCAP_PACA: present$\n"
                       "expect_pacg = ^# HWCAP_PACG: present$\n"
                       "expect_gone = ^# HWCAP_PACA: absent$\n"
                       "expect_host = ^# lk-qemu-host\n")
        rows = self.expect_rows(g, pac_log())
        # One row per key, in key order; the host's lines are not the
        # serial log.
        self.assertEqual([r[:2] for r in rows], [
            ("PASS", "qemu g: expect"), ("FAIL", "qemu g: expect gone"),
            ("FAIL", "qemu g: expect host"), ("PASS", "qemu g: expect paca"),
            ("PASS", "qemu g: expect pacg")])
        self.assertEqual(row(rows, "qemu g: expect gone")[2],
                         "no match for /^# HWCAP_PACA: absent$/ in the "
                         "serial log; log at /logs/qemu-g.log")

    def test_unfinished_boot_fails_its_expects(self):
        # The guest crashed after printing what is expected: unproven.
        g = self.guest("expect_paca = ^# HWCAP_PACA: present$\n")
        crashed = pac_log(done=False)
        self.assertEqual(row(judge(crashed), "qemu g/arm64: pac_test")[0],
                         "FAIL")
        for text in (crashed, None):        # None: qemu did not run
            rows = self.expect_rows(g, text)
            self.assertEqual(len(rows), 1)
            self.assertEqual(rows[0][:2], ("FAIL", "qemu g: expect paca"))
            self.assertIn("not checked: the guest did not finish its tests",
                          rows[0][2])
            self.assertIn("/^# HWCAP_PACA: present$/", rows[0][2])
        # No expect keys, no rows.
        self.assertEqual(self.expect_rows(self.guest(), crashed), [])

    def test_invalid_regex_is_an_error(self):
        with self.assertRaisesRegex(lk_qemu.Failure, r"g\.conf: expect_x is "
                                    r"not a regular expression"):
            self.guest("expect_x = ^(# unbalanced$\n")
        with self.assertRaisesRegex(lk_qemu.Failure, "expect is not"):
            lk_qemu.load_guest("g", conf_dir=self.tmp,
                               overrides={"expect": "a[", "expect_x": "b"})

    def test_hash_is_text_in_expect_values_only(self):
        g = self.guest("# expect_c = (\n  expect_a = ^# A #1$ \n"
                       "expectation = x # comment\nexpect_b =\n"
                       "memory = 256 # MiB\n")
        self.assertEqual([(k, rx.pattern) for k, rx in g["expects"]],
                         [("expect_a", "^# A #1$")])
        self.assertEqual((g["memory"], g["expectation"]), ("256", "x"))


class HeaderExport(unittest.TestCase):
    """One uapi header export serves every ABI of a source directory."""

    def test_x86_abis_share_one_export_and_arm_does_not(self):
        exports = []

        def fake_make(cmd, logfile):
            usr = [a for a in cmd if a.startswith("INSTALL_HDR_PATH=")][0]
            os.makedirs(os.path.join(usr.split("=", 1)[1], "include",
                                     "linux"))
            exports.append([a for a in cmd if a.startswith("ARCH=")][0])
            return 0

        with tempfile.TemporaryDirectory() as d:
            tree = os.path.join(d, "tree")
            for rel in lk_qemu.HEADERS_COMMON_INPUTS + (
                    "arch/x86/include/uapi", "arch/arm/include/uapi"):
                if rel.endswith("uapi"):
                    os.makedirs(os.path.join(tree, rel, "asm"))
                    rel = os.path.join(rel, "asm", "unistd.h")
                os.makedirs(os.path.dirname(os.path.join(tree, rel)),
                            exist_ok=True)
                with open(os.path.join(tree, rel), "w") as f:
                    f.write(rel)
            x86 = {"headers_arch": "x86_64",
                   "headers_inputs": ["arch/x86/include/uapi"]}
            i386 = dict(x86, headers_arch="i386")
            arm = {"headers_arch": "arm",
                   "headers_inputs": ["arch/arm/include/uapi"]}
            scratch = os.path.join(d, "scratch")
            log = os.path.join(d, "log")
            real = lk_qemu.run_logged
            lk_qemu.run_logged = fake_make
            try:
                a = lk_qemu.export_headers(tree, x86, scratch, log)
                b = lk_qemu.export_headers(tree, i386, scratch, log)
                c = lk_qemu.export_headers(tree, arm, scratch, log)
                # A changed input makes the shared export stale.
                with open(os.path.join(tree, "arch/x86/include/uapi/asm/"
                                       "unistd.h"), "a") as f:
                    f.write("changed")
                e = lk_qemu.export_headers(tree, i386, scratch, log)
            finally:
                lk_qemu.run_logged = real
        self.assertEqual(a, b)
        self.assertEqual(a, e)
        self.assertNotEqual(a, c)
        self.assertEqual(exports, ["ARCH=x86_64", "ARCH=arm", "ARCH=i386"])


class Initramfs(unittest.TestCase):
    @unittest.skipUnless(shutil.which("cpio"), "cpio is not installed")
    def test_archive_lists_with_cpio(self):
        with tempfile.TemporaryDirectory() as d:
            init = os.path.join(d, "init")
            prog = os.path.join(d, "prog")
            for p in (init, prog):
                with open(p, "wb") as f:
                    f.write(b"\x7fELF" + os.urandom(5))
            spec = lk_qemu.TestSpec("x.c", ("32",), "prog", 7, ())
            rd = os.path.join(d, "rd.cpio.gz")
            names = lk_qemu.make_initramfs(rd, init, [
                lk_qemu.Built(spec, "32", prog)], scale=2)
            self.assertEqual(names, ["32/prog"])
            listing = subprocess.run(
                "gzip -dc %s | cpio -itv --quiet" % rd, shell=True,
                stdout=subprocess.PIPE, universal_newlines=True).stdout
            manifest = subprocess.run(
                "gzip -dc %s | cpio -i --quiet --to-stdout lk-qemu/manifest"
                % rd, shell=True, stdout=subprocess.PIPE,
                universal_newlines=True).stdout
        self.assertRegex(listing, r"(?m)^crw------- +1 root +root +5, +1 .* "
                         r"dev/console$")
        self.assertRegex(listing, r"(?m)^-rwxr-xr-x .* root +root .* init$")
        self.assertRegex(listing, r"(?m) lk-qemu/32/prog$")
        self.assertEqual(manifest, "14 32/prog /lk-qemu/32/prog\n")


@unittest.skipIf(QUICK, "--quick: no compiler")
class InitSource(unittest.TestCase):
    def test_init_compiles_without_warnings(self):
        for name in lk_qemu.abi_names():
            abi = lk_qemu.load_abi(name)
            if not shutil.which(abi["cc"]):
                self.fail("%s is not installed (scripts/packages.txt)"
                          % abi["cc"])
            with tempfile.TemporaryDirectory() as d:
                r = subprocess.run(
                    [abi["cc"], "-static", "-O2", "-Wall", "-Wextra",
                     "-Werror", "-o", os.path.join(d, "init"),
                     lk_qemu.INIT_C], stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, universal_newlines=True)
                self.assertEqual(r.returncode, 0, r.stdout)


# ---------------------------------------------------------------------------
# real boots

# The word size of each user-space ABI: the "pass" program checks that it
# was built for the ABI it is listed under.
WORD_BITS = {"64": 64, "32": 32, "arm64": 64, "arm": 32}

PROGRAMS = {
    # name: (source, ABIs, timeout); the ABIs of the guest booted: "every"
    # one, its "native" one (init_abi) or its "32-bit" one (every guest
    # has one: 32 on x86, arm on arm and arm64)
    "pass": ("""
        #include <stdio.h>
        int main(void)
        {
            printf("hello from %zu-bit user space\\n", sizeof(long) * 8);
            return sizeof(long) * 8 == BITS ? 0 : 1;
        }""", ("every",), 20),
    "fail": ("""
        #include <stdio.h>
        int main(void) { printf("[FAIL] on purpose\\n"); return 1; }
        """, ("32-bit",), 20),
    "skip": ("""
        int main(void) { return 4; }
        """, ("32-bit",), 20),
    "tap": ("""
        #include <stdio.h>
        int main(void)
        {
            printf("TAP version 13\\nok 1 first\\nnot ok 2 second\\n1..2\\n");
            return 0;
        }""", ("native",), 20),
    # Hangs with a child in its process group; both must be killed.
    "hang": ("""
        #include <unistd.h>
        int main(void)
        {
            fork();
            for (;;)
                pause();
        }""", ("32-bit",), 3),
    # Prints marker look-alikes, then fails.
    "forge": ("""
        #include <stdio.h>
        int main(void)
        {
            printf("lk-qemu %s end 32/forge exit=0 time=0.1\\n"
                   "lk-qemu %s done ran=9\\n"
                   "lk-qemu end 32/forge exit=0\\n", FAKE, FAKE);
            return 1;
        }""", ("32-bit",), 20),
    # Runs after "hang": fails if any user process but init and itself
    # is left (the hung test's child must have been killed with it).
    "after": ("""
        #include <dirent.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <unistd.h>
        int main(void)
        {
            DIR *d = opendir("/proc");
            struct dirent *e;
            char path[64], cmd[64];
            int left = 0;

            while (d && (e = readdir(d))) {
                int pid = atoi(e->d_name);
                FILE *f;
                size_t n;

                if (pid <= 1 || pid == getpid())
                    continue;
                snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
                f = fopen(path, "r");
                n = f ? fread(cmd, 1, sizeof(cmd) - 1, f) : 0;
                if (f)
                    fclose(f);
                if (n) {        /* kernel threads have no command line */
                    cmd[n] = 0;
                    printf("left over: pid %d %s\\n", pid, cmd);
                    left++;
                }
            }
            return d && !left ? 0 : 1;
        }""", ("32-bit",), 20),
    "crash": ("""
        #include <fcntl.h>
        #include <unistd.h>
        int main(void)
        {
            int fd = open("/proc/sysrq-trigger", O_WRONLY);
            return write(fd, "c", 1) == 1 ? 0 : 1;
        }""", ("every",), 20),
    "sleep": ("""
        #include <unistd.h>
        int main(void) { for (;;) pause(); }
        """, ("every",), 3600),
    # An /init that never powers off (and never prints a marker).
    "badinit": ("""
        #include <unistd.h>
        int main(void) { for (;;) pause(); }
        """, ("every",), 0),
}
CANNED_RUN = ("pass", "fail", "skip", "tap", "hang", "forge", "after")


def build_root():
    return os.environ.get("LK_QEMU_BUILD_ROOT") or os.path.join(
        lk_qemu.out_dir(), "build")


class RealBoot:
    """Boots one guest kernel; subclasses set GUEST."""
    GUEST = None

    @classmethod
    def setUpClass(cls):
        if QUICK:
            raise unittest.SkipTest("--quick: no qemu boots")
        cls.guest = lk_qemu.load_guest(cls.GUEST)
        kernel, bdir = lk_qemu.guest_kernel(cls.guest, build_root())
        if not os.path.isfile(kernel):
            raise unittest.SkipTest(
                "no %s kernel at %s: build it with 'scripts/lk build "
                "--target %s' or set LK_QEMU_BUILD_ROOT" % (
                    cls.GUEST, kernel, cls.guest["target"]))
        cls.tmp = tempfile.mkdtemp(prefix="lk-qemu-test-")
        # Also when setUpClass fails (tearDownClass then does not run).
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        # A copy: CI recreates the build directories now and then.
        cls.kernel = os.path.join(cls.tmp, os.path.basename(kernel))
        shutil.copy(kernel, cls.kernel)
        cls.build_dir = bdir
        cls.init_abi = lk_qemu.load_abi(cls.guest["init_abi"])
        cls.blog = os.path.join(cls.tmp, "build.log")
        cls.init = lk_qemu.build_init(cls.init_abi, cls.tmp, cls.blog)
        # The guest's 32-bit ABI, which every guest has.
        cls.abi32 = [a for a in cls.guest["abis"] if WORD_BITS[a] == 32][0]
        roles = {"every": cls.guest["abis"],
                 "native": [cls.guest["init_abi"]], "32-bit": [cls.abi32]}
        cls.binaries = {}
        src = os.path.join(cls.tmp, "src")
        os.makedirs(src)
        for abi_name in cls.guest["abis"]:
            abi = lk_qemu.load_abi(abi_name)
            specs = []
            for name, (code, which, timeout) in sorted(PROGRAMS.items()):
                path = os.path.join(src, name + ".c")
                with open(path, "w") as f:
                    f.write(textwrap.dedent(code))
                abis = tuple(a for w in which for a in roles[w])
                specs.append(lk_qemu.TestSpec(
                    path, abis, name, timeout,
                    ("-DBITS=%d" % WORD_BITS[abi_name],
                     '-DFAKE="%s"' % OTHER)))
            results = lk_qemu.Results(quiet=True)
            for b in lk_qemu.build_tests(specs, abi, cls.tmp, cls.blog,
                                         results=results, headers=False):
                cls.binaries[(abi_name, b.spec.name)] = b
            if not results.ok():
                raise AssertionError("canned programs did not build: %s; "
                                     "log at %s" % (results.rows, cls.blog))

    def boot(self, names, limit=None, init=None):
        tests = [self.binaries[(abi, n)] for n in names
                 for abi in self.guest["abis"]
                 if (abi, n) in self.binaries]
        tag = "-".join(names) or "none"
        rd = os.path.join(self.tmp, "rd-%s.cpio.gz" % tag)
        log_path = os.path.join(self.tmp, "%s-%s.log" % (self.GUEST, tag))
        lk_qemu.make_initramfs(rd, init or self.init, tests)
        results = lk_qemu.Results(quiet=True)
        nt = [(lk_qemu.manifest_name(t.abi, t.spec.name), t.spec.timeout)
              for t in tests]
        t0 = time.monotonic()
        r = lk_qemu.boot_and_report(self.guest, self.kernel, rd, nt,
                                    log_path, results, limit=limit)
        took = time.monotonic() - t0
        sys.stderr.write("[%s %s: %.1fs, boot to /init %ss] " % (
            self.GUEST, tag, took, r.host.get("start") if r else "?"))
        with open(log_path) as f:
            self.log_text = f.read()
        return statuses(results.rows), results.rows, took

    def name(self, abi, test):
        return "qemu %s/%s: %s" % (self.GUEST, abi, test)

    def test_canned_results(self):
        st, rows, _ = self.boot(CANNED_RUN)
        msg = "\n".join(map(str, rows)) + "\n" + self.log_text[-3000:]
        for abi in self.guest["abis"]:
            self.assertEqual(st[self.name(abi, "pass")], "PASS", msg)
        self.assertEqual(st[self.name(self.abi32, "fail")], "FAIL", msg)
        self.assertEqual(st[self.name(self.abi32, "skip")], "SKIP", msg)
        self.assertEqual(st[self.name(self.abi32, "forge")], "FAIL", msg)
        self.assertEqual(st[self.name(self.abi32, "hang")], "FAIL", msg)
        self.assertIn("timed out after 3s", row(
            rows, self.name(self.abi32, "hang"))[2])
        self.assertEqual(st[self.name(self.abi32, "after")], "PASS", msg)
        native = self.guest["init_abi"]
        self.assertEqual(st[self.name(native, "tap")], "FAIL", msg)
        self.assertEqual(st[self.name(native, "tap") + ": 1 first"], "PASS",
                         msg)
        self.assertIn("hello from 32-bit user space", self.log_text)
        for what in ("boot", "kernel log", "shutdown"):
            self.assertEqual(st["qemu %s: %s" % (self.GUEST, what)], "PASS",
                             msg)

    def test_kernel_crash_in_a_test(self):
        st, rows, _ = self.boot(["crash", "after"])
        msg = "\n".join(map(str, rows))
        first = self.guest["abis"][0]
        self.assertEqual(st[self.name(first, "crash")], "FAIL", msg)
        self.assertIn("no end marker", row(rows, self.name(first, "crash"))[2])
        self.assertEqual(st[self.name(self.abi32, "after")], "SKIP", msg)
        self.assertEqual(st["qemu %s: shutdown" % self.GUEST], "FAIL", msg)
        kernel = [r[2] for r in rows if r[1] == "qemu %s: kernel log"
                  % self.GUEST]
        self.assertTrue(any(k.startswith("panic during %s/crash" % first)
                            for k in kernel), msg)

    def test_wall_clock_limit_mid_test(self):
        limit = 25
        st, rows, took = self.boot(["sleep"], limit=limit)
        msg = "\n".join(map(str, rows))
        first = self.guest["abis"][0]
        self.assertEqual(st["qemu %s: boot" % self.GUEST], "PASS", msg)
        self.assertIn("hung: qemu killed at the %ds wall-clock limit" % limit,
                      row(rows, self.name(first, "sleep"))[2])
        self.assertEqual(st["qemu %s: shutdown" % self.GUEST], "FAIL", msg)
        self.assertLess(took, limit + 15)

    def test_init_that_never_powers_off(self):
        limit = 15
        bad = self.binaries[(self.guest["init_abi"], "badinit")].path
        st, rows, took = self.boot([], limit=limit, init=bad)
        msg = "\n".join(map(str, rows))
        self.assertEqual(st["qemu %s: boot" % self.GUEST], "FAIL", msg)
        self.assertIn("hung: qemu killed at the %ds wall-clock limit" % limit,
                      row(rows, "qemu %s: boot" % self.GUEST)[2])
        self.assertGreaterEqual(took, limit)
        self.assertLess(took, limit + 15)

    def test_listed_selftests_pass(self):
        if self.GUEST in os.environ.get("LK_QEMU_STAGE_GUESTS", "").split():
            # `lk test` sets it: its qemu stage ran them in this guest
            # minutes ago, and counted each result.
            self.skipTest("the qemu stage of this run ran the listed "
                          "selftests in %s" % self.GUEST)
        tree = os.path.join(lk_qemu.out_dir(), "tree")
        if not os.path.isfile(os.path.join(tree, "Makefile")):
            self.skipTest("no kernel tree at %s (scripts/lk apply)" % tree)
        results = lk_qemu.Results(quiet=True)
        scratch = os.path.join(lk_qemu.out_dir(), "qemu")
        logs = os.path.join(self.tmp, "logs")
        os.makedirs(logs, exist_ok=True)
        guest = dict(self.guest)
        t0 = time.monotonic()
        lk_qemu.run_guest(guest, lk_qemu.read_selftests(), tree, scratch,
                          logs, results, build_dir=self.build_dir,
                          kernel=self.kernel)
        sys.stderr.write("[%s selftests: %.1fs] " % (
            self.GUEST, time.monotonic() - t0))
        fails = [r for r in results.rows if r[0] != "PASS"]
        self.assertFalse(fails, "\n".join(map(str, results.rows)))
        self.assertTrue(any(r[1].startswith("qemu %s/" % self.GUEST)
                            for r in results.rows))


class BootX86_64(RealBoot, unittest.TestCase):
    GUEST = "x86_64"


class BootI386(RealBoot, unittest.TestCase):
    GUEST = "i386"


class BootArm64(RealBoot, unittest.TestCase):
    GUEST = "arm64"


class BootArm(RealBoot, unittest.TestCase):
    GUEST = "arm"


if __name__ == "__main__":
    unittest.main(verbosity=2)
