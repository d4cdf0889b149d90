# SPDX-License-Identifier: GPL-2.0
"""Tests of trinity's libraries and of lk-fuzz (scripts/qemu/fuzz*.c) run on
the host (no guest booted, no kernel built).

Without trinity installed the library tests are skipped and say so.
lk-fuzz runs for real only as root: it unshares a mount namespace and makes
/tmp/lkfuzz, and mounts nothing on the host (no --binderfs, no --cpuset)."""

import contextlib
import io
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from unittest import mock

from .. import boot, common, fuzz, fuzz_trinity
from . import support
from .support import QUICK


class Runtime(unittest.TestCase):
    def check_files(self, files):
        for guest, host in files:
            self.assertTrue(os.path.isabs(guest), guest)
            self.assertTrue(os.path.isfile(host), host)
            self.assertFalse(os.path.islink(host), host)
            self.assertEqual(host, os.path.realpath(host))
        self.assertEqual(len({g for g, _ in files}), len(files), files)

    @unittest.skipUnless(
        os.path.isfile("/usr/bin/trinity"),
        "trinity is not installed (scripts/packages.txt)",
    )
    def test_trinity_64(self):
        files = fuzz_trinity.runtime_files("/usr/bin/trinity", "64")
        self.check_files(files)
        guests = dict(files)
        self.assertIn("/lib64/ld-linux-x86-64.so.2", guests)
        self.assertTrue(
            [g for g in guests if os.path.basename(g) == "libc.so.6"], files
        )

    @unittest.skipIf(QUICK, "--quick: no compiler")
    @unittest.skipUnless(
        shutil.which("i686-linux-gnu-gcc"), "i686-linux-gnu-gcc is not installed"
    )
    def test_i686_program(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "hello.c")
            with open(src, "w") as f:
                f.write(
                    "#include <stdio.h>\nint main(void) " '{ return puts("hi") < 0; }\n'
                )
            prog = os.path.join(d, "hello")
            subprocess.run(["i686-linux-gnu-gcc", "-O2", "-o", prog, src], check=True)
            files = fuzz_trinity.runtime_files(prog, "32")
        self.check_files(files)
        self.assertEqual(
            {g for g, _ in files}, {"/lib/ld-linux.so.2", "/lib/libc.so.6"}
        )
        for _, host in files:
            self.assertTrue(host.startswith("/usr/i686-linux-gnu/"), host)

    def test_missing_library(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(
            fuzz_trinity, "LIB_DIRS", {"64": ((d,), None)}
        ), self.assertRaises(common.Failure) as cm:
            fuzz_trinity.runtime_files("/bin/true", "64")
        self.assertIn("which is not in %s" % d, str(cm.exception))

    def test_no_trinity_for_other_abis(self):
        with self.assertRaises(common.Failure) as cm:
            fuzz_trinity.trinity_for("arm64", "/nonexistent")
        self.assertIn("x86", str(cm.exception))


class Main(unittest.TestCase):
    def test_bad_phase(self):
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(
            SystemExit
        ) as cm:
            fuzz.main(["--phase", "bogus", "--out", "/nonexistent"])
        self.assertEqual(cm.exception.code, 2)
        self.assertIn("invalid choice", err.getvalue())

    def test_guests_fuzz_on_one_host_thread(self):
        # multi-threaded TCG wedged x86_64 (fuzz.FUZZ_CONF's comment)
        booted = []
        with tempfile.TemporaryDirectory() as out, mock.patch.object(
            fuzz, "fuzz_guest", lambda g, *a: booted.append(g)
        ):
            fuzz.fuzz_guests(common.Results(echo=False), out, ci=True)
        self.assertEqual([g["name"] for g in booted], ["x86_64", "i386"])
        for g in booted:
            cmd = boot.qemu_command(g, "/k", "/rd", "0123")
            self.assertEqual(cmd[1:3], ["-accel", "tcg,thread=single"])


FAKE_TRINITY = """\
#!/bin/sh
echo "args: $*"
echo "[main] Marked 64-bit syscall read (0) as deactivated."
sleep ${FAKE_START:-0}
echo "[main] Enabled 13/14 fd providers. initialized:13."
trap 'echo "[main] Ran 42 syscalls. Successes: 1  Failures: 41"; exit ${FAKE_EXIT:-0}' INT
while :; do sleep 0.1; done
"""
ROOT = unittest.skipUnless(
    os.geteuid() == 0, "not root: lk-fuzz needs unshare(CLONE_NEWNS)"
)


@unittest.skipIf(QUICK, "--quick: no compiler")
@unittest.skipUnless(
    os.path.isfile("/usr/include/linux/android/binderfs.h"),
    "no linux/android/binderfs.h in /usr/include (linux-libc-dev)",
)
class Driver(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lk-fuzz-test.")
        cls.prog = os.path.join(cls.dir, "lk-fuzz")
        cls.compiled = subprocess.run(
            ["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", cls.prog]
            + fuzz.FUZZ_SOURCES,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def run_driver(self, args, env=None):
        self.assertEqual(self.compiled.returncode, 0, self.compiled.stdout)
        # SIGINT at its default in the fake trinity, whatever started us
        return subprocess.run(
            [self.prog] + args,
            cwd=self.dir,
            stdout=subprocess.PIPE,
            env=env,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            timeout=60,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )

    def fake(self, name, text):
        """A stand-in for trinity: an executable script in self.dir."""
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)
        return path

    def test_compiles_without_warnings(self):
        self.assertEqual(self.compiled.returncode, 0, self.compiled.stdout)

    def test_usage(self):
        r = self.run_driver([])
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage: lk-fuzz", r.stdout)
        r = self.run_driver(["--seconds", "0", "--seed", "1", "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stdout)
        r = self.run_driver(["--seconds", "1", "--bogus", "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stdout)
        r = self.run_driver(["--seconds", "1", "--start-wait", "0", "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stdout)
        r = self.run_driver(["--seconds", "1", "--stop-wait", "0", "--", "/bin/true"])
        self.assertEqual(r.returncode, 2, r.stdout)

    @ROOT
    def test_stops_trinity_on_time(self):
        fake = self.fake("fake-trinity", FAKE_TRINITY)
        args = os.path.join(self.dir, "p.args")
        with open(args, "w") as f:
            f.write("-c ppoll -V /tmp/lkfuzz/files\n")
        r = self.run_driver(
            [
                "--seconds",
                "2",
                "--seed",
                "1",
                "--args-file",
                args,
                "--",
                fake,
                "-q",
                "-s",
                "1",
            ]
        )
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("lk-fuzz: trinity exit=0", r.stdout)
        self.assertIn("Ran 42 syscalls", r.stdout)
        self.assertIn("args: -q -s 1 -c ppoll -V /tmp/lkfuzz/files\n", r.stdout)
        self.assertTrue(os.path.isfile("/tmp/lkfuzz/files/file"))

    @ROOT
    def test_failing_exit_after_the_stop_fails(self):
        fake = self.fake("fake-trinity-3", FAKE_TRINITY)
        r = self.run_driver(
            ["--seconds", "1", "--seed", "1", "--", fake],
            env=dict(os.environ, FAKE_EXIT="3"),
        )
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("lk-fuzz: trinity exit=3", r.stdout)

    @ROOT
    def test_time_counts_from_ready_and_noise_is_dropped(self):
        fake = self.fake("fake-trinity-slow", FAKE_TRINITY)
        t0 = time.monotonic()
        r = self.run_driver(
            ["--seconds", "1", "--seed", "1", "--", fake],
            env=dict(os.environ, FAKE_START="3"),
        )
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertGreaterEqual(time.monotonic() - t0, 4)
        self.assertIn("fd providers", r.stdout)
        self.assertNotIn("as deactivated", r.stdout)
        self.assertIn("Ran 42 syscalls", r.stdout)

    @ROOT
    def test_not_ready_is_timed_after_the_start_wait(self):
        fake = self.fake(
            "fake-trinity-never", FAKE_TRINITY.replace("fd providers", "something")
        )
        r = self.run_driver(
            ["--seconds", "1", "--start-wait", "2", "--seed", "1", "--", fake]
        )
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("trinity not ready after 2 s", r.stdout)

    @ROOT
    def test_a_process_that_will_not_stop_is_described_then_killed(self):
        fake = self.fake(
            "fake-trinity-deaf",
            FAKE_TRINITY.replace("trap 'echo", "trap '' INT; trap 'echo").replace(
                "' INT\n", "' USR1\n"
            ),
        )
        r = self.run_driver(
            ["--seconds", "1", "--stop-wait", "1", "--seed", "1", "--", fake]
        )
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("trinity did not stop in 1 s after SIGINT", r.stdout)
        self.assertRegex(
            r.stdout, r"lk-fuzz: stuck pid \d+ stat: \d+ " r"\(fake-trinity-d"
        )
        self.assertRegex(r.stdout, r"lk-fuzz: stuck pid \d+ syscall: ")
        self.assertRegex(r.stdout, r"lk-fuzz: stuck pid \d+ stack: ")
        self.assertIn("lk-fuzz: trinity signal=9", r.stdout)

    @ROOT
    def test_early_exit_fails(self):
        r = self.run_driver(["--seconds", "2", "--seed", "1", "--", "/bin/true"])
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("lk-fuzz: trinity exit=0", r.stdout)

    def test_the_64_bit_driver_has_no_cpu_probe(self):
        r = self.run_driver(["--seconds", "1", "--seed", "1", "--", "/bin/true"])
        self.assertIn("lk-fuzz: seed 1", r.stdout)
        self.assertNotIn("lk-fuzz: cpu:", r.stdout)


@unittest.skipIf(QUICK, "--quick: no compiler")
@unittest.skipUnless(
    shutil.which("i686-linux-gnu-gcc"), "i686-linux-gnu-gcc is not installed"
)
class CpuProbe(unittest.TestCase):
    """fuzz_cpu.c on the host's CPU, as a 32-bit program."""

    def test_a_cpu_ignores_vm_in_an_iret_at_cpl_3(self):
        support.skip_unless_host_runs(self, "32")
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "lk-fuzz-32")
            subprocess.run(
                ["i686-linux-gnu-gcc", "-static", "-O2", "-Wall", "-Wextra"]
                + ["-Werror", "-o", prog]
                + fuzz.FUZZ_SOURCES,
                check=True,
            )
            r = subprocess.run(
                [prog, "--seconds", "1", "--seed", "1", "--", "/bin/true"],
                cwd=d,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                universal_newlines=True,
                timeout=60,
            )
        # QEMU's TCG says yes (fuzz_emulator.py); a CPU, or KVM, says no
        self.assertIn("lk-fuzz: cpu: iret at cpl 3 enters vm86 mode: no\n", r.stdout)
