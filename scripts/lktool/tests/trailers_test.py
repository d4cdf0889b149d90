# SPDX-License-Identifier: GPL-2.0
"""`lk export --trailers` (trailers.py) on canned repositories: a kernel
branch exported to patches/, and lk send's workspace with b4 prep
branches made as lk send makes them, with trailers added as b4 trailers
-u adds them."""

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from .. import apply, common, mlist, send, series, trailers
from .support import IDENT, LK, repo_git, snapshot, write

SENDER = "Sam Sender <sam@example.org>"
REVIEWED = "Reviewed-by: Rita Reviewer <rita@example.org>"
TESTED = "Tested-by: Rita Reviewer <rita@example.org>"
ACKED = "Acked-by: Mae Maintainer <mae@example.org>"
BODY = "The problem.\nIts effect on users.\nThe change, and how it was tested.\n"
COVER = """\
Subject: %s
Version: %d
Change-Id: %s
%s
First line of the text.
Second line of the text.
Third line of the text.
"""
CHANGE_ID = "20261207-topic-0123456789ab"
KUNIT_ID = "20261207-topic-kunit-0123456789ab"


class ExportTrailers(unittest.TestCase):
    """A topic of two patches (the second with a Cc: stable trailer) and
    its KUnit follow-up of one; a review gave patch 2 Reviewed-by: and
    Tested-by:, the follow-up Acked-by:."""

    # The canned directory, made once and copied for each test.
    template = None

    @classmethod
    def tearDownClass(cls):
        if cls.template:
            shutil.rmtree(cls.template)
            cls.template = None

    def setUp(self):
        if ExportTrailers.template is None:
            ExportTrailers.template = tempfile.mkdtemp()
            self.at(self.template)
            with contextlib.redirect_stdout(io.StringIO()):
                self.make()
        self.at(os.path.join(tempfile.mkdtemp(), "t"))
        self.addCleanup(shutil.rmtree, os.path.dirname(self.dir))
        shutil.copytree(self.template, self.dir, symlinks=True)
        self.entries = series.read_series(self.sd)
        self.paths = [os.path.join(self.sd, "patches", e.path) for e in self.entries]
        self.before = self.snapshot()

    def at(self, top):
        self.dir = top
        self.out = os.path.join(self.dir, "out")
        self.ws = os.path.join(self.out, "send")
        self.sd = os.path.join(self.dir, "series")

    def make(self):
        os.makedirs(self.ws)
        self.git("init", "-q")
        write(os.path.join(self.ws, "a.c"), "".join("%d\n" % i for i in range(30)))
        self.git("add", ".")
        self.git("commit", "-q", "-m", "base")
        self.git("tag", "v4.20")
        self.git("branch", "prereq")
        # The kernel branch of the series, exported to patches/ by lk export.
        self.git("checkout", "-q", "-b", "work")
        self.commit("a.c", "3\n", "three\n", "topic: name the third line")
        self.commit(
            "a.c",
            "7\n",
            "seven\n",
            "topic: name the seventh line",
            "Cc: stable@vger.kernel.org\n",
        )
        self.commit("t.c", "", "test\n", "topic: test the names")
        write(
            os.path.join(self.sd, "series"),
            "# section: topic (upstream)\n"
            "topic/topic-name-the-third-line.patch\n"
            "topic/topic-name-the-seventh-line.patch\n"
            "# section: topic/kunit (upstream)\n"
            "topic/kunit/topic-test-the-names.patch\n",
        )
        self.cover("topic", 1, CHANGE_ID)
        self.cover("topic/kunit", 1, KUNIT_ID)
        self.assertEqual(
            apply.cmd_export(argparse.Namespace(tree=self.ws, series_dir=self.sd)), 0
        )
        self.assertEqual(series.check_series(self.sd), [])
        self.entries = series.read_series(self.sd)
        self.paths = [os.path.join(self.sd, "patches", e.path) for e in self.entries]
        # lk send's prep branches, and the review's trailers in them.
        self.prep("topic", "v4.20", [], self.entries[:2])
        self.prep("topic/kunit", "v4.20", self.entries[:2], self.entries[2:])
        self.review("b4/topic", 1, [REVIEWED, TESTED])
        self.review("b4/topic-kunit", 0, [ACKED])
        self.git("checkout", "-q", "--detach", "v4.20")

    def git(self, *args):
        return repo_git(self.ws, *args)

    def commit(self, name, old, new, subject, trailers_=""):
        path = os.path.join(self.ws, name)
        text = ""
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
        write(path, text.replace(old, new) if old else new)
        self.git("add", name)
        self.git(
            "commit",
            "-q",
            "-m",
            "%s\n\n%s\n%sSigned-off-by: %s" % (subject, BODY, trailers_, IDENT),
        )

    def cover(self, sec, version, change_id, extra=""):
        write(
            os.path.join(self.sd, "patches", sec, "cover-letter"),
            COVER
            % (
                "topic: name the lines",
                version,
                change_id,
                "Prefix: RFC\nNeeds: topic\n" if "/" in sec else "",
            )
            + extra,
        )

    def prep(self, sec, start, fork, entries):
        """A prep branch as lk send makes it: on start and the patches of
        fork (a follow-up's topic), the cover letter commit with b4's
        tracking, then each patch re-signed by the sender."""
        fields, body = series.read_cover(
            os.path.join(self.sd, "patches", sec, "cover-letter")
        )
        branch = "b4/" + sec.replace("/", "-")
        self.git("checkout", "-q", "-B", branch, start)
        for e in fork:
            self.git("am", "-q", os.path.join(self.sd, "patches", e.path))
        self.git(
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            send.cover_message(fields, body, SENDER, "base"),
        )
        for e in entries:
            self.git("am", "-q", os.path.join(self.sd, "patches", e.path))
            msg = self.git("log", "-1", "--format=%B")
            self.amend(send.signed_by(msg, SENDER))

    def amend(self, msg):
        subprocess.run(
            ["git", "-C", self.ws, "commit", "-q", "--amend", "-F", "-"],
            input=msg,
            universal_newlines=True,
            check=True,
            env=common.clean_env(),
        )

    def review(self, branch, n, got):
        """What b4 trailers -u does: the trailers above the sender's
        sign-off of the nth patch (from 0) of branch."""
        self.git("checkout", "-q", branch)
        revs = self.git("rev-list", "--reverse", "v4.20..HEAD").split()
        cover = [
            i
            for i, c in enumerate(revs)
            if trailers.TRACKING in self.git("log", "-1", "--format=%B", c)
        ][0]
        target = revs[cover + 1 + n]
        self.git("checkout", "-q", target)
        msg = self.git("log", "-1", "--format=%B")
        subject = msg.split("\n", 1)[0]
        self.amend(mlist.with_trailers(msg, {subject: got}))
        new = self.git("rev-parse", "HEAD").strip()
        for c in revs[cover + 2 + n :]:
            self.git("cherry-pick", "--allow-empty", c)
        self.git("branch", "-f", branch, "HEAD")
        return new

    def snapshot(self):
        """Every file of the series directory, as bytes."""
        return snapshot(self.sd)

    def export(self, *topics):
        return trailers.export_trailers(self.ws, self.sd, list(topics) or ["topic"])

    def assertRefused(self, why, *topics):
        with self.assertRaisesRegex(common.Failure, why):
            self.export(*topics)
        self.assertEqual(self.snapshot(), self.before)

    def test_trailers_go_above_the_projects_signoff_and_nothing_else_changes(self):
        got = self.export()
        self.assertEqual(
            got,
            {self.entries[1].path: [REVIEWED, TESTED], self.entries[2].path: [ACKED]},
        )
        after = self.snapshot()
        sob = "\nSigned-off-by: %s\n---\n" % IDENT
        for e in self.entries[1:]:
            key = os.path.join("patches", e.path)
            add = "".join(t + "\n" for t in got[e.path])
            old = self.before[key].decode()
            self.assertEqual(old.count(sob), 1)
            # exactly the old file, the trailers just above the sign-off
            self.assertEqual(
                after[key].decode(), old.replace(sob, "\n" + add + sob[1:])
            )
        self.assertIn(
            b"\n\nCc: stable@vger.kernel.org\n%s\n%s\nSigned-off-by: %s\n---\n"
            % (REVIEWED.encode(), TESTED.encode(), IDENT.encode()),
            after[os.path.join("patches", self.entries[1].path)],
        )
        # the patch not reviewed, the cover letters and series: untouched
        for key in set(self.before) - {
            os.path.join("patches", e.path) for e in self.entries[1:]
        }:
            self.assertEqual(after[key], self.before[key], key)
        self.assertEqual(series.check_series(self.sd), [])
        # the series still applies, to the same tree, with the trailers in
        # its commit messages
        self.git("checkout", "-q", "-B", "again", "v4.20")
        self.git("am", "-q", *self.paths)
        self.assertEqual(
            self.git("rev-parse", "again^{tree}"), self.git("rev-parse", "work^{tree}")
        )
        self.assertEqual(
            self.git("log", "-1", "--format=%(trailers)", "again~1").split("\n")[:-2],
            ["Cc: stable@vger.kernel.org", REVIEWED, TESTED, "Signed-off-by: " + IDENT],
        )
        # once is enough: a second export adds nothing
        self.assertEqual(self.export(), {})
        self.assertEqual(self.snapshot(), after)

    def test_export_from_a_branch_without_them_says_so(self):
        self.export()
        self.git("checkout", "-q", "work")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            apply.cmd_export(argparse.Namespace(tree=self.ws, series_dir=self.sd))
        self.assertIn(
            "export: patches/%s: the commit lacks %s; %s, which patches/%s had "
            "(lk export --trailers)"
            % (self.entries[1].path, REVIEWED, TESTED, self.entries[1].path),
            out.getvalue(),
        )
        self.assertIn(
            "export: patches/%s: the commit lacks %s," % (self.entries[2].path, ACKED),
            out.getvalue(),
        )
        self.assertEqual(out.getvalue().count("the commit lacks"), 2)
        # what the branch makes is what lk export TREE writes, as before
        self.assertEqual(self.snapshot(), self.before)

    def test_lk_send_keeps_them_in_one_trailer_block_once(self):
        self.export()
        # lk send, v1 again, from the patches with the trailers, the
        # prep branch's collected ones too
        self.git("checkout", "-q", "--detach", "v4.20")
        self.git("am", "-q", self.paths[0], self.paths[1])
        msg = send.signed_by(self.git("log", "-1", "--format=%B"), SENDER)
        msg = mlist.with_trailers(msg, mlist.collected_trailers(self.ws, "b4/topic"))
        self.assertTrue(
            msg.endswith(
                "\n\nCc: stable@vger.kernel.org\n%s\n%s\nSigned-off-by: %s\n"
                % (REVIEWED, TESTED, SENDER)
            ),
            msg,
        )

    def test_a_trailer_already_there_is_not_added_again(self):
        path = self.paths[1]
        with open(path) as f:
            text = f.read()
        # by hand, spelled as a person might
        text = text.replace(
            "Signed-off-by: " + IDENT,
            "reviewed-by:  Rita Reviewer <rita@example.org>\nSigned-off-by: " + IDENT,
        )
        write(path, text)
        got = self.export()
        self.assertEqual(got[self.entries[1].path], [TESTED])
        with open(path) as f:
            self.assertEqual(f.read().count("Rita Reviewer"), 2)

    def test_unknown_topic(self):
        self.assertRefused("no topic nosuch in series; the topics are: topic", "nosuch")

    def test_no_workspace(self):
        shutil.rmtree(os.path.join(self.ws, ".git"))
        self.assertRefused("is not lk send's workspace; run scripts/lk send topic")

    def test_no_prep_branch_and_nothing_written_for_the_sections_that_had_one(self):
        self.git("branch", "-D", "b4/topic-kunit")
        # b4/topic is fine, and still nothing of it is written
        self.assertRefused(
            "no prep branch b4/topic-kunit in %s: run scripts/lk send topic" % self.ws
        )

    def test_a_branch_that_is_not_a_prep_branch(self):
        self.git("branch", "-f", "b4/topic", "work")
        self.assertRefused("b4/topic .* has no cover letter commit with b4's tracking")

    def test_another_series(self):
        self.cover("topic", 1, "20261207-other-0123456789ab")
        self.before = self.snapshot()
        self.assertRefused(
            "b4/topic is series %s, patches/topic/cover-letter says Change-Id: "
            "20261207-other-0123456789ab" % CHANGE_ID
        )

    def test_another_version(self):
        self.cover("topic", 2, CHANGE_ID, "\nChanges in v2:\n- more\n")
        self.before = self.snapshot()
        self.assertRefused(
            "b4/topic holds v1 of topic, patches/topic/cover-letter is at v2: "
            "its trailers were collected for another version"
        )

    def edit(self, n, old, new):
        with open(self.paths[n]) as f:
            text = f.read()
        self.assertIn(old, text)
        write(self.paths[n], text.replace(old, new, 1))
        self.before = self.snapshot()

    def test_a_patch_whose_diff_changed(self):
        self.edit(1, "+seven\n", "+SEVEN\n")
        self.assertRefused(
            r"b4/topic no longer matches patches/topic/: its diff of patch 2 "
            r"\(patches/topic/0002-topic-name-the-seventh-line.patch\) changed "
            "since lk send made the branch"
        )

    def test_a_patch_whose_message_changed(self):
        self.edit(0, "Its effect on users.", "Its effect on its users.")
        self.assertRefused("its commit message of patch 1 .* changed since lk send")

    def test_a_patch_whose_subject_changed(self):
        self.edit(2, "Subject: [PATCH] topic: test", "Subject: [PATCH] topic: check")
        self.assertRefused("its subject of patch 1 .* changed since lk send")

    def test_a_topic_with_another_number_of_patches(self):
        write(
            os.path.join(self.sd, "series"),
            "# section: topic (upstream)\n"
            "topic/0001-topic-name-the-third-line.patch\n"
            "# section: topic/kunit (upstream)\n"
            "topic/kunit/0001-topic-test-the-names.patch\n",
        )
        self.before = self.snapshot()
        self.assertRefused("b4/topic has 2 patches, patches/topic/ 1")

    def lk(self, *args):
        r = subprocess.run(
            [sys.executable, LK, "--out", self.out, "--series-dir", self.sd, "export"]
            + list(args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            env=common.clean_env(),
        )
        return r.returncode, r.stdout

    def test_the_command(self):
        code, out = self.lk("--trailers", "topic")
        self.assertEqual(code, 0, out)
        self.assertIn(
            "export: patches/%s: + %s\n" % (self.entries[1].path, TESTED), out
        )
        self.assertIn("export: 3 trailer(s) in 2 patch(es); commit patches/", out)
        code, out = self.lk("--trailers", "topic")
        self.assertEqual(code, 0, out)
        self.assertIn("export: no trailers to bring", out)
        after = self.snapshot()
        for args in ((), ("--trailers", "topic", self.ws)):
            code, out = self.lk(*args)
            self.assertEqual(code, 1, out)
            self.assertIn("name a kernel tree (lk export TREE) or", out)
        code, out = self.lk("--trailers", "nosuch")
        self.assertEqual(code, 1, out)
        self.assertIn("lk export: no topic nosuch in series", out)
        self.assertEqual(self.snapshot(), after)


class SignedBy(unittest.TestCase):
    """lk send's sign-off: the sender's in place of the project's."""

    def test_in_the_trailer_block_of_the_patch(self):
        msg = "x: y\n\nText.\n\nCc: stable@vger.kernel.org\n%s\nSigned-off-by: %s\n"
        self.assertEqual(
            send.signed_by(msg % (REVIEWED, IDENT), SENDER), msg % (REVIEWED, SENDER)
        )

    def test_alone_after_the_text(self):
        self.assertEqual(
            send.signed_by("x: y\n\nText.\n\nSigned-off-by: %s\n" % IDENT, SENDER),
            "x: y\n\nText.\n\nSigned-off-by: %s\n" % SENDER,
        )
        # a project sign-off that is not last: the sender's goes last
        self.assertEqual(
            send.signed_by(
                "x: y\n\nText.\n\nSigned-off-by: %s\nAcked-by: A <a@x>\n" % IDENT,
                SENDER,
            ),
            "x: y\n\nText.\n\nAcked-by: A <a@x>\nSigned-off-by: %s\n" % SENDER,
        )
