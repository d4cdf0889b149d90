# SPDX-License-Identifier: GPL-2.0
"""Tests of the warning baselines and of the base and work trees."""

import collections
import os
import shutil
import subprocess
import tempfile
import textwrap
import unittest

from unittest import mock

from .. import apply, basetree, common, percheck, warns
from .support import TOP, read, write


class Warnings(unittest.TestCase):
    LOG = textwrap.dedent(
        """\
        /src/kernel/fork.c:12:5: warning: unused variable 'x' [-Wunused-variable]
        /src/kernel/fork.c:99:5: warning: unused variable 'x' [-Wunused-variable]
        /src/include/linux/a.h:1: warning: 'y' defined but not used
        arch/x86/entry/thunk_64.o: warning: objtool: missing symbol for section .text
        WARNING: modpost: Found 2 section mismatch(es).
        /src/arch/x86/entry/entry_64.S:1: Warning: no instruction mnemonic suffix
          CC      kernel/fork.o
        /src/kernel/fork.c:12:5: error: something
        """
    )

    def test_keys_drop_line_numbers_and_roots(self):
        w = warns.parse_warnings(self.LOG, roots=("/build", "/src"))
        self.assertEqual(w["kernel/fork.c: unused variable 'x' [-Wunused-variable]"], 2)
        self.assertIn("include/linux/a.h: 'y' defined but not used", w)
        self.assertIn(
            "arch/x86/entry/thunk_64.o: objtool: missing symbol for section .text", w
        )
        self.assertIn("arch/x86/entry/entry_64.S: no instruction mnemonic suffix", w)
        self.assertIn("modpost: modpost: Found 2 section mismatch(es).", w)
        self.assertEqual(sum(w.values()), 6)

    def test_offsets_are_dropped(self):
        a = warns.parse_warnings("a.o: warning: objtool: f()+0x1c: sibling call\n")
        b = warns.parse_warnings("a.o: warning: objtool: f()+0x2e: sibling call\n")
        self.assertEqual(a, b)

    def test_temporary_assembler_files_share_one_key(self):
        a = warns.parse_warnings("/tmp/ccAbC123.s:10: Warning: foo\n")
        b = warns.parse_warnings("/tmp/ccXyZ789.s:99: Warning: foo\n")
        c = warns.parse_warnings("{standard input}:5: Warning: foo\n")
        self.assertEqual(a, b)
        self.assertEqual(a, c)

    def test_first_error_skips_object_names(self):
        log = (
            "*** Default configuration is based on 'x86_64_defconfig'\n"
            "  CC      drivers/gpu/drm/i915/i915_gpu_error.o\n"
            "/src/lib/bcd.c:9:5: error: expected identifier\n"
        )
        self.assertEqual(
            warns.first_error(log), "/src/lib/bcd.c:9:5: error: expected identifier"
        )
        self.assertEqual(warns.first_error("all fine\n"), "?")

    def test_make_failure_is_an_error(self):
        self.assertEqual(
            warns.first_error("make[2]: *** [x] Error 1\n"), "make[2]: *** [x] Error 1"
        )

    def test_source_directory_seen_from_the_build_directory_is_stripped(self):
        # With ccache's base_dir the compiler names sources relative to the
        # build directory; the keys must be those of absolute paths.
        roots = warns.build_roots("/w/build/x86_64", "/w/tree")
        rel = warns.parse_warnings(
            "../../tree/lib/bcd.c:3:5: warning: unused "
            "variable 'x' [-Wunused-variable]\n",
            roots=roots,
        )
        absolute = warns.parse_warnings(
            "/w/tree/lib/bcd.c:3:5: warning: unused "
            "variable 'x' [-Wunused-variable]\n",
            roots=roots,
        )
        self.assertEqual(rel, absolute)
        self.assertEqual(
            list(rel), ["lib/bcd.c: unused variable 'x' [-Wunused-variable]"]
        )

    def test_build_directory_is_stripped(self):
        w = warns.parse_warnings(
            "/build/x86/include/generated/a.h:3: warning: foo\n",
            roots=("/build/x86", "/src"),
        )
        self.assertEqual(list(w), ["include/generated/a.h: foo"])

    def test_quotes_do_not_depend_on_the_locale(self):
        utf8 = warns.parse_warnings("a.c:1:1: warning: unused \u2018x\u2019\n")
        plain = warns.parse_warnings("a.c:1:1: warning: unused 'x'\n")
        self.assertEqual(utf8, plain)

    def test_sparse_errors_count_only_when_asked(self):
        line = "/src/a.c:3:4: error: bad constant expression\n"
        self.assertEqual(
            warns.parse_warnings(line, roots=("/src",)), collections.Counter()
        )
        self.assertEqual(
            warns.parse_warnings(line, roots=("/src",), errors=True),
            collections.Counter({"a.c: bad constant expression": 1}),
        )

    def test_errors_are_not_warnings(self):
        w = warns.parse_warnings("/src/a.c:1:1: error: boom\n", roots=("/src",))
        self.assertEqual(w, collections.Counter())

    def new_at_tip(self, more):
        """new_warnings() of LOG with the lines more against LOG."""
        base = warns.parse_warnings(self.LOG, roots=("/src",))
        tip = warns.parse_warnings(self.LOG + more, roots=("/src",))
        return warns.new_warnings(tip, base)

    def test_one_more_of_the_same_warning_in_a_c_file_is_new(self):
        new = self.new_at_tip(
            "/src/kernel/fork.c:7:1: warning: unused variable 'x' [-Wunused-variable]\n"
        )
        self.assertEqual(sum(new.values()), 1)

    def test_a_known_header_warning_seen_by_one_more_includer_is_not_new(self):
        new = self.new_at_tip(
            "/src/include/linux/a.h:1: warning: 'y' defined but not used\n"
        )
        self.assertEqual(new, collections.Counter())

    def test_one_file_under_two_spellings_is_one_file(self):
        # gas names an included file by the includer's object path: sh4's
        # build of ../sh3/entry.o and sh3's own spell entry-common.S two
        # ways (the sh baseline has one, a fresh tip build the other).
        msg = "overflow in branch to syscall_exit_work"
        base = collections.Counter(
            {"arch/sh/kernel/cpu/sh3/../../entry-common.S: " + msg: 2}
        )
        tip = collections.Counter(
            {"arch/sh/kernel/cpu/sh4/../sh3/../../entry-common.S: " + msg: 2}
        )
        self.assertEqual(warns.new_warnings(tip, base), collections.Counter())
        tip["arch/sh/kernel/cpu/sh4/../sh3/../../entry-common.S: " + msg] += 1
        self.assertEqual(
            warns.new_warnings(tip, base),
            collections.Counter({"arch/sh/kernel/entry-common.S: " + msg: 1}),
        )

    def test_a_new_header_warning_is_new(self):
        new = self.new_at_tip(
            "/src/include/linux/b.h:1: warning: 'z' defined but not used\n"
        )
        self.assertEqual(list(new), ["include/linux/b.h: 'z' defined but not used"])

    @staticmethod
    def sparse_patch_of(
        path, after_state, results, previous=None, tree="/t", bdir="/b", slog="/log"
    ):
        """percheck.sparse_patch() of the patch at path (commit c0ffee) on
        drivers/a.c, built for x86_64."""
        return percheck.sparse_patch(
            mock.Mock(path=path),
            "c0ffee",
            tree,
            {"name": "x86_64"},
            bdir,
            ["drivers/a.c"],
            slog,
            after_state,
            results,
            previous,
        )

    def sparse_patch(self, after, before):
        """lk.sparse_patch() on one C file whose sparse output is canned."""
        results = common.Results()
        runs = iter([after, before])
        with tempfile.TemporaryDirectory() as d, mock.patch.object(
            percheck, "built_objects", lambda b, c: c
        ), mock.patch.object(common, "git", lambda *a, **k: ""), mock.patch.object(
            percheck, "sparse_check", lambda *a: (next(runs), [], [])
        ):
            slog = os.path.join(d, "log")
            after = percheck.sparse_after(
                {"name": "x86_64"}, d, d, ["drivers/a.c"], slog
            )
            self.sparse_patch_of(
                "upstream/x.patch", after, results, tree=d, bdir=d, slog=slog
            )
        return results

    def test_sparse_at_the_parent_is_taken_from_the_patch_before(self):
        # The patch before checked the same file at this patch's parent:
        # nothing is checked out or run again.
        results = common.Results(echo=False)
        key = "drivers/a.c: bad"
        with mock.patch.object(common, "git") as git, mock.patch.object(
            percheck, "sparse_check"
        ) as check:
            kept = self.sparse_patch_of(
                "upstream/y.patch",
                (["drivers/a.c"], collections.Counter({key: 2}), []),
                results,
                (["drivers/a.c"], collections.Counter({key: 1})),
            )
        git.assert_not_called()
        check.assert_not_called()
        self.assertEqual(results.rows[0][:2], ("FAIL", "sparse: upstream/y.patch"))
        self.assertEqual(kept, (["drivers/a.c"], collections.Counter({key: 2})))

    def test_sparse_is_skipped_when_the_build_failed(self):
        results = common.Results(echo=False)
        self.sparse_patch_of("upstream/x.patch", None, results)
        self.assertEqual(
            results.rows,
            [
                (
                    "SKIP",
                    "sparse: upstream/x.patch",
                    "the x86_64 build at this patch failed",
                )
            ],
        )

    def test_sparse_header_warning_of_a_new_includer_is_not_new(self):
        # A new C file that includes slab.h gets slab.h's old sparse
        # warning once more: not the patch's (binderfs.c, v4.20 slab.h).
        key = "include/linux/slab.h: dubious: x & !y"
        r = self.sparse_patch(
            collections.Counter({key: 13}), collections.Counter({key: 11})
        )
        self.assertEqual((r.count("PASS"), r.count("FAIL")), (1, 0))

    def test_sparse_new_warning_in_a_c_file_is_new(self):
        r = self.sparse_patch(
            collections.Counter({"drivers/a.c: bad": 2}),
            collections.Counter({"drivers/a.c: bad": 1}),
        )
        self.assertEqual((r.count("PASS"), r.count("FAIL")), (0, 1))

    def test_baseline_round_trip(self):
        w = warns.parse_warnings(self.LOG, roots=("/src",))
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("# prerequisite stack: abc\n")
            for k, n in sorted(w.items()):
                f.write("%d %s\n" % (n, k))
        self.addCleanup(os.unlink, f.name)
        base, stamp = warns.read_baseline(f.name)
        self.assertEqual(base, w)
        self.assertEqual(stamp, "abc")


class Judge(unittest.TestCase):
    W = collections.Counter({"kernel/a.c: unused variable 'x'": 1})

    def setUp(self):
        f = tempfile.NamedTemporaryFile("w", delete=False)
        f.write("# prerequisite stack: abc\n1 kernel/a.c: unused variable 'x'\n")
        f.close()
        self.base = f.name
        self.addCleanup(os.unlink, f.name)

    def judge(self, warnings, stamp="abc", incremental=False, base=None):
        return warns.judge_warnings(
            warnings, base or self.base, stamp, incremental, "list.txt"
        )

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
        write(
            os.path.join(self.dir, "Makefile"),
            "# SPDX\nVERSION = 4\nPATCHLEVEL = 20\nSUBLEVEL = 0\nEXTRAVERSION =\n",
        )
        self.assertEqual(basetree.makefile_version(self.dir), "4.20.0")

    def test_plain_tree_of_another_version_is_refused(self):
        write(
            os.path.join(self.dir, "Makefile"),
            "VERSION = 4\nPATCHLEVEL = 19\nSUBLEVEL = 0\nEXTRAVERSION =\n",
        )
        os.environ["LINUX_SRC"] = self.dir
        with self.assertRaisesRegex(common.Failure, "says 4.19.0, not 4.20.0"):
            basetree.find_base(allow_download=False)

    def test_git_tree_without_tag_is_refused(self):
        subprocess.run(["git", "init", "-q", self.dir], check=True)
        os.environ["LINUX_SRC"] = self.dir
        with self.assertRaisesRegex(common.Failure, "without a tag v4.20"):
            basetree.find_base(allow_download=False)

    def test_git_tree_with_a_wrong_v420_tag_is_refused(self):
        subprocess.run(["git", "init", "-q", self.dir], check=True)
        write(os.path.join(self.dir, "f"), "x\n")
        g = ["git", "-C", self.dir, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(g + ["add", "f"], check=True)
        subprocess.run(g + ["commit", "-qm", "x"], check=True)
        subprocess.run(g + ["tag", "v4.20"], check=True)
        os.environ["LINUX_SRC"] = self.dir
        with self.assertRaisesRegex(common.Failure, "not Linux v4.20"):
            basetree.find_base(allow_download=False)

    def test_no_tree_and_no_download_says_how_to_provide_one(self):
        os.environ.pop("LINUX_SRC", None)
        os.environ["XDG_CACHE_HOME"] = self.dir
        with self.assertRaises(common.Failure) as cm:
            basetree.find_base(allow_download=False)
        msg = str(cm.exception)
        self.assertIn("LINUX_SRC", msg)
        self.assertIn("provision-linux-v4.20", msg)
        self.assertIn(os.path.join(self.dir, "linux-v4.20"), msg)

    def test_download_of_a_wrong_tarball_is_refused(self):
        src = os.path.join(self.dir, "linux-4.20")
        write(os.path.join(src, "Makefile"), "VERSION = 4\n")
        tarball = os.path.join(self.dir, "linux-4.20.tar.xz")
        subprocess.run(
            ["tar", "-C", self.dir, "-cJf", tarball, "linux-4.20"], check=True
        )
        os.environ.pop("LINUX_SRC", None)
        os.environ["XDG_CACHE_HOME"] = os.path.join(self.dir, "cache")
        os.environ["LK_TARBALL_URL"] = "file://" + tarball
        with self.assertRaisesRegex(common.Failure, "not Linux v4.20"):
            basetree.find_base(allow_download=True)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "cache", "linux-v4.20")))

    def test_failed_download_says_how_to_provide_a_tree(self):
        os.environ.pop("LINUX_SRC", None)
        os.environ["XDG_CACHE_HOME"] = os.path.join(self.dir, "cache")
        os.environ["LK_TARBALL_URL"] = "file://" + self.dir + "/absent.tar.xz"
        with self.assertRaisesRegex(common.Failure, "provision-linux-v4.20"):
            basetree.find_base(allow_download=True)


class WorkTree(unittest.TestCase):
    """lk resets only clones it made, and only uses one holding the series."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.tree = os.path.join(self.dir, "tree")

    def git(self, *args):
        subprocess.run(
            ["git", "-C", self.tree] + list(args),
            check=True,
            env=common.clean_env(),
            stdout=subprocess.DEVNULL,
        )

    def test_a_foreign_git_tree_is_not_reset(self):
        os.makedirs(self.tree)
        self.git("init", "-q")
        write(os.path.join(self.tree, "precious"), "x\n")
        with self.assertRaisesRegex(common.Failure, "lk did not make"):
            apply.prepare_tree("/nonexistent", "git", self.tree)
        self.assertTrue(os.path.exists(os.path.join(self.tree, "precious")))

    def test_a_foreign_directory_is_not_removed(self):
        write(os.path.join(self.tree, "precious"), "x\n")
        with self.assertRaisesRegex(common.Failure, "not a clone made by lk"):
            apply.prepare_tree("/nonexistent", "git", self.tree)
        self.assertTrue(os.path.exists(os.path.join(self.tree, "precious")))

    def test_a_tree_holding_another_series_is_refused(self):
        os.makedirs(self.tree)
        self.git("init", "-q")
        self.git("config", "lk.managed", "true")
        self.git("config", "lk.series", "0000000000000000")
        args = mock.Mock(out=self.dir, series_dir=TOP)
        with self.assertRaisesRegex(common.Failure, "another version of the series"):
            apply.applied_tree(args)

    def test_kunit_keeps_the_edits_that_other_stages_undo(self):
        os.makedirs(self.tree)
        self.git("init", "-q", "-b", "series")
        self.git("config", "lk.managed", "true")
        self.git("config", "lk.series", apply.series_stamp(TOP))
        path = os.path.join(self.tree, "select.c")
        write(path, "old\n")
        self.git("add", "select.c")
        self.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
        args = mock.Mock(out=self.dir, series_dir=TOP)
        write(path, "edited\n")
        with mock.patch.object(common, "log") as said:
            self.assertEqual(apply.applied_tree(args, keep_edits=True), self.tree)
        self.assertEqual(read(path), "edited\n")
        self.assertIn(
            "1 file(s) changed from the series: select.c", said.call_args[0][0]
        )
        apply.applied_tree(args)
        self.assertEqual(read(path), "old\n")


@unittest.skipUnless(
    shutil.which("ccache") and shutil.which("gcc"), "needs ccache and gcc"
)
class CcacheWarnings(unittest.TestCase):
    """lk's ccache settings: a warning replayed from the cache names the
    file of the tree being built, never another tree's."""

    def compile_in(self, root, tree, env):
        """Compile tree's t.c as kbuild does in an O= build (absolute
        source path, -Wp,-MD), from a build directory of its own; the
        compiler's stderr."""
        bdir = os.path.join(root, tree, "build")
        os.makedirs(bdir, exist_ok=True)
        r = subprocess.run(
            ["ccache", "gcc", "-O2", "-Wall", "-Wp,-MD,.t.o.d", "-c"]
            + [os.path.join(root, tree, "src", "t.c"), "-o", "t.o"],
            cwd=bdir,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return r.stderr

    def replayed_paths(self, settings):
        with tempfile.TemporaryDirectory() as root:
            for tree in ("a", "b"):
                write(
                    os.path.join(root, tree, "src", "t.c"),
                    "int g(void)\n{\n\tint a[2];\n\n\treturn a[3];\n}\n",
                )
            env = dict(common.clean_env(), CCACHE_DIR=os.path.join(root, "cc"))
            for key in ("CCACHE_DEPEND", "CCACHE_BASEDIR", "CCACHE_NOHASHDIR"):
                env.pop(key, None)
            settings(env)
            first = self.compile_in(root, "a", env)
            second = self.compile_in(root, "b", env)
            return root, first, second

    def test_lk_settings_name_the_tree_being_built(self):
        from .. import cli

        root, first, second = self.replayed_paths(cli.ccache_env)
        self.assertIn(os.path.join(root, "a", "src", "t.c"), first)
        self.assertIn(os.path.join(root, "b", "src", "t.c"), second)
        self.assertNotIn(os.path.join(root, "a", "src"), second)

    def test_depend_mode_with_a_base_dir_would_name_another_tree(self):
        # Why cli.ccache_env() empties base_dir: with it, tree b hits tree
        # a's result and its warning names a's file.
        def with_base_dir(env):
            env.update(CCACHE_DEPEND="1", CCACHE_NOHASHDIR="1")
            env["CCACHE_BASEDIR"] = os.path.dirname(env["CCACHE_DIR"])

        root, _, second = self.replayed_paths(with_base_dir)
        self.assertIn(os.path.join(root, "a", "src", "t.c"), second)
