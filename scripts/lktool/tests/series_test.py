# SPDX-License-Identifier: GPL-2.0
"""Tests of the series file, the patch headers, the cover letters and the
topics."""

import os
import shutil
import tempfile
import textwrap
import unittest

from unittest import mock

from .. import common, series, topics
from .support import IDENT, TOP, mail, repo_git, write


COVER = textwrap.dedent(
    """\
    Subject: t: a topic
    Version: 1
    Change-Id: 20261205-t-0123456789ab
    Cc: list@example.org

    What the topic does.
    Why it is wanted.
    How it was tested.
    """
)


class SeriesParsing(unittest.TestCase):
    def test_sections_and_comments(self):
        e = series.parse_series(
            textwrap.dedent(
                """\
            # banner
            # section: toolchain (prerequisite)
            prereq/a.patch

            # section: y2038 (upstream)
            # a comment line
            y2038/0001-b.patch

            # section: y2038/kunit (upstream)
            y2038/kunit/0001-c.patch
            """
            )
        )
        self.assertEqual(
            [(x.path, x.section, x.upstream) for x in e],
            [
                ("prereq/a.patch", "toolchain", False),
                ("y2038/0001-b.patch", "y2038", True),
                ("y2038/kunit/0001-c.patch", "y2038/kunit", True),
            ],
        )

    def test_upstream_section_names_are_topics_or_follow_ups(self):
        for bad in ("Y2038", "y2038/tests", "a/kunit/b", "-x"):
            with self.assertRaisesRegex(common.Failure, "is a topic", msg=bad):
                series.parse_series("# section: %s (upstream)\nx/a.patch\n" % bad)

    def test_follow_up_before_its_topic_is_refused(self):
        with self.assertRaisesRegex(common.Failure, "before its topic"):
            series.parse_series("# section: t/kunit (upstream)\nt/kunit/a.patch\n")

    def test_section_opened_twice_is_refused(self):
        with self.assertRaisesRegex(common.Failure, "opened twice"):
            series.parse_series(
                "# section: t (upstream)\nt/0001-a.patch\n"
                "# section: u (upstream)\nu/0001-b.patch\n"
                "# section: t (upstream)\nt/0002-c.patch\n"
            )

    def test_entry_before_section_is_refused(self):
        with self.assertRaisesRegex(common.Failure, "before any"):
            series.parse_series("prereq/a.patch\n")

    def test_prerequisite_after_upstream_is_refused(self):
        with self.assertRaisesRegex(
            common.Failure, "prerequisite stack must come first"
        ):
            series.parse_series(
                "# section: a (upstream)\na/a.patch\n"
                "# section: b (prerequisite)\nprereq/b.patch\n"
            )

    def test_malformed_section_line_is_refused(self):
        with self.assertRaisesRegex(common.Failure, "want '# section: NAME"):
            series.parse_series("# section: toolchain (prereq)\nprereq/a.patch\n")

    def test_options_on_a_line_are_refused(self):
        with self.assertRaisesRegex(common.Failure, "one patch file per line"):
            series.parse_series("# section: x (upstream)\nx/a.patch -p1\n")

    def test_slug_follows_subject(self):
        self.assertEqual(
            series.slug(
                "[PATCH 1/2] objtool: accept objects that have no symbol table"
            ),
            "objtool-accept-objects-that-have-no-symbol-table",
        )


class SeriesCheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def make(self, series_text, patches, covers=None):
        """check_series() of a series; every upstream-bound section gets
        COVER as its cover letter unless covers names it."""
        write(os.path.join(self.dir, "series"), series_text)
        for name, text in patches.items():
            write(os.path.join(self.dir, "patches", name), text)
        covers = dict(covers or {})
        for e in series.parse_series(series_text):
            if e.upstream:
                covers.setdefault(e.section, COVER)
        for sec, text in covers.items():
            if text is not None:
                write(os.path.join(self.dir, "patches", sec, "cover-letter"), text)
        return series.check_series(self.dir)

    def one_patch(
        self, covers=None, section="t (upstream)", path="t/0001-foo-fix-bar.patch", **kw
    ):
        """make() of a series of one patch, mail("foo: fix bar", **kw), at
        path in section."""
        return self.make(
            "# section: %s\n%s\n" % (section, path),
            {path: mail("foo: fix bar", **kw)},
            covers,
        )

    def test_good_series_has_no_problem(self):
        self.assertEqual(
            self.make(
                "# section: p (prerequisite)\nprereq/0001-foo-fix-bar.patch\n"
                "# section: t (upstream)\nt/0001-foo-fix-baz.patch\n"
                "t/0002-foo-fix-qux.patch\n"
                "# section: t/kunit (upstream)\nt/kunit/0001-foo-test-it.patch\n",
                {
                    "prereq/0001-foo-fix-bar.patch": mail(
                        "foo: fix bar",
                        body="Not for upstream: tests need it.\nTwo.\nThree.\n",
                    ),
                    "t/0001-foo-fix-baz.patch": mail("foo: fix baz"),
                    "t/0002-foo-fix-qux.patch": mail("foo: fix qux"),
                    "t/kunit/0001-foo-test-it.patch": mail("foo: test it"),
                },
                {"t/kunit": COVER.replace("Cc:", "Prefix: RFC\nNeeds: t\nCc:")},
            ),
            [],
        )

    def test_unlisted_patch(self):
        p = self.make(
            "# section: t (upstream)\nt/0001-foo-fix-bar.patch\n",
            {
                "t/0001-foo-fix-bar.patch": mail("foo: fix bar"),
                "t/stray.patch": mail("stray"),
            },
        )
        self.assertIn("patches/t/stray.patch is not listed in series", p)

    def test_listed_but_missing(self):
        p = self.make("# section: t (upstream)\nt/0001-gone.patch\n", {})
        self.assertTrue(any("gone.patch does not exist" in x for x in p), p)

    def test_listed_twice(self):
        p = self.make(
            "# section: t (upstream)\nt/0001-foo-fix-bar.patch\n"
            "t/0001-foo-fix-bar.patch\n",
            {"t/0001-foo-fix-bar.patch": mail("foo: fix bar")},
        )
        self.assertTrue(any("2 times" in x for x in p), p)

    def test_wrong_directory_for_section(self):
        p = self.one_patch(path="prereq/0001-foo-fix-bar.patch")
        self.assertTrue(any("belongs in patches/t/" in x for x in p), p)
        p = self.one_patch(section="t (prerequisite)")
        self.assertTrue(any("belongs in patches/prereq/" in x for x in p), p)

    def test_missing_signoff(self):
        p = self.one_patch(sob=None)
        self.assertIn("patches/t/0001-foo-fix-bar.patch: no Signed-off-by", p)

    def test_signoff_from_someone_else(self):
        p = self.one_patch(sob="Someone <s@example.org>")
        self.assertTrue(any("from the author" in x for x in p), p)

    def test_author_must_be_the_project_identity(self):
        who = "Someone <s@example.org>"
        p = self.one_patch(sob=who, author=who)
        self.assertTrue(any("not the project identity" in x for x in p), p)

    def test_prerequisite_must_say_not_for_upstream(self):
        p = self.one_patch(
            section="p (prerequisite)",
            path="prereq/0001-foo-fix-bar.patch",
            body="One.\nTwo.\nThree.\n",
        )
        self.assertTrue(any('must say "Not for upstream"' in x for x in p), p)

    def test_file_name_is_the_place_and_the_subject(self):
        p = self.one_patch(path="t/0001-x.patch")
        self.assertTrue(any("should be 0001-foo-fix-bar.patch" in x for x in p), p)
        # numbered by the place in its folder, not in the series
        p = self.make(
            "# section: t (upstream)\nt/0001-foo-fix-bar.patch\n"
            "# section: u (upstream)\nu/0002-foo-fix-baz.patch\n",
            {
                "t/0001-foo-fix-bar.patch": mail("foo: fix bar"),
                "u/0002-foo-fix-baz.patch": mail("foo: fix baz"),
            },
        )
        self.assertTrue(any("should be 0001-foo-fix-baz.patch" in x for x in p), p)

    def test_empty_message_is_refused(self):
        p = self.one_patch(body="")
        self.assertTrue(any("does not explain" in x for x in p), p)

    def test_every_topic_has_a_cover_letter(self):
        p = self.one_patch({"t": None})
        self.assertIn(
            "patches/t/cover-letter is missing: every "
            "upstream-bound section is mailed with one",
            p,
        )

    def test_cover_letter_fields(self):
        for cover, want in (
            (COVER.replace("Subject: t: a topic\n", ""), "no Subject:"),
            (COVER.replace("Version: 1", "Version: two"), "is not a number"),
            (COVER.replace("Version: 1", "Version: 2"), "no 'Changes in v2:'"),
            (COVER.replace("0123456789ab", "x"), "is not b4's form"),
            (COVER.replace("Cc:", "Bcc:"), "want 'Key: value'"),
            (COVER.split("\n\n")[0] + "\n\nToo short.\n", "does not explain"),
        ):
            p = self.one_patch({"t": cover})
            self.assertTrue(any(want in x for x in p), (want, p))
        ok = COVER.replace("Version: 1", "Version: 2") + "\nChanges in v2:\n- one\n"
        self.assertEqual(self.one_patch({"t": ok}), [])

    def test_follow_up_is_rfc_and_needs_its_topic(self):
        series = (
            "# section: t (upstream)\nt/0001-foo-fix-bar.patch\n"
            "# section: t/kunit (upstream)\nt/kunit/0001-foo-test.patch\n"
        )
        patches = {
            "t/0001-foo-fix-bar.patch": mail("foo: fix bar"),
            "t/kunit/0001-foo-test.patch": mail("foo: test"),
        }
        p = self.make(
            series, patches, {"t/kunit": COVER.replace("Cc:", "Needs: t\nCc:")}
        )
        self.assertTrue(any("marked 'Prefix: RFC'" in x for x in p), p)
        p = self.make(
            series, patches, {"t/kunit": COVER.replace("Cc:", "Prefix: RFC\nCc:")}
        )
        self.assertTrue(any("says 'Needs: t'" in x for x in p), p)

    def test_project_series_is_consistent(self):
        self.assertEqual(series.check_series(TOP), [])


class Topics(unittest.TestCase):
    """do_topics(): each topic applies to the base alone, its follow-up on
    top of it, and the topics in any order give the same tree."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.repo = os.path.join(self.dir, "repo")
        os.makedirs(self.repo)
        self.git("init", "-q")
        for name in ("a.c", "b.c"):
            write(
                os.path.join(self.repo, name),
                "".join("line %d\n" % i for i in range(1, 30)),
            )
        self.git("add", ".")
        self.git("commit", "-q", "-m", "base")
        self.git("tag", "v4.20")
        self.series = os.path.join(self.dir, "s")

    def git(self, *args, **kw):
        return repo_git(self.repo, *args, **kw)

    def patch(self, start, name, old, new, subject):
        """The mail of a commit on start that replaces old by new in name."""
        self.git("checkout", "-q", "-f", "--detach", start)
        path = os.path.join(self.repo, name)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        self.git(
            "commit",
            "-q",
            "-a",
            "-m",
            subject + "\n\nOne.\nTwo.\nThree.\n\nSigned-off-by: " + IDENT,
        )
        return self.git("rev-parse", "HEAD").strip(), self.git(
            "format-patch", "--stdout", "-1"
        )

    def check(self, layout):
        """layout: [(section, [mail, ...])]; the results of do_topics."""
        lines = []
        for sec, mails in layout:
            lines.append("# section: %s (upstream)" % sec)
            for i, text in enumerate(mails, 1):
                rel = "%s/%04d-p.patch" % (sec, i)
                write(os.path.join(self.series, "patches", rel), text)
                lines.append(rel)
        write(os.path.join(self.series, "series"), "\n".join(lines) + "\n")
        results = common.Results()
        topics.do_topics(
            mock.Mock(series_dir=self.series),
            results,
            self.repo,
            series.read_series(self.series),
        )
        return {name: status for status, name, *_ in results.rows}

    def test_independent_topics_pass(self):
        _, a = self.patch("v4.20", "a.c", "line 3\n", "line three\n", "a: 1")
        c, b = self.patch("v4.20", "b.c", "line 3\n", "line three\n", "b: 1")
        _, k = self.patch(c, "b.c", "line 20\n", "line twenty\n", "b: t")
        self.assertEqual(
            self.check([("a", [a]), ("b", [b]), ("b/kunit", [k])]),
            {
                "topic a": "PASS",
                "topic b": "PASS",
                "topic b/kunit": "PASS",
                "topics in any order": "PASS",
            },
        )

    def test_a_topic_that_needs_another_fails(self):
        c, a = self.patch("v4.20", "a.c", "line 3\n", "line three\n", "a: 1")
        # made on top of topic a: its context is a's line
        _, b = self.patch(
            c, "a.c", "line three\nline 4\n", "line three\nline four\n", "b: 1"
        )
        got = self.check([("a", [a]), ("b", [b])])
        self.assertEqual(got["topic a"], "PASS")
        self.assertEqual(got["topic b"], "FAIL")
        self.assertEqual(got["topics in any order"], "FAIL")

    def test_a_follow_up_that_does_not_fit_its_topic_fails(self):
        _, a = self.patch("v4.20", "a.c", "line 3\n", "line three\n", "a: 1")
        _, k = self.patch("v4.20", "a.c", "line 3\n", "line 3b\n", "a: t")
        got = self.check([("a", [a]), ("a/kunit", [k])])
        self.assertEqual(got["topic a"], "PASS")
        self.assertEqual(got["topic a/kunit"], "FAIL")

    def test_am_trees_gives_the_tree_of_git_am(self):
        # am_trees() applies without a work tree what git am applies: the
        # same tree, for changed, added, removed and renamed files; None
        # where git am stops (no patch, a patch that does not fit).
        self.git("checkout", "-q", "-f", "--detach", "v4.20")
        with open(os.path.join(self.repo, "a.c"), "a") as f:
            f.write("line 30\n")
        write(os.path.join(self.repo, "new/n.c"), "new\n")
        self.git("rm", "-q", "b.c")
        self.git("add", ".")
        self.git("commit", "-q", "-m", "one\n\nSigned-off-by: " + IDENT)
        self.git("mv", "new/n.c", "new/m.c")
        self.git("commit", "-q", "-m", "two\n\nSigned-off-by: " + IDENT)
        want = self.git("rev-parse", "HEAD^{tree}").strip()
        mbox = self.git("format-patch", "--stdout", "-M", "v4.20..HEAD")
        self.git("checkout", "-q", "-f", "--detach", "v4.20")
        self.git("-c", "user.name=x", "-c", "user.email=x@x", "am", "-q", input=mbox)
        self.assertEqual(self.git("rev-parse", "HEAD^{tree}").strip(), want)
        no_patch = (
            "From 0 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\n"
            "Subject: [PATCH 0/1] cover\n\ntext\n"
        )
        got = topics.am_trees(
            self.repo,
            [("v4.20", mbox), ("HEAD", mbox), ("v4.20", no_patch + "\n" + mbox)],
        )
        self.assertEqual(got, [want, None, None])
        # the repository's own index and HEAD are left alone
        self.assertEqual(self.git("status", "--porcelain").strip(), "")


class GitEnvironment(unittest.TestCase):
    """common.clean_env(): lk's own git commands read no configuration of
    the user's, not even what `git -c` or GIT_CONFIG_COUNT hand down
    through the environment (a rebase's exec line runs lk so)."""

    def test_configuration_from_the_environment_is_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            repo_git(d, "init", "-q")
            env = dict(
                os.environ,
                GIT_CONFIG_PARAMETERS="'am.threeway'='true'",
                GIT_CONFIG_COUNT="1",
                GIT_CONFIG_KEY_0="core.autocrlf",
                GIT_CONFIG_VALUE_0="true",
            )
            seen = common.run(
                ["git", "config", "--list"],
                cwd=d,
                capture=True,
                env=common.clean_env(env),
            ).stdout
        self.assertNotIn("am.threeway", seen)
        self.assertNotIn("core.autocrlf", seen)
        self.assertIn("core.bare=false", seen)
