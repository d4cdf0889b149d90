# SPDX-License-Identifier: GPL-2.0
"""Tests of the builds lk keeps for a run with the same inputs
(build.KeptBuild)."""

import collections
import os
import shutil
import subprocess
import tempfile
import time
import unittest
from unittest import mock

from .. import build, common, kept
from .support import repo_git, write

TARGET = {
    "name": "x86_64",
    "arch": "x86_64",
    "cross_compile": "",
    "fragments": [],
    "baseline_fails": [],
}
GOALS = ["vmlinux", "bzImage"]


class KeptBuilds(unittest.TestCase):
    """build_target(keep=True, fresh=True): a build directory that holds
    the full build of the same inputs is reported, not built again."""

    def setUp(self):
        self.top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.top)
        self.tree = os.path.join(self.top, "tree")
        self.out = os.path.join(self.top, "out")
        os.makedirs(self.tree)
        repo_git(self.tree, "init", "-q")
        write(os.path.join(self.tree, "Makefile"), "all:\n")
        repo_git(self.tree, "add", "Makefile")
        repo_git(self.tree, "commit", "-q", "-m", "tree")
        self.makes = []
        patches = [
            mock.patch.object(build, "configure", self.fake_configure),
            mock.patch.object(common, "run_watched", self.fake_make),
            mock.patch.object(kept, "toolchain_id", return_value="gcc 12.2.0"),
        ]
        for p in patches:
            p.start()
            self.addCleanup(p.stop)
        self.fail_make = False

    def fake_configure(self, t, tree, build_dir, logfile, before_tip=False):
        write(os.path.join(build_dir, ".config"), "CONFIG_X=y\n")

    def fake_make(self, cmd, logfile, *args, **kw):
        bdir = [a[2:] for a in cmd if a.startswith("O=")][0]
        self.makes.append(cmd[-len(GOALS) :])
        with open(logfile, "a") as f:
            f.write("kernel/a.c:1:2: warning: unused variable 'x'\n")
        if self.fail_make:
            return subprocess.CompletedProcess(cmd, 2)
        write(os.path.join(bdir, "vmlinux"), "ELF %d" % len(self.makes))
        write(os.path.join(bdir, "arch/x86/boot/bzImage"), "bz")
        return subprocess.CompletedProcess(cmd, 0)

    def run_build(self, keep=True, goals=GOALS):
        results = common.Results(echo=False)
        w = build.build_target(
            TARGET, self.tree, self.out, goals, results, fresh=True, keep=keep
        )
        return w, [r[:2] + (r[2],) for r in results.rows]

    def test_a_second_run_reports_the_kept_build(self):
        w1, rows1 = self.run_build()
        w2, rows2 = self.run_build()
        self.assertEqual(len(self.makes), 1)
        self.assertEqual(w1, w2)
        self.assertEqual(
            w2, collections.Counter({"kernel/a.c: unused variable 'x'": 1})
        )
        self.assertEqual(
            rows2[1],
            ("PASS", "build: x86_64", "make vmlinux bzImage" + build.KEPT_BUILD_NOTE),
        )
        self.assertNotIn("kept", rows1[1][2])
        with open(os.path.join(self.out, "logs", "warnings-x86_64.txt")) as f:
            self.assertIn("# complete: yes", f.read())

    def test_what_breaks_the_record(self):
        bdir = os.path.join(self.out, "build", "x86_64")
        self.run_build()
        # a product relinked by another build (kunit.py in um's directory)
        time.sleep(0.01)
        write(os.path.join(bdir, "vmlinux"), "ELF other")
        self.run_build()
        self.assertEqual(len(self.makes), 2)
        # the configuration rewritten
        write(os.path.join(bdir, ".config"), "CONFIG_X=n\n")
        self.run_build()
        self.assertEqual(len(self.makes), 3)
        # other goals, another tree, another toolchain, --rebuild
        self.run_build(goals=["vmlinux"])
        self.assertEqual(len(self.makes), 4)
        write(os.path.join(self.tree, "Makefile"), "all: x\n")
        repo_git(self.tree, "commit", "-q", "-a", "-m", "change")
        self.run_build(goals=["vmlinux"])
        self.assertEqual(len(self.makes), 5)
        with mock.patch.object(kept, "toolchain_id", return_value="gcc 13"):
            self.run_build(goals=["vmlinux"])
        self.assertEqual(len(self.makes), 6)
        self.run_build(goals=["vmlinux"], keep=False)
        self.assertEqual(len(self.makes), 7)
        # and each of those left a record of its own that holds
        self.run_build(goals=["vmlinux"])
        self.assertEqual(len(self.makes), 7)

    def test_no_record_of_a_failed_or_partial_build(self):
        self.fail_make = True
        self.run_build()
        self.fail_make = False
        _, rows = self.run_build()
        self.assertEqual(len(self.makes), 2)
        self.assertNotIn("kept", rows[1][2])
        # object goals are not files a record can check
        self.run_build(goals=["kernel/a.o", "fs/"])
        self.run_build(goals=["kernel/a.o", "fs/"])
        self.assertEqual(len(self.makes), 4)

    def test_a_damaged_record_is_not_read(self):
        self.run_build()
        write(os.path.join(self.out, "build", "x86_64", build.KeptBuild.NAME), "{")
        self.run_build()
        self.assertEqual(len(self.makes), 2)
