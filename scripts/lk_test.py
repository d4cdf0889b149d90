#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/lk on canned inputs and on deliberately broken patches.

  python3 scripts/lk_test.py            all tests
  python3 scripts/lk_test.py --quick    only those that need no base tree

The tests that need a base tree generate their broken patches at run time
in a scratch clone, so no kernel source is kept in the project.  Without a
base tree they are reported as skipped, never as passed.
"""

import collections
import importlib.machinery
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
LK = os.path.join(HERE, "lk")

_loader = importlib.machinery.SourceFileLoader("lk", LK)
_spec = importlib.util.spec_from_loader("lk", _loader)
lk = importlib.util.module_from_spec(_spec)
_loader.exec_module(lk)

QUICK = "--quick" in sys.argv
if QUICK:
    sys.argv.remove("--quick")

IDENT = lk.PROJECT_IDENT


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def repo_git(repo, *args, **kw):
    """git in a test repository, committing as the project identity;
    returns its output."""
    return subprocess.run(
        ["git", "-C", repo, "-c", "user.name=y2038 Series Team",
         "-c", "user.email=y2038-series@example.org"] + list(args),
        env=lk.clean_env(), check=True, universal_newlines=True,
        stdout=subprocess.PIPE, **kw).stdout


def mail(subject, body="Explain the problem.\nExplain the effect.\n"
         "Explain the change.\nNot for upstream: a test.\n", sob=IDENT,
         author=IDENT):
    text = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    text += "From: %s\nDate: Thu, 3 Dec 2026 00:00:00 +0000\n" % author
    text += "Subject: [PATCH] %s\n\n%s" % (subject, body)
    if sob:
        text += "\nSigned-off-by: %s\n" % sob
    text += "---\n a | 1 +\n"
    return text


class SeriesParsing(unittest.TestCase):
    def test_sections_and_comments(self):
        e = lk.parse_series(textwrap.dedent("""\
            # banner
            # section: toolchain (prerequisite)
            prereq/a.patch

            # section: y2038 (upstream)
            # a comment line
            y2038/0001-b.patch

            # section: y2038/kunit (upstream)
            y2038/kunit/0001-c.patch
            """))
        self.assertEqual([(x.path, x.section, x.upstream) for x in e], [
            ("prereq/a.patch", "toolchain", False),
            ("y2038/0001-b.patch", "y2038", True),
            ("y2038/kunit/0001-c.patch", "y2038/kunit", True)])

    def test_upstream_section_names_are_topics_or_follow_ups(self):
        for bad in ("Y2038", "y2038/tests", "a/kunit/b", "-x"):
            with self.assertRaisesRegex(lk.Failure, "is a topic", msg=bad):
                lk.parse_series("# section: %s (upstream)\nx/a.patch\n"
                                % bad)

    def test_follow_up_before_its_topic_is_refused(self):
        with self.assertRaisesRegex(lk.Failure, "before its topic"):
            lk.parse_series("# section: t/kunit (upstream)\nt/kunit/a.patch\n")

    def test_section_opened_twice_is_refused(self):
        with self.assertRaisesRegex(lk.Failure, "opened twice"):
            lk.parse_series("# section: t (upstream)\nt/0001-a.patch\n"
                            "# section: u (upstream)\nu/0001-b.patch\n"
                            "# section: t (upstream)\nt/0002-c.patch\n")

    def test_entry_before_section_is_refused(self):
        with self.assertRaisesRegex(lk.Failure, "before any"):
            lk.parse_series("prereq/a.patch\n")

    def test_prerequisite_after_upstream_is_refused(self):
        with self.assertRaisesRegex(lk.Failure, "prerequisite stack must "
                                    "come first"):
            lk.parse_series("# section: a (upstream)\na/a.patch\n"
                            "# section: b (prerequisite)\nprereq/b.patch\n")

    def test_malformed_section_line_is_refused(self):
        with self.assertRaisesRegex(lk.Failure, "want '# section: NAME"):
            lk.parse_series("# section: toolchain (prereq)\nprereq/a.patch\n")

    def test_options_on_a_line_are_refused(self):
        with self.assertRaisesRegex(lk.Failure, "one patch file per line"):
            lk.parse_series("# section: x (upstream)\nx/a.patch -p1\n")

    def test_slug_follows_subject(self):
        self.assertEqual(lk.slug("[PATCH 1/2] objtool: accept objects that"
                                 " have no symbol table"),
                         "objtool-accept-objects-that-have-no-symbol-table")


COVER = textwrap.dedent("""\
    Subject: t: a topic
    Version: 1
    Change-Id: 20261205-t-0123456789ab
    Cc: list@example.org

    What the topic does.
    Why it is wanted.
    How it was tested.
    """)


class SeriesCheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def make(self, series, patches, covers=None):
        """check_series() of a series; every upstream-bound section gets
        COVER as its cover letter unless covers names it."""
        write(os.path.join(self.dir, "series"), series)
        for name, text in patches.items():
            write(os.path.join(self.dir, "patches", name), text)
        covers = dict(covers or {})
        for e in lk.parse_series(series):
            if e.upstream:
                covers.setdefault(e.section, COVER)
        for sec, text in covers.items():
            if text is not None:
                write(os.path.join(self.dir, "patches", sec, "cover-letter"),
                      text)
        return lk.check_series(self.dir)

    def test_good_series_has_no_problem(self):
        self.assertEqual(self.make(
            "# section: p (prerequisite)\nprereq/0001-foo-fix-bar.patch\n"
            "# section: t (upstream)\nt/0001-foo-fix-baz.patch\n"
            "t/0002-foo-fix-qux.patch\n"
            "# section: t/kunit (upstream)\nt/kunit/0001-foo-test-it.patch\n",
            {"prereq/0001-foo-fix-bar.patch": mail(
                "foo: fix bar", body="Not for upstream: tests need it.\n"
                "Two.\nThree.\n"),
             "t/0001-foo-fix-baz.patch": mail("foo: fix baz"),
             "t/0002-foo-fix-qux.patch": mail("foo: fix qux"),
             "t/kunit/0001-foo-test-it.patch": mail("foo: test it")},
            {"t/kunit": COVER.replace("Cc:", "Prefix: RFC\nNeeds: t\nCc:")}),
            [])

    def test_unlisted_patch(self):
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail("foo: fix bar"),
                       "t/stray.patch": mail("stray")})
        self.assertIn("patches/t/stray.patch is not listed in series", p)

    def test_listed_but_missing(self):
        p = self.make("# section: t (upstream)\nt/0001-gone.patch\n", {})
        self.assertTrue(any("gone.patch does not exist" in x for x in p), p)

    def test_listed_twice(self):
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n"
                      "t/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail("foo: fix bar")})
        self.assertTrue(any("2 times" in x for x in p), p)

    def test_wrong_directory_for_section(self):
        p = self.make("# section: t (upstream)\nprereq/0001-foo-fix-bar.patch\n",
                      {"prereq/0001-foo-fix-bar.patch": mail("foo: fix bar")})
        self.assertTrue(any("belongs in patches/t/" in x for x in p), p)
        p = self.make("# section: t (prerequisite)\nt/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail("foo: fix bar")})
        self.assertTrue(any("belongs in patches/prereq/" in x for x in p), p)

    def test_missing_signoff(self):
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail("foo: fix bar",
                                                        sob=None)})
        self.assertIn("patches/t/0001-foo-fix-bar.patch: no Signed-off-by", p)

    def test_signoff_from_someone_else(self):
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail(
                          "foo: fix bar", sob="Someone <s@example.org>")})
        self.assertTrue(any("from the author" in x for x in p), p)

    def test_author_must_be_the_project_identity(self):
        who = "Someone <s@example.org>"
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail(
                          "foo: fix bar", sob=who, author=who)})
        self.assertTrue(any("not the project identity" in x for x in p), p)

    def test_prerequisite_must_say_not_for_upstream(self):
        p = self.make("# section: p (prerequisite)\n"
                      "prereq/0001-foo-fix-bar.patch\n",
                      {"prereq/0001-foo-fix-bar.patch": mail(
                          "foo: fix bar", body="One.\nTwo.\nThree.\n")})
        self.assertTrue(any('must say "Not for upstream"' in x for x in p), p)

    def test_file_name_is_the_place_and_the_subject(self):
        p = self.make("# section: t (upstream)\nt/0001-x.patch\n",
                      {"t/0001-x.patch": mail("foo: fix bar")})
        self.assertTrue(any("should be 0001-foo-fix-bar.patch" in x
                            for x in p), p)
        # numbered by the place in its folder, not in the series
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n"
                      "# section: u (upstream)\nu/0002-foo-fix-baz.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail("foo: fix bar"),
                       "u/0002-foo-fix-baz.patch": mail("foo: fix baz")})
        self.assertTrue(any("should be 0001-foo-fix-baz.patch" in x
                            for x in p), p)

    def test_empty_message_is_refused(self):
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail("foo: fix bar",
                                                        body="")})
        self.assertTrue(any("does not explain" in x for x in p), p)

    def test_every_topic_has_a_cover_letter(self):
        p = self.make("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n",
                      {"t/0001-foo-fix-bar.patch": mail("foo: fix bar")},
                      {"t": None})
        self.assertIn("patches/t/cover-letter is missing: every "
                      "upstream-bound section is mailed with one", p)

    def test_cover_letter_fields(self):
        series = "# section: t (upstream)\nt/0001-foo-fix-bar.patch\n"
        patches = {"t/0001-foo-fix-bar.patch": mail("foo: fix bar")}
        for cover, want in (
                (COVER.replace("Subject: t: a topic\n", ""), "no Subject:"),
                (COVER.replace("Version: 1", "Version: two"),
                 "is not a number"),
                (COVER.replace("Version: 1", "Version: 2"),
                 "no 'Changes in v2:'"),
                (COVER.replace("0123456789ab", "x"), "is not b4's form"),
                (COVER.replace("Cc:", "Bcc:"), "want 'Key: value'"),
                (COVER.split("\n\n")[0] + "\n\nToo short.\n",
                 "does not explain")):
            p = self.make(series, patches, {"t": cover})
            self.assertTrue(any(want in x for x in p), (want, p))
        ok = COVER.replace("Version: 1", "Version: 2") + \
            "\nChanges in v2:\n- one\n"
        self.assertEqual(self.make(series, patches, {"t": ok}), [])

    def test_follow_up_is_rfc_and_needs_its_topic(self):
        series = ("# section: t (upstream)\nt/0001-foo-fix-bar.patch\n"
                  "# section: t/kunit (upstream)\nt/kunit/0001-foo-test.patch\n")
        patches = {"t/0001-foo-fix-bar.patch": mail("foo: fix bar"),
                   "t/kunit/0001-foo-test.patch": mail("foo: test")}
        p = self.make(series, patches, {"t/kunit": COVER.replace(
            "Cc:", "Needs: t\nCc:")})
        self.assertTrue(any("marked 'Prefix: RFC'" in x for x in p), p)
        p = self.make(series, patches, {"t/kunit": COVER.replace(
            "Cc:", "Prefix: RFC\nCc:")})
        self.assertTrue(any("says 'Needs: t'" in x for x in p), p)

    def test_project_series_is_consistent(self):
        self.assertEqual(lk.check_series(TOP), [])


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
            write(os.path.join(self.repo, name),
                  "".join("line %d\n" % i for i in range(1, 30)))
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
        self.git("commit", "-q", "-a", "-m", subject + "\n\nOne.\nTwo.\n"
                 "Three.\n\nSigned-off-by: " + IDENT)
        return self.git("rev-parse", "HEAD").strip(), self.git(
            "format-patch", "--stdout", "-1")

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
        results = lk.Results()
        lk.do_topics(mock.Mock(series_dir=self.series), results, self.repo,
                     lk.read_series(self.series))
        return {name: status for status, name, *_ in results.rows}

    def test_independent_topics_pass(self):
        _, a = self.patch("v4.20", "a.c", "line 3\n", "line three\n", "a: 1")
        c, b = self.patch("v4.20", "b.c", "line 3\n", "line three\n", "b: 1")
        _, k = self.patch(c, "b.c", "line 20\n", "line twenty\n", "b: t")
        self.assertEqual(self.check([("a", [a]), ("b", [b]),
                                     ("b/kunit", [k])]), {
            "topic a": "PASS", "topic b": "PASS", "topic b/kunit": "PASS",
            "topics in any order": "PASS"})

    def test_a_topic_that_needs_another_fails(self):
        c, a = self.patch("v4.20", "a.c", "line 3\n", "line three\n", "a: 1")
        # made on top of topic a: its context is a's line
        _, b = self.patch(c, "a.c", "line three\nline 4\n",
                          "line three\nline four\n", "b: 1")
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
        self.git("-c", "user.name=x", "-c", "user.email=x@x", "am", "-q",
                 input=mbox)
        self.assertEqual(self.git("rev-parse", "HEAD^{tree}").strip(), want)
        no_patch = "From 0 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\n" \
            "Subject: [PATCH 0/1] cover\n\ntext\n"
        got = lk.am_trees(self.repo, [("v4.20", mbox), ("HEAD", mbox),
                                      ("v4.20", no_patch + "\n" + mbox)])
        self.assertEqual(got, [want, None, None])
        # the repository's own index and HEAD are left alone
        self.assertEqual(self.git("status", "--porcelain").strip(), "")


class HeaderUsers(unittest.TestCase):
    """A patch of headers alone builds the objects of their users."""

    def test_direct_and_one_header_removed_users(self):
        with tempfile.TemporaryDirectory() as d:
            files = {
                "include/linux/x.h": "int x(void);\n",
                "kernel/a.c": "#include <linux/x.h>\n",
                "kernel/sched/sched.h": "#include <linux/x.h>\n",
                "kernel/sched/core.c": '#include "sched.h"\n',
                # "sched.h" of another directory is another header
                "drivers/y/sched.c": '#include "sched.h"\n',
                "drivers/y/sched.h": "\n",
                "fs/b.c": "#  include <linux/xy.h>\n",
                "arch/arm/kernel/c.c": "#include <linux/x.h>\n",
                "arch/x86/include/asm/z.h": "\n",
                "arch/x86/kernel/d.c": "#include <asm/z.h>\n",
            }
            for name, text in files.items():
                write(os.path.join(d, name), text)
            subprocess.run(["git", "init", "-q", d], check=True)
            subprocess.run(["git", "-C", d, "add", "."], check=True)
            self.assertEqual(lk.header_users(d, ["include/linux/x.h"], "x86"),
                             ["kernel/a.c", "kernel/sched/core.c"])
            self.assertEqual(lk.header_users(d, ["arch/x86/include/asm/z.h"],
                                             "x86"), ["arch/x86/kernel/d.c"])
            self.assertEqual(lk.header_users(d, ["include/linux/x.h"], "x86",
                                             depth=1), ["kernel/a.c"])

    def test_objects_only_leaves_out_a_directory_it_cannot_tell(self):
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, "kernel", "Makefile"), "obj-y += a.o\n")
            write(os.path.join(d, "drivers", "z", "Makefile"),
                  "z-objs := z1.o z2.o\nobj-$(CONFIG_Z) += z.o\n")
            write(os.path.join(d, "b", ".config"), "CONFIG_Z=y\n")
            users = ["kernel/a.c", "drivers/z/z1.c"]
            dirs = ["drivers/z/", "kernel/"]
            self.assertEqual(lk.patch_goals(d, os.path.join(d, "b"), dirs,
                                            users, None, objects_only=True),
                             ["kernel/a.o"])
            self.assertEqual(lk.patch_goals(d, os.path.join(d, "b"), dirs,
                                            users, None),
                             ["drivers/z/", "kernel/a.o"])


class TouchedGoals(unittest.TestCase):
    def test_sources_give_their_directories(self):
        self.assertEqual(lk.build_dirs_for(["kernel/futex.c", "fs/select.c",
                                            "include/linux/compat.h"]),
                         ["fs/", "kernel/"])

    def test_header_alone_gives_vmlinux(self):
        self.assertEqual(lk.build_dirs_for(["include/linux/syscalls.h"]),
                         ["vmlinux"])

    def test_other_architectures_are_left_out(self):
        self.assertEqual(lk.build_dirs_for(["arch/arm/kernel/sys_oabi-compat.c",
                                            "arch/x86/entry/common.c"], "x86"),
                         ["arch/x86/entry/"])
        self.assertEqual(lk.build_dirs_for(["arch/arm/kernel/a.c"], "x86"), [])

    def test_kconfig_and_makefile_give_their_directory(self):
        self.assertEqual(lk.build_dirs_for(["drivers/android/Kconfig",
                                            "drivers/android/Makefile"]),
                         ["drivers/android/"])

    def test_the_architecture_makefile_is_no_directory(self):
        # arch/arm64/Makefile sets every object's flags; "make arch/arm64/"
        # fails in it (KBUILD_CFLAGS references itself there), which CI
        # once did for a patch adding -mbranch-protection=none
        self.assertEqual(lk.build_dirs_for(
            ["arch/arm64/Makefile", "arch/arm64/kernel/process.c"],
            "arm64"), ["arch/arm64/kernel/"])
        self.assertEqual(lk.build_dirs_for(["arch/arm64/Makefile"],
                                           "arm64"), ["vmlinux"])
        # a kbuild Makefile below it is one as before
        self.assertEqual(lk.build_dirs_for(["arch/arm64/kernel/Makefile"],
                                           "arm64"), ["arch/arm64/kernel/"])

    def test_syscall_table_gives_the_directory_of_its_users(self):
        self.assertEqual(lk.build_dirs_for(
            ["arch/x86/entry/syscalls/syscall_32.tbl",
             "scripts/checksyscalls.sh"]), ["arch/x86/entry/"])
        self.assertEqual(lk.build_dirs_for(
            ["arch/arm/tools/syscall.tbl", "arch/arm/Kconfig"], "arm"),
            ["arch/arm/kernel/"])
        # another architecture's table is not read
        self.assertEqual(lk.build_dirs_for(
            ["arch/s390/kernel/syscalls/syscall.tbl"]), [])

    def test_prepare_step_files_and_arch_kconfig_count_as_headers(self):
        self.assertEqual(lk.build_dirs_for(["scripts/checksyscalls.sh"]),
                         ["vmlinux"])
        self.assertEqual(lk.build_dirs_for(
            ["arch/Kconfig", "arch/x86/Kconfig", "kernel/futex.c"]),
            ["kernel/"])
        self.assertEqual(lk.build_dirs_for(["arch/x86/Kconfig"]),
                         ["vmlinux"])

    def test_outside_the_image_needs_nothing(self):
        self.assertEqual(lk.build_dirs_for([
            "Documentation/arm64/booting.txt",
            "tools/testing/selftests/futex/Makefile"]), [])

    def test_build_scripts_and_objtool_give_vmlinux(self):
        self.assertEqual(lk.build_dirs_for(["scripts/Makefile.build"]),
                         ["vmlinux"])
        self.assertEqual(lk.build_dirs_for(["tools/objtool/elf.c"]),
                         ["vmlinux"])

    def test_selftests_need_no_kernel_build(self):
        self.assertEqual(lk.build_dirs_for(
            ["tools/testing/selftests/futex/functional/futex_wait.c"]), [])

    def test_linker_script_gives_vmlinux(self):
        self.assertEqual(lk.build_dirs_for(["arch/x86/kernel/vmlinux.lds.S"]),
                         ["vmlinux"])

    def test_ci_goals_add_the_touched_directories(self):
        t = {"arch": "arm", "goals": ["zImage"], "ci_goals": ["kernel/"]}
        self.assertEqual(lk.ci_goals_for(t, ["fs/select.c", "kernel/futex.c"]),
                         ["kernel/", "fs/"])
        self.assertEqual(lk.ci_goals_for(t, ["include/linux/compat.h"]),
                         ["zImage"])
        self.assertEqual(lk.ci_goals_for(t, [], ["kernel/futex_compat.c"]),
                         ["zImage"])

    def test_top_level_makefile_gives_vmlinux(self):
        self.assertEqual(lk.build_dirs_for(["Makefile"]), ["vmlinux"])

    def test_deleted_file_gives_vmlinux(self):
        self.assertEqual(lk.build_dirs_for(["kernel/futex.c"], "x86",
                                           deleted=["kernel/futex_compat.c"]),
                         ["vmlinux"])
        self.assertEqual(lk.build_dirs_for(["kernel/futex.h"], "x86",
                                           deleted=["kernel/futex.h.old"]),
                         ["vmlinux"])

    def test_deleted_file_with_its_makefile_gives_its_directory(self):
        self.assertEqual(lk.build_dirs_for(["kernel/futex.c",
                                            "kernel/Makefile"], "x86",
                                           deleted=["kernel/futex_compat.c"]),
                         ["kernel/"])
        # another directory's Makefile does not cover it
        self.assertEqual(lk.build_dirs_for(["kernel/futex.c",
                                            "lib/Makefile"], "x86",
                                           deleted=["kernel/futex_compat.c"]),
                         ["vmlinux"])
        self.assertEqual(lk.build_dirs_for(["drivers/x/Kbuild"], "x86",
                                           deleted=["drivers/x/y.S"]),
                         ["drivers/x/"])
        t = {"arch": "arm", "goals": ["zImage"], "ci_goals": ["kernel/"]}
        self.assertEqual(lk.ci_goals_for(t, ["kernel/Makefile"],
                                         ["kernel/futex_compat.c"]),
                         ["kernel/"])


class ObjectGoals(unittest.TestCase):
    """CI builds the objects of a touched directory, not all of it."""

    MAKEFILE = (
        "obj-$(CONFIG_NET)\t\t:= socket.o core/\n"
        "tmp-$(CONFIG_COMPAT) \t\t:= compat.o\n"
        "obj-$(CONFIG_NET)\t\t+= $(tmp-y)\n"
        "obj-y += a.o \\\n\tb.o  # b is built always\n"
        "ccflags-y += -DX.o\n"
        "hostprogs-y := gen.o\n"
        "obj-$(CONFIG_MOD) += mod.o\n")

    def setUp(self):
        self.tree = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tree)
        write(os.path.join(self.tree, "net", "Makefile"), self.MAKEFILE)
        write(os.path.join(self.tree, "net", "socket.c"),
              'int s;\n#include "socket_test.c"\n')
        write(os.path.join(self.tree, "net", "socket_test.c"), "int t;\n")
        write(os.path.join(self.tree, "net", "lone_test.c"), "int l;\n")
        self.config = {"CONFIG_NET": "y", "CONFIG_MOD": "m"}

    def goals(self, touched, config=None):
        return lk.object_goals(self.tree, config or self.config, "net/",
                               touched)

    def test_makefile_lists_and_their_conditions(self):
        objs = lk.makefile_objects(self.MAKEFILE)
        self.assertEqual(objs["socket.o"], ["CONFIG_NET"])
        self.assertEqual(objs["compat.o"], ["CONFIG_COMPAT"])
        self.assertEqual(objs["b.o"], ["y"])
        self.assertNotIn("X.o", objs)
        self.assertNotIn("gen.o", objs)

    def test_lists_inside_conditionals_on_options(self):
        # kernel/time/Makefile builds posix-stubs.o only without
        # POSIX_TIMERS; a config with them must not get it as a goal
        write(os.path.join(self.tree, "time", "Makefile"),
              "obj-y += time.o\n"
              "ifeq ($(CONFIG_POSIX_TIMERS),y)\n obj-y += posix-timers.o\n"
              "else\n obj-y += posix-stubs.o\nendif\n"
              "ifdef CONFIG_A\nifneq ($(CONFIG_B),)\n"
              "obj-$(CONFIG_C) += abc.o\nendif\nendif\n"
              "ifeq ($(ARCH),x86)\nobj-y += x86.o\nelse\nobj-y += other.o\n"
              "endif\n")
        touched = ["time/time.c", "time/posix-timers.c",
                   "time/posix-stubs.c", "time/abc.c", "time/x86.c",
                   "time/other.c"]

        def goals(**config):
            return lk.object_goals(self.tree, {
                "CONFIG_" + k: v for k, v in config.items()}, "time/",
                touched)
        self.assertEqual(goals(POSIX_TIMERS="y"),
                         ["time/time.o", "time/posix-timers.o",
                          "time/x86.o", "time/other.o"])
        self.assertEqual(goals(A="y", B="m", C="y"),
                         ["time/time.o", "time/posix-stubs.o", "time/abc.o",
                          "time/x86.o", "time/other.o"])
        self.assertNotIn("time/abc.o", goals(A="y", C="y"))
        self.assertNotIn("time/abc.o", goals(B="y", C="y"))

    def test_objects_the_config_builds(self):
        self.assertEqual(self.goals(["net/socket.c", "net/compat.c",
                                     "net/b.c", "net/mod.c"]),
                         ["net/socket.o", "net/b.o", "net/mod.o"])
        self.assertEqual(self.goals(["net/socket.c", "net/compat.c"],
                                    dict(self.config, CONFIG_COMPAT="y")),
                         ["net/socket.o", "net/compat.o"])

    def test_an_included_source_is_covered_by_its_includer(self):
        self.assertEqual(self.goals(["net/socket.c", "net/socket_test.c"]),
                         ["net/socket.o"])
        # not included by a touched source: only the directory will do
        self.assertIsNone(self.goals(["net/lone_test.c", "net/socket.c"]))
        self.assertIsNone(self.goals(["net/socket_test.c"]))

    def test_changed_rules_need_the_directory(self):
        self.assertIsNone(self.goals(["net/socket.c", "net/Makefile"]))
        self.assertEqual(self.goals(["net/socket.c", "net/Kconfig"]),
                         ["net/socket.o"])
        self.assertIsNone(lk.object_goals(self.tree, self.config, "lib/",
                                          ["lib/x.c"]))

    def test_ci_goals_with_a_config(self):
        t = {"arch": "arm", "goals": ["zImage"], "ci_goals": ["kernel/"]}
        self.assertEqual(lk.ci_goals_for(t, ["net/socket.c",
                                             "net/socket_test.c",
                                             "net/compat.c",
                                             "kernel/futex.c"],
                                         tree=self.tree, config=self.config),
                         ["kernel/", "net/socket.o"])
        # without a tree and .config, directories as before
        self.assertEqual(lk.ci_goals_for(t, ["net/socket.c"]),
                         ["kernel/", "net/"])


class ReducedGoals(unittest.TestCase):
    """Reduced builds name objects, and are judged by the committed
    baseline of the target's full goals."""

    def setUp(self):
        self.tree = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tree)
        write(os.path.join(self.tree, "kernel", "Makefile"),
              "obj-y = fork.o signal.o\n"
              "obj-$(CONFIG_SIGNAL_TEST) += signal_test.o\n"
              "obj-$(CONFIG_FUTEX) += futex.o\n")
        self.config = {"CONFIG_SIGNAL_TEST": "y", "CONFIG_FUTEX": "y",
                       "CONFIG_MOD": "m"}

    def test_an_object_list_change_builds_what_it_adds(self):
        diff = ("--- a/kernel/Makefile\n+++ b/kernel/Makefile\n"
                "@@ -1,2 +1,3 @@\n obj-y = fork.o signal.o\n"
                "+obj-$(CONFIG_SIGNAL_TEST) += signal_test.o\n"
                "-ifeq ($(CONFIG_COMPAT),y)\n"
                "-obj-$(CONFIG_FUTEX) += futex_compat.o\n"
                "-endif\n")
        self.assertEqual(lk.list_only_change(diff),
                         "obj-$(CONFIG_SIGNAL_TEST) += signal_test.o")
        self.assertEqual(lk.object_goals(
            self.tree, self.config, "kernel/",
            ["kernel/Makefile", "kernel/signal_test.c", "kernel/futex.c"],
            makefile_diff=lambda path: diff),
            ["kernel/signal_test.o", "kernel/futex.o"])

    def test_other_makefile_changes_need_the_directory(self):
        for diff in ("+ccflags-y += -DX\n",
                     "+obj-y += a.o \\\n",
                     "+ifeq ($(CONFIG_X),y)\n+obj-y += a.o\n",
                     "+$(obj)/x.o: FORCE\n"):
            self.assertIsNone(lk.list_only_change(diff), diff)
            self.assertIsNone(lk.object_goals(
                self.tree, self.config, "kernel/",
                ["kernel/Makefile", "kernel/signal.c"],
                makefile_diff=lambda path: diff), diff)
        # without the diff, a changed Makefile cannot be judged
        self.assertIsNone(lk.object_goals(self.tree, self.config, "kernel/",
                                          ["kernel/Makefile"]))

    def test_a_kconfig_change_alone_builds_nothing_there(self):
        self.assertEqual(lk.object_goals(self.tree, self.config, "lib/",
                                         ["lib/Kconfig.debug"]), [])
        self.assertEqual(lk.ci_goals_for(
            {"arch": "arm", "goals": ["zImage"], "ci_goals": ["scripts_dtc"]},
            ["lib/Kconfig.debug", "kernel/signal.c"], tree=self.tree,
            config=self.config), ["scripts_dtc", "kernel/signal.o"])

    def test_modules_are_left_out_of_reduced_builds(self):
        write(os.path.join(self.tree, "fs", "Makefile"),
              "obj-y += select.o\nobj-$(CONFIG_MOD) += mod.o\n")
        touched = ["fs/select.c", "fs/mod.c"]
        self.assertEqual(lk.object_goals(self.tree, self.config, "fs/",
                                         touched), ["fs/select.o", "fs/mod.o"])
        self.assertEqual(lk.object_goals(self.tree, self.config, "fs/",
                                         touched, builtin_only=True),
                         ["fs/select.o"])

    def test_patch_goals(self):
        write(os.path.join(self.tree, "build", ".config"),
              "CONFIG_FUTEX=y\n# CONFIG_SIGNAL_TEST is not set\n")
        bdir = os.path.join(self.tree, "build")
        self.assertEqual(lk.patch_goals(self.tree, bdir, ["vmlinux"], [],
                                        None), ["vmlinux"])
        self.assertEqual(lk.patch_goals(
            self.tree, bdir, ["kernel/"],
            ["kernel/futex.c", "kernel/signal_test.c"], None),
            ["kernel/futex.o"])
        self.assertEqual(lk.patch_goals(
            self.tree, bdir, ["kernel/"], ["kernel/Makefile"], None),
            ["kernel/"])

    def test_ci_builds_are_judged_by_the_committed_baseline(self):
        seen = []

        def fake_build(t, tree, out, goals, results, baseline_dir, **kw):
            seen.append((t["name"], goals, baseline_dir))
        args = collections.namedtuple(
            "Args", "out series_dir target matrix fresh")(
                self.tree, TOP, None, "ci", True)
        with mock.patch.object(lk, "applied_tree", return_value=self.tree), \
                mock.patch.object(lk, "git", side_effect=lambda a, **kw:
                                  "" if "--diff-filter=D" in a else
                                  "kernel/signal.c"), \
                mock.patch.object(lk, "matrix", return_value=["arm"]), \
                mock.patch.object(lk, "baseline_stamp", return_value="s"), \
                mock.patch.object(lk, "target_config",
                                  return_value=self.config), \
                mock.patch.object(lk, "build_target", fake_build):
            lk.do_build(args, lk.Results())
        t = lk.load_target("arm")
        self.assertEqual(seen, [("arm", t["ci_goals"] + ["kernel/signal.o"],
                                 os.path.join(TOP, "configs", "warnings"))])


class Trace(unittest.TestCase):
    """LK_TRACE=FILE: a line per command, failed ones included."""

    def test_each_command_is_traced(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "trace")
            with mock.patch.dict(os.environ, {"LK_TRACE": path}):
                lk.run(["true"])
                lk.run(["false"], check=False)
                lk.run_watched(["true"], os.path.join(d, "log"), "t",
                               re.compile("x"), "lines")
            with open(path) as f:
                lines = f.read().splitlines()
        self.assertEqual([l.split(" ", 3)[3] for l in lines],
                         ["true", "false", "true"])
        for line in lines:
            start, secs = (float(w) for w in line.split()[:2])
            self.assertLessEqual(start, time.time() + 0.1)
            self.assertGreaterEqual(secs, 0)

    def test_no_trace_without_the_variable(self):
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict(os.environ, {"LK_TRACE": ""}):
            lk.run(["true"], cwd=d)
            self.assertEqual(os.listdir(d), [])


class BuildLanes(unittest.TestCase):
    """do_build(): full builds in one lane, partial builds and side tasks
    in another, every row counted once."""

    def run_build(self, names, side_tasks=(), target=None):
        calls = []
        lock = threading.Lock()

        def fake_build(t, tree, out, goals, results, baseline_dir, **kw):
            with lock:
                calls.append((t["name"], threading.current_thread().name))
            results.passed("build: " + t["name"])
        args = collections.namedtuple(
            "Args", "out series_dir target matrix fresh")(
                "/nonexistent", TOP, target, "ci", True)
        results = lk.Results(echo=False)
        with mock.patch.object(lk, "applied_tree", return_value="/t"), \
                mock.patch.object(lk, "git", return_value=""), \
                mock.patch.object(lk, "matrix", return_value=names), \
                mock.patch.object(lk, "baseline_stamp", return_value="s"), \
                mock.patch.object(lk, "target_config", return_value={}), \
                mock.patch.object(lk, "build_target", fake_build), \
                mock.patch.object(lk, "log"):
            lk.do_build(args, results, side_tasks)
        return calls, [r[1] for r in results.rows]

    def test_partial_builds_and_side_tasks_run_beside_the_full_ones(self):
        seen = []

        def task(results):
            seen.append(threading.current_thread().name)
            results.passed("checkpatch: p")
        calls, rows = self.run_build(["x86_64", "arm", "i386", "arm64"],
                                     [task])
        main = threading.current_thread().name
        self.assertEqual([c for c in calls if c[1] == main],
                         [("x86_64", main), ("i386", main)])
        self.assertEqual([c[0] for c in calls if c[1] != main],
                         ["arm", "arm64"])
        self.assertEqual(seen, ["side-lane"])
        # the full lane's rows first, then the side lane's, each once
        self.assertEqual(rows, ["build: x86_64", "build: i386",
                                "checkpatch: p", "build: arm",
                                "build: arm64"])

    def test_a_failing_lane_is_a_failed_row_not_a_lost_one(self):
        def task(results):
            raise lk.Failure("side went wrong")
        _, rows = self.run_build(["x86_64", "arm"], [task])
        self.assertEqual(rows, ["build: x86_64", "build"])

    def test_named_targets_build_in_order_in_one_lane(self):
        calls, rows = self.run_build([], target=["arm", "x86_64"])
        main = threading.current_thread().name
        self.assertEqual(calls, [("arm", main), ("x86_64", main)])


class TestStages(unittest.TestCase):
    """Where `lk test` runs checkpatch: beside the builds, or in the check
    stage when it builds nothing; never twice, never not at all."""

    def checkpatch_runs(self, *flags):
        runs, topics = [], []

        def fake_check(args, results, tree, entries, commits,
                       checkpatch=True):
            if checkpatch:
                runs.append("check")

        def fake_build(args, results, side_tasks=()):
            for task in side_tasks:
                task(results)
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.object(lk, "do_series", return_value=True), \
                mock.patch.object(lk, "do_apply",
                                  return_value=("/t", [], {})), \
                mock.patch.object(lk, "do_check", fake_check), \
                mock.patch.object(lk, "do_build", fake_build), \
                mock.patch.object(lk, "do_checkpatch",
                                  lambda *a: runs.append("build")), \
                mock.patch.object(lk, "do_topics",
                                  lambda *a: topics.append(len(runs))), \
                mock.patch.object(lk, "log"):
            lk.main(["--out", d, "test", "--no-qemu", "--no-kunit",
                     "--no-selftest"] + list(flags))
        # the topics check runs once, whatever else is left out
        self.assertEqual(len(topics), 1)
        return runs

    def test_checkpatch_runs_beside_the_builds(self):
        self.assertEqual(self.checkpatch_runs(), ["build"])

    def test_checkpatch_runs_in_the_check_stage_without_builds(self):
        self.assertEqual(self.checkpatch_runs("--no-build"), ["check"])

    def test_no_check_means_no_checkpatch(self):
        self.assertEqual(self.checkpatch_runs("--no-check"), [])


class KconfigSymbols(unittest.TestCase):
    """configure() checks only fragment lines whose symbol the tree has."""

    def test_symbols_of_every_kconfig_file(self):
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, "Kconfig"), "menuconfig ANDROID\n"
                  "\tbool \"Android\"\n")
            write(os.path.join(d, "drivers", "Kconfig.debug"),
                  "config FOO_DEBUG\n\tbool\n  config INDENTED\n"
                  "# config COMMENTED\n\thelp\n\t  config of BAR\n")
            write(os.path.join(d, "drivers", "notes.txt"), "config TXT\n")
            subprocess.run(["git", "init", "-q", d], check=True)
            subprocess.run(["git", "-C", d, "add", "."], check=True)
            self.assertEqual(lk.kconfig_symbols(d),
                             {"ANDROID", "FOO_DEBUG", "INDENTED"})

    def configure(self, fragment, config, before_tip):
        with tempfile.TemporaryDirectory() as d:
            frag = os.path.join(d, "test.config")
            write(frag, fragment)
            bdir = os.path.join(d, "build")
            write(os.path.join(bdir, ".config"), config)
            t = {"name": "test", "fragments": [frag], "arch": "x86_64",
                 "cross_compile": "", "defconfig": "defconfig"}
            with mock.patch.object(lk, "run"), \
                    mock.patch.object(lk, "kconfig_symbols",
                                      return_value={"OLD", "OFF"}):
                lk.configure(t, d, bdir, os.path.join(d, "log"),
                             before_tip=before_tip)

    def kunit_configure(self, before_tip, returncode=0):
        """configure() of a kunitconfig target: (kunit.py command, the
        .kunitconfig it was given)."""
        with tempfile.TemporaryDirectory() as d:
            kc = os.path.join(d, "test.kunitconfig")
            write(kc, "# suites\nCONFIG_OLD=y\nCONFIG_NEW=y\n")
            t = {"name": "test", "fragments": [], "arch": "um",
                 "cross_compile": "", "defconfig": "", "kunitconfig": kc}
            calls = []

            def fake_run(cmd, **kw):
                arg = [a for a in cmd if a.startswith("--kunitconfig=")][0]
                with open(arg.split("=", 1)[1]) as f:
                    calls.append((cmd, f.read()))
                return subprocess.CompletedProcess(cmd, returncode)
            with mock.patch.object(lk, "run", side_effect=fake_run), \
                    mock.patch.object(lk, "install_kunit_tool",
                                      return_value="/t/kunit.py"), \
                    mock.patch.object(lk, "kconfig_symbols",
                                      return_value={"OLD"}):
                lk.configure(t, d, os.path.join(d, "build"),
                             os.path.join(d, "log"), before_tip=before_tip)
            self.assertEqual(len(calls), 1)
            return calls[0]

    def test_kunitconfig_target_is_configured_by_kunit_py(self):
        cmd, kc = self.kunit_configure(before_tip=False)
        self.assertEqual(cmd[1:3], ["/t/kunit.py", "config"])
        self.assertIn("--arch=um", cmd)
        self.assertEqual(kc, "# suites\nCONFIG_OLD=y\nCONFIG_NEW=y\n")

    def test_kunitconfig_before_the_tip_leaves_out_unknown_symbols(self):
        _, kc = self.kunit_configure(before_tip=True)
        self.assertEqual(kc, "# suites\nCONFIG_OLD=y\n")

    def test_kunit_py_config_failure_fails_the_configuration(self):
        with self.assertRaisesRegex(lk.Failure, "kunit.py config exited 1"):
            self.kunit_configure(before_tip=False, returncode=1)

    def test_allnoconfig_target_gets_its_fragments_as_allconfig(self):
        # Merged after allnoconfig, the fragments would turn on options
        # that allnoconfig never saw (all that needs the MMU on arm), and
        # olddefconfig would give those their defaults.
        with tempfile.TemporaryDirectory() as d:
            frags = [os.path.join(d, "a.config"), os.path.join(d, "b.config")]
            write(frags[0], "CONFIG_OLD=y\n")
            write(frags[1], "# CONFIG_OFF is not set\n")
            bdir = os.path.join(d, "build")
            write(os.path.join(bdir, ".config"),
                  "CONFIG_OLD=y\n# CONFIG_OFF is not set\n")
            t = {"name": "test", "fragments": frags, "arch": "arm",
                 "cross_compile": "arm-linux-gnueabihf-",
                 "defconfig": "allnoconfig"}
            calls = []

            def fake_run(cmd, **kw):
                allconfig = [a for a in cmd
                             if a.startswith("KCONFIG_ALLCONFIG=")]
                calls.append((cmd, read(allconfig[0].split("=", 1)[1])
                              if allconfig else None))
            with mock.patch.object(lk, "run", side_effect=fake_run), \
                    mock.patch.object(lk, "kconfig_symbols",
                                      return_value={"OLD", "OFF"}):
                lk.configure(t, d, bdir, os.path.join(d, "log"))
        self.assertEqual(len(calls), 1, calls)
        cmd, allconfig = calls[0]
        self.assertEqual(cmd[-1], "allnoconfig")
        self.assertIn("ARCH=arm", cmd)
        self.assertEqual(allconfig, "CONFIG_OLD=y\n# CONFIG_OFF is not set\n")

    def test_allnoconfig_lines_that_did_not_stick_fail(self):
        with self.assertRaisesRegex(lk.Failure, r"did not survive "
                                    r"allnoconfig: CONFIG_OLD=y"):
            with tempfile.TemporaryDirectory() as d:
                frag = os.path.join(d, "a.config")
                write(frag, "CONFIG_OLD=y\n")
                bdir = os.path.join(d, "build")
                write(os.path.join(bdir, ".config"),
                      "# CONFIG_OLD is not set\n")
                t = {"name": "test", "fragments": [frag], "arch": "arm",
                     "cross_compile": "", "defconfig": "allnoconfig"}
                with mock.patch.object(lk, "run"), \
                        mock.patch.object(lk, "kconfig_symbols",
                                          return_value={"OLD"}):
                    lk.configure(t, d, bdir, os.path.join(d, "log"))

    def test_unknown_symbol_is_skipped_before_the_tip(self):
        self.configure("CONFIG_OLD=y\nCONFIG_NEW=y\n# CONFIG_OFF is not set\n",
                       "CONFIG_OLD=y\n# CONFIG_OFF is not set\n", True)

    def test_unknown_symbol_fails_at_the_tip(self):
        with self.assertRaisesRegex(lk.Failure, r"CONFIG_NEW=y .*no Kconfig"):
            self.configure("CONFIG_OLD=y\nCONFIG_NEW=y\n", "CONFIG_OLD=y\n",
                           False)

    def test_known_symbol_that_did_not_stick_fails_everywhere(self):
        for before_tip in (True, False):
            with self.assertRaisesRegex(lk.Failure, r"CONFIG_OFF=y"):
                self.configure("CONFIG_OFF=y\nCONFIG_NEW=y\n",
                               "# CONFIG_OFF is not set\n", before_tip)

    def fragments_hold(self, fragment, config, defined, kunitconfig=None):
        with tempfile.TemporaryDirectory() as d:
            frag = os.path.join(d, "test.config")
            write(frag, fragment)
            write(os.path.join(d, "build", ".config"), config)
            t = {"name": "test", "fragments": [frag]}
            if kunitconfig:
                t["kunitconfig"] = kunitconfig
            with mock.patch.object(lk, "kconfig_symbols",
                                   return_value=defined) as symbols:
                held = lk.fragments_hold(t, d, os.path.join(d, "build"))
            return held, symbols.call_count

    def test_a_patch_adding_a_symbol_no_fragment_sets_keeps_the_config(self):
        # A new KUnit suite's option: syncconfig gives it its default.
        self.assertEqual(self.fragments_hold(
            "CONFIG_OLD=y\n# CONFIG_OFF is not set\n",
            "CONFIG_OLD=y\n# CONFIG_OFF is not set\nCONFIG_X=y\n",
            {"OLD", "OFF", "NEW_TEST"}), (True, 0))

    def test_a_patch_adding_a_symbol_a_fragment_sets_reconfigures(self):
        # The binderfs option at the binderfs patch.
        self.assertEqual(self.fragments_hold(
            "CONFIG_OLD=y\nCONFIG_NEW=y\n", "CONFIG_OLD=y\n",
            {"OLD", "NEW"}), (False, 1))

    def test_a_fragment_symbol_the_tree_lacks_yet_keeps_the_config(self):
        self.assertEqual(self.fragments_hold(
            "CONFIG_OLD=y\nCONFIG_NEW=y\n", "CONFIG_OLD=y\n", {"OLD"}),
            (True, 1))

    def test_a_fragment_line_that_no_longer_holds_reconfigures(self):
        # configure() then reports it if it still does not stick.
        self.assertEqual(self.fragments_hold(
            "CONFIG_OLD=y\n", "# CONFIG_OLD is not set\n", {"OLD"}),
            (False, 1))

    def test_kunitconfig_targets_and_missing_configs_reconfigure(self):
        self.assertEqual(self.fragments_hold("", "", set(), "x.kunitconfig"),
                         (False, 0))
        with tempfile.TemporaryDirectory() as d:
            self.assertFalse(lk.fragments_hold({"fragments": []}, d,
                                               os.path.join(d, "none")))

    def test_a_tree_without_kconfig(self):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(["git", "init", "-q", d], check=True)
            self.assertEqual(lk.kconfig_symbols(d), set())


class Warnings(unittest.TestCase):
    LOG = textwrap.dedent("""\
        /src/kernel/fork.c:12:5: warning: unused variable 'x' [-Wunused-variable]
        /src/kernel/fork.c:99:5: warning: unused variable 'x' [-Wunused-variable]
        /src/include/linux/a.h:1: warning: 'y' defined but not used
        arch/x86/entry/thunk_64.o: warning: objtool: missing symbol for section .text
        WARNING: modpost: Found 2 section mismatch(es).
        /src/arch/x86/entry/entry_64.S:1: Warning: no instruction mnemonic suffix
          CC      kernel/fork.o
        /src/kernel/fork.c:12:5: error: something
        """)

    def test_keys_drop_line_numbers_and_roots(self):
        w = lk.parse_warnings(self.LOG, roots=("/build", "/src"))
        self.assertEqual(w["kernel/fork.c: unused variable 'x' "
                           "[-Wunused-variable]"], 2)
        self.assertIn("include/linux/a.h: 'y' defined but not used", w)
        self.assertIn("arch/x86/entry/thunk_64.o: objtool: missing symbol for "
                      "section .text", w)
        self.assertIn("arch/x86/entry/entry_64.S: no instruction mnemonic "
                      "suffix", w)
        self.assertIn("modpost: modpost: Found 2 section mismatch(es).", w)
        self.assertEqual(sum(w.values()), 6)

    def test_offsets_are_dropped(self):
        a = lk.parse_warnings("a.o: warning: objtool: f()+0x1c: sibling call\n")
        b = lk.parse_warnings("a.o: warning: objtool: f()+0x2e: sibling call\n")
        self.assertEqual(a, b)

    def test_temporary_assembler_files_share_one_key(self):
        a = lk.parse_warnings("/tmp/ccAbC123.s:10: Warning: foo\n")
        b = lk.parse_warnings("/tmp/ccXyZ789.s:99: Warning: foo\n")
        c = lk.parse_warnings("{standard input}:5: Warning: foo\n")
        self.assertEqual(a, b)
        self.assertEqual(a, c)

    def test_first_error_skips_object_names(self):
        log = ("*** Default configuration is based on 'x86_64_defconfig'\n"
               "  CC      drivers/gpu/drm/i915/i915_gpu_error.o\n"
               "/src/lib/bcd.c:9:5: error: expected identifier\n")
        self.assertEqual(lk.first_error(log),
                         "/src/lib/bcd.c:9:5: error: expected identifier")
        self.assertEqual(lk.first_error("all fine\n"), "?")

    def test_make_failure_is_an_error(self):
        self.assertEqual(lk.first_error("make[2]: *** [x] Error 1\n"),
                         "make[2]: *** [x] Error 1")

    def test_source_directory_seen_from_the_build_directory_is_stripped(self):
        # With ccache's base_dir the compiler names sources relative to the
        # build directory; the keys must be those of absolute paths.
        roots = lk.build_roots("/w/build/x86_64", "/w/tree")
        rel = lk.parse_warnings("../../tree/lib/bcd.c:3:5: warning: unused "
                                "variable 'x' [-Wunused-variable]\n",
                                roots=roots)
        absolute = lk.parse_warnings("/w/tree/lib/bcd.c:3:5: warning: unused "
                                     "variable 'x' [-Wunused-variable]\n",
                                     roots=roots)
        self.assertEqual(rel, absolute)
        self.assertEqual(list(rel), ["lib/bcd.c: unused variable 'x' "
                                     "[-Wunused-variable]"])

    def test_build_directory_is_stripped(self):
        w = lk.parse_warnings("/build/x86/include/generated/a.h:3: warning: "
                              "foo\n", roots=("/build/x86", "/src"))
        self.assertEqual(list(w), ["include/generated/a.h: foo"])

    def test_quotes_do_not_depend_on_the_locale(self):
        utf8 = lk.parse_warnings("a.c:1:1: warning: unused \u2018x\u2019\n")
        plain = lk.parse_warnings("a.c:1:1: warning: unused 'x'\n")
        self.assertEqual(utf8, plain)

    def test_sparse_errors_count_only_when_asked(self):
        line = "/src/a.c:3:4: error: bad constant expression\n"
        self.assertEqual(lk.parse_warnings(line, roots=("/src",)),
                         collections.Counter())
        self.assertEqual(lk.parse_warnings(line, roots=("/src",), errors=True),
                         collections.Counter(
                             {"a.c: bad constant expression": 1}))

    def test_errors_are_not_warnings(self):
        w = lk.parse_warnings("/src/a.c:1:1: error: boom\n", roots=("/src",))
        self.assertEqual(w, collections.Counter())

    def test_one_more_of_the_same_warning_in_a_c_file_is_new(self):
        base = lk.parse_warnings(self.LOG, roots=("/src",))
        tip = lk.parse_warnings(self.LOG + "/src/kernel/fork.c:7:1: warning: "
                                "unused variable 'x' [-Wunused-variable]\n",
                                roots=("/src",))
        self.assertEqual(sum(lk.new_warnings(tip, base).values()), 1)

    def test_a_known_header_warning_seen_by_one_more_includer_is_not_new(self):
        base = lk.parse_warnings(self.LOG, roots=("/src",))
        tip = lk.parse_warnings(self.LOG + "/src/include/linux/a.h:1: "
                                "warning: 'y' defined but not used\n",
                                roots=("/src",))
        self.assertEqual(lk.new_warnings(tip, base), collections.Counter())

    def test_a_new_header_warning_is_new(self):
        base = lk.parse_warnings(self.LOG, roots=("/src",))
        tip = lk.parse_warnings(self.LOG + "/src/include/linux/b.h:1: "
                                "warning: 'z' defined but not used\n",
                                roots=("/src",))
        self.assertEqual(list(lk.new_warnings(tip, base)),
                         ["include/linux/b.h: 'z' defined but not used"])

    def sparse_patch(self, after, before):
        """lk.sparse_patch() on one C file whose sparse output is canned."""
        results = lk.Results()
        entry = mock.Mock(path="upstream/x.patch")
        runs = iter([after, before])
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.object(lk, "built_objects", lambda b, c: c), \
                mock.patch.object(lk, "git", lambda *a, **k: ""), \
                mock.patch.object(lk, "sparse_check",
                                  lambda *a: (next(runs), [], [])):
            slog = os.path.join(d, "log")
            after = lk.sparse_after({"name": "x86_64"}, d, d,
                                    ["drivers/a.c"], slog)
            lk.sparse_patch(entry, "c0ffee", d, {"name": "x86_64"}, d,
                            ["drivers/a.c"], slog, after, results)
        return results

    def test_sparse_at_the_parent_is_taken_from_the_patch_before(self):
        # The patch before checked the same file at this patch's parent:
        # nothing is checked out or run again.
        results = lk.Results(echo=False)
        key = "drivers/a.c: bad"
        with mock.patch.object(lk, "git") as git, \
                mock.patch.object(lk, "sparse_check") as check:
            kept = lk.sparse_patch(
                mock.Mock(path="upstream/y.patch"), "c0ffee", "/t",
                {"name": "x86_64"}, "/b", ["drivers/a.c"], "/log",
                (["drivers/a.c"], collections.Counter({key: 2}), []),
                results, (["drivers/a.c"], collections.Counter({key: 1})))
        git.assert_not_called()
        check.assert_not_called()
        self.assertEqual(results.rows[0][:2],
                         ("FAIL", "sparse: upstream/y.patch"))
        self.assertEqual(kept, (["drivers/a.c"],
                                collections.Counter({key: 2})))

    def test_sparse_is_skipped_when_the_build_failed(self):
        results = lk.Results(echo=False)
        lk.sparse_patch(mock.Mock(path="upstream/x.patch"), "c0ffee", "/t",
                        {"name": "x86_64"}, "/b", ["drivers/a.c"], "/log",
                        None, results)
        self.assertEqual(results.rows, [
            ("SKIP", "sparse: upstream/x.patch",
             "the x86_64 build at this patch failed")])

    def test_sparse_header_warning_of_a_new_includer_is_not_new(self):
        # A new C file that includes slab.h gets slab.h's old sparse
        # warning once more: not the patch's (binderfs.c, v4.20 slab.h).
        key = "include/linux/slab.h: dubious: x & !y"
        r = self.sparse_patch(collections.Counter({key: 13}),
                              collections.Counter({key: 11}))
        self.assertEqual((r.count("PASS"), r.count("FAIL")), (1, 0))

    def test_sparse_new_warning_in_a_c_file_is_new(self):
        r = self.sparse_patch(collections.Counter({"drivers/a.c: bad": 2}),
                              collections.Counter({"drivers/a.c: bad": 1}))
        self.assertEqual((r.count("PASS"), r.count("FAIL")), (0, 1))

    def test_baseline_round_trip(self):
        w = lk.parse_warnings(self.LOG, roots=("/src",))
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("# prerequisite stack: abc\n")
            for k, n in sorted(w.items()):
                f.write("%d %s\n" % (n, k))
        self.addCleanup(os.unlink, f.name)
        base, stamp = lk.read_baseline(f.name)
        self.assertEqual(base, w)
        self.assertEqual(stamp, "abc")


class Progress(unittest.TestCase):
    """Long steps say how far they got; `lk test` times its stages."""

    def test_a_long_step_reports_progress(self):
        with tempfile.TemporaryDirectory() as d:
            logfile = os.path.join(d, "log")
            script = ("import time\n"
                      "for i in range(3):\n"
                      "    print('  CC      a%d.o' % i, flush=True)\n"
                      "    time.sleep(0.6)\n"
                      "print('warning: not counted')\n")
            printed = []
            with mock.patch.object(lk, "PROGRESS_SECS", 0.5), \
                    mock.patch.object(lk, "log", printed.append):
                r = lk.run_watched([sys.executable, "-c", script], logfile,
                                   "build x", lk.BUILD_STEP_RE, "files built")
            self.assertEqual(r.returncode, 0)
            self.assertGreaterEqual(len(printed), 2, printed)
            counts = [int(re.match(r"progress: build x: (\d+) files built "
                                   r"after \d+s$", p).group(1))
                      for p in printed]
            self.assertEqual(counts, sorted(counts))
            self.assertLessEqual(counts[-1], 3)
            self.assertGreaterEqual(counts[-1], 1)
            with open(logfile) as f:
                self.assertIn("warning: not counted", f.read())

    def test_a_step_past_its_time_is_stopped(self):
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.object(lk, "PROGRESS_SECS", 0.2), \
                mock.patch.object(lk, "log"):
            t0 = time.time()
            with self.assertRaises(subprocess.TimeoutExpired):
                lk.run_watched(["sleep", "30"], os.path.join(d, "log"), "x",
                               lk.BUILD_STEP_RE, "files", timeout=1)
            self.assertLess(time.time() - t0, 10)

    def test_stage_table(self):
        results = lk.Results(echo=False)
        stages = lk.Stages(results)
        with mock.patch.object(lk, "log"):
            stages.run("check", lambda: results.passed("a"))
            stages.run("build", lambda: (_ for _ in ()).throw(
                lk.Failure("no compiler")), lk.Failure)
        self.assertEqual(results.rows[-1], ("FAIL", "build", "no compiler"))
        table = stages.table()
        self.assertRegex(table, r"(?m)^  check +\d+s +1 passed, 0 failed, "
                         r"0 skipped$")
        self.assertRegex(table, r"(?m)^  build +\d+s +0 passed, 1 failed, "
                         r"0 skipped$")
        self.assertRegex(table, r"(?m)^  total +\d+s$")


class SelftestOutput(unittest.TestCase):
    """Reading `unittest -v` output into one result per test."""

    LOG = textwrap.dedent("""\
        test_a (__main__.One.test_a) ... ok
        test_b (__main__.One.test_b) ... /x/lk:1: ResourceWarning: unclosed
          have = open(path).read()
        ResourceWarning: Enable tracemalloc
        ok
        test_c (__main__.Two.test_c) ... skipped 'no base tree'
        test_d (__main__.Two.test_d) ... FAIL
        test_e (__main__.Two.test_e) ... [sub] ERROR
        """)

    def test_outcome_split_over_lines_is_read(self):
        self.assertEqual(list(lk.unittest_outcomes(self.LOG)), [
            ("One.test_a", "ok"), ("One.test_b", "ok"),
            ("Two.test_c", "skipped 'no base tree'"), ("Two.test_d", "FAIL"),
            ("Two.test_e", "ERROR")])

    @staticmethod
    def selftest_results(log):
        """The Results of run_selftest_script() on a canned unittest log."""
        def fake_run(cmd, logfile, *args, **kw):
            with open(logfile, "a") as f:
                f.write(log)
            return subprocess.CompletedProcess(cmd, 0)
        results = lk.Results()
        with tempfile.TemporaryDirectory() as out, \
                mock.patch.object(lk, "run_watched", fake_run):
            args = collections.namedtuple("Args", "out quick")(out, True)
            rc, logfile = lk.run_selftest_script(args, "lk_test.py",
                                                 "selftest")
            lk.report_selftest_script(results, "lk_test.py", "selftest", rc,
                                      logfile)
        return results

    def test_every_script_runs_and_hears_which_guests_booted(self):
        seen = {}

        def fake_run(cmd, logfile, label, *args, env=None, **kw):
            seen[label] = env["LK_QEMU_STAGE_GUESTS"]
            with open(logfile, "a") as f:
                f.write("test_a (__main__.%s.test_a) ... ok\n"
                        "-----\nRan 1 test in 0.1s\n\nOK\n" %
                        label.rpartition("-")[2])
            return subprocess.CompletedProcess(cmd, 0)
        results = lk.Results()
        with tempfile.TemporaryDirectory() as out, \
                mock.patch.object(lk, "run_watched", fake_run):
            args = collections.namedtuple("Args", "out quick")(out, True)
            lk.do_selftest(args, results, ["x86_64", "i386"])
        self.assertEqual(seen, {"selftest": "x86_64 i386",
                                "selftest-qemu": "x86_64 i386",
                                "selftest-fuzz": "x86_64 i386",
                                "selftest-bench": "x86_64 i386"})
        self.assertEqual([r[1] for r in results.rows],
                         ["selftest: selftest.test_a",
                          "selftest-qemu: qemu.test_a",
                          "selftest-fuzz: fuzz.test_a",
                          "selftest-bench: bench.test_a"])
        self.assertRegex(results.summary(), r"^4 passed, 0 failed")

    def test_outcome_after_a_docstring_is_read(self):
        log = "test_a (__main__.One.test_a)\n" \
              "What test_a checks ... ok\n" \
              "test_b (__main__.One.test_b)\n" \
              "What test_b checks ... FAIL\n"
        self.assertEqual(list(lk.unittest_outcomes(log)),
                         [("One.test_a", "ok"), ("One.test_b", "FAIL")])

    def test_skipped_class_is_not_a_lost_outcome(self):
        log = "setUpClass (__main__.Real) ... skipped 'no base tree'\n" \
              "test_a (__main__.One.test_a) ... ok\n" \
              "-----\nRan 1 test in 0.1s\n\nOK (skipped=1)\n"
        results = self.selftest_results(log)
        self.assertFalse(results.has_failure("selftest"), results.rows)
        self.assertRegex(results.summary(), r"^1 passed, 0 failed, 1 skipped")

    def test_unread_outcome_fails_the_run(self):
        # A test whose outcome cannot be read must not vanish from the count.
        log = "test_a (__main__.One.test_a) ... ok\n" \
              "test_b (__main__.One.test_b) ... \n\n" \
              "-----\nRan 2 tests in 0.1s\n\nOK\n"
        results = self.selftest_results(log)
        self.assertIn(("PASS", "selftest: One.test_a", ""), results.rows)
        self.assertTrue(results.has_failure("selftest"), results.rows)
        self.assertRegex(results.summary(), r"^1 passed, 1 failed")


class BaselineStamps(unittest.TestCase):
    """The committed baselines belong to today's prerequisite stack."""

    def test_every_committed_baseline_is_current(self):
        # A stale stamp fails CI's warning comparison; say so here first,
        # with the target, before anything is built.
        d = os.path.join(TOP, "configs", "warnings")
        for fn in sorted(os.listdir(d)):
            t = lk.load_target(fn[:-len(".txt")])
            if not shutil.which(t["cross_compile"] + "gcc"):
                self.skipTest("no %sgcc" % t["cross_compile"])
            _, stamp = lk.read_baseline(os.path.join(d, fn))
            self.assertEqual(stamp, lk.baseline_stamp(TOP, t), fn)

    def test_comments_and_ci_goals_do_not_change_the_stamp(self):
        t = lk.load_target("arm")
        stamp = lk.baseline_stamp(TOP, t)
        self.assertEqual(lk.baseline_stamp(TOP, dict(t, ci_goals=["lib/"])),
                         stamp)
        self.assertNotEqual(lk.baseline_stamp(TOP, dict(t, goals=["zImage"])),
                            stamp)
        self.assertNotEqual(lk.baseline_stamp(
            TOP, dict(t, defconfig="vexpress_defconfig")), stamp)


class KconfigOnlyPrerequisites(unittest.TestCase):
    """A prerequisite patch that only adds options that are off by default
    counts for the baselines of the targets that set one of them only."""

    def patch(self, *hunks):
        return "".join("diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n@@ -1 +1 @@\n%s"
                       % (f, f, f, f, body) for f, body in hunks)

    def test_options_without_default_are_returned(self):
        p = self.patch(("arch/Kconfig", "+config ARCH_HAS_64BIT_TIME\n"
                        "+\tbool\n"),
                       ("arch/x86/Kconfig.debug", "+config X86_T\n+\tbool "
                        "\"t\"\n+\tselect ARCH_HAS_64BIT_TIME\n"))
        self.assertEqual(lk.kconfig_only_options(p),
                         ["ARCH_HAS_64BIT_TIME", "X86_T"])

    def test_anything_else_counts_for_every_target(self):
        for p in (self.patch(("arch/Kconfig", "+config A\n+\tdef_bool y\n")),
                  self.patch(("arch/Kconfig", "+config A\n+\tdefault y\n")),
                  self.patch(("arch/Kconfig", "-\tdefault n\n+config A\n")),
                  self.patch(("arch/Kconfig", "+config A\n"),
                             ("kernel/a.c", "+int a;\n")),
                  "no diff at all\n"):
            self.assertIsNone(lk.kconfig_only_options(p), p)

    def test_the_project_build_test_switch_is_only_i386_time64s(self):
        entries = [e for e in lk.read_series(TOP) if not e.upstream and
                   "64bit-time" in e.path]
        self.assertEqual(len(entries), 1)
        with open(os.path.join(TOP, "patches", entries[0].path)) as f:
            self.assertIn("X86_32_64BIT_TIME_BUILD_TEST",
                          lk.kconfig_only_options(f.read()) or [])
        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(TOP, "patches"),
                            os.path.join(d, "patches"))
            with open(os.path.join(TOP, "series")) as f:
                write(os.path.join(d, "series"),
                      f.read().replace(entries[0].path + "\n", ""))
            for name, same in (("i386-defconfig", True), ("x86_64", True),
                               ("i386-time64", False)):
                t = lk.load_target(name)
                self.assertEqual(lk.baseline_stamp(TOP, t) ==
                                 lk.baseline_stamp(d, t), same, name)


class GuestTargets(unittest.TestCase):
    """The guests' kernels are the defconfig targets less guest.config."""

    def test_guest_kernel_is_its_defconfig_target_less_guest_config(self):
        # The x86_64 guest also has the x32 ABI: x32.config.
        for name, extra in (("x86_64", ["x32.config"]), ("i386", [])):
            guest, plain = (lk.load_target(name),
                            lk.load_target(name + "-defconfig"))
            for key in ("arch", "cross_compile", "defconfig", "goals"):
                self.assertEqual(guest[key], plain[key], (name, key))
            self.assertEqual(sorted(guest["fragments"]),
                             sorted(plain["fragments"] + extra +
                                    ["guest.config"]), name)

    def test_arm_guest_kernels_are_allnoconfig_plus_what_they_need(self):
        # Their architecture and compiler are those of the defconfig
        # targets; the guests' fragments name everything they build.
        for name, plain, extra in (
                ("arm-guest", "arm", "arm-virt.config"),
                ("arm64-guest", "arm64",
                 ["arm64-compat.config", "arm64-pauth.config"])):
            guest, defconfig = lk.load_target(name), lk.load_target(plain)
            for key in ("arch", "cross_compile"):
                self.assertEqual(guest[key], defconfig[key], (name, key))
            self.assertEqual(guest["defconfig"], "allnoconfig")
            self.assertIn("allnoconfig", lk.ALLCONFIG_TARGETS)
            extra = [extra] if isinstance(extra, str) else extra
            self.assertEqual(guest["fragments"],
                             ["virt-guest.config"] + extra +
                             ["kunit.config", "binderfs.config"], name)
            self.assertIn("vmlinux", guest["goals"])
            # Built in full by CI, as the guests' kernels are.
            self.assertIsNone(guest["ci_goals"], name)

    def test_every_guest_but_the_debug_ones_boots_in_ci(self):
        # `lk test` boots the guests whose target the build stage built.
        d = os.path.join(TOP, "configs", "qemu")
        ci = lk.matrix("ci")
        for fn in sorted(os.listdir(d)):
            if not fn.endswith(".conf"):
                continue
            target = lk.read_kv(os.path.join(d, fn))["target"]
            self.assertEqual(target in ci, not fn.endswith("-debug.conf"),
                             fn)

    def test_x32_config_turns_on_x32_only(self):
        lines = [line for _, line, _ in
                 lk.fragment_lines({"fragments": ["x32.config"]})]
        self.assertEqual(lines, ["CONFIG_X86_X32=y"])

    def test_guest_config_only_turns_options_off(self):
        # Anything it turned on would be built and booted in CI but never
        # in the defconfig builds a user makes.
        lines = lk.fragment_lines({"fragments": ["guest.config"]})
        self.assertTrue(lines)
        for _, line, _ in lines:
            self.assertRegex(line, r"^# CONFIG_\w+ is not set$")

    def test_every_patch_is_checked_on_the_plain_defconfigs(self):
        self.assertEqual(lk.matrix("bisect"), ["x86_64-defconfig",
                                               "x86_64-nocompat",
                                               "i386-defconfig"])
        full = lk.matrix("full")
        for name in lk.matrix("ci") + lk.matrix("bisect"):
            self.assertIn(name, full)


class Judge(unittest.TestCase):
    W = collections.Counter({"kernel/a.c: unused variable 'x'": 1})

    def setUp(self):
        f = tempfile.NamedTemporaryFile("w", delete=False)
        f.write("# prerequisite stack: abc\n1 kernel/a.c: unused variable "
                "'x'\n")
        f.close()
        self.base = f.name
        self.addCleanup(os.unlink, f.name)

    def judge(self, warnings, stamp="abc", incremental=False, base=None):
        return lk.judge_warnings(warnings, base or self.base, stamp,
                                 incremental, "list.txt")

    def test_same_warnings_pass(self):
        self.assertEqual(self.judge(self.W)[0], "PASS")

    def test_a_new_warning_fails_and_is_named(self):
        w = self.W + collections.Counter({"fs/select.c: unused 'y'": 1})
        status, detail = self.judge(w)
        self.assertEqual(status, "FAIL")
        self.assertIn("fs/select.c: unused 'y'", detail)

    def test_a_second_copy_of_a_known_warning_fails(self):
        self.assertEqual(self.judge(self.W + self.W)[0], "FAIL")

    def test_missing_baseline_fails(self):
        status, detail = self.judge(self.W, base="/nonexistent/x.txt")
        self.assertEqual(status, "FAIL")
        self.assertIn("lk baseline", detail)

    def test_stale_baseline_fails(self):
        status, detail = self.judge(self.W, stamp="def")
        self.assertEqual(status, "FAIL")
        self.assertIn("another prerequisite stack", detail)

    def test_incremental_build_is_not_a_pass(self):
        self.assertEqual(self.judge(self.W, incremental=True)[0], "SKIP")

    def test_incremental_build_still_fails_on_new_warnings(self):
        w = self.W + collections.Counter({"fs/select.c: unused 'y'": 1})
        self.assertEqual(self.judge(w, incremental=True)[0], "FAIL")


class BaseTree(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        patcher = mock.patch.dict(os.environ)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_makefile_version(self):
        write(os.path.join(self.dir, "Makefile"), "# SPDX\nVERSION = 4\n"
              "PATCHLEVEL = 20\nSUBLEVEL = 0\nEXTRAVERSION =\n")
        self.assertEqual(lk.makefile_version(self.dir), "4.20.0")

    def test_plain_tree_of_another_version_is_refused(self):
        write(os.path.join(self.dir, "Makefile"), "VERSION = 4\n"
              "PATCHLEVEL = 19\nSUBLEVEL = 0\nEXTRAVERSION =\n")
        os.environ["LINUX_SRC"] = self.dir
        with self.assertRaisesRegex(lk.Failure, "says 4.19.0, not 4.20.0"):
            lk.find_base(allow_download=False)

    def test_git_tree_without_tag_is_refused(self):
        subprocess.run(["git", "init", "-q", self.dir], check=True)
        os.environ["LINUX_SRC"] = self.dir
        with self.assertRaisesRegex(lk.Failure, "without a tag v4.20"):
            lk.find_base(allow_download=False)

    def test_git_tree_with_a_wrong_v420_tag_is_refused(self):
        subprocess.run(["git", "init", "-q", self.dir], check=True)
        write(os.path.join(self.dir, "f"), "x\n")
        g = ["git", "-C", self.dir, "-c", "user.name=t", "-c",
             "user.email=t@t"]
        subprocess.run(g + ["add", "f"], check=True)
        subprocess.run(g + ["commit", "-qm", "x"], check=True)
        subprocess.run(g + ["tag", "v4.20"], check=True)
        os.environ["LINUX_SRC"] = self.dir
        with self.assertRaisesRegex(lk.Failure, "not Linux v4.20"):
            lk.find_base(allow_download=False)

    def test_no_tree_and_no_download_says_how_to_provide_one(self):
        os.environ.pop("LINUX_SRC", None)
        os.environ["XDG_CACHE_HOME"] = self.dir
        with self.assertRaises(lk.Failure) as cm:
            lk.find_base(allow_download=False)
        msg = str(cm.exception)
        self.assertIn("LINUX_SRC", msg)
        self.assertIn("provision-linux-v4.20", msg)
        self.assertIn(os.path.join(self.dir, "linux-v4.20"), msg)

    def test_download_of_a_wrong_tarball_is_refused(self):
        src = os.path.join(self.dir, "linux-4.20")
        write(os.path.join(src, "Makefile"), "VERSION = 4\n")
        tarball = os.path.join(self.dir, "linux-4.20.tar.xz")
        subprocess.run(["tar", "-C", self.dir, "-cJf", tarball, "linux-4.20"],
                       check=True)
        os.environ.pop("LINUX_SRC", None)
        os.environ["XDG_CACHE_HOME"] = os.path.join(self.dir, "cache")
        os.environ["LK_TARBALL_URL"] = "file://" + tarball
        with self.assertRaisesRegex(lk.Failure, "not Linux v4.20"):
            lk.find_base(allow_download=True)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "cache",
                                                     "linux-v4.20")))

    def test_failed_download_says_how_to_provide_a_tree(self):
        os.environ.pop("LINUX_SRC", None)
        os.environ["XDG_CACHE_HOME"] = os.path.join(self.dir, "cache")
        os.environ["LK_TARBALL_URL"] = "file://" + self.dir + "/absent.tar.xz"
        with self.assertRaisesRegex(lk.Failure, "provision-linux-v4.20"):
            lk.find_base(allow_download=True)


class WorkTree(unittest.TestCase):
    """lk resets only clones it made, and only uses one holding the series."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.tree = os.path.join(self.dir, "tree")

    def git(self, *args):
        subprocess.run(["git", "-C", self.tree] + list(args), check=True,
                       env=lk.clean_env(), stdout=subprocess.DEVNULL)

    def test_a_foreign_git_tree_is_not_reset(self):
        os.makedirs(self.tree)
        self.git("init", "-q")
        write(os.path.join(self.tree, "precious"), "x\n")
        with self.assertRaisesRegex(lk.Failure, "lk did not make"):
            lk.prepare_tree("/nonexistent", "git", self.tree)
        self.assertTrue(os.path.exists(os.path.join(self.tree, "precious")))

    def test_a_foreign_directory_is_not_removed(self):
        write(os.path.join(self.tree, "precious"), "x\n")
        with self.assertRaisesRegex(lk.Failure, "not a clone made by lk"):
            lk.prepare_tree("/nonexistent", "git", self.tree)
        self.assertTrue(os.path.exists(os.path.join(self.tree, "precious")))

    def test_a_tree_holding_another_series_is_refused(self):
        os.makedirs(self.tree)
        self.git("init", "-q")
        self.git("config", "lk.managed", "true")
        self.git("config", "lk.series", "0000000000000000")
        args = mock.Mock(out=self.dir, series_dir=TOP)
        with self.assertRaisesRegex(lk.Failure, "another version of the "
                                    "series"):
            lk.applied_tree(args)


def have_base():
    """A git base tree (the broken-patch tests clone it)."""
    try:
        return lk.find_base(allow_download=False)[1] == "git"
    except lk.Failure:
        return False


def applied_tree():
    """$LK_OUT/tree when it holds the series (as `lk test` leaves it)."""
    tree = os.path.join(lk.out_dir(None), "tree")
    r = subprocess.run(["git", "-C", tree, "symbolic-ref", "-q", "HEAD"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True)
    return tree if r.stdout.strip() == "refs/heads/series" else None


def applied_selftests(testcase):
    """The applied tree and the selftests configs/selftests.txt lists;
    skips the test case when `lk apply` has not run."""
    tree = applied_tree()
    if tree is None:
        testcase.skipTest("no applied series in $LK_OUT/tree (lk apply)")
    sys.path.insert(0, HERE)
    import lk_qemu
    specs = lk_qemu.read_selftests()
    testcase.assertTrue(specs)
    return tree, specs


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
                        [cc, "-O2", "-Wall", "-Werror", "-pthread", "-c",
                         "-o", os.devnull, "-I",
                         os.path.join(tree, "tools", "testing", "selftests"),
                         os.path.join(tree, spec.source)],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                        universal_newlines=True)
                    self.assertEqual(r.returncode, 0, r.stdout[-2000:])


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
        m = lk.COCCI_REPORT_RE.match(
            "/w/v/ab/fs/a.c:12:4-9: WARNING: x at line 30")
        self.assertEqual(m.group(1), "/w/v/ab/fs/a.c")
        self.assertEqual(m.group(2), "12")
        self.assertEqual(m.group(3), "WARNING: x at line 30")
        m = lk.COCCI_REPORT_RE.match("/w/b.c:7: ERROR: y")
        self.assertEqual((m.group(1), m.group(3)), ("/w/b.c", "ERROR: y"))

    def test_moved_report_is_not_new_but_a_second_one_is(self):
        k = lk.cocci_key("s.cocci", "WARNING: x on line 30", "  kfree(p);")
        moved = lk.cocci_key("s.cocci", "WARNING: x on line 41", "kfree(p);")
        self.assertEqual(k, moved)
        before = [(k, "a.c:10: WARNING")]
        self.assertEqual(lk.cocci_new_reports(
            before, [(moved, "a.c:21: WARNING")]), [])
        self.assertEqual(lk.cocci_new_reports(
            before, [(moved, "a.c:21: W"), (k, "a.c:40: W")]), ["a.c:40: W"])
        other = lk.cocci_key("s.cocci", "WARNING: x", "kfree(q);")
        self.assertEqual(lk.cocci_new_reports([], [(other, "l")]), ["l"])

    def test_options_and_requires(self):
        s = lk.CocciScript("x.cocci", "/// t\n// Requires: 1.0.8\n"
                           "// Options: --no-includes --include-headers\n")
        self.assertEqual(s.options, ["--no-includes", "--include-headers"])
        self.assertTrue(s.headers)
        self.assertEqual(lk.version_tuple(s.requires), (1, 0, 8))
        self.assertLess(lk.version_tuple("1.0.4"), (1, 0, 8))


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
        write(os.path.join(self.repo, "scripts/coccinelle/free/t.cocci"),
              IFNULLFREE)
        write(os.path.join(self.repo, "scripts/coccinelle/misc/bad.cocci"),
              "@@\nthis is not smpl\n")
        write(os.path.join(self.repo, "include/linux/kconfig.h"), "\n")
        write(os.path.join(self.repo, "drv/a.c"),
              "void f(int *p)\n{\n\tif (p != NULL)\n\t\tkfree(p);\n}\n")
        write(os.path.join(self.repo, "drv/b.c"), "int g(void)\n{\n"
              "\treturn 0;\n}\n")
        self.git("init", "-q")
        self.git("add", ".")
        self.git("commit", "-q", "-m", "base")
        self.git("tag", "v4.20")
        self.git("checkout", "-q", "-b", "series")
        self.commit("drv/a.c", "void e(void)\n{\n}\n\n", prepend=True)
        self.commit("drv/b.c", "void h(int *q)\n{\n\tif (q != NULL)\n"
                    "\t\tkfree(q);\n}\n")
        self.commit("README", "text\n")
        self.entries = [lk.PatchEntry("t/%04d-p.patch" % i, "t", True, i)
                        for i in (1, 2, 3)]
        self.baseline = os.path.join(self.dir, "v4.20.json")

    def git(self, *args):
        return repo_git(self.repo, *args)

    def commit(self, name, text, prepend=False):
        path = os.path.join(self.repo, name)
        old = read(path) if os.path.exists(path) else ""
        write(path, text + old if prepend else old + text)
        self.git("add", name)
        self.git("commit", "-q", "-m", "change " + name)

    def run_cocci(self, record=False):
        results = lk.Results(echo=False)
        args = mock.Mock(out=os.path.join(self.dir, "out"),
                         record_baseline=record)
        with mock.patch.object(lk, "COCCI_BASELINE", self.baseline):
            lk.do_cocci(args, results, self.repo, self.entries)
        return {r[1]: r for r in results.rows}

    def test_new_report_fails_moved_one_passes(self):
        rows = self.run_cocci()
        self.assertEqual(rows["cocci: t/0001-p.patch"][0], "PASS", rows)
        self.assertIn("1 report(s) before, 1 after",
                      rows["cocci: t/0001-p.patch"][2])
        self.assertEqual(rows["cocci: t/0002-p.patch"][0], "FAIL", rows)
        self.assertIn("drv/b.c:8:", rows["cocci: t/0002-p.patch"][2])
        self.assertNotIn("cocci: t/0003-p.patch", rows)
        bad = [r for r in rows.values() if "bad.cocci" in r[1]]
        self.assertEqual(len(bad), 1, rows)
        self.assertEqual(bad[0][0], "SKIP")
        # Again, from the cache: the same rows, no spatch run for t.cocci.
        log = os.path.join(self.dir, "out", "logs", "cocci.log")
        again = self.run_cocci()
        self.assertEqual({k: v[0] for k, v in again.items()},
                         {k: v[0] for k, v in rows.items()})
        self.assertNotIn("t.cocci", read(log))

    def test_baseline_holds_the_v420_versions(self):
        rows = self.run_cocci(record=True)
        self.assertEqual(rows["cocci: t/0001-p.patch"][0], "PASS", rows)
        with open(self.baseline) as f:
            data = json.load(f)
        self.assertEqual(data["spatch"], lk.spatch_version())
        v420 = {self.git("rev-parse", "v4.20:drv/" + n).strip()
                for n in ("a.c", "b.c")}
        [(key, per)] = data["reports"].items()   # bad.cocci cannot run
        self.assertEqual(set(per), v420)
        a = self.git("rev-parse", "v4.20:drv/a.c").strip()
        self.assertEqual(len(per[a]), 1, per)
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


@unittest.skipIf(QUICK, "--quick: no tests that need the applied tree")
class CocciBaseline(unittest.TestCase):
    """configs/cocci/v4.20.json holds the reports of exactly the v4.20
    versions of the files the series touches, made by the spatch that is
    installed: otherwise CI checks those versions again (correct, but the
    slowest part of coccicheck), and this says to record it again."""

    def test_committed_baseline_is_current(self):
        tree = applied_tree()
        if tree is None:
            self.skipTest("no applied series in $LK_OUT/tree (lk apply)")
        if not shutil.which("spatch"):
            self.fail("spatch is not installed (scripts/packages.txt)")
        entries = lk.read_series(TOP)
        upstream = [e for e in entries if e.upstream]
        _, blobs = lk.cocci_versions(tree, upstream,
                                     lk.patch_commits(tree, entries))
        with open(lk.COCCI_BASELINE) as f:
            data = json.load(f)
        hint = "; run 'scripts/lk cocci --record-baseline' and commit it"
        self.assertEqual(data["spatch"], lk.spatch_version(), hint)
        recorded = set(b for per in data["reports"].values() for b in per)
        self.assertEqual(recorded, lk.v420_versions(tree, blobs), hint)
        self.assertGreater(len(data["reports"]), 50, hint)


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
    d = os.path.dirname(source[len(prefix):])
    best = None
    for t in targets:
        if (d == t or d.startswith(t + "/")) and (
                best is None or len(t) > len(best)):
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
        self.assertEqual(kselftest_target_of(
            "tools/testing/selftests/filesystems/binderfs/t.c", targets),
            "filesystems/binderfs")
        self.assertEqual(kselftest_target_of(
            "tools/testing/selftests/futex/functional/f.c", targets),
            "futex")
        self.assertIsNone(kselftest_target_of(
            "tools/testing/selftests/netfilter/n.c", targets))
        self.assertIsNone(kselftest_target_of("kernel/x.c", targets))
        self.assertEqual(kselftest_targets(
            "TARGETS = aio\nTARGETS += android\n#TARGETS += no\n"),
            ["aio", "android"])

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
        archive = subprocess.Popen(["git", "-C", tree, "archive", "HEAD"],
                                   stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", tmp], stdin=archive.stdout,
                       check=True)
        self.assertEqual(archive.wait(), 0)
        st = os.path.join(tmp, "tools", "testing", "selftests")
        with open(os.path.join(st, "Makefile")) as f:
            targets = kselftest_targets(f.read())
        wanted = {}
        for spec in specs:
            t = kselftest_target_of(spec.source, targets)
            self.assertIsNotNone(t, "%s is in no TARGETS directory of "
                                 "tools/testing/selftests/Makefile"
                                 % spec.source)
            wanted[spec.source] = t
        log = os.path.join(tmp, "make.log")
        with open(log, "w") as f:
            r = subprocess.run(["make", "-s", "headers_install"], cwd=tmp,
                               stdout=f, stderr=subprocess.STDOUT)
            self.assertEqual(r.returncode, 0, read(log)[-2000:])
            r = subprocess.run(
                ["make", "-C", st,
                 "TARGETS=" + " ".join(sorted(set(wanted.values())))],
                stdout=f, stderr=subprocess.STDOUT)
        text = read(log)
        self.assertEqual(r.returncode, 0, text[-3000:])
        for source in wanted:
            with self.subTest(test=source):
                program = os.path.join(tmp, source[:-2])
                self.assertTrue(os.access(program, os.X_OK),
                                "make did not build %s" % source[:-2])
                base = os.path.basename(source)
                warnings = [l for l in text.splitlines()
                            if re.match(r"^(.*/)?%s:\d+:(\d+:)? warning:"
                                        % re.escape(base), l)]
                self.assertEqual(warnings, [])


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
        lk.kunit_tarball()
    except lk.Failure as e:
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
        cls.tool = lk.install_kunit_tool(tree, os.path.join(cls.tmp, "out"))

    def parse(self, text, label):
        path = os.path.join(self.tmp, label + ".serial")
        write(path, text)
        results = lk.Results()
        ok = lk.parse_kunit_log(self.tool, path, label, self.tmp, results)
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
        text = CANNED_KTAP.replace("[    0.812460]     KTAP", "[    0.812460] X") \
            .split("[    0.812460]")[0].replace("1..2\n[    0.812400]",
                                               "1..1\n[    0.812400]")
        ok, rows = self.parse(text, "passing")
        self.assertTrue(ok, rows)
        self.assertEqual(rows.get("kunit: passing"), "PASS")

    def test_a_crash_in_the_middle_fails(self):
        text = CANNED_KTAP.split("[    0.812440]")[0] + \
            "[    0.813000] Kernel panic - not syncing: Fatal exception\n"
        ok, rows = self.parse(text, "crash")
        self.assertFalse(ok)
        self.assertIn("FAIL", rows.values(), rows)
        self.assertNotIn("kunit: crash", [k for k, v in rows.items()
                                           if v == "PASS"])

    def test_no_ktap_at_all_fails(self):
        ok, rows = self.parse("[    0.0] Linux version 4.20.0\nRun /init\n",
                              "none")
        self.assertFalse(ok)
        self.assertEqual(rows.get("kunit: none"), "FAIL")


class KUnitRuns(unittest.TestCase):
    """kunit.py on the applied tree: a failing case must fail the run."""

    @classmethod
    def setUpClass(cls):
        kunit_tool_or_skip(cls)
        cls.args = collections.namedtuple("Args", "out series_dir")(
            lk.out_dir(None), TOP)
        try:
            lk.applied_tree(cls.args)
        except lk.Failure as e:
            raise unittest.SkipTest(str(e))

    def test_a_failing_case_fails_the_run(self):
        results = lk.Results()
        # In the build directory of CI's own UML kernel (the um build
        # target, which configs/matrix/kunit runs): the failing suite adds
        # a few objects to that kernel instead of costing a kernel of its
        # own; the next build there starts from an empty directory.
        ok = lk.do_kunit(self.args, results, "um",
                         [os.path.join(TOP, "kunit", "all.kunitconfig"),
                          os.path.join(TOP, "kunit", "failing.kunitconfig")],
                         name="um-failing")
        self.assertFalse(ok)
        failed = [r[1] for r in results.rows if r[0] == "FAIL"]
        self.assertTrue(any(re.match(r"kunit um-failing: \w+\.\w+$", n)
                            for n in failed), results.rows)
        self.assertRegex(results.summary(), r"^\d+ passed, [1-9]\d* failed")


def new_files_of_upstream_patches():
    """The files that the upstream-bound patches create."""
    found = []
    for e in lk.read_series(TOP):
        if not e.upstream:
            continue
        with open(os.path.join(TOP, "patches", e.path)) as f:
            text = f.read()
        found += re.findall(r"^diff --git a/(\S+) b/\S+\nnew file mode",
                            text, re.M)
    return found


def maintainers_sections(text):
    """{section name: [type lines]} of a MAINTAINERS-format text."""
    sections, name = {}, None
    for line in text.splitlines():
        if re.match(r"^[A-Z]:\s", line):
            if name is not None:
                sections.setdefault(name, []).append(line)
        elif line and not line.startswith("#"):
            name = line
        else:
            name = None
    return sections


@unittest.skipIf(QUICK, "--quick: no tests that need the base tree")
@unittest.skipUnless(have_base(), "no v4.20 git base tree (see README.md)")
class SpdxCheck(unittest.TestCase):
    """checkpatch's SPDX-License-Identifier check runs, not skipped."""

    def checkpatch(self, tag, where="lib/x.c", want_unused=False):
        base, _ = lk.find_base(allow_download=False)
        body = mail("lib: add x", sob=IDENT).replace(
            "---\n a | 1 +\n", textwrap.dedent("""\
            ---
             lib/x.c | 2 ++
             1 file changed, 2 insertions(+)
             create mode 100644 lib/x.c

            diff --git a/lib/x.c b/lib/x.c
            new file mode 100644
            index 0000000..1111111
            --- /dev/null
            +++ b/lib/x.c
            @@ -0,0 +1,2 @@
            +// SPDX-License-Identifier: %s
            +int x;
            """ % tag))
        with tempfile.TemporaryDirectory() as d:
            patch = os.path.join(d, "x.patch")
            write(patch, body)
            exc = lk.CheckpatchException("x.patch", "FILE_PATH_CHANGES",
                                         where, "new file mode", "a test", 1)
            problems, unused = lk.run_checkpatch(
                base, patch, os.path.join(d, "log"), allowed=[exc])
            self.assertEqual(unused, [exc] if want_unused else [])
            return problems

    def test_an_exception_for_another_file_excuses_nothing(self):
        # ... and is itself reported as unused.
        problems = self.checkpatch("GPL-2.0", where="lib/y.c",
                                   want_unused=True)
        self.assertEqual([p.split(":")[1] for p in problems],
                         ["FILE_PATH_CHANGES"], problems)
        self.assertIn("(lib/x.c: new file mode 100644)", problems[0])

    def test_an_unknown_license_is_reported(self):
        problems = self.checkpatch("GPL-2.0-bogus")
        self.assertEqual([p.split(":")[1] for p in problems],
                         ["SPDX_LICENSE_TAG"], problems)

    def test_a_known_license_passes(self):
        self.assertEqual(self.checkpatch("GPL-2.0"), [])


class CheckpatchExceptions(unittest.TestCase):
    """scripts/checkpatch-exceptions names occurrences, not just types."""

    OUTPUT = textwrap.dedent("""\
        WARNING:FILE_PATH_CHANGES: added, moved or deleted file(s), does MAINTAINERS need updating?
        #12:\x20
        new file mode 100644

        CHECK:BIT_MACRO: Prefer using the BIT macro
        #20: FILE: lib/x.c:3:
        +#define X_MAX\t(1U << 20)

        WARNING:COMMIT_LOG_LONG_LINE: Possible unwrapped commit description
        #5:\x20
        a very long line of the commit message

        ERROR:MISSING_SIGN_OFF: Missing Signed-off-by: line(s)

        total: 1 errors, 2 warnings, 1 checks, 20 lines checked
        """)
    PATCH = (["From x", "Subject: [PATCH] x", "", "msg", "a very long line",
              "---", "diff --git a/lib/y.c b/lib/y.c", "index 1..2", "--- a",
              "+++ b", "diff --git a/lib/x.c b/lib/x.c",
              "new file mode 100644"] + ["+x"] * 10)

    def exc(self, typ, where, text):
        return lk.CheckpatchException("p.patch", typ, where, text, "why", 1)

    def test_complaints_know_their_file_and_quoted_line(self):
        got = lk.checkpatch_complaints(self.OUTPUT, self.PATCH)
        self.assertEqual([(c.type, c.file, c.quoted) for c in got], [
            ("FILE_PATH_CHANGES", "lib/x.c", "new file mode 100644"),
            ("BIT_MACRO", "lib/x.c", "+#define X_MAX\t(1U << 20)"),
            ("COMMIT_LOG_LONG_LINE", "-",
             "a very long line of the commit message"),
            ("MISSING_SIGN_OFF", "-", "")])

    def test_an_exception_excuses_its_occurrence_only(self):
        bit = lk.checkpatch_complaints(self.OUTPUT, self.PATCH)[1]
        self.assertTrue(lk.excuses(self.exc("BIT_MACRO", "lib/x.c",
                                            "#define X_MAX"), bit))
        # Same type and file, another line; another file; another type.
        self.assertFalse(lk.excuses(self.exc("BIT_MACRO", "lib/x.c",
                                             "#define Y_MAX"), bit))
        self.assertFalse(lk.excuses(self.exc("BIT_MACRO", "lib/y.c",
                                             "#define X_MAX"), bit))
        self.assertFalse(lk.excuses(self.exc("NR_CPUS", "lib/x.c",
                                             "#define X_MAX"), bit))

    def parse(self, text):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        return lk.checkpatch_exceptions(f.name)

    def test_format(self):
        got = self.parse("# comment\n\nup/p.patch | BIT_MACRO | lib/x.c | "
                         "#define X | a count, not a bit\n")
        self.assertEqual(got["up/p.patch"], [lk.CheckpatchException(
            "up/p.patch", "BIT_MACRO", "lib/x.c", "#define X",
            "a count, not a bit", 3)])
        for bad in ("up/p.patch BIT_MACRO a reason\n",
                    "up/p.patch | BIT_MACRO | lib/x.c | a reason\n",
                    "up/p.patch | bit_macro | lib/x.c | #define X | r\n",
                    "up/p.patch | BIT_MACRO |  | #define X | r\n"):
            with self.assertRaises(lk.Failure, msg=bad):
                self.parse(bad)

    def test_the_project_file_names_patches_of_the_series(self):
        allow = lk.checkpatch_exceptions()
        self.assertTrue(allow)
        upstream = {lk.patch_key(e.path) for e in lk.read_series(lk.TOP)
                    if e.upstream}
        for path, excs in allow.items():
            self.assertIn(path, upstream, excs[0].lineno)
            for e in excs:
                self.assertTrue(e.file == "-" or "/" in e.file or
                                "." in e.file, e)


@unittest.skipIf(QUICK, "--quick: no tests that need the base tree")
@unittest.skipUnless(have_base(), "no v4.20 git base tree (see README.md)")
class Maintainers(unittest.TestCase):
    """MAINTAINERS.snippet, appended to v4.20's MAINTAINERS, gives every
    file the series adds a maintainer other than the catch-all."""

    @classmethod
    def setUpClass(cls):
        base, _ = lk.find_base(allow_download=False)

        def show(path):
            return subprocess.run(
                ["git", "-C", base, "show", "v4.20:" + path],
                check=True, stdout=subprocess.PIPE, env=lk.clean_env(),
                universal_newlines=True).stdout
        cls.v420 = show("MAINTAINERS")
        cls.script = show("scripts/get_maintainer.pl")
        with open(os.path.join(TOP, "MAINTAINERS.snippet")) as f:
            cls.snippet = f.read()

    def test_existing_entries_keep_their_maintainers_and_lists(self):
        # The M:, L: and S: lines of an entry v4.20 already has are that
        # entry's: the snippet proposes F: lines, not new people.
        v420 = maintainers_sections(self.v420)
        for name, lines in maintainers_sections(self.snippet).items():
            if name not in v420:
                continue
            for line in lines:
                if line[0] in "MLS":
                    self.assertIn(line, v420[name], name)

    def fake_tree(self, tree, maintainers, files):
        """What get_maintainer.pl checks to run at the top of a kernel
        tree, the MAINTAINERS file, and empty files at the given paths."""
        for name in ("COPYING", "CREDITS", "Kbuild", "Makefile", "README"):
            write(os.path.join(tree, name), "")
        for name in ("Documentation", "arch", "include", "drivers", "fs",
                     "init", "ipc", "kernel", "lib"):
            os.makedirs(os.path.join(tree, name), exist_ok=True)
        write(os.path.join(tree, "scripts", "get_maintainer.pl"),
              self.script)
        write(os.path.join(tree, "MAINTAINERS"), maintainers)
        for f in files:
            write(os.path.join(tree, f), "")

    def owners(self, tree, f):
        """(sections naming a maintainer, sections naming a list) of f."""
        r = subprocess.run(["perl", "scripts/get_maintainer.pl", "--no-git",
                            "--no-git-fallback", "-f", f], cwd=tree,
                           env=lk.clean_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(r.returncode, 0, r.stdout)
        people = re.findall(r"\((?:maintainer|supporter):([^)]+)\)",
                            r.stdout)
        lists = re.findall(r"\((?:open|moderated) list:([^)]+)\)", r.stdout)
        return set(people) - {"THE REST"}, set(lists) - {"THE REST"}

    def test_every_new_file_has_a_maintainer_and_a_list(self):
        files = new_files_of_upstream_patches()
        self.assertIn("drivers/android/binderfs.c", files)
        with tempfile.TemporaryDirectory() as tree:
            self.fake_tree(tree, self.v420 + "\n" + self.snippet, files)
            for f in files:
                people, lists = self.owners(tree, f)
                self.assertTrue(people, f)
                self.assertTrue(lists, f)

    def test_the_check_fails_for_a_file_no_entry_covers(self):
        # The assertion above can fail: v4.20's MAINTAINERS alone gives
        # the new cpuset test no maintainer and only the catch-all list.
        f = "kernel/cgroup/cpuset_test.c"
        with tempfile.TemporaryDirectory() as tree:
            self.fake_tree(tree, self.v420, [f])
            self.assertEqual(self.owners(tree, f), (set(), set()))
        with tempfile.TemporaryDirectory() as tree:
            self.fake_tree(tree, self.v420 + "\n" + self.snippet, [f])
            self.assertEqual(self.owners(tree, f),
                             ({"CONTROL GROUP - CPUSET"},
                              {"CONTROL GROUP - CPUSET"}))


@unittest.skipIf(QUICK, "--quick: no tests that need the base tree")
@unittest.skipUnless(have_base(), "no v4.20 git base tree (see README.md)")
class BrokenPatches(unittest.TestCase):
    """A broken upstream-bound patch must fail the run and be named."""

    @classmethod
    def setUpClass(cls):
        # A fixed place under the work directory, so that the kernel objects
        # these tests build keep their paths and ccache serves them next time.
        cls.work = os.path.join(lk.out_dir(None), "selftest")
        if os.path.exists(cls.work):
            shutil.rmtree(cls.work)
        os.makedirs(cls.work)
        cls.out = os.path.join(cls.work, "out")
        base, _ = lk.find_base(allow_download=False)
        cls.scratch = os.path.join(cls.work, "scratch")
        subprocess.run(["git", "clone", "-q", "--shared", base, cls.scratch],
                       check=True, env=lk.clean_env())
        cls.git("checkout", "-q", "-b", "t", "v4.20")

    @classmethod
    def git(cls, *args, **kw):
        """git in the scratch clone, as the project, without user config."""
        return subprocess.run(
            ["git", "-C", cls.scratch, "-c", "user.name=y2038 Series Team",
             "-c", "user.email=y2038-series@example.org"] + list(args),
            env=lk.clean_env(), check=True, universal_newlines=True, **kw)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.work)

    def commit_patch(self, path, edit, subject, start="v4.20"):
        """Commit edit(text) of path on top of start; return the mail."""
        self.git("checkout", "-q", "-f", "-B", "t", start)
        full = os.path.join(self.scratch, path)
        with open(full) as f:
            text = f.read()
        with open(full, "w") as f:
            f.write(edit(text))
        msg = "%s\n\nThis patch is broken on purpose.\nIt tests the tool.\n" \
              "Nothing else.\n\nSigned-off-by: %s\n" % (subject, IDENT)
        self.git("commit", "-q", "-a", "-F", "-", input=msg)
        return self.git("format-patch", "--stdout", "-1",
                        stdout=subprocess.PIPE).stdout

    def series_with(self, name, text):
        """The project's prerequisite stack plus one upstream-bound patch.

        The stack is what makes v4.20 build here; the project's own
        upstream-bound patches would only add per-patch builds that do not
        bear on the broken one (and would cost CI their time again).
        """
        d = os.path.join(self.work, "series-" + name)
        if os.path.exists(d):
            shutil.rmtree(d)
        shutil.copytree(os.path.join(TOP, "patches", "prereq"),
                        os.path.join(d, "patches", "prereq"))
        with open(os.path.join(TOP, "series")) as f:
            series = re.split(r"(?m)^# section: .*\(upstream\)$",
                              f.read())[0]
        series += "\n# section: broken (upstream)\nbroken/0001-%s\n" % name
        write(os.path.join(d, "series"), series)
        write(os.path.join(d, "patches", "broken", "0001-" + name), text)
        write(os.path.join(d, "patches", "broken", "cover-letter"), COVER)
        return d

    def lk(self, *args):
        r = subprocess.run([sys.executable, LK, "--no-download", "--out",
                            self.out] + list(args), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True)
        return r.returncode, r.stdout

    def test_patch_that_does_not_apply(self):
        # Made on top of a change the series does not have, so its context
        # is wrong.
        self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "#include <linux/bcd.h>", "#include <linux/bcd.h>\n/* one */"),
            "lib: first change")
        text = self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "/* one */", "/* two */"), "lib: second change", start="t")
        name = "lib-second-change.patch"
        code, out = self.lk("--series-dir", self.series_with(name, text),
                            "test", "--no-check", "--no-selftest",
                            "--no-kunit", "--no-qemu",
                            "--target", "um-defconfig")
        self.assertNotEqual(code, 0, out)
        self.assertIn("patches/broken/0001-%s does not apply" % name, out)
        self.assertIn("lib/bcd.c", out)
        self.assertRegex(out, r"(?m)^\d+ passed, [1-9]\d* failed")

    def test_patch_that_breaks_the_build(self):
        text = self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "EXPORT_SYMBOL(_bcd2bin);", "EXPORT_SYMBOL(_bcd2bin)\nint ;"),
            "lib: break the build")
        name = "lib-break-the-build.patch"
        d = self.series_with(name, text)
        # Through the test command: the per-patch build names the patch, and
        # the build of the tip fails too.
        code, out = self.lk("--series-dir", d, "test", "--no-selftest",
                            "--no-kunit", "--no-qemu",
                            "--bisect-target", "x86_64",
                            "--target", "um-defconfig",
                            "--goal", "lib/bcd.o")
        self.assertNotEqual(code, 0, out)
        self.assertRegex(out, r"FAIL: build x86_64: broken/0001-%s - make "
                         r"lib/bcd.o failed: .*lib/bcd.c:\d+:\d+: error"
                         % re.escape(name))
        self.assertRegex(out, r"FAIL: build: um-defconfig - make lib/bcd.o "
                         r"failed .*lib/bcd.c:\d+:\d+: error")
        self.assertRegex(out, r"(?m)^\d+ passed, [1-9]\d* failed")
        self.assertOnSeries()

    def assertOnSeries(self):
        head = subprocess.run(["git", "-C", os.path.join(self.out, "tree"),
                               "symbolic-ref", "HEAD"], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout.strip()
        self.assertEqual(head, "refs/heads/series")

    def test_patch_that_breaks_the_build_until_the_next_one(self):
        # The tip builds; only the build at the first patch shows that the
        # series does not bisect.
        first = self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "EXPORT_SYMBOL(_bcd2bin);", "EXPORT_SYMBOL(_bcd2bin)\nint ;"),
            "lib: break the build for a while")
        second = self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "EXPORT_SYMBOL(_bcd2bin)\nint ;", "EXPORT_SYMBOL(_bcd2bin);"),
            "lib: mend the build", start="t")
        names = ("lib-break-the-build-for-a-while.patch",
                 "lib-mend-the-build.patch")
        d = self.series_with(names[0], first)
        write(os.path.join(d, "patches", "broken", "0002-" + names[1]),
              second)
        with open(os.path.join(d, "series"), "a") as f:
            f.write("broken/0002-%s\n" % names[1])
        code, out = self.lk("--series-dir", d, "test", "--no-build",
                            "--no-selftest", "--no-kunit",
                            "--bisect-target", "x86_64")
        self.assertNotEqual(code, 0, out)
        self.assertRegex(out, r"FAIL: build x86_64: broken/0001-%s - make "
                         r"lib/bcd.o failed" % re.escape(names[0]))
        self.assertIn("PASS: build x86_64: broken/0002-%s" % names[1], out)
        self.assertOnSeries()

    def test_patch_with_a_new_compiler_warning(self):
        # Builds and passes checkpatch and sparse, but gcc warns at the tip.
        text = self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "unsigned _bcd2bin(unsigned char val)\n{",
            "unsigned _bcd2bin(unsigned char val)\n{\n\tint lk_unused;\n"),
            "lib: add a variable that gcc flags")
        name = "lib-add-a-variable-that-gcc-flags.patch"
        d = self.series_with(name, text)
        code, out = self.lk("--series-dir", d, "test", "--no-check",
                            "--no-selftest", "--no-kunit", "--no-qemu",
                            "--target", "um-defconfig", "--goal", "lib/bcd.o")
        self.assertNotEqual(code, 0, out)
        self.assertIn("PASS: build: um-defconfig - make lib/bcd.o", out)
        self.assertRegex(out, r"FAIL: warnings: um-defconfig - 1 new "
                         r"warning.*lib/bcd.c: .*lk_unused")
        self.assertRegex(out, r"(?m)^\d+ passed, 1 failed")
        self.assertOnSeries()

    def test_patch_with_a_new_sparse_warning(self):
        # Builds cleanly and passes checkpatch, but sparse asks whether the
        # new global should be static.
        text = self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "EXPORT_SYMBOL(_bcd2bin);",
            "EXPORT_SYMBOL(_bcd2bin);\n\nint lk_sparse_probe;"),
            "lib: add a global that sparse flags")
        name = "lib-add-a-global-that-sparse-flags.patch"
        d = self.series_with(name, text)
        code, out = self.lk("--series-dir", d, "apply")
        self.assertEqual(code, 0, out)
        code, out = self.lk("--series-dir", d, "check", "--bisect-target",
                            "x86_64")
        self.assertNotEqual(code, 0, out)
        self.assertIn("PASS: build x86_64: broken/0001-%s" % name, out)
        self.assertRegex(out, r"FAIL: sparse: broken/0001-%s - 1 new warning.*"
                         r"lk_sparse_probe" % re.escape(name))
        self.assertOnSeries()

    @unittest.skipUnless(shutil.which("b4"), "b4 is not installed")
    def test_send_prepares_b4_branches_and_mails(self):
        one = self.commit_patch("lib/bcd.c", lambda t: t + "\n",
                                "lib: a patch to send")
        two = self.commit_patch("lib/bcd.c", lambda t: t.replace(
            "EXPORT_SYMBOL(_bcd2bin);", "EXPORT_SYMBOL(_bcd2bin);\n"
            "/* followed up */"), "lib: a follow-up to send", start="t")
        d = self.series_with("lib-a-patch-to-send.patch", one)
        with open(os.path.join(d, "series"), "a") as f:
            f.write("# section: broken/kunit (upstream)\n"
                    "broken/kunit/0001-lib-a-follow-up-to-send.patch\n")
        write(os.path.join(d, "patches", "broken", "kunit",
                           "0001-lib-a-follow-up-to-send.patch"), two)
        write(os.path.join(d, "patches", "broken", "kunit", "cover-letter"),
              COVER.replace("Subject: t: a topic", "Subject: t: its tests")
              .replace("Cc:", "Prefix: RFC\nNeeds: broken\nCc:"))
        cfg = os.path.join(self.work, "sender.gitconfig")
        write(cfg, "[user]\n\tname = Jane Sender\n\temail = jane@example.org\n")
        env = dict(os.environ, GIT_CONFIG_GLOBAL=cfg)
        mails = os.path.join(self.work, "mails")

        def send(*args):
            return subprocess.run(
                [sys.executable, LK, "--no-download", "--out", self.out,
                 "--series-dir", d, "send", "-o", mails] + list(args),
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                universal_newlines=True)
        r = send("nosuchtopic")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("no topic nosuchtopic in series", r.stdout)
        r = send()
        self.assertEqual(r.returncode, 0, r.stdout)
        # git am of the mails gives the series' tree, for the topic and
        # for its follow-up on top of it
        self.assertIn("PASS: send: broken (1 patches)", r.stdout)
        self.assertIn("PASS: send: broken/kunit (1 patches)", r.stdout)
        self.assertIn("PASS: send: checkpatch broken", r.stdout)
        # the cover letter's own list, beside get_maintainer.pl's
        self.assertRegex(r.stdout, r"(?m)^send: broken: (To|Cc): .*"
                         r"list@example\.org")
        self.assertRegex(r.stdout, r"(?m)^send: broken: (To|Cc): .*"
                         r"linux-kernel@vger\.kernel\.org")
        self.assertIn("git checkout b4/broken && b4 send", r.stdout)
        def eml(sec):
            return sorted(m for m in os.listdir(os.path.join(mails, sec))
                          if m.endswith(".eml"))
        topic, follow = eml("broken"), eml("broken-kunit")
        self.assertEqual(len(topic), 1)    # one patch: no 0000 cover
        with open(os.path.join(mails, "broken", topic[0])) as f:
            text = f.read()
        self.assertIn("From: Jane Sender <jane@example.org>", text)
        self.assertIn("Subject: [PATCH] lib: a patch to send", text)
        self.assertIn("Signed-off-by: Jane Sender <jane@example.org>", text)
        self.assertNotIn("Signed-off-by: " + IDENT, text)
        self.assertIn("\nbase-commit: %s\n" % lk.V420_COMMIT, text)
        self.assertIn("change-id: 20261205-t-0123456789ab", text)
        self.assertIn("What the topic does.", text)     # the cover's text
        with open(os.path.join(mails, "broken-kunit", follow[0])) as f:
            text = f.read()
        self.assertIn("Subject: [PATCH RFC] lib: a follow-up to send", text)
        self.assertIn("base-commit: %s\nprerequisite-patch-id: "
                      % lk.V420_COMMIT, text)
        self.assertIn('"t: a topic"', text)
        # -v 2 wants a changelog first, and then records the version
        r = send("-v", "2", "broken")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("add a 'Changes in v2:' paragraph", r.stdout)
        for sec in ("broken", "broken/kunit"):
            with open(os.path.join(d, "patches", sec, "cover-letter"),
                      "a") as f:
                f.write("\nChanges in v2:\n- nothing but the version\n")
        r = send("-v", "2", "broken")
        self.assertEqual(r.returncode, 0, r.stdout)
        with open(os.path.join(d, "patches", "broken", "cover-letter")) as f:
            self.assertIn("Version: 2\n", f.read())
        with open(os.path.join(mails, "broken", eml("broken")[0])) as f:
            text = f.read()
        self.assertIn("Subject: [PATCH v2] lib: a patch to send", text)
        self.assertIn("Changes in v2:", text)
        r = send("-v", "1", "broken")
        self.assertIn("would go back", r.stdout)
        self.assertOnSeries()

    def test_patch_with_a_checkpatch_error(self):
        text = self.commit_patch("Documentation/dontdiff", lambda t: t +
                                 "trailing-space \n", "doc: add a bad line")
        name = "doc-add-a-bad-line.patch"
        d = self.series_with(name, text)
        code, out = self.lk("--series-dir", d, "test", "--no-selftest",
                            "--no-kunit", "--no-build",
                            "--bisect-target", "x86_64")
        self.assertNotEqual(code, 0, out)
        self.assertIn("FAIL: checkpatch: broken/0001-%s" % name, out)
        self.assertIn("TRAILING_WHITESPACE", out)
        # Everything else about the patch is fine: only checkpatch fails.
        self.assertIn("PASS: build x86_64: broken/0001-%s" % name, out)
        self.assertRegex(out, r"(?m)^\d+ passed, 1 failed")
        self.assertOnSeries()

    def test_series_check_names_a_patch_without_signoff(self):
        text = self.commit_patch("lib/bcd.c", lambda t: t + "\n",
                                 "lib: no signoff")
        text = re.sub(r"(?m)^Signed-off-by: .*\n", "", text)
        name = "lib-no-signoff.patch"
        code, out = self.lk("--series-dir", self.series_with(name, text),
                            "test", "--no-check", "--no-selftest",
                            "--no-kunit", "--no-qemu")
        self.assertNotEqual(code, 0, out)
        self.assertIn("patches/broken/0001-%s: no Signed-off-by" % name, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
