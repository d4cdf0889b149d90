# SPDX-License-Identifier: GPL-2.0
"""Tests of the checkpatch stage, the SPDX check and MAINTAINERS.snippet."""

import os
import re
import subprocess
import tempfile
import textwrap
import unittest
from unittest import mock

from .. import basetree, checkpatch, common, series
from .support import IDENT, QUICK, TOP, have_base, mail, repo_git, write


def new_files_of_upstream_patches():
    """The files that the upstream-bound patches create."""
    found = []
    for e in series.read_series(TOP):
        if not e.upstream:
            continue
        with open(os.path.join(TOP, "patches", e.path)) as f:
            text = f.read()
        found += re.findall(r"^diff --git a/(\S+) b/\S+\nnew file mode", text, re.M)
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
        base, _ = basetree.find_base(allow_download=False)
        body = mail("lib: add x", sob=IDENT).replace(
            "---\n a | 1 +\n",
            textwrap.dedent(
                """\
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
            """
                % tag
            ),
        )
        with tempfile.TemporaryDirectory() as d:
            patch = os.path.join(d, "x.patch")
            write(patch, body)
            exc = checkpatch.CheckpatchException(
                "x.patch", "FILE_PATH_CHANGES", where, "new file mode", "a test", 1
            )
            problems, unused = checkpatch.run_checkpatch(
                base, patch, os.path.join(d, "log"), allowed=[exc]
            )
            self.assertEqual(unused, [exc] if want_unused else [])
            return problems

    def test_an_exception_for_another_file_excuses_nothing(self):
        # ... and is itself reported as unused.
        problems = self.checkpatch("GPL-2.0", where="lib/y.c", want_unused=True)
        self.assertEqual(
            [p.split(":")[1] for p in problems], ["FILE_PATH_CHANGES"], problems
        )
        self.assertIn("(lib/x.c: new file mode 100644)", problems[0])

    def test_an_unknown_license_is_reported(self):
        problems = self.checkpatch("GPL-2.0-bogus")
        self.assertEqual(
            [p.split(":")[1] for p in problems], ["SPDX_LICENSE_TAG"], problems
        )

    def test_a_known_license_passes(self):
        self.assertEqual(self.checkpatch("GPL-2.0"), [])


class CheckpatchCache(unittest.TestCase):
    """A report is kept for the tree and patch it is of, and only then
    read back instead of running checkpatch: the warm run's saving."""

    CLEAN = "total: 0 errors, 0 warnings, 0 checks, 3 lines checked\n"
    WARNED = (
        "WARNING:LONG_LINE: line over 80 characters\n#7: FILE: a:1:\n"
        "+xxx\n\ntotal: 0 errors, 1 warnings, 0 checks, 3 lines checked\n"
    )

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", self.dir])
        self.tree = os.path.join(self.dir, "tree")
        os.makedirs(self.tree)
        repo_git(self.tree, "init", "-q")
        write(os.path.join(self.tree, "a"), "one\n")
        repo_git(self.tree, "add", "a")
        repo_git(self.tree, "commit", "-q", "-m", "one")
        self.patch = os.path.join(self.dir, "x.patch")
        write(self.patch, mail("lib: x", sob=IDENT))
        self.cache = os.path.join(self.dir, "cache")
        self.reports = []

    real_run = staticmethod(common.run)

    def fake_run(self, cmd, **kw):
        if cmd[0] != "perl":
            return self.real_run(cmd, **kw)
        return subprocess.CompletedProcess(cmd, 0, self.reports.pop(0), "")

    def output(self):
        with mock.patch.object(common, "run", self.fake_run):
            return checkpatch.checkpatch_output(
                self.tree, self.patch, os.path.join(self.dir, "log"), self.cache
            )

    def test_the_same_tree_and_patch_read_the_kept_report(self):
        self.reports = [self.WARNED]
        self.assertEqual(self.output(), self.WARNED)
        self.assertEqual(self.output(), self.WARNED)  # no second run
        with open(os.path.join(self.dir, "log")) as f:
            self.assertEqual(f.read(), self.WARNED)

    def test_another_patch_or_tree_runs_checkpatch_again(self):
        self.reports = [self.WARNED, self.CLEAN, self.WARNED]
        self.assertEqual(self.output(), self.WARNED)
        write(self.patch, mail("lib: y", sob=IDENT))
        self.assertEqual(self.output(), self.CLEAN)
        write(os.path.join(self.tree, "a"), "two\n")
        repo_git(self.tree, "commit", "-q", "-a", "-m", "two")
        write(self.patch, mail("lib: x", sob=IDENT))
        self.assertEqual(self.output(), self.WARNED)
        self.assertEqual(self.reports, [])

    def test_a_report_cut_short_is_not_kept(self):
        self.reports = ["WARNING:LONG_LINE: line over 80 characters\n", self.CLEAN]
        with self.assertRaises(common.Failure):
            self.output()
        self.assertEqual(self.output(), self.CLEAN)

    def test_complaints_from_a_kept_report_still_fail(self):
        self.reports = [self.WARNED]
        self.output()
        with mock.patch.object(common, "run", self.fake_run):
            problems, _ = checkpatch.run_checkpatch(
                self.tree, self.patch, os.path.join(self.dir, "log"), (), self.cache
            )
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("LONG_LINE", problems[0])


class CheckpatchExceptions(unittest.TestCase):
    """scripts/checkpatch-exceptions names occurrences, not just types."""

    OUTPUT = textwrap.dedent(
        """\
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
        """
    )
    PATCH = [
        "From x",
        "Subject: [PATCH] x",
        "",
        "msg",
        "a very long line",
        "---",
        "diff --git a/lib/y.c b/lib/y.c",
        "index 1..2",
        "--- a",
        "+++ b",
        "diff --git a/lib/x.c b/lib/x.c",
        "new file mode 100644",
    ] + ["+x"] * 10

    def exc(self, typ, where, text):
        return checkpatch.CheckpatchException("p.patch", typ, where, text, "why", 1)

    def test_complaints_know_their_file_and_quoted_line(self):
        got = checkpatch.checkpatch_complaints(self.OUTPUT, self.PATCH)
        self.assertEqual(
            [(c.type, c.file, c.quoted) for c in got],
            [
                ("FILE_PATH_CHANGES", "lib/x.c", "new file mode 100644"),
                ("BIT_MACRO", "lib/x.c", "+#define X_MAX\t(1U << 20)"),
                ("COMMIT_LOG_LONG_LINE", "-", "a very long line of the commit message"),
                ("MISSING_SIGN_OFF", "-", ""),
            ],
        )

    def test_an_exception_excuses_its_occurrence_only(self):
        bit = checkpatch.checkpatch_complaints(self.OUTPUT, self.PATCH)[1]
        self.assertTrue(
            checkpatch.excuses(self.exc("BIT_MACRO", "lib/x.c", "#define X_MAX"), bit)
        )
        # Same type and file, another line; another file; another type.
        self.assertFalse(
            checkpatch.excuses(self.exc("BIT_MACRO", "lib/x.c", "#define Y_MAX"), bit)
        )
        self.assertFalse(
            checkpatch.excuses(self.exc("BIT_MACRO", "lib/y.c", "#define X_MAX"), bit)
        )
        self.assertFalse(
            checkpatch.excuses(self.exc("NR_CPUS", "lib/x.c", "#define X_MAX"), bit)
        )

    def parse(self, text):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        return checkpatch.checkpatch_exceptions(f.name)

    def test_format(self):
        got = self.parse(
            "# comment\n\nup/p.patch | BIT_MACRO | lib/x.c | "
            "#define X | a count, not a bit\n"
        )
        self.assertEqual(
            got["up/p.patch"],
            [
                checkpatch.CheckpatchException(
                    "up/p.patch",
                    "BIT_MACRO",
                    "lib/x.c",
                    "#define X",
                    "a count, not a bit",
                    3,
                )
            ],
        )
        for bad in (
            "up/p.patch BIT_MACRO a reason\n",
            "up/p.patch | BIT_MACRO | lib/x.c | a reason\n",
            "up/p.patch | bit_macro | lib/x.c | #define X | r\n",
            "up/p.patch | BIT_MACRO |  | #define X | r\n",
        ):
            with self.assertRaises(common.Failure, msg=bad):
                self.parse(bad)

    def test_the_project_file_names_patches_of_the_series(self):
        allow = checkpatch.checkpatch_exceptions()
        self.assertTrue(allow)
        upstream = {
            series.patch_key(e.path)
            for e in series.read_series(common.TOP)
            if e.upstream
        }
        for path, excs in allow.items():
            self.assertIn(path, upstream, excs[0].lineno)
            for e in excs:
                self.assertTrue(e.file == "-" or "/" in e.file or "." in e.file, e)


@unittest.skipIf(QUICK, "--quick: no tests that need the base tree")
@unittest.skipUnless(have_base(), "no v4.20 git base tree (see README.md)")
class Maintainers(unittest.TestCase):
    """MAINTAINERS.snippet, appended to v4.20's MAINTAINERS, gives every
    file the series adds a maintainer other than the catch-all."""

    @classmethod
    def setUpClass(cls):
        base, _ = basetree.find_base(allow_download=False)

        def show(path):
            return subprocess.run(
                ["git", "-C", base, "show", "v4.20:" + path],
                check=True,
                stdout=subprocess.PIPE,
                env=common.clean_env(),
                universal_newlines=True,
            ).stdout

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
        for name in (
            "Documentation",
            "arch",
            "include",
            "drivers",
            "fs",
            "init",
            "ipc",
            "kernel",
            "lib",
        ):
            os.makedirs(os.path.join(tree, name), exist_ok=True)
        write(os.path.join(tree, "scripts", "get_maintainer.pl"), self.script)
        write(os.path.join(tree, "MAINTAINERS"), maintainers)
        for f in files:
            write(os.path.join(tree, f), "")

    def owners(self, tree, f):
        """(sections naming a maintainer, sections naming a list) of f."""
        r = subprocess.run(
            [
                "perl",
                "scripts/get_maintainer.pl",
                "--no-git",
                "--no-git-fallback",
                "-f",
                f,
            ],
            cwd=tree,
            env=common.clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        self.assertEqual(r.returncode, 0, r.stdout)
        people = re.findall(r"\((?:maintainer|supporter):([^)]+)\)", r.stdout)
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
            self.assertEqual(
                self.owners(tree, f),
                ({"CONTROL GROUP - CPUSET"}, {"CONTROL GROUP - CPUSET"}),
            )
