# SPDX-License-Identifier: GPL-2.0
"""Tests of the tests' own helpers: which user-space ABIs this host can
run (support.host_abi_problem()), and that the tests which run 32-bit x86
programs on the host skip, saying why, where it cannot."""

import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest

from unittest import mock

from . import bench_output_test, fuzz_driver_test, support
from .qemu_support import process_state
from .support import QUICK


class HostAbi(unittest.TestCase):
    def test_an_elf_file_the_kernel_refuses_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "alien")
            shutil.copy("/bin/true", prog)
            # e_machine (offset 18): a machine no kernel runs, so that
            # execve() fails as an i386 program does on a 64-bit kernel
            # without IA32 emulation
            with open(prog, "r+b") as f:
                f.seek(18)
                f.write(struct.pack("<H", 0xBEEF))
            self.assertEqual(support.exec_problem([prog]), "alien: Exec format error")
        self.assertIsNone(support.exec_problem(["/bin/true"]))
        self.assertEqual(support.exec_problem(["/bin/false"]), "false: exit status 1")

    @unittest.skipIf(QUICK, "--quick: no compiler")
    def test_the_host_abi_probe_builds_and_runs_a_program(self):
        with mock.patch.dict(support._HOST_ABIS, clear=True):
            with mock.patch.object(
                support, "exec_problem", return_value="empty: Exec format error"
            ) as probe:
                why = support.host_abi_problem("32")
                self.assertEqual(support.host_abi_problem("32"), why)
        if why == "i686-linux-gnu-gcc is not installed":
            self.skipTest(why)
        self.assertEqual(
            why, "this host cannot run ABI 32 programs (empty: Exec format error)"
        )
        # once per process, on a program the ABI's compiler made
        self.assertEqual(probe.call_count, 1)
        self.assertTrue(probe.call_args[0][0][0].endswith("/empty"))

    @unittest.skipIf(QUICK, "--quick: no compiler")
    def test_i386_tests_skip_where_the_host_cannot_run_i386(self):
        """The tests that run i386 programs on the host skip, naming the
        reason, when the host's kernel refuses them (no failure)."""
        why = "this host cannot run ABI 32 programs (empty: Exec format error)"
        loader = unittest.TestLoader()
        suite = unittest.TestSuite(
            [
                loader.loadTestsFromName(
                    "CpuProbe.test_a_cpu_ignores_vm_in_an_iret_at_cpl_3",
                    fuzz_driver_test,
                ),
                loader.loadTestsFromName(
                    "Program.test_enosys_cases_are_reported_not_timed",
                    bench_output_test,
                ),
                loader.loadTestsFromName("Program.test_runs_32", bench_output_test),
            ]
        )
        with mock.patch.dict(support._HOST_ABIS, {"32": why}):
            result = unittest.TestResult()
            suite.run(result)
        self.assertEqual(result.failures + result.errors, [])
        self.assertEqual(result.testsRun, 3)
        reasons = [r for _, r in result.skipped]
        if "i686-linux-gnu-gcc is not installed" in reasons:
            self.skipTest("i686-linux-gnu-gcc is not installed")
        self.assertEqual(reasons, [why] * 3)


class ProcessState(unittest.TestCase):
    """qemu_support.process_state(): how a SIGTERM test tells that qemu no
    longer runs, a zombie whose reaper is slow included."""

    def test_running_zombie_and_gone(self):
        self.assertIn(process_state(os.getpid()), ("R", "S"))
        child = subprocess.Popen(["sleep", "60"])
        self.addCleanup(child.kill)
        self.assertIn(process_state(child.pid), ("R", "S"))
        os.kill(child.pid, signal.SIGKILL)
        for _ in range(100):  # not reaped yet: a zombie
            if process_state(child.pid) == "Z":
                break
            time.sleep(0.01)
        self.assertEqual(process_state(child.pid), "Z")
        child.wait()
        self.assertIsNone(process_state(child.pid))
