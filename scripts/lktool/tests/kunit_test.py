# SPDX-License-Identifier: GPL-2.0
"""Tests of the KUnit stage: kunit.py runs and the KTAP of the guests."""

import collections
import os
import re
import shutil
import tempfile
import unittest

from .. import apply, common, kunit
from .support import QUICK, TOP, read, write


CANNED_KTAP = """\
[    0.000000] Linux version 4.20.0 (canned)
[    0.812345] KTAP version 1
[    0.812350] 1..2
[    0.812400]     KTAP version 1
[    0.812410]     # Subtest: demo_pass
[    0.812420]     1..2
[    0.812430]     ok 1 first
[    0.812440]     ok 2 second
[    0.812450] ok 1 demo_pass
[    0.812460]     KTAP version 1
[    0.812470]     # Subtest: demo_fail
[    0.812480]     1..1
[    0.812490]     # broken: EXPECTATION FAILED at lib/demo.c:3
[    0.812495]     Expected 1 == 2, but
[    0.812500]     not ok 1 broken
[    0.812510] not ok 2 demo_fail
[    0.900000] Freeing unused kernel image memory: 1234K
lk-qemu 1234 begin 64/pass
KTAP version 1
1..1
not ok 1 user_space_is_not_kunit
"""


def kunit_tool_or_skip(testcase):
    if QUICK:
        raise unittest.SkipTest("--quick: no kunit.py")
    try:
        kunit.kunit_tarball()
    except common.Failure as e:
        raise unittest.SkipTest(str(e))


class KUnitLogs(unittest.TestCase):
    """The KUnit results that QEMU guests print while booting."""

    @classmethod
    def setUpClass(cls):
        kunit_tool_or_skip(cls)
        cls.tmp = tempfile.mkdtemp(prefix="lk-kunit-test-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        tree = os.path.join(cls.tmp, "tree")
        os.makedirs(tree)
        # The run's own unpacked kunit.py (lk test's qemu stage has just
        # unpacked it): unpacking it again costs a quarter of a minute.
        cls.tool = kunit.install_kunit_tool(tree, common.out_dir(None))

    def parse(self, text, label):
        path = os.path.join(self.tmp, label + ".serial")
        write(path, text)
        results = common.Results()
        ok = kunit.parse_kunit_log(self.tool, path, label, self.tmp, results)
        return ok, {r[1]: r[0] for r in results.rows}

    def test_cases_are_reported_one_by_one(self):
        ok, rows = self.parse(CANNED_KTAP, "canned")
        self.assertFalse(ok)
        self.assertEqual(rows.get("kunit canned: demo_pass.first"), "PASS")
        self.assertEqual(rows.get("kunit canned: demo_pass.second"), "PASS")
        self.assertEqual(rows.get("kunit canned: demo_fail.broken"), "FAIL")
        # What user space prints after the kernel part is not KUnit's.
        self.assertFalse(any("user_space" in k for k in rows), rows)

    def test_all_passing(self):
        text = (
            CANNED_KTAP.replace("[    0.812460]     KTAP", "[    0.812460] X")
            .split("[    0.812460]")[0]
            .replace("1..2\n[    0.812400]", "1..1\n[    0.812400]")
        )
        ok, rows = self.parse(text, "passing")
        self.assertTrue(ok, rows)
        self.assertEqual(rows.get("kunit: passing"), "PASS")

    def test_a_crash_in_the_middle_fails(self):
        text = (
            CANNED_KTAP.split("[    0.812440]")[0]
            + "[    0.813000] Kernel panic - not syncing: Fatal exception\n"
        )
        ok, rows = self.parse(text, "crash")
        self.assertFalse(ok)
        self.assertIn("FAIL", rows.values(), rows)
        self.assertNotIn("kunit: crash", [k for k, v in rows.items() if v == "PASS"])

    def test_no_ktap_at_all_fails(self):
        ok, rows = self.parse("[    0.0] Linux version 4.20.0\nRun /init\n", "none")
        self.assertFalse(ok)
        self.assertEqual(rows.get("kunit: none"), "FAIL")


class KUnitRuns(unittest.TestCase):
    """kunit.py on the applied tree: a failing case must fail the run."""

    @classmethod
    def setUpClass(cls):
        kunit_tool_or_skip(cls)
        cls.args = collections.namedtuple("Args", "out series_dir")(
            common.out_dir(None), TOP
        )
        try:
            apply.applied_tree(cls.args)
        except common.Failure as e:
            raise unittest.SkipTest(str(e))

    def run_kunit(self, name, kunitconfigs, extra=()):
        """do_kunit() on UML with kunit/<c>.kunitconfig for c in kunitconfigs."""
        results = common.Results()
        ok = kunit.do_kunit(
            self.args,
            results,
            "um",
            [os.path.join(TOP, "kunit", c + ".kunitconfig") for c in kunitconfigs],
            name=name,
            extra=extra,
        )
        return ok, results

    def test_a_failing_case_fails_the_run(self):
        # In the build directory of CI's own UML kernel (the um build
        # target, which configs/kunit-tool/runs runs): the failing suite adds
        # a few objects to that kernel instead of costing a kernel of its
        # own; the next build there starts from an empty directory.
        ok, results = self.run_kunit("um-failing", ["all", "failing"])
        self.assertFalse(ok)
        failed = [r[1] for r in results.rows if r[0] == "FAIL"]
        self.assertTrue(
            any(re.match(r"kunit um-failing: \w+\.\w+$", n) for n in failed),
            results.rows,
        )
        self.assertRegex(results.summary(), r"^\d+ passed, [1-9]\d* failed")

    def test_a_filter_glob_runs_the_matching_suites_only(self):
        # kunit.py passes the glob to the kernel as kunit.filter_glob=,
        # which the prerequisite KUnit core has to honour.
        ok, results = self.run_kunit("um-filter", ["all"], extra=["futex*"])
        self.assertTrue(ok, results.rows)
        cases = [r[1] for r in results.rows if r[1].startswith("kunit um-filter: ")]
        self.assertTrue(cases, results.rows)
        for c in cases:
            self.assertRegex(c, r"^kunit um-filter: futex\w*\.\w+$")

    def test_an_edit_that_does_not_compile_fails_in_make(self):
        tree = apply.applied_tree(self.args)
        path = os.path.join(tree, "fs", "select.c")
        self.addCleanup(
            common.git, ["checkout", "-q", "-f", "--", "fs/select.c"], cwd=tree
        )
        with open(path, "a") as f:
            f.write("\n#error lk kunit test: an edit that does not compile\n")
        ok, results = self.run_kunit("um-edit", ["all"])
        self.assertFalse(ok)
        fails = [r for r in results.rows if r[0] == "FAIL"]
        self.assertEqual([r[1] for r in fails], ["kunit: um-edit"], results.rows)
        self.assertIn("make exited", fails[0][2])
        self.assertIn("an edit that does not compile", read(path))


class UmlSteps(unittest.TestCase):
    """The three steps of a UML run: config, make, exec."""

    def test_steps(self):
        config, make, run = kunit.uml_steps(
            "/t/kunit.py", "/b/um", "/l/k.json", ["--kunitconfig=/k/all"], ["futex*"]
        )
        self.assertEqual(config[1:4], ["/t/kunit.py", "config", "--arch=um"])
        self.assertIn("--kunitconfig=/k/all", config)
        # the make command of kunit.py's own UML build, word for word
        self.assertEqual(
            make[:4], ["make", "ARCH=um", "O=/b/um", "--jobs=" + common.jobs()]
        )
        self.assertEqual(
            make[4:], [o.split("=", 1)[1] for o in kunit.kunit_make_options()]
        )
        self.assertNotIn("olddefconfig", make)
        self.assertEqual(run[1:3], ["/t/kunit.py", "exec"])
        self.assertEqual(run[-2:], ["--json=/l/k.json", "futex*"])
