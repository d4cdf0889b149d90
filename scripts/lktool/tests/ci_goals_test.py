# SPDX-License-Identifier: GPL-2.0
"""Tests of the reduced goals that CI builds for a target (ci_goals)."""

import collections
import os
import shutil
import tempfile
import unittest
from unittest import mock

from .. import apply, build, common, kbuild, kept, percheck, targetconf
from .support import TOP, write


class ReducedGoals(unittest.TestCase):
    """Reduced builds name objects, and are judged by the committed
    baseline of the target's full goals."""

    def setUp(self):
        self.tree = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tree)
        write(
            os.path.join(self.tree, "kernel", "Makefile"),
            "obj-y = fork.o signal.o\n"
            "obj-$(CONFIG_SIGNAL_TEST) += signal_test.o\n"
            "obj-$(CONFIG_FUTEX) += futex.o\n",
        )
        self.config = {
            "CONFIG_SIGNAL_TEST": "y",
            "CONFIG_FUTEX": "y",
            "CONFIG_MOD": "m",
        }

    def test_an_object_list_change_builds_what_it_adds(self):
        diff = (
            "--- a/kernel/Makefile\n+++ b/kernel/Makefile\n"
            "@@ -1,2 +1,3 @@\n obj-y = fork.o signal.o\n"
            "+obj-$(CONFIG_SIGNAL_TEST) += signal_test.o\n"
            "-ifeq ($(CONFIG_COMPAT),y)\n"
            "-obj-$(CONFIG_FUTEX) += futex_compat.o\n"
            "-endif\n"
        )
        self.assertEqual(
            kbuild.list_only_change(diff), "obj-$(CONFIG_SIGNAL_TEST) += signal_test.o"
        )
        self.assertEqual(
            kbuild.object_goals(
                self.tree,
                self.config,
                "kernel/",
                ["kernel/Makefile", "kernel/signal_test.c", "kernel/futex.c"],
                makefile_diff=lambda path: diff,
            ),
            ["kernel/signal_test.o", "kernel/futex.o"],
        )

    def test_other_makefile_changes_need_the_directory(self):
        for diff in (
            "+ccflags-y += -DX\n",
            "+obj-y += a.o \\\n",
            "+ifeq ($(CONFIG_X),y)\n+obj-y += a.o\n",
            "+$(obj)/x.o: FORCE\n",
        ):
            self.assertIsNone(kbuild.list_only_change(diff), diff)
            self.assertIsNone(
                kbuild.object_goals(
                    self.tree,
                    self.config,
                    "kernel/",
                    ["kernel/Makefile", "kernel/signal.c"],
                    makefile_diff=lambda path: diff,
                ),
                diff,
            )
        # without the diff, a changed Makefile cannot be judged
        self.assertIsNone(
            kbuild.object_goals(self.tree, self.config, "kernel/", ["kernel/Makefile"])
        )

    def test_a_kconfig_change_alone_builds_nothing_there(self):
        self.assertEqual(
            kbuild.object_goals(self.tree, self.config, "lib/", ["lib/Kconfig.debug"]),
            [],
        )
        self.assertEqual(
            kbuild.ci_goals_for(
                {"arch": "arm", "goals": ["zImage"], "ci_goals": ["scripts_dtc"]},
                ["lib/Kconfig.debug", "kernel/signal.c"],
                tree=self.tree,
                config=self.config,
            ),
            ["scripts_dtc", "kernel/signal.o"],
        )

    def test_modules_are_left_out_of_reduced_builds(self):
        write(
            os.path.join(self.tree, "fs", "Makefile"),
            "obj-y += select.o\nobj-$(CONFIG_MOD) += mod.o\n",
        )
        touched = ["fs/select.c", "fs/mod.c"]
        self.assertEqual(
            kbuild.object_goals(self.tree, self.config, "fs/", touched),
            ["fs/select.o", "fs/mod.o"],
        )
        self.assertEqual(
            kbuild.object_goals(
                self.tree, self.config, "fs/", touched, builtin_only=True
            ),
            ["fs/select.o"],
        )

    def test_patch_goals(self):
        write(
            os.path.join(self.tree, "build", ".config"),
            "CONFIG_FUTEX=y\n# CONFIG_SIGNAL_TEST is not set\n",
        )
        bdir = os.path.join(self.tree, "build")
        self.assertEqual(
            kbuild.patch_goals(self.tree, bdir, ["vmlinux"], [], None), ["vmlinux"]
        )
        self.assertEqual(
            kbuild.patch_goals(
                self.tree,
                bdir,
                ["kernel/"],
                ["kernel/futex.c", "kernel/signal_test.c"],
                None,
            ),
            ["kernel/futex.o"],
        )
        self.assertEqual(
            kbuild.patch_goals(self.tree, bdir, ["kernel/"], ["kernel/Makefile"], None),
            ["kernel/"],
        )

    def test_ci_builds_are_judged_by_the_committed_baseline(self):
        seen = []

        def fake_build(t, tree, out, goals, results, baseline_dir, **kw):
            seen.append((t["name"], goals, baseline_dir))

        args = collections.namedtuple("Args", "out series_dir target matrix fresh")(
            self.tree, TOP, None, "ci", True
        )
        with mock.patch.object(
            apply, "applied_tree", return_value=self.tree
        ), mock.patch.object(
            common,
            "git",
            side_effect=lambda a, **kw: ""
            if "--diff-filter=D" in a
            else "kernel/signal.c",
        ), mock.patch.object(
            targetconf, "matrix", return_value=["arm"]
        ), mock.patch.object(
            targetconf, "baseline_stamp", return_value="s"
        ), mock.patch.object(
            build, "target_config", return_value=self.config
        ), mock.patch.object(
            build, "build_target", fake_build
        ):
            build.do_build(args, common.Results())
        t = targetconf.load_target("arm")
        self.assertEqual(
            seen,
            [
                (
                    "arm",
                    t["ci_goals"] + ["kernel/signal.o"],
                    os.path.join(TOP, "configs", "warnings"),
                )
            ],
        )


class ArchBisect(unittest.TestCase):
    """The targets of configs/matrix/bisect-arch build the patches that
    change their architecture's own files."""

    def test_a_patch_is_built_where_its_architecture_files_are(self):
        from .. import percheck

        arm, arm64 = targetconf.load_target("arm"), targetconf.load_target("arm64")
        self.assertEqual(
            targetconf.matrix("bisect-arch"), ["arm", "arm64", "mips", "powerpc"]
        )
        sparc32 = targetconf.load_target("sparc32")
        self.assertIn("sparc32", targetconf.matrix("bisect-arch-full"))
        self.assertTrue(percheck.touches_arch(["arch/sparc/kernel/a.S"], sparc32))
        self.assertFalse(percheck.touches_arch(["arch/sh/kernel/a.S"], sparc32))
        for files, want in (
            (["arch/arm64/kernel/pointer_auth.c", "include/linux/x.h"], (False, True)),
            (["arch/arm/tools/syscall.tbl"], (True, False)),
            (["arch/arm/kernel/a.c", "arch/arm64/kernel/b.c"], (True, True)),
            (["fs/select.c", "include/linux/compat.h"], (False, False)),
            (["arch/x86/entry/syscalls/syscall_32.tbl"], (False, False)),
            (["tools/testing/selftests/arm64/pauth/pac_test.c"], (False, False)),
        ):
            self.assertEqual(
                (
                    percheck.touches_arch(files, arm),
                    percheck.touches_arch(files, arm64),
                ),
                want,
                files,
            )


class PatchVerdict(unittest.TestCase):
    """A per-patch build row: SKIP only where nothing of the patch was built."""

    def test_a_table_built_beside_foreign_c_files_passes(self):
        # The split IPC patch on x86: its C files are s390's and a
        # selftest's, but its change to syscall_32.tbl builds arch/x86/entry/.
        from .. import percheck

        status, text = percheck.build_verdict(
            ["arch/x86/entry/"],
            ["arch/s390/kernel/compat_wrapper.c", "tools/testing/x/t.c"],
            [],
        )
        self.assertEqual(status, "PASS")
        self.assertEqual(
            text,
            "make arch/x86/entry/ (0 of 2 touched C files are in this configuration)",
        )

    def test_only_foreign_objects_skip(self):
        from .. import percheck

        self.assertEqual(
            percheck.build_verdict(
                ["arch/arm64/kernel/ptrace.o"], ["arch/arm64/kernel/ptrace.c"], []
            ),
            (
                "SKIP",
                "none of arch/arm64/kernel/ptrace.c is built in this configuration",
            ),
        )

    def test_built_files_and_vmlinux_pass(self):
        from .. import percheck

        self.assertEqual(
            percheck.build_verdict(["fs/select.o"], ["fs/select.c"], ["fs/select.c"]),
            ("PASS", "make fs/select.o"),
        )
        self.assertEqual(
            percheck.build_verdict(["vmlinux"], ["kernel/x.c"], []),
            ("PASS", "make vmlinux (0 of 1 touched C files are in this configuration)"),
        )
        self.assertEqual(
            percheck.build_verdict(
                ["fs/a.o", "fs/b.o"], ["fs/a.c", "fs/b.c"], ["fs/a.c"]
            ),
            (
                "PASS",
                "make fs/a.o fs/b.o (1 of 2 touched C files are in this configuration)",
            ),
        )


class KeptPatchResults(unittest.TestCase):
    """percheck.KeptResults: a patch's rows are read back only under the
    key of the same trees, targets and inputs, and a failure is never
    kept."""

    def setUp(self):
        from .support import repo_git

        self.repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.repo)
        self.git = lambda *a, **kw: repo_git(self.repo, *a, **kw)
        self.git("init", "-q")
        for text in ("a\n", "b\n", "c\n"):
            write(os.path.join(self.repo, "f.c"), text)
            self.git("add", "f.c")
            self.git("commit", "-q", "-m", "f: " + text.strip())
        self.heads = self.git("rev-list", "--reverse", "HEAD").split()
        self.args = mock.Mock(bisect="touched")
        self.version = mock.patch.object(
            kept, "toolchain_id", return_value="gcc (Debian 12.2.0-14) 12.2.0"
        )
        self.version.start()
        self.addCleanup(self.version.stop)

    def keeper(self, own=("f.c",)):
        return percheck.KeptResults.for_run(self.repo, self.args, set(own), [])

    ROWS = [
        ("PASS", "build x86_64-defconfig: t/0001-f.patch", "make f.o"),
        ("SKIP", "sparse: t/0001-f.patch", "the patch changes no C file"),
    ]

    def test_rows_come_back_under_the_same_key_only(self):
        k = self.keeper()
        key = k.key(self.repo, self.heads[2], ["x86_64-defconfig"])
        self.assertIsNone(k.get(key))
        k.put(key, self.ROWS, ["x86_64-defconfig", ["f.c"], {"w": 1}])
        again = self.keeper()
        held = again.get(again.key(self.repo, self.heads[2], ["x86_64-defconfig"]))
        self.assertEqual([tuple(r) for r in held["rows"]], self.ROWS)
        self.assertEqual(held["sparse"], ["x86_64-defconfig", ["f.c"], {"w": 1}])
        # Another patch (tree and parent), another set of targets, another
        # set of files in the series, another toolchain: another key.
        others = [
            again.key(self.repo, self.heads[1], ["x86_64-defconfig"]),
            again.key(self.repo, self.heads[2], ["x86_64-defconfig", "arm"]),
            self.keeper(own=("f.c", "g.h")).key(
                self.repo, self.heads[2], ["x86_64-defconfig"]
            ),
        ]
        with mock.patch.object(kept, "toolchain_id", return_value="gcc 13"):
            others.append(
                self.keeper().key(self.repo, self.heads[2], ["x86_64-defconfig"])
            )
        for other in others:
            self.assertNotEqual(other, key)
            self.assertIsNone(again.get(other))

    def test_the_tools_code_and_the_targets_are_inputs(self):
        top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, top)
        files = [
            "scripts/lktool/percheck.py",
            "scripts/lktool/build.py",
            "scripts/lktool/warns.py",
            "configs/targets/x86_64-defconfig.conf",
            "configs/fragments/compat.config",
            "configs/matrix/bisect",
        ]
        for f in files:
            write(os.path.join(top, f), "one = 1\n")
        # percheck imports build, which imports warns: all three are its
        # code.  The QEMU harness is not.
        write(
            os.path.join(top, files[0]),
            "from . import build  # one\nfrom .common import log\n",
        )
        write(os.path.join(top, files[1]), "from .warns import x  # one\n")
        with mock.patch.object(common, "TOP", top):
            bases = {self.keeper().base}
            for f in files:
                with open(os.path.join(top, f), "a") as out:
                    out.write("# two\n")
                bases.add(self.keeper().base)
            # Not inputs: the tool's tests, a module percheck does not
            # import.
            for f in ("tests/x_test.py", "qemu.py"):
                write(os.path.join(top, "scripts/lktool", f), "three = 3\n")
                bases.add(self.keeper().base)
        self.assertEqual(len(bases), len(files) + 1)

    def test_a_failure_is_not_kept(self):
        k = self.keeper()
        key = k.key(self.repo, self.heads[1], ["x86_64-defconfig"])
        k.put(key, self.ROWS + [("FAIL", "sparse: t/0001-f.patch", "new")], None)
        self.assertIsNone(k.get(key))
        k.put(key, [], None)
        self.assertIsNone(k.get(key))

    def test_a_damaged_file_is_not_read(self):
        k = self.keeper()
        key = k.key(self.repo, self.heads[1], ["x86_64-defconfig"])
        write(os.path.join(k.dir, key + ".json"), '{"rows": [["PASS", ')
        self.assertIsNone(k.get(key))
