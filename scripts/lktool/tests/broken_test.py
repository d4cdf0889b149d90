# SPDX-License-Identifier: GPL-2.0
"""lk on deliberately broken patches, generated at run time in a scratch
clone (no kernel source is kept in the project)."""

import os
import re
import shutil
import subprocess
import sys
import unittest

from .. import basetree, common, percheck, series
from .series_test import COVER
from .support import IDENT, LK, QUICK, TOP, have_base, repo_git, write

# What the tests build: lib/bcd.o of um-defconfig at the tip, and the
# objects a patch touches for x86_64-defconfig at each patch.
TIP_BUILD = ("--target", "um-defconfig", "--goal", "lib/bcd.o")
PATCH_BUILD = ("--bisect-target", "x86_64-defconfig")


@unittest.skipIf(QUICK, "--quick: no tests that need the base tree")
@unittest.skipUnless(have_base(), "no v4.20 git base tree (see README.md)")
class ScratchSeries(unittest.TestCase):
    """A scratch clone of the base and series made of the project's
    prerequisite stack plus deliberately broken patches; the tests of a
    class share one work directory (so the kernel objects they build keep
    their paths and ccache serves them next time), and the classes run
    side by side, each in its own."""

    work = out = scratch = ""

    @classmethod
    def setUpClass(cls):
        cls.work = os.path.join(common.out_dir(None), "selftest", cls.__name__)
        if os.path.exists(cls.work):
            shutil.rmtree(cls.work)
        os.makedirs(cls.work)
        cls.out = os.path.join(cls.work, "out")
        base, _ = basetree.find_base(allow_download=False)
        cls.scratch = os.path.join(cls.work, "scratch")
        subprocess.run(
            ["git", "clone", "-q", "--shared", base, cls.scratch],
            check=True,
            env=common.clean_env(),
        )
        cls.git("checkout", "-q", "-b", "t", "v4.20")

    @classmethod
    def git(cls, *args, **kw):
        """git in the scratch clone, as the project, without user config;
        its output."""
        return repo_git(cls.scratch, *args, **kw)

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
        msg = (
            "%s\n\nThis patch is broken on purpose.\nIt tests the tool.\n"
            "Nothing else.\n\nSigned-off-by: %s\n" % (subject, IDENT)
        )
        self.git("commit", "-q", "-a", "-F", "-", input=msg)
        return self.git("format-patch", "--stdout", "-1")

    def bcd_patch(self, old, new, subject, start="v4.20"):
        """The mail of a commit on start that replaces old by new in
        lib/bcd.c."""
        return self.commit_patch(
            "lib/bcd.c", lambda t: t.replace(old, new), subject, start
        )

    def bcd_series(self, old, new, subject, start="v4.20"):
        """series_with() of bcd_patch(), its file named after its subject:
        (the series directory, the patch's file name)."""
        name = series.slug(subject) + ".patch"
        return self.series_with(name, self.bcd_patch(old, new, subject, start)), name

    def series_with(self, name, text):
        """The project's prerequisite stack plus one upstream-bound patch.

        The stack is what makes v4.20 build here; the project's own
        upstream-bound patches would only add per-patch builds that do not
        bear on the broken one (and would cost CI their time again).
        """
        d = os.path.join(self.work, "series-" + name)
        if os.path.exists(d):
            shutil.rmtree(d)
        shutil.copytree(
            os.path.join(TOP, "patches", "prereq"), os.path.join(d, "patches", "prereq")
        )
        with open(os.path.join(TOP, "series")) as f:
            listing = re.split(r"(?m)^# section: .*\(upstream\)$", f.read())[0]
        listing += "\n# section: broken (upstream)\nbroken/0001-%s\n" % name
        write(os.path.join(d, "series"), listing)
        write(os.path.join(d, "patches", "broken", "0001-" + name), text)
        write(os.path.join(d, "patches", "broken", "cover-letter"), COVER)
        return d

    def lk(self, *args):
        r = subprocess.run(
            [sys.executable, LK, "--no-download", "--out", self.out] + list(args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        return r.returncode, r.stdout

    def failed_test_run(self, series_dir, skip, *args):
        """The output of `lk test` on the series in series_dir without the
        stages in skip (--no-STAGE each), which must fail."""
        code, out = self.lk(
            "--series-dir",
            series_dir,
            "test",
            *["--no-" + stage for stage in skip.split()],
            *args,
        )
        self.assertNotEqual(code, 0, out)
        return out

    def assertOnSeries(self):
        head = subprocess.run(
            ["git", "-C", os.path.join(self.out, "tree"), "symbolic-ref", "HEAD"],
            stdout=subprocess.PIPE,
            universal_newlines=True,
        ).stdout.strip()
        self.assertEqual(head, "refs/heads/series")


class BrokenBuilds(ScratchSeries):
    """A broken upstream-bound patch must fail the run and be named: the
    cases that build x86_64-defconfig at each patch."""

    def test_patch_that_breaks_the_build(self):
        d, name = self.bcd_series(
            "EXPORT_SYMBOL(_bcd2bin);",
            "EXPORT_SYMBOL(_bcd2bin)\nint ;",
            "lib: break the build",
        )
        # Through the test command: the per-patch build names the patch, and
        # the build of the tip fails too.
        out = self.failed_test_run(d, "selftest kunit qemu", *PATCH_BUILD, *TIP_BUILD)
        self.assertRegex(
            out,
            r"FAIL: build x86_64-defconfig: broken/0001-%s - make "
            r"lib/bcd.o failed: .*lib/bcd.c:\d+:\d+: error" % re.escape(name),
        )
        self.assertRegex(
            out,
            r"FAIL: build: um-defconfig - make lib/bcd.o "
            r"failed .*lib/bcd.c:\d+:\d+: error",
        )
        self.assertRegex(out, r"(?m)^\d+ passed, [1-9]\d* failed")
        self.assertOnSeries()

    def test_patch_that_breaks_the_build_until_the_next_one(self):
        # The tip builds; only the build at the first patch shows that the
        # series does not bisect.
        first = self.bcd_patch(
            "EXPORT_SYMBOL(_bcd2bin);",
            "EXPORT_SYMBOL(_bcd2bin)\nint ;",
            "lib: break the build for a while",
        )
        second = self.bcd_patch(
            "EXPORT_SYMBOL(_bcd2bin)\nint ;",
            "EXPORT_SYMBOL(_bcd2bin);",
            "lib: mend the build",
            start="t",
        )
        names = ("lib-break-the-build-for-a-while.patch", "lib-mend-the-build.patch")
        d = self.series_with(names[0], first)
        write(os.path.join(d, "patches", "broken", "0002-" + names[1]), second)
        with open(os.path.join(d, "series"), "a") as f:
            f.write("broken/0002-%s\n" % names[1])
        out = self.failed_test_run(d, "build selftest kunit", *PATCH_BUILD)
        self.assertRegex(
            out,
            r"FAIL: build x86_64-defconfig: broken/0001-%s - make "
            r"lib/bcd.o failed" % re.escape(names[0]),
        )
        self.assertIn("PASS: build x86_64-defconfig: broken/0002-%s" % names[1], out)
        self.assertOnSeries()

    def test_patch_with_a_checkpatch_error(self):
        text = self.commit_patch(
            "Documentation/dontdiff",
            lambda t: t + "trailing-space \n",
            "doc: add a bad line",
        )
        name = "doc-add-a-bad-line.patch"
        d = self.series_with(name, text)
        out = self.failed_test_run(d, "selftest kunit build", *PATCH_BUILD)
        self.assertIn("FAIL: checkpatch: broken/0001-%s" % name, out)
        self.assertIn("TRAILING_WHITESPACE", out)
        # Everything else about the patch is fine: only checkpatch fails.
        self.assertIn("PASS: build x86_64-defconfig: broken/0001-%s" % name, out)
        self.assertRegex(out, r"(?m)^\d+ passed, 1 failed")
        self.assertOnSeries()
        # Checked again with nothing changed: the patch's build and sparse
        # rows are kept from the run above (its build log is not written
        # again); checkpatch's complaint is made again.
        blog = os.path.join(
            self.out,
            "logs",
            "bisect-x86_64-defconfig-%s.log" % series.slug("0001-" + name),
        )
        os.unlink(blog)
        code, out = self.lk("--series-dir", d, "check", *PATCH_BUILD)
        self.assertNotEqual(code, 0, out)
        self.assertIn("FAIL: checkpatch: broken/0001-%s" % name, out)
        self.assertRegex(
            out,
            r"PASS: build x86_64-defconfig: broken/0001-%s - .*%s\n"
            % (re.escape(name), re.escape(percheck.KEPT_NOTE)),
        )
        self.assertIn("1 of 1 patches kept from an earlier run", out)
        self.assertFalse(os.path.exists(blog), "the patch was built again")
        # --rebuild: built again.
        code, out = self.lk("--series-dir", d, "check", "--rebuild", *PATCH_BUILD)
        self.assertNotEqual(code, 0, out)
        self.assertIn("PASS: build x86_64-defconfig: broken/0001-%s" % name, out)
        self.assertNotIn(percheck.KEPT_NOTE, out)
        self.assertTrue(os.path.exists(blog))

    def test_patch_with_a_new_sparse_warning(self):
        # Builds cleanly and passes checkpatch, but sparse asks whether the
        # new global should be static.
        d, name = self.bcd_series(
            "EXPORT_SYMBOL(_bcd2bin);",
            "EXPORT_SYMBOL(_bcd2bin);\n\nint lk_sparse_probe;",
            "lib: add a global that sparse flags",
        )
        code, out = self.lk("--series-dir", d, "apply")
        self.assertEqual(code, 0, out)
        code, out = self.lk("--series-dir", d, "check", *PATCH_BUILD)
        self.assertNotEqual(code, 0, out)
        self.assertIn("PASS: build x86_64-defconfig: broken/0001-%s" % name, out)
        self.assertRegex(
            out,
            r"FAIL: sparse: broken/0001-%s - 1 new warning.*"
            r"lk_sparse_probe" % re.escape(name),
        )
        self.assertOnSeries()


class BrokenSeries(ScratchSeries):
    """The same for what is wrong before any build or only at the tip, and
    the mails of `lk send`: beside BrokenBuilds, as neither needs the
    other's build directories."""

    def test_patch_that_does_not_apply(self):
        # Made on top of a change the series does not have, so its context
        # is wrong.
        self.bcd_patch(
            "#include <linux/bcd.h>",
            "#include <linux/bcd.h>\n/* one */",
            "lib: first change",
        )
        d, name = self.bcd_series(
            "/* one */", "/* two */", "lib: second change", start="t"
        )
        out = self.failed_test_run(
            d, "check selftest kunit qemu", "--target", "um-defconfig"
        )
        self.assertIn("patches/broken/0001-%s does not apply" % name, out)
        self.assertIn("lib/bcd.c", out)
        self.assertRegex(out, r"(?m)^\d+ passed, [1-9]\d* failed")

    def test_patch_with_a_new_compiler_warning(self):
        # Builds and passes checkpatch and sparse, but gcc warns at the tip.
        d, _ = self.bcd_series(
            "unsigned _bcd2bin(unsigned char val)\n{",
            "unsigned _bcd2bin(unsigned char val)\n{\n\tint lk_unused;\n",
            "lib: add a variable that gcc flags",
        )
        out = self.failed_test_run(d, "check selftest kunit qemu", *TIP_BUILD)
        self.assertIn("PASS: build: um-defconfig - make lib/bcd.o", out)
        self.assertRegex(
            out,
            r"FAIL: warnings: um-defconfig - 1 new " r"warning.*lib/bcd.c: .*lk_unused",
        )
        self.assertRegex(out, r"(?m)^\d+ passed, 1 failed")
        self.assertOnSeries()

    def test_series_check_names_a_patch_without_signoff(self):
        text = self.commit_patch("lib/bcd.c", lambda t: t + "\n", "lib: no signoff")
        text = re.sub(r"(?m)^Signed-off-by: .*\n", "", text)
        name = "lib-no-signoff.patch"
        out = self.failed_test_run(
            self.series_with(name, text), "check selftest kunit qemu"
        )
        self.assertIn("patches/broken/0001-%s: no Signed-off-by" % name, out)

    @unittest.skipUnless(shutil.which("b4"), "b4 is not installed")
    def test_send_prepares_b4_branches_and_mails(self):
        one = self.commit_patch("lib/bcd.c", lambda t: t + "\n", "lib: a patch to send")
        two = self.bcd_patch(
            "EXPORT_SYMBOL(_bcd2bin);",
            "EXPORT_SYMBOL(_bcd2bin);\n/* followed up */",
            "lib: a follow-up to send",
            start="t",
        )
        d = self.series_with("lib-a-patch-to-send.patch", one)
        with open(os.path.join(d, "series"), "a") as f:
            f.write(
                "# section: broken/kunit (upstream)\n"
                "broken/kunit/0001-lib-a-follow-up-to-send.patch\n"
            )
        write(
            os.path.join(
                d, "patches", "broken", "kunit", "0001-lib-a-follow-up-to-send.patch"
            ),
            two,
        )
        write(
            os.path.join(d, "patches", "broken", "kunit", "cover-letter"),
            COVER.replace("Subject: t: a topic", "Subject: t: its tests").replace(
                "Cc:", "Prefix: RFC\nNeeds: broken\nCc:"
            ),
        )
        cfg = os.path.join(self.work, "sender.gitconfig")
        write(cfg, "[user]\n\tname = Jane Sender\n\temail = jane@example.org\n")
        # The sender's identity, wherever git finds it: the global file,
        # and over a checkout's own user.name (a developer's clone has
        # one) the command line's, which git reads last.
        env = dict(
            os.environ,
            GIT_CONFIG_GLOBAL=cfg,
            GIT_CONFIG_COUNT="2",
            GIT_CONFIG_KEY_0="user.name",
            GIT_CONFIG_VALUE_0="Jane Sender",
            GIT_CONFIG_KEY_1="user.email",
            GIT_CONFIG_VALUE_1="jane@example.org",
        )
        mails = os.path.join(self.work, "mails")

        def send(*args):
            return subprocess.run(
                [
                    sys.executable,
                    LK,
                    "--no-download",
                    "--out",
                    self.out,
                    "--series-dir",
                    d,
                    "send",
                    "-o",
                    mails,
                ]
                + list(args),
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                universal_newlines=True,
            )

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
        self.assertRegex(
            r.stdout, r"(?m)^send: broken: (To|Cc): .*" r"list@example\.org"
        )
        self.assertRegex(
            r.stdout,
            r"(?m)^send: broken: (To|Cc): .*" r"linux-kernel@vger\.kernel\.org",
        )
        # how to send them: git send-email of the mails that were checked
        self.assertIn("nothing was sent", r.stdout)
        self.assertRegex(
            r.stdout,
            r"(?m)^  cd \S+ && git send-email --confirm=never .*"
            r"--from 'Jane Sender <jane@example.org>' \S+/broken/0001-[^ ]*\.eml$",
        )

        def eml(sec):
            return sorted(
                m for m in os.listdir(os.path.join(mails, sec)) if m.endswith(".eml")
            )

        topic, follow = eml("broken"), eml("broken-kunit")
        self.assertEqual(len(topic), 1)  # one patch: no 0000 cover
        with open(os.path.join(mails, "broken", topic[0])) as f:
            text = f.read()
        self.assertIn("From: Jane Sender <jane@example.org>", text)
        self.assertIn("Subject: [PATCH] lib: a patch to send", text)
        self.assertIn("Signed-off-by: Jane Sender <jane@example.org>", text)
        self.assertNotIn("Signed-off-by: " + IDENT, text)
        self.assertIn("\nbase-commit: %s\n" % basetree.V420_COMMIT, text)
        self.assertIn("change-id: 20261205-t-0123456789ab", text)
        self.assertIn("What the topic does.", text)  # the cover's text
        with open(os.path.join(mails, "broken-kunit", follow[0])) as f:
            text = f.read()
        self.assertIn("Subject: [PATCH RFC] lib: a follow-up to send", text)
        self.assertIn(
            "base-commit: %s\nprerequisite-patch-id: " % basetree.V420_COMMIT, text
        )
        self.assertIn('"t: a topic"', text)
        # -v 2 wants a changelog first, and then records the version
        r = send("-v", "2", "broken")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("add a 'Changes in v2:' paragraph", r.stdout)
        for sec in ("broken", "broken/kunit"):
            with open(os.path.join(d, "patches", sec, "cover-letter"), "a") as f:
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
