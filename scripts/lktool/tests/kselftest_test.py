# SPDX-License-Identifier: GPL-2.0
"""Tests that the series' selftests build: for other architectures and with
the standard kselftest make."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from .support import QUICK, applied_selftests, read


CROSS_CC = ("aarch64-linux-gnu-gcc", "arm-linux-gnueabihf-gcc")

# the user-space ABI (configs/qemu/abi/) of each cross compiler
CROSS_ABI = {"aarch64-linux-gnu-gcc": "arm64", "arm-linux-gnueabihf-gcc": "arm"}


@unittest.skipIf(QUICK, "--quick: no tests that need the applied tree")
class SelftestsOtherArchitectures(unittest.TestCase):
    """The selftests the guests run build for arm and arm64 user space too:
    nothing in them is x86-only without a fallback.  A selftest listed for
    arm ABIs only (arm64/pauth: arm64) is compiled for those."""

    def test_every_listed_selftest_compiles_for_arm_and_arm64(self):
        tree, specs = applied_selftests(self)
        for cc in CROSS_CC:
            if not shutil.which(cc):
                self.fail("%s is not installed (scripts/packages.txt)" % cc)
            for spec in specs:
                if not set(spec.abis) & {"64", "32", CROSS_ABI[cc]}:
                    continue
                with self.subTest(cc=cc, test=spec.name):
                    r = subprocess.run(
                        [
                            cc,
                            "-O2",
                            "-Wall",
                            "-Werror",
                            "-pthread",
                            "-c",
                            "-o",
                            os.devnull,
                            "-I",
                            os.path.join(tree, "tools", "testing", "selftests"),
                            os.path.join(tree, spec.source),
                        ],
                        stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT,
                        universal_newlines=True,
                    )
                    self.assertEqual(r.returncode, 0, r.stdout[-2000:])


def kselftest_targets(makefile_text):
    """The TARGETS that tools/testing/selftests/Makefile lists."""
    targets = []
    for line in makefile_text.splitlines():
        m = re.match(r"^\s*TARGETS\s*\+?=\s*(.*)$", line)
        if m:
            targets += m.group(1).split()
    return targets


def kselftest_target_of(source, targets):
    """The kselftest TARGET whose directory holds SOURCE (the longest one:
    filesystems/binderfs rather than filesystems), or None."""
    prefix = "tools/testing/selftests/"
    if not source.startswith(prefix):
        return None
    d = os.path.dirname(source[len(prefix) :])
    best = None
    for t in targets:
        if (d == t or d.startswith(t + "/")) and (best is None or len(t) > len(best)):
            best = t
    return best


@unittest.skipIf(QUICK, "--quick: no tests that need the applied tree")
class StandardKselftestBuild(unittest.TestCase):
    """Every selftest the guests run is a kselftest: `make headers_install`
    and `make -C tools/testing/selftests TARGETS=...`, as a user runs them
    on a copy of the series' tree, build it where its directory's Makefile
    puts it, without a warning from its source."""

    def test_target_of_a_source(self):
        targets = ["filesystems", "filesystems/binderfs", "futex", "net"]
        self.assertEqual(
            kselftest_target_of(
                "tools/testing/selftests/filesystems/binderfs/t.c", targets
            ),
            "filesystems/binderfs",
        )
        self.assertEqual(
            kselftest_target_of(
                "tools/testing/selftests/futex/functional/f.c", targets
            ),
            "futex",
        )
        self.assertIsNone(
            kselftest_target_of("tools/testing/selftests/netfilter/n.c", targets)
        )
        self.assertIsNone(kselftest_target_of("kernel/x.c", targets))
        self.assertEqual(
            kselftest_targets("TARGETS = aio\nTARGETS += android\n#TARGETS += no\n"),
            ["aio", "android"],
        )

    def test_clock_setting_selftests_stay_out_of_run_tests(self):
        """A listed selftest that sets the clock is built by its Makefile
        but left out of a plain `make run_tests` (TEST_GEN_PROGS_EXTENDED,
        as the destructive tests of timers are): whoever runs the
        kselftests must not find the clock moved to 2040."""
        tree, specs = applied_selftests(self)
        setter = re.compile(
            r"\b(clock_settime|settimeofday|stime)\s*\(|ADJ_SETOFFSET|"
            r"__NR_clock_settime"
        )
        checked = []
        for source in sorted({s.source for s in specs}):
            if not setter.search(read(os.path.join(tree, source))):
                continue
            r = subprocess.run(
                [
                    "make",
                    "-s",
                    "--no-print-directory",
                    "-C",
                    os.path.dirname(os.path.join(tree, source)),
                    "--eval",
                    "lk-progs: ; @echo '$(notdir $(TEST_GEN_PROGS))"
                    "|$(notdir $(TEST_GEN_PROGS_EXTENDED))'",
                    "lk-progs",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                universal_newlines=True,
            )
            self.assertEqual(r.returncode, 0, r.stdout)
            run, built = (part.split() for part in r.stdout.strip().split("|"))
            program = os.path.basename(source)[:-2]
            with self.subTest(test=source):
                self.assertNotIn(program, run, "in TEST_GEN_PROGS")
                self.assertIn(program, built, "not in TEST_GEN_PROGS_EXTENDED")
            checked.append(program)
        # valid-adjtimex and time64_calls_test at least
        self.assertGreaterEqual(len(checked), 2, checked)

    def test_make_builds_every_listed_selftest(self):
        tree, specs = applied_selftests(self)
        # This host builds what runs on x86.  A selftest for arm ABIs only
        # (arm64/pauth, whose Makefile builds nothing elsewhere, and which
        # is not in TARGETS while the y2038 topic holds the neighbouring
        # line) is compiled by SelftestsOtherArchitectures.
        specs = [s for s in specs if set(s.abis) & {"64", "32"}]
        self.assertTrue(specs)
        tmp = tempfile.mkdtemp(prefix="lk-kselftest-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        archive = subprocess.Popen(
            ["git", "-C", tree, "archive", "HEAD"], stdout=subprocess.PIPE
        )
        subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout, check=True)
        self.assertEqual(archive.wait(), 0)
        st = os.path.join(tmp, "tools", "testing", "selftests")
        with open(os.path.join(st, "Makefile")) as f:
            targets = kselftest_targets(f.read())
        wanted = {}
        for spec in specs:
            t = kselftest_target_of(spec.source, targets)
            self.assertIsNotNone(
                t,
                "%s is in no TARGETS directory of "
                "tools/testing/selftests/Makefile" % spec.source,
            )
            wanted[spec.source] = t
        log = os.path.join(tmp, "make.log")
        with open(log, "w") as f:
            r = subprocess.run(
                ["make", "-s", "headers_install"],
                cwd=tmp,
                stdout=f,
                stderr=subprocess.STDOUT,
            )
            self.assertEqual(r.returncode, 0, read(log)[-2000:])
            r = subprocess.run(
                ["make", "-C", st, "TARGETS=" + " ".join(sorted(set(wanted.values())))],
                stdout=f,
                stderr=subprocess.STDOUT,
            )
        text = read(log)
        self.assertEqual(r.returncode, 0, text[-3000:])
        for source in wanted:
            with self.subTest(test=source):
                program = os.path.join(tmp, source[:-2])
                self.assertTrue(
                    os.access(program, os.X_OK), "make did not build %s" % source[:-2]
                )
                base = os.path.basename(source)
                warnings = [
                    l
                    for l in text.splitlines()
                    if re.match(r"^(.*/)?%s:\d+:(\d+:)? warning:" % re.escape(base), l)
                ]
                self.assertEqual(warnings, [])
