# SPDX-License-Identifier: GPL-2.0
"""Tests of the coccicheck stage."""

import json
import os
import shutil
import tempfile
import unittest

from unittest import mock

from .. import apply, cocci, common, series
from .support import QUICK, TOP, applied_tree, read, repo_git, write


IFNULLFREE = """\
/// NULL check before kfree is not needed.
// Options: --no-includes --include-headers
virtual report
@r depends on report@
expression E;
position p;
@@
* if (E != NULL)
*	kfree@p(E);
@script:python depends on report@
p << r.p;
@@
coccilib.report.print_report(p[0], "WARNING: NULL check before kfree")
"""


class CocciReports(unittest.TestCase):
    """The pieces of `lk cocci` that need no spatch."""

    def test_report_line(self):
        m = cocci.COCCI_REPORT_RE.match("/w/v/ab/fs/a.c:12:4-9: WARNING: x at line 30")
        self.assertEqual(m.group(1), "/w/v/ab/fs/a.c")
        self.assertEqual(m.group(2), "12")
        self.assertEqual(m.group(3), "WARNING: x at line 30")
        m = cocci.COCCI_REPORT_RE.match("/w/b.c:7: ERROR: y")
        self.assertEqual((m.group(1), m.group(3)), ("/w/b.c", "ERROR: y"))

    def test_moved_report_is_not_new_but_a_second_one_is(self):
        k = cocci.cocci_key("s.cocci", "WARNING: x on line 30", "  kfree(p);")
        moved = cocci.cocci_key("s.cocci", "WARNING: x on line 41", "kfree(p);")
        self.assertEqual(k, moved)
        before = [(k, "a.c:10: WARNING")]
        self.assertEqual(
            cocci.cocci_new_reports(before, [(moved, "a.c:21: WARNING")]), []
        )
        self.assertEqual(
            cocci.cocci_new_reports(before, [(moved, "a.c:21: W"), (k, "a.c:40: W")]),
            ["a.c:40: W"],
        )
        other = cocci.cocci_key("s.cocci", "WARNING: x", "kfree(q);")
        self.assertEqual(cocci.cocci_new_reports([], [(other, "l")]), ["l"])

    def test_options_and_requires(self):
        s = cocci.CocciScript(
            "x.cocci",
            "/// t\n// Requires: 1.0.8\n"
            "// Options: --no-includes --include-headers\n",
        )
        self.assertEqual(s.options, ["--no-includes", "--include-headers"])
        self.assertTrue(s.headers)
        self.assertEqual(cocci.version_tuple(s.requires), (1, 0, 8))
        self.assertLess(cocci.version_tuple("1.0.4"), (1, 0, 8))

    def test_spatch_runs_in_a_directory_of_its_own(self):
        # spatch --jobs leaves NAME_DATE_PID/ in its working directory
        # (once in the checkout, and committed by mistake).
        seen = {}

        def fake_run(cmd, cwd=None, **kw):
            seen["cwd"] = cwd
            os.makedirs(os.path.join(cwd, "double_lock_7_11_2026:12:9:40_1"))
            return mock.Mock(returncode=0, stdout="", stderr="")

        with tempfile.TemporaryDirectory() as d:
            script = cocci.CocciScript(os.path.join(d, "x.cocci"), IFNULLFREE)
            logfile = os.path.join(d, "logs", "cocci.log")
            os.makedirs(os.path.dirname(logfile))
            with mock.patch.object(cocci.common, "run", fake_run):
                ok, _, _, _ = cocci.run_spatch(
                    script, [os.path.join(d, "a.c")], [], logfile, 2
                )
            self.assertTrue(ok)
            self.assertNotIn(seen["cwd"], (None, os.getcwd()))
            self.assertFalse(os.path.exists(seen["cwd"]))
            self.assertEqual(
                sorted(os.listdir(os.path.dirname(logfile))),
                ["cocci.log", "cocci.log.groups"],
            )


@unittest.skipIf(QUICK, "--quick: no spatch runs")
class CocciCheck(unittest.TestCase):
    """do_cocci() on a small tree: a patch that adds what a semantic patch
    reports fails, one that moves it or adds nothing passes, a semantic
    patch spatch cannot run is reported once, and a second run takes the
    reports from the cache."""

    def setUp(self):
        if not shutil.which("spatch"):
            self.fail("spatch is not installed (scripts/packages.txt)")
        self.dir = tempfile.mkdtemp(prefix="lk-cocci-test-")
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        self.repo = os.path.join(self.dir, "tree")
        write(os.path.join(self.repo, "scripts/coccinelle/free/t.cocci"), IFNULLFREE)
        write(
            os.path.join(self.repo, "scripts/coccinelle/misc/bad.cocci"),
            "@@\nthis is not smpl\n",
        )
        write(os.path.join(self.repo, "include/linux/kconfig.h"), "\n")
        write(
            os.path.join(self.repo, "drv/a.c"),
            "void f(int *p)\n{\n\tif (p != NULL)\n\t\tkfree(p);\n}\n",
        )
        write(os.path.join(self.repo, "drv/b.c"), "int g(void)\n{\n\treturn 0;\n}\n")
        self.git("init", "-q")
        self.git("add", ".")
        self.git("commit", "-q", "-m", "base")
        self.git("tag", "v4.20")
        self.git("checkout", "-q", "-b", "series")
        self.commit("drv/a.c", "void e(void)\n{\n}\n\n", prepend=True)
        self.commit(
            "drv/b.c", "void h(int *q)\n{\n\tif (q != NULL)\n\t\tkfree(q);\n}\n"
        )
        self.commit("README", "text\n")
        self.entries = [
            series.PatchEntry("t/%04d-p.patch" % i, "t", True, i) for i in (1, 2, 3)
        ]
        self.baseline = os.path.join(self.dir, "reports.json")

    def git(self, *args):
        return repo_git(self.repo, *args)

    def commit(self, name, text, prepend=False):
        path = os.path.join(self.repo, name)
        old = read(path) if os.path.exists(path) else ""
        write(path, text + old if prepend else old + text)
        self.git("add", name)
        self.git("commit", "-q", "-m", "change " + name)

    def run_cocci(self, record=False, full=False):
        results = common.Results(echo=False)
        args = mock.Mock(
            out=os.path.join(self.dir, "out"), record_baseline=record, full=full
        )
        with mock.patch.object(cocci, "COCCI_BASELINE", self.baseline):
            cocci.do_cocci(args, results, self.repo, self.entries)
        return {r[1]: r for r in results.rows}

    def test_new_report_fails_moved_one_passes(self):
        rows = self.run_cocci()
        self.assertEqual(rows["cocci: t/0001-p.patch"][0], "PASS", rows)
        self.assertIn("1 report(s) before, 1 after", rows["cocci: t/0001-p.patch"][2])
        self.assertEqual(rows["cocci: t/0002-p.patch"][0], "FAIL", rows)
        self.assertIn("drv/b.c:8:", rows["cocci: t/0002-p.patch"][2])
        self.assertNotIn("cocci: t/0003-p.patch", rows)
        bad = [r for r in rows.values() if "bad.cocci" in r[1]]
        self.assertEqual(len(bad), 1, rows)
        self.assertEqual(bad[0][0], "SKIP")
        # Again, from the cache: the same rows, no spatch run for t.cocci.
        log = os.path.join(self.dir, "out", "logs", "cocci.log")
        again = self.run_cocci()
        self.assertEqual(
            {k: v[0] for k, v in again.items()}, {k: v[0] for k, v in rows.items()}
        )
        self.assertNotIn("t.cocci", read(log))

    def test_record_holds_every_version(self):
        rows = self.run_cocci(record=True)
        self.assertEqual(rows["cocci: t/0001-p.patch"][0], "PASS", rows)
        with open(self.baseline) as f:
            data = json.load(f)
        self.assertEqual(data["spatch"], cocci.spatch_version())
        v420 = {self.git("rev-parse", "v4.20:drv/" + n).strip() for n in ("a.c", "b.c")}
        ours = {
            self.git("rev-parse", "series:drv/" + n).strip() for n in ("a.c", "b.c")
        }
        [key] = data["scripts"]  # bad.cocci cannot run
        self.assertEqual(data["blobs"], {b: [] for b in v420 | ours})
        # Only the reports that are not empty: one in each version of a.c
        # and in the series' b.c, none in v4.20's b.c.
        per = data["reports"][key]
        a = self.git("rev-parse", "v4.20:drv/a.c").strip()
        b = self.git("rev-parse", "series:drv/b.c").strip()
        self.assertEqual(set(per), {a, b} | (ours - {b}), per)
        self.assertEqual([len(r) for r in per.values()], [1, 1, 1], per)
        # A fresh work directory: v4.20's reports come from the baseline,
        # not from spatch; emptied there, patch 1's moved report is new.
        shutil.rmtree(os.path.join(self.dir, "out"))
        per[a] = []
        with open(self.baseline, "w") as f:
            json.dump(data, f)
        rows = self.run_cocci()
        self.assertEqual(rows["cocci: t/0001-p.patch"][0], "FAIL", rows)
        # Recorded with another spatch: not used.
        data["spatch"] = "0.0"
        with open(self.baseline, "w") as f:
            json.dump(data, f)
        rows = self.run_cocci()
        self.assertEqual(rows["cocci: t/0001-p.patch"][0], "PASS", rows)

    def test_series_versions_come_from_the_record_but_with_full(self):
        self.run_cocci(record=True)
        with open(self.baseline) as f:
            data = json.load(f)
        [key] = data["scripts"]
        b = self.git("rev-parse", "series:drv/b.c").strip()
        self.assertEqual(len(data["reports"][key].pop(b)), 1, data)
        # Patch 2's new report, left out of the record: a fresh work
        # directory takes the record's word for the series' version...
        with open(self.baseline, "w") as f:
            json.dump(data, f)
        shutil.rmtree(os.path.join(self.dir, "out"))
        rows = self.run_cocci()
        self.assertEqual(rows["cocci: t/0002-p.patch"][0], "PASS", rows)
        log = os.path.join(self.dir, "out", "logs", "cocci.log")
        self.assertNotIn("t.cocci", read(log))
        # ...and --full checks it with spatch: the report is new.
        shutil.rmtree(os.path.join(self.dir, "out"))
        rows = self.run_cocci(full=True)
        self.assertEqual(rows["cocci: t/0002-p.patch"][0], "FAIL", rows)
        self.assertIn("drv/b.c:8:", rows["cocci: t/0002-p.patch"][2])
        self.assertIn("t.cocci", read(log))


@unittest.skipIf(QUICK, "--quick: no tests that need the applied tree")
class CocciBaseline(unittest.TestCase):
    """configs/cocci/reports.json holds the reports of exactly the
    versions of the files the series touches (v4.20's and the patches'),
    made by the spatch that is installed: otherwise CI checks the missing
    versions again (correct, but coccicheck is then a quarter of a cold
    check stage's CPU time), and this says to record it again."""

    def test_committed_baseline_is_current(self):
        tree = applied_tree()
        if tree is None:
            self.skipTest("no applied series in $LK_OUT/tree (lk apply)")
        if not shutil.which("spatch"):
            self.fail("spatch is not installed (scripts/packages.txt)")
        entries = series.read_series(TOP)
        upstream = [e for e in entries if e.upstream]
        _, blobs = cocci.cocci_versions(
            tree, upstream, apply.patch_commits(tree, entries)
        )
        with open(cocci.COCCI_BASELINE) as f:
            data = json.load(f)
        hint = "; run 'scripts/lk cocci --record-baseline' and commit it"
        self.assertEqual(data["spatch"], cocci.spatch_version(), hint)
        self.assertEqual(set(data["blobs"]), set(blobs), hint)
        self.assertLess(cocci.v420_versions(tree, blobs), set(blobs), hint)
        self.assertEqual({b: [] for b in blobs}, data["blobs"], "spatch gave up")
        self.assertGreater(len(data["scripts"]), 50, hint)
