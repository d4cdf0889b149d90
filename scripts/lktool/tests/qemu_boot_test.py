# SPDX-License-Identifier: GPL-2.0
"""Real boots of the x86_64, i386, arm64 and arm kernels under TCG.

The boot tests use the kernels in $LK_QEMU_BUILD_ROOT/<target> (default
$LK_OUT/build/<target>); without a kernel they are skipped and say so.
The programs they run (qemu_programs.py) are written to a temporary
directory at run time."""

import os
import shutil
import sys
import tempfile
import textwrap
import time
import unittest

from .. import common, qemu, qemu_conf, userspace
from .qemu_programs import CANNED_RUN, FREEZER_H, PROGRAMS, WORD_BITS
from .qemu_support import OTHER, row, statuses
from .support import QUICK


def build_root():
    return os.environ.get("LK_QEMU_BUILD_ROOT") or os.path.join(
        common.out_dir(), "build"
    )


class RealBoot:
    """Boots one guest kernel; subclasses set GUEST."""

    GUEST: str | None = None

    @classmethod
    def setUpClass(cls):
        if QUICK:
            raise unittest.SkipTest("--quick: no qemu boots")
        cls.guest = qemu_conf.load_guest(cls.GUEST)
        kernel, bdir = qemu.guest_kernel(cls.guest, build_root())
        if not os.path.isfile(kernel):
            raise unittest.SkipTest(
                "no %s kernel at %s: build it with 'scripts/lk build "
                "--target %s' or set LK_QEMU_BUILD_ROOT"
                % (cls.GUEST, kernel, cls.guest["target"])
            )
        cls.tmp = tempfile.mkdtemp(prefix="lk-qemu-test-")
        # Also when setUpClass fails (tearDownClass then does not run).
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        # A copy: CI recreates the build directories now and then.
        cls.kernel = os.path.join(cls.tmp, os.path.basename(kernel))
        shutil.copy(kernel, cls.kernel)
        cls.build_dir = bdir
        cls.init_abi = qemu_conf.load_abi(cls.guest["init_abi"])
        cls.blog = os.path.join(cls.tmp, "build.log")
        cls.init = userspace.build_init(cls.init_abi, cls.tmp, cls.blog)
        # The guest's 32-bit ABI, which every guest has.
        cls.abi32 = [a for a in cls.guest["abis"] if WORD_BITS[a] == 32][0]
        roles = {
            "every": cls.guest["abis"],
            "native": [cls.guest["init_abi"]],
            "32-bit": [cls.abi32],
        }
        cls.binaries = {}
        src = os.path.join(cls.tmp, "src")
        os.makedirs(src)
        with open(os.path.join(src, "freezer.h"), "w") as f:
            f.write(FREEZER_H)
        for abi_name in cls.guest["abis"]:
            abi = qemu_conf.load_abi(abi_name)
            specs = []
            for name, (code, which, timeout) in sorted(PROGRAMS.items()):
                path = os.path.join(src, name + ".c")
                with open(path, "w") as f:
                    f.write(textwrap.dedent(code))
                abis = tuple(a for w in which for a in roles[w])
                specs.append(
                    qemu_conf.TestSpec(
                        path,
                        abis,
                        name,
                        timeout,
                        ("-DBITS=%d" % WORD_BITS[abi_name], '-DFAKE="%s"' % OTHER),
                    )
                )
            results = common.Results(echo=False)
            for b in userspace.build_tests(
                specs, abi, cls.tmp, cls.blog, results=results, headers=False
            ):
                cls.binaries[(abi_name, b.spec.name)] = b
            if not results.ok():
                raise AssertionError(
                    "canned programs did not build: %s; "
                    "log at %s" % (results.rows, cls.blog)
                )

    def boot(self, names, limit=None, init=None):
        tests = [
            self.binaries[(abi, n)]
            for n in names
            for abi in self.guest["abis"]
            if (abi, n) in self.binaries
        ]
        tag = "-".join(names) or "none"
        rd = os.path.join(self.tmp, "rd-%s.cpio.gz" % tag)
        log_path = os.path.join(self.tmp, "%s-%s.log" % (self.GUEST, tag))
        userspace.make_initramfs(rd, init or self.init, tests)
        results = common.Results(echo=False)
        nt = [
            (userspace.manifest_name(t.abi, t.spec.name), t.spec.timeout) for t in tests
        ]
        t0 = time.monotonic()
        r = qemu.boot_and_report(
            self.guest, self.kernel, rd, nt, log_path, results, limit=limit
        )
        took = time.monotonic() - t0
        sys.stderr.write(
            "[%s %s: %.1fs, boot to /init %ss] "
            % (self.GUEST, tag, took, r.host.get("start") if r else "?")
        )
        with open(log_path) as f:
            self.log_text = f.read()
        self.report = r  # the parsed log, or None
        return statuses(results.rows), results.rows, took

    def name(self, abi, test):
        return "qemu %s/%s: %s" % (self.GUEST, abi, test)

    def assert_row(self, rows, abi, test, status):
        """The row of test, run for abi, has status; the message shows the
        row and what the test printed.  Returns the row."""
        r = row(rows, self.name(abi, test))
        run = self.report and self.report.tests.get(userspace.manifest_name(abi, test))
        printed = "".join(l + "\n" for _, l in run.output) if run else "(not run)\n"
        self.assertEqual(r[0], status, "%s; it printed:\n%s" % (r, printed))
        return r

    def assert_guest_rows(self, rows, what=("boot", "kernel log", "shutdown")):
        for w in what:
            r = row(rows, "qemu %s: %s" % (self.GUEST, w))
            self.assertEqual(r[0], "PASS", "%s\n%s" % (r, self.log_text[-3000:]))

    def test_canned_results(self):
        _, rows, _ = self.boot(CANNED_RUN)
        for abi in self.guest["abis"]:
            self.assert_row(rows, abi, "pass", "PASS")
        a = self.abi32
        self.assert_row(rows, a, "fail", "FAIL")
        self.assert_row(rows, a, "skip", "SKIP")
        self.assert_row(rows, a, "forge", "FAIL")
        hang = self.assert_row(rows, a, "hang", "FAIL")
        self.assertIn("timed out after 3s; its process group was killed", hang[2])
        self.assert_row(rows, a, "after", "PASS")
        native = self.guest["init_abi"]
        self.assert_row(rows, native, "tap", "FAIL")
        self.assertEqual(row(rows, self.name(native, "tap") + ": 1 first")[0], "PASS")
        self.assertIn("hello from 32-bit user space", self.log_text)
        self.assert_guest_rows(rows)

    # init waits until a test's process group is gone before the next test
    # starts, and a test whose leftovers outlive SIGKILL fails.
    def test_what_a_test_leaves_behind_goes_before_the_next(self):
        if "CONFIG_CGROUP_FREEZER" not in qemu_conf.kernel_config(self.build_dir):
            self.skipTest("the %s kernel has no cgroup v1 freezer" % self.GUEST)
        _, rows, _ = self.boot(["freeze", "thaw", "after"])
        a = self.abi32
        freeze = self.assert_row(rows, a, "freeze", "FAIL")
        self.assertIn(
            "exit 0, but some of its process group was still there 10s after "
            "SIGKILL",
            freeze[2],
        )
        self.assert_row(rows, a, "thaw", "PASS")
        self.assert_row(rows, a, "after", "PASS")
        self.assert_guest_rows(rows)

    def test_kernel_crash_in_a_test(self):
        st, rows, _ = self.boot(["crash", "after"])
        msg = "\n".join(map(str, rows))
        first = self.guest["abis"][0]
        self.assertEqual(st[self.name(first, "crash")], "FAIL", msg)
        self.assertIn("no end marker", row(rows, self.name(first, "crash"))[2])
        self.assertEqual(st[self.name(self.abi32, "after")], "SKIP", msg)
        self.assertEqual(st["qemu %s: shutdown" % self.GUEST], "FAIL", msg)
        kernel = [r[2] for r in rows if r[1] == "qemu %s: kernel log" % self.GUEST]
        self.assertTrue(
            any(k.startswith("panic during %s/crash" % first) for k in kernel), msg
        )

    def test_wall_clock_limit_mid_test(self):
        limit = 25
        st, rows, took = self.boot(["sleep"], limit=limit)
        msg = "\n".join(map(str, rows))
        first = self.guest["abis"][0]
        self.assertEqual(st["qemu %s: boot" % self.GUEST], "PASS", msg)
        self.assertIn(
            "hung: qemu killed at the %ds wall-clock limit" % limit,
            row(rows, self.name(first, "sleep"))[2],
        )
        self.assertEqual(st["qemu %s: shutdown" % self.GUEST], "FAIL", msg)
        self.assertLess(took, limit + 15)

    def test_init_that_never_powers_off(self):
        limit = 15
        bad = self.binaries[(self.guest["init_abi"], "badinit")].path
        st, rows, took = self.boot([], limit=limit, init=bad)
        msg = "\n".join(map(str, rows))
        self.assertEqual(st["qemu %s: boot" % self.GUEST], "FAIL", msg)
        self.assertIn(
            "hung: qemu killed at the %ds wall-clock limit" % limit,
            row(rows, "qemu %s: boot" % self.GUEST)[2],
        )
        self.assertGreaterEqual(took, limit)
        self.assertLess(took, limit + 15)

    def test_listed_selftests_pass(self):
        if self.GUEST in os.environ.get("LK_QEMU_STAGE_GUESTS", "").split():
            # `lk test` sets it: its qemu stage ran them in this guest
            # minutes ago, and counted each result.
            self.skipTest(
                "the qemu stage of this run ran the listed "
                "selftests in %s" % self.GUEST
            )
        tree = os.path.join(common.out_dir(), "tree")
        if not os.path.isfile(os.path.join(tree, "Makefile")):
            self.skipTest("no kernel tree at %s (scripts/lk apply)" % tree)
        results = common.Results(echo=False)
        scratch = os.path.join(common.out_dir(), "qemu")
        logs = os.path.join(self.tmp, "logs")
        os.makedirs(logs, exist_ok=True)
        guest = dict(self.guest)
        t0 = time.monotonic()
        qemu.run_guest(
            guest,
            qemu_conf.read_selftests(),
            tree,
            scratch,
            logs,
            results,
            build_dir=self.build_dir,
            kernel=self.kernel,
        )
        sys.stderr.write("[%s selftests: %.1fs] " % (self.GUEST, time.monotonic() - t0))
        # As in the qemu stage: a kselftest skip (pac_kvm_test on a CPU
        # without EL2) is a SKIP there, not a failure.
        fails = [r for r in results.rows if r[0] == "FAIL"]
        self.assertFalse(fails, "\n".join(map(str, results.rows)))
        self.assertTrue(
            any(r[1].startswith("qemu %s/" % self.GUEST) for r in results.rows)
        )


class BootX86_64(RealBoot, unittest.TestCase):
    GUEST = "x86_64"


class BootI386(RealBoot, unittest.TestCase):
    GUEST = "i386"


class BootArm64(RealBoot, unittest.TestCase):
    GUEST = "arm64"


class BootArm(RealBoot, unittest.TestCase):
    GUEST = "arm"
