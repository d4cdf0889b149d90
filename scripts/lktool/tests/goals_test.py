# SPDX-License-Identifier: GPL-2.0
"""Tests of the kbuild goals that build what a patch touches."""

import os
import shutil
import subprocess
import tempfile
import unittest

from .. import kbuild
from .support import write


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
            self.assertEqual(
                kbuild.header_users(d, ["include/linux/x.h"], "x86"),
                ["kernel/a.c", "kernel/sched/core.c"],
            )
            self.assertEqual(
                kbuild.header_users(d, ["arch/x86/include/asm/z.h"], "x86"),
                ["arch/x86/kernel/d.c"],
            )
            self.assertEqual(
                kbuild.header_users(d, ["include/linux/x.h"], "x86", depth=1),
                ["kernel/a.c"],
            )

    def test_objects_only_leaves_out_a_directory_it_cannot_tell(self):
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, "kernel", "Makefile"), "obj-y += a.o\n")
            write(
                os.path.join(d, "drivers", "z", "Makefile"),
                "z-objs := z1.o z2.o\nobj-$(CONFIG_Z) += z.o\n",
            )
            write(os.path.join(d, "b", ".config"), "CONFIG_Z=y\n")
            users = ["kernel/a.c", "drivers/z/z1.c"]
            dirs = ["drivers/z/", "kernel/"]
            self.assertEqual(
                kbuild.patch_goals(
                    d, os.path.join(d, "b"), dirs, users, None, objects_only=True
                ),
                ["kernel/a.o"],
            )
            self.assertEqual(
                kbuild.patch_goals(d, os.path.join(d, "b"), dirs, users, None),
                ["drivers/z/", "kernel/a.o"],
            )


class TouchedGoals(unittest.TestCase):
    def test_sources_give_their_directories(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                ["kernel/futex.c", "fs/select.c", "include/linux/compat.h"]
            ),
            ["fs/", "kernel/"],
        )

    def test_header_alone_gives_vmlinux(self):
        self.assertEqual(
            kbuild.build_dirs_for(["include/linux/syscalls.h"]), ["vmlinux"]
        )

    def test_other_architectures_are_left_out(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                ["arch/arm/kernel/sys_oabi-compat.c", "arch/x86/entry/common.c"], "x86"
            ),
            ["arch/x86/entry/"],
        )
        self.assertEqual(kbuild.build_dirs_for(["arch/arm/kernel/a.c"], "x86"), [])

    def test_kconfig_and_makefile_give_their_directory(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                ["drivers/android/Kconfig", "drivers/android/Makefile"]
            ),
            ["drivers/android/"],
        )

    def test_the_architecture_makefile_is_no_directory(self):
        # arch/arm64/Makefile sets every object's flags; "make arch/arm64/"
        # fails in it (KBUILD_CFLAGS references itself there), which CI
        # once did for a patch adding -mbranch-protection=none
        self.assertEqual(
            kbuild.build_dirs_for(
                ["arch/arm64/Makefile", "arch/arm64/kernel/process.c"], "arm64"
            ),
            ["arch/arm64/kernel/"],
        )
        self.assertEqual(
            kbuild.build_dirs_for(["arch/arm64/Makefile"], "arm64"), ["vmlinux"]
        )
        # a kbuild Makefile below it is one as before
        self.assertEqual(
            kbuild.build_dirs_for(["arch/arm64/kernel/Makefile"], "arm64"),
            ["arch/arm64/kernel/"],
        )

    def test_syscall_table_gives_the_directory_of_its_users(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                ["arch/x86/entry/syscalls/syscall_32.tbl", "scripts/checksyscalls.sh"]
            ),
            ["arch/x86/entry/"],
        )
        self.assertEqual(
            kbuild.build_dirs_for(
                ["arch/arm/tools/syscall.tbl", "arch/arm/Kconfig"], "arm"
            ),
            ["arch/arm/kernel/"],
        )
        # another architecture's table is not read
        self.assertEqual(
            kbuild.build_dirs_for(["arch/s390/kernel/syscalls/syscall.tbl"]), []
        )

    def test_prepare_step_files_and_arch_kconfig_count_as_headers(self):
        self.assertEqual(
            kbuild.build_dirs_for(["scripts/checksyscalls.sh"]), ["vmlinux"]
        )
        self.assertEqual(
            kbuild.build_dirs_for(
                ["arch/Kconfig", "arch/x86/Kconfig", "kernel/futex.c"]
            ),
            ["kernel/"],
        )
        self.assertEqual(kbuild.build_dirs_for(["arch/x86/Kconfig"]), ["vmlinux"])

    def test_outside_the_image_needs_nothing(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                [
                    "Documentation/arm64/booting.txt",
                    "tools/testing/selftests/futex/Makefile",
                ]
            ),
            [],
        )

    def test_build_scripts_and_objtool_give_vmlinux(self):
        self.assertEqual(kbuild.build_dirs_for(["scripts/Makefile.build"]), ["vmlinux"])
        self.assertEqual(kbuild.build_dirs_for(["tools/objtool/elf.c"]), ["vmlinux"])

    def test_selftests_need_no_kernel_build(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                ["tools/testing/selftests/futex/functional/futex_wait.c"]
            ),
            [],
        )

    def test_linker_script_gives_vmlinux(self):
        self.assertEqual(
            kbuild.build_dirs_for(["arch/x86/kernel/vmlinux.lds.S"]), ["vmlinux"]
        )

    def test_ci_goals_add_the_touched_directories(self):
        t = {"arch": "arm", "goals": ["zImage"], "ci_goals": ["kernel/"]}
        self.assertEqual(
            kbuild.ci_goals_for(t, ["fs/select.c", "kernel/futex.c"]),
            ["kernel/", "fs/"],
        )
        self.assertEqual(kbuild.ci_goals_for(t, ["include/linux/compat.h"]), ["zImage"])
        self.assertEqual(
            kbuild.ci_goals_for(t, [], ["kernel/futex_compat.c"]), ["zImage"]
        )

    def test_top_level_makefile_gives_vmlinux(self):
        self.assertEqual(kbuild.build_dirs_for(["Makefile"]), ["vmlinux"])

    def test_deleted_file_gives_vmlinux(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                ["kernel/futex.c"], "x86", deleted=["kernel/futex_compat.c"]
            ),
            ["vmlinux"],
        )
        self.assertEqual(
            kbuild.build_dirs_for(
                ["kernel/futex.h"], "x86", deleted=["kernel/futex.h.old"]
            ),
            ["vmlinux"],
        )

    def test_deleted_file_with_its_makefile_gives_its_directory(self):
        self.assertEqual(
            kbuild.build_dirs_for(
                ["kernel/futex.c", "kernel/Makefile"],
                "x86",
                deleted=["kernel/futex_compat.c"],
            ),
            ["kernel/"],
        )
        # another directory's Makefile does not cover it
        self.assertEqual(
            kbuild.build_dirs_for(
                ["kernel/futex.c", "lib/Makefile"],
                "x86",
                deleted=["kernel/futex_compat.c"],
            ),
            ["vmlinux"],
        )
        self.assertEqual(
            kbuild.build_dirs_for(
                ["drivers/x/Kbuild"], "x86", deleted=["drivers/x/y.S"]
            ),
            ["drivers/x/"],
        )
        t = {"arch": "arm", "goals": ["zImage"], "ci_goals": ["kernel/"]}
        self.assertEqual(
            kbuild.ci_goals_for(t, ["kernel/Makefile"], ["kernel/futex_compat.c"]),
            ["kernel/"],
        )


class ObjectGoals(unittest.TestCase):
    """CI builds the objects of a touched directory, not all of it."""

    MAKEFILE = (
        "obj-$(CONFIG_NET)\t\t:= socket.o core/\n"
        "tmp-$(CONFIG_COMPAT) \t\t:= compat.o\n"
        "obj-$(CONFIG_NET)\t\t+= $(tmp-y)\n"
        "obj-y += a.o \\\n\tb.o  # b is built always\n"
        "ccflags-y += -DX.o\n"
        "hostprogs-y := gen.o\n"
        "obj-$(CONFIG_MOD) += mod.o\n"
    )

    def setUp(self):
        self.tree = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tree)
        write(os.path.join(self.tree, "net", "Makefile"), self.MAKEFILE)
        write(
            os.path.join(self.tree, "net", "socket.c"),
            'int s;\n#include "socket_test.c"\n',
        )
        write(os.path.join(self.tree, "net", "socket_test.c"), "int t;\n")
        write(os.path.join(self.tree, "net", "lone_test.c"), "int l;\n")
        self.config = {"CONFIG_NET": "y", "CONFIG_MOD": "m"}

    def goals(self, touched, config=None):
        return kbuild.object_goals(self.tree, config or self.config, "net/", touched)

    def test_makefile_lists_and_their_conditions(self):
        objs = kbuild.makefile_objects(self.MAKEFILE)
        self.assertEqual(objs["socket.o"], ["CONFIG_NET"])
        self.assertEqual(objs["compat.o"], ["CONFIG_COMPAT"])
        self.assertEqual(objs["b.o"], ["y"])
        self.assertNotIn("X.o", objs)
        self.assertNotIn("gen.o", objs)

    def test_lists_inside_conditionals_on_options(self):
        # kernel/time/Makefile builds posix-stubs.o only without
        # POSIX_TIMERS; a config with them must not get it as a goal
        write(
            os.path.join(self.tree, "time", "Makefile"),
            "obj-y += time.o\n"
            "ifeq ($(CONFIG_POSIX_TIMERS),y)\n obj-y += posix-timers.o\n"
            "else\n obj-y += posix-stubs.o\nendif\n"
            "ifdef CONFIG_A\nifneq ($(CONFIG_B),)\n"
            "obj-$(CONFIG_C) += abc.o\nendif\nendif\n"
            "ifeq ($(ARCH),x86)\nobj-y += x86.o\nelse\nobj-y += other.o\n"
            "endif\n",
        )
        touched = [
            "time/time.c",
            "time/posix-timers.c",
            "time/posix-stubs.c",
            "time/abc.c",
            "time/x86.c",
            "time/other.c",
        ]

        def goals(**config):
            return kbuild.object_goals(
                self.tree,
                {"CONFIG_" + k: v for k, v in config.items()},
                "time/",
                touched,
            )

        self.assertEqual(
            goals(POSIX_TIMERS="y"),
            ["time/time.o", "time/posix-timers.o", "time/x86.o", "time/other.o"],
        )
        self.assertEqual(
            goals(A="y", B="m", C="y"),
            [
                "time/time.o",
                "time/posix-stubs.o",
                "time/abc.o",
                "time/x86.o",
                "time/other.o",
            ],
        )
        self.assertNotIn("time/abc.o", goals(A="y", C="y"))
        self.assertNotIn("time/abc.o", goals(B="y", C="y"))

    def test_objects_the_config_builds(self):
        self.assertEqual(
            self.goals(["net/socket.c", "net/compat.c", "net/b.c", "net/mod.c"]),
            ["net/socket.o", "net/b.o", "net/mod.o"],
        )
        self.assertEqual(
            self.goals(
                ["net/socket.c", "net/compat.c"], dict(self.config, CONFIG_COMPAT="y")
            ),
            ["net/socket.o", "net/compat.o"],
        )

    def test_an_included_source_is_covered_by_its_includer(self):
        self.assertEqual(
            self.goals(["net/socket.c", "net/socket_test.c"]), ["net/socket.o"]
        )
        # not included by a touched source: only the directory will do
        self.assertIsNone(self.goals(["net/lone_test.c", "net/socket.c"]))
        self.assertIsNone(self.goals(["net/socket_test.c"]))

    def test_changed_rules_need_the_directory(self):
        self.assertIsNone(self.goals(["net/socket.c", "net/Makefile"]))
        self.assertEqual(self.goals(["net/socket.c", "net/Kconfig"]), ["net/socket.o"])
        self.assertIsNone(
            kbuild.object_goals(self.tree, self.config, "lib/", ["lib/x.c"])
        )

    def test_a_system_call_table_builds_the_directory_that_includes_it(self):
        # arch/x86/entry/ has no file of its own in the patch; object
        # goals of it would be none, and the table would go unbuilt
        bdir = os.path.join(self.tree, "build")
        write(os.path.join(bdir, ".config"), "CONFIG_NET=y\n")
        files = ["arch/x86/entry/syscalls/syscall_32.tbl", "net/socket.c"]
        dirs = kbuild.build_dirs_for(files, "x86")
        self.assertEqual(sorted(dirs), ["arch/x86/entry/", "net/"])
        self.assertEqual(
            sorted(kbuild.patch_goals(self.tree, bdir, dirs, files, None)),
            ["arch/x86/entry/", "net/socket.o"],
        )
        # arm64's AArch32 table is a header that sys32.c includes
        files = ["arch/arm64/include/asm/unistd32.h"]
        dirs = kbuild.build_dirs_for(files, "arm64")
        self.assertEqual(dirs, ["arch/arm64/kernel/"])
        self.assertEqual(
            kbuild.patch_goals(self.tree, bdir, dirs, files, None),
            ["arch/arm64/kernel/"],
        )

    def test_a_head_object_needs_its_directory(self):
        # `make arch/foo/kernel/head_32.o` would build all of vmlinux: the
        # top Makefile makes head-y depend on every directory
        write(
            os.path.join(self.tree, "arch", "foo", "Makefile"),
            "head-y := arch/foo/kernel/head_$(BITS).o\nhead-y += arch/foo/kernel/e.o\n",
        )
        write(
            os.path.join(self.tree, "arch", "foo", "kernel", "Makefile"),
            "extra-y := head_$(BITS).o e.o\nobj-y += setup.o\n",
        )

        def goals(touched):
            return kbuild.object_goals(
                self.tree, self.config, "arch/foo/kernel/", touched
            )

        self.assertEqual(
            goals(["arch/foo/kernel/setup.c"]), ["arch/foo/kernel/setup.o"]
        )
        self.assertTrue(kbuild.is_head_object(self.tree, "arch/foo/kernel/head_32.o"))
        self.assertTrue(kbuild.is_head_object(self.tree, "arch/foo/kernel/e.o"))
        self.assertFalse(kbuild.is_head_object(self.tree, "arch/foo/kernel/setup.o"))
        self.assertFalse(kbuild.is_head_object(self.tree, "net/socket.o"))

    def test_ci_goals_with_a_config(self):
        t = {"arch": "arm", "goals": ["zImage"], "ci_goals": ["kernel/"]}
        self.assertEqual(
            kbuild.ci_goals_for(
                t,
                ["net/socket.c", "net/socket_test.c", "net/compat.c", "kernel/futex.c"],
                tree=self.tree,
                config=self.config,
            ),
            ["kernel/", "net/socket.o"],
        )
        # without a tree and .config, directories as before
        self.assertEqual(kbuild.ci_goals_for(t, ["net/socket.c"]), ["kernel/", "net/"])
