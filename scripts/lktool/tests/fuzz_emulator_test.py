# SPDX-License-Identifier: GPL-2.0
"""Tests of what a fuzz run makes of QEMU's IRET to vm86 mode
(lktool/fuzz_emulator.py), on excerpts of the i386 logs that met it."""

import unittest

from .. import fuzz_emulator, fuzz_judge, fuzz_trinity, serial
from .fuzz_test import LISTING, TOKEN, plan_of
from .qemu_support import row, serial_log

PROBE_YES = "lk-fuzz: cpu: iret at cpl 3 enters vm86 mode: yes\n"

# phase user-binderfs of `lk fuzz --guest i386 --seed 1573248286` (run
# 2026-12-06 15:25; the stat lines shortened)
STUCK = (
    "lk-fuzz: seed 1573248292, 300 s, as uid 65534 in a user namespace, "
    "binderfs\n" + PROBE_YES + "[main] 50096 iterations. [F:36996 S:12431 HI:121]\n"
    "[main] 60108 iterations. [F:44343 S:14984 HI:121]\n"
    "[main] exit_reason=6, but 3 children still running.\n"
    "lk-fuzz: trinity did not stop in 30 s after SIGINT\n"
    "lk-fuzz: stuck pid 1039 stat: 1039 (trinity-main) S 1037 1039 1037 0 -1\n"
    "lk-fuzz: stuck pid 1039 syscall: 267 0x0 0x0 0xbf84f154 0xbf84f14c\n"
    "lk-fuzz: stuck pid 1039 wchan: hrtimer_nanosleep\n"
    "lk-fuzz: stuck pid 9161 stat: 9161 (trinity-c2) R 1039 1039 1037 0 -1\n"
    "lk-fuzz: stuck pid 9161 syscall: running\n"
    "lk-fuzz: stuck pid 9161 wchan: 0\n"
    "lk-fuzz: SysRq l and w: the kernel's backtraces follow\n"
    "[  636.252859] sysrq: SysRq : Show backtrace of all active CPUs\n"
    "[  636.254554] NMI backtrace for cpu 1\n"
    "[  636.255731] CPU: 1 PID: 1037 Comm: lk-fuzz Not tainted 4.20.0+ #7\n"
    "[  636.259669] Call Trace:\n"
    "[  636.260383]  dump_stack+0x47/0x5e\n"
    "[  636.267197]  entry_SYSENTER_32+0x6b/0xbe\n"
    "[  636.267463] EIP: 0xb7f579a5\n"
    "[  636.268498] DS: 007b ES: 007b FS: 0000 GS: 0033 SS: 007b "
    "EFLAGS: 00080246\n"
    "[  636.268951] Sending NMI from CPU 1 to CPUs 0:\n"
    "[  636.281654] NMI backtrace for cpu 0\n"
    "[  636.281706] CPU: 0 PID: 9161 Comm: trinity-c2 Not tainted 4.20.0+ #7\n"
    "[  636.281725] EIP: page_fault+0x0/0xa\n"
    "[  636.281736] DS: 007b ES: 007b FS: 00d8 GS: 00e0 SS: 0068 "
    "EFLAGS: 00082097\n"
    "[  636.281743] Call Trace:\n"
    "[  636.281753]  bad_area+0x2d/0x40\n"
    "[  636.281754]  do_user_addr_fault+0x37c/0x400\n"
    "[  636.281763]  common_exception+0x11d/0x122\n"
    "[  636.281765] EIP: 0xa3\n"
    "[  636.281766] Code: Bad RIP value.\n"
    "[  636.281770] EAX: 00400000 EBX: 004e5d8c ECX: 000ba000 EDX: 00200000\n"
    "[  636.281772] ESI: b72fb000 EDI: b7fa05b4 EBP: b72fb030 ESP: dc491fe0\n"
    "[  636.281774] DS: 0000 ES: 0000 FS: 0000 GS: 00e0 SS: 0068 "
    "EFLAGS: 000a2002\n"
    "[  636.282106] sysrq: SysRq : Show Blocked State\n"
    "[  636.299818] lk-fuzz         D 6476  1038   1037 0x00000002\n"
    "lk-fuzz: binderfs churn ops=227332 errors=180018\n"
    "lk-fuzz: trinity signal=9\n"
)

# i386-debug, phase root-binderfs of seed 1623638208 (2026-12-05): the
# same spin, with IF clear in the popped EFLAGS
SLEEPING = (
    "[  500.959540] BUG: sleeping function called from invalid context at "
    "../../tree/arch/x86/mm/fault.c:1369\n"
    "[  500.961446] in_atomic(): 0, irqs_disabled(): 1, pid: 10156, "
    "name: trinity-c2\n"
    "[  500.968574] Call Trace:\n"
    "[  500.969187]  dump_stack+0x66/0x8e\n"
    "[  500.971090]  do_user_addr_fault+0x140/0x450\n"
    "[  500.974096]  common_exception+0x122/0x12a\n"
    "[  500.974957] EIP: 0xb030\n"
    "[  500.976502] DS: 0000 ES: 0000 FS: 0000 GS: 00e0 SS: 0068 "
    "EFLAGS: 003a4992\n"
)

RAN = "[main] Ran 1234 syscalls. Successes: 5  Failures: 1229\n"


def judge(output, end="exit=1"):
    plan = plan_of(
        fuzz_trinity.phases(fuzz_trinity.trinity_tables(LISTING), "32 64"), seed=1000
    )
    plan = [p for p in plan if p[0] == "64/user-binderfs"]
    runs = [("64/user-binderfs", output, end)]
    r = serial.parse_log(serial_log(runs, TOKEN), "/logs/fuzz-i386.log")
    return fuzz_judge.judge_phases(r, plan, 60, fuzz_judge.read_known())


PHASE = "fuzz x86_64/64: user-binderfs"


class StuckInVm86(unittest.TestCase):
    def test_a_child_spinning_in_vm86_mode_passes(self):
        rows = judge(STUCK)
        st, _, detail = row(rows, PHASE)
        self.assertEqual(st, "PASS", detail)
        self.assertIn("60108 calls (seed 1006) in 60s", detail)
        self.assertIn("binderfs churn 227332 ops", detail)
        self.assertIn("trinity-c2 (pid 9161) spun in vm86 mode", detail)
        self.assertIn("/logs/fuzz-i386.log:", detail)
        self.assertEqual(row(rows, "fuzz x86_64: kernel log")[0], "PASS")

    def test_trinitys_total_is_kept_when_it_gave_one(self):
        st, _, detail = row(judge(STUCK.replace(PROBE_YES, PROBE_YES + RAN)), PHASE)
        self.assertEqual(st, "PASS", detail)
        self.assertIn("1234 calls", detail)

    def fails(self, output, end="exit=1"):
        st, _, detail = row(judge(output, end), PHASE)
        self.assertEqual(st, "FAIL", detail)
        self.assertNotIn("vm86", detail)
        return detail

    def test_the_same_hang_fails_on_a_cpu_that_does_not_enter_vm86(self):
        self.fails(STUCK.replace(PROBE_YES, PROBE_YES.replace("yes", "no")))
        self.fails(STUCK.replace(PROBE_YES, ""))

    def test_a_child_stuck_otherwise_fails(self):
        # its fault did not come from vm86 mode
        self.fails(STUCK.replace("EFLAGS: 000a2002", "EFLAGS: 00082002"))
        # the backtrace in vm86 mode is another task's
        self.fails(STUCK.replace("PID: 9161 Comm", "PID: 9162 Comm"))
        # no backtrace at all
        self.fails(STUCK.split("lk-fuzz: SysRq")[0] + "lk-fuzz: trinity signal=9\n")

    def test_another_stuck_process_fails(self):
        extra = "lk-fuzz: stuck pid 9170 stat: 9170 (trinity-c3) D 1039 1039\n"
        self.fails(STUCK.replace("lk-fuzz: SysRq", extra + "lk-fuzz: SysRq"))
        self.fails(STUCK.replace("(trinity-main) S", "(trinity-main) R"))

    def test_any_other_failure_of_the_phase_still_fails(self):
        for line in (
            "lk-fuzz: the kernel became tainted: 0 -> 512\n",
            "lk-fuzz: a churn did not stop in 30 s\n",
            "lk-fuzz: trinity not ready after 60 s; timing it from now\n",
        ):
            with self.subTest(line=line):
                self.fails(STUCK + line)
        # init killed the phase: not lk-fuzz's exit 1
        self.fails(STUCK, end="killed=timeout")

    def test_vm86_pids_reads_each_backtrace_to_its_end(self):
        lines = STUCK.splitlines()
        self.assertEqual(fuzz_emulator.vm86_pids(lines), {9161})
        # a user-space line ends a backtrace: a dump after it is no one's
        cut = [l for l in lines if "common_exception" not in l]
        at = cut.index("[  636.281765] EIP: 0xa3")
        self.assertEqual(fuzz_emulator.vm86_pids(cut[:at] + ["x"] + cut[at:]), set())


class SleepingInVm86(unittest.TestCase):
    def rows(self, output):
        return judge(output + RAN + "lk-fuzz: trinity exit=0\n", "exit=0")

    def test_the_report_of_the_spin_is_a_skip(self):
        rows = self.rows(PROBE_YES + SLEEPING)
        st, _, detail = row(rows, "fuzz x86_64: emulator report")
        self.assertEqual(st, "SKIP")
        self.assertIn("BUG during 64/user-binderfs: BUG: sleeping function", detail)
        self.assertIn("fuzz_emulator.py", detail)
        self.assertEqual(row(rows, "fuzz x86_64: kernel log")[0], "PASS")
        self.assertEqual(row(rows, PHASE)[0], "PASS")

    def test_it_fails_otherwise(self):
        for output in (
            SLEEPING,
            PROBE_YES.replace("yes", "no") + SLEEPING,
            PROBE_YES + SLEEPING.replace("EFLAGS: 003a4992", "EFLAGS: 00000092"),
            PROBE_YES + SLEEPING.replace("arch/x86/mm/fault.c", "mm/memory.c"),
        ):
            with self.subTest(output=output[:60]):
                rows = self.rows(output)
                self.assertEqual(row(rows, "fuzz x86_64: kernel log")[0], "FAIL")
                self.assertFalse([r for r in rows if "emulator" in r[1]])
