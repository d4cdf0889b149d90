# SPDX-License-Identifier: GPL-2.0
"""Tests of the kernel reports in a serial log (KASAN, UBSAN, lockdep,
kmemleak, WARNING, BUG, Oops, panic, hung task, RCU stall) and of their
judgement, on canned logs."""

import textwrap
import unittest

from .qemu_support import (
    BOOT,
    canned,
    crash_report_kinds,
    judge,
    judge_one,
    killed_at_limit,
    row,
)


class KernelReports(unittest.TestCase):
    @staticmethod
    def kernel_log(output, result="exit=0", test="64/t"):
        """The one "kernel log" row of a log of one test that printed
        output."""
        return row(judge_one(test, output, result), "qemu x86_64: kernel log")

    def test_kasan_report(self):
        out = textwrap.dedent(
            """\
            [    5.100000] ==================================================================
            [    5.100001] BUG: KASAN: slab-out-of-bounds in compat_get_timex+0x52/0x90
            [    5.100002] Write of size 8 at addr ffff88801c8e8f40 by task t/61
            [    5.100003] Call Trace:
            """
        )
        st, _, detail = self.kernel_log(out)
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
        self.assertIn("Oops during 64/t", self.kernel_log(out, "signal=11")[2])

    def test_warning_needs_a_call_trace(self):
        warn = textwrap.dedent(
            """\
            [    5.100000] WARNING: CPU: 1 PID: 61 at kernel/time/time.c:1 foo+0x1/0x2
            [    5.100001] Modules linked in:
            [    5.100002] Call Trace:
            """
        )
        self.assertIn(
            "WARNING during 64/t: WARNING: CPU: 1 PID: 61", self.kernel_log(warn)[2]
        )
        plain = "[    5.100000] WARNING: this line has no trace\n"
        self.assertEqual(self.kernel_log(plain)[0], "PASS")

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
                self.assertIn(
                    "WARNING during arm/t: WARNING: CPU: 1",
                    self.kernel_log(warn, test="arm/t")[2],
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
        rows = judge_one("arm64/t", bug, "signal=11")
        kinds = [
            r[2].split(" during")[0] for r in rows if r[1] == "qemu x86_64: kernel log"
        ]
        self.assertEqual(kinds, ["BUG"])

    def test_user_space_text_is_not_a_kernel_report(self):
        out = "BUG: the test says so\nWARNING: user\nKernel panic - joke\n"
        self.assertEqual(self.kernel_log(out)[0], "PASS")

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
                self.assertIn(
                    "%s during 64/t" % kind,
                    self.kernel_log("[    5.000000] %s\n" % line)[2],
                )

    def test_a_repeated_report_is_one_row(self):
        line = (
            "[    5.000000] BUG: sleeping function called from invalid "
            "context at arch/x86/mm/fault.c:1369\n"
        )
        rows = judge_one("64/t", line * 3 + line.replace("1369", "1370"), "exit=0")
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
                r = self.kernel_log(report)
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
        self.assertIn("kmemleak during 64/t", self.kernel_log(out)[2])

    def test_kmemleak_scan_that_never_finished(self):
        text = BOOT + "lk-qemu TOK kmemleak begin\n"
        rows = judge(killed_at_limit(text, 9, tests=()))
        self.assertEqual(row(rows, "qemu x86_64: kmemleak")[0], "FAIL")
