# SPDX-License-Identifier: GPL-2.0
"""Tests of the targets of configs/: configuration, baseline stamps,
guest kernels."""

import os
import shutil
import subprocess
import tempfile
import unittest

from unittest import mock

from .. import build, common, kunit, percheck, targetconf, warns
from .support import TOP, read, write


class KconfigSymbols(unittest.TestCase):
    """configure() checks only fragment lines whose symbol the tree has."""

    def test_symbols_of_every_kconfig_file(self):
        with tempfile.TemporaryDirectory() as d:
            write(
                os.path.join(d, "Kconfig"), "menuconfig ANDROID\n" '\tbool "Android"\n'
            )
            write(
                os.path.join(d, "drivers", "Kconfig.debug"),
                "config FOO_DEBUG\n\tbool\n  config INDENTED\n"
                "# config COMMENTED\n\thelp\n\t  config of BAR\n",
            )
            write(os.path.join(d, "drivers", "notes.txt"), "config TXT\n")
            subprocess.run(["git", "init", "-q", d], check=True)
            subprocess.run(["git", "-C", d, "add", "."], check=True)
            self.assertEqual(
                targetconf.kconfig_symbols(d), {"ANDROID", "FOO_DEBUG", "INDENTED"}
            )

    def configure(self, fragment, config, before_tip):
        with tempfile.TemporaryDirectory() as d:
            frag = os.path.join(d, "test.config")
            write(frag, fragment)
            bdir = os.path.join(d, "build")
            write(os.path.join(bdir, ".config"), config)
            t = {
                "name": "test",
                "fragments": [frag],
                "arch": "x86_64",
                "cross_compile": "",
                "defconfig": "defconfig",
            }
            with mock.patch.object(common, "run"), mock.patch.object(
                targetconf, "kconfig_symbols", return_value={"OLD", "OFF"}
            ):
                build.configure(
                    t, d, bdir, os.path.join(d, "log"), before_tip=before_tip
                )

    def kunit_configure(self, before_tip, returncode=0):
        """configure() of a kunitconfig target: (kunit.py command, the
        .kunitconfig it was given)."""
        with tempfile.TemporaryDirectory() as d:
            kc = os.path.join(d, "test.kunitconfig")
            write(kc, "# suites\nCONFIG_OLD=y\nCONFIG_NEW=y\n")
            t = {
                "name": "test",
                "fragments": [],
                "arch": "um",
                "cross_compile": "",
                "defconfig": "",
                "kunitconfig": kc,
            }
            calls = []

            def fake_run(cmd, **kw):
                arg = [a for a in cmd if a.startswith("--kunitconfig=")][0]
                with open(arg.split("=", 1)[1]) as f:
                    calls.append((cmd, f.read()))
                return subprocess.CompletedProcess(cmd, returncode)

            with mock.patch.object(
                common, "run", side_effect=fake_run
            ), mock.patch.object(
                kunit, "install_kunit_tool", return_value="/t/kunit.py"
            ), mock.patch.object(
                targetconf, "kconfig_symbols", return_value={"OLD"}
            ):
                build.configure(
                    t,
                    d,
                    os.path.join(d, "build"),
                    os.path.join(d, "log"),
                    before_tip=before_tip,
                )
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
        with self.assertRaisesRegex(common.Failure, "kunit.py config exited 1"):
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
            write(
                os.path.join(bdir, ".config"), "CONFIG_OLD=y\n# CONFIG_OFF is not set\n"
            )
            t = {
                "name": "test",
                "fragments": frags,
                "arch": "arm",
                "cross_compile": "arm-linux-gnueabihf-",
                "defconfig": "allnoconfig",
            }
            calls = []

            def fake_run(cmd, **kw):
                allconfig = [a for a in cmd if a.startswith("KCONFIG_ALLCONFIG=")]
                calls.append(
                    (cmd, read(allconfig[0].split("=", 1)[1]) if allconfig else None)
                )

            with mock.patch.object(
                common, "run", side_effect=fake_run
            ), mock.patch.object(
                targetconf, "kconfig_symbols", return_value={"OLD", "OFF"}
            ):
                build.configure(t, d, bdir, os.path.join(d, "log"))
        self.assertEqual(len(calls), 1, calls)
        cmd, allconfig = calls[0]
        self.assertEqual(cmd[-1], "allnoconfig")
        self.assertIn("ARCH=arm", cmd)
        self.assertEqual(allconfig, "CONFIG_OLD=y\n# CONFIG_OFF is not set\n")

    def test_allnoconfig_lines_that_did_not_stick_fail(self):
        with self.assertRaisesRegex(
            common.Failure, r"did not survive " r"allnoconfig: CONFIG_OLD=y"
        ):
            with tempfile.TemporaryDirectory() as d:
                frag = os.path.join(d, "a.config")
                write(frag, "CONFIG_OLD=y\n")
                bdir = os.path.join(d, "build")
                write(os.path.join(bdir, ".config"), "# CONFIG_OLD is not set\n")
                t = {
                    "name": "test",
                    "fragments": [frag],
                    "arch": "arm",
                    "cross_compile": "",
                    "defconfig": "allnoconfig",
                }
                with mock.patch.object(common, "run"), mock.patch.object(
                    targetconf, "kconfig_symbols", return_value={"OLD"}
                ):
                    build.configure(t, d, bdir, os.path.join(d, "log"))

    def test_unknown_symbol_is_skipped_before_the_tip(self):
        self.configure(
            "CONFIG_OLD=y\nCONFIG_NEW=y\n# CONFIG_OFF is not set\n",
            "CONFIG_OLD=y\n# CONFIG_OFF is not set\n",
            True,
        )

    def test_unknown_symbol_fails_at_the_tip(self):
        with self.assertRaisesRegex(common.Failure, r"CONFIG_NEW=y .*no Kconfig"):
            self.configure("CONFIG_OLD=y\nCONFIG_NEW=y\n", "CONFIG_OLD=y\n", False)

    def test_known_symbol_that_did_not_stick_fails_everywhere(self):
        for before_tip in (True, False):
            with self.assertRaisesRegex(common.Failure, r"CONFIG_OFF=y"):
                self.configure(
                    "CONFIG_OFF=y\nCONFIG_NEW=y\n",
                    "# CONFIG_OFF is not set\n",
                    before_tip,
                )

    def fragments_hold(self, fragment, config, defined, kunitconfig=None):
        with tempfile.TemporaryDirectory() as d:
            frag = os.path.join(d, "test.config")
            write(frag, fragment)
            write(os.path.join(d, "build", ".config"), config)
            t = {"name": "test", "fragments": [frag]}
            if kunitconfig:
                t["kunitconfig"] = kunitconfig
            with mock.patch.object(
                targetconf, "kconfig_symbols", return_value=defined
            ) as symbols:
                held = percheck.fragments_hold(t, d, os.path.join(d, "build"))
            return held, symbols.call_count

    def test_a_patch_adding_a_symbol_no_fragment_sets_keeps_the_config(self):
        # A new KUnit suite's option: syncconfig gives it its default.
        self.assertEqual(
            self.fragments_hold(
                "CONFIG_OLD=y\n# CONFIG_OFF is not set\n",
                "CONFIG_OLD=y\n# CONFIG_OFF is not set\nCONFIG_X=y\n",
                {"OLD", "OFF", "NEW_TEST"},
            ),
            (True, 0),
        )

    def test_a_patch_adding_a_symbol_a_fragment_sets_reconfigures(self):
        # The binderfs option at the binderfs patch.
        self.assertEqual(
            self.fragments_hold(
                "CONFIG_OLD=y\nCONFIG_NEW=y\n", "CONFIG_OLD=y\n", {"OLD", "NEW"}
            ),
            (False, 1),
        )

    def test_a_fragment_symbol_the_tree_lacks_yet_keeps_the_config(self):
        self.assertEqual(
            self.fragments_hold(
                "CONFIG_OLD=y\nCONFIG_NEW=y\n", "CONFIG_OLD=y\n", {"OLD"}
            ),
            (True, 1),
        )

    def test_a_fragment_line_that_no_longer_holds_reconfigures(self):
        # configure() then reports it if it still does not stick.
        self.assertEqual(
            self.fragments_hold("CONFIG_OLD=y\n", "# CONFIG_OLD is not set\n", {"OLD"}),
            (False, 1),
        )

    def test_kunitconfig_targets_and_missing_configs_reconfigure(self):
        self.assertEqual(
            self.fragments_hold("", "", set(), "x.kunitconfig"), (False, 0)
        )
        with tempfile.TemporaryDirectory() as d:
            self.assertFalse(
                percheck.fragments_hold({"fragments": []}, d, os.path.join(d, "none"))
            )

    def test_a_tree_without_kconfig(self):
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(["git", "init", "-q", d], check=True)
            self.assertEqual(targetconf.kconfig_symbols(d), set())


class BaselineStamps(unittest.TestCase):
    """The committed baselines belong to today's prerequisite stack."""

    def test_every_committed_baseline_is_current(self):
        # A stale stamp fails CI's warning comparison; say so here first,
        # with the target, before anything is built.
        d = os.path.join(TOP, "configs", "warnings")
        for fn in sorted(os.listdir(d)):
            t = targetconf.load_target(fn[: -len(".txt")])
            if not shutil.which(t["cross_compile"] + "gcc"):
                self.skipTest("no %sgcc" % t["cross_compile"])
            _, stamp = warns.read_baseline(os.path.join(d, fn))
            self.assertEqual(stamp, targetconf.baseline_stamp(TOP, t), fn)

    def test_comments_and_ci_goals_do_not_change_the_stamp(self):
        t = targetconf.load_target("arm")
        stamp = targetconf.baseline_stamp(TOP, t)
        self.assertEqual(
            targetconf.baseline_stamp(TOP, dict(t, ci_goals=["lib/"])), stamp
        )
        self.assertNotEqual(
            targetconf.baseline_stamp(TOP, dict(t, goals=["zImage"])), stamp
        )
        self.assertNotEqual(
            targetconf.baseline_stamp(TOP, dict(t, defconfig="vexpress_defconfig")),
            stamp,
        )

    def test_another_architectures_prerequisite_does_not_count(self):
        # A toolchain fix confined to arch/sparc/ changes the stamps of the
        # sparc targets only; one that also touches a generic file, or
        # arch/x86/ (which User-mode Linux builds with), changes more.
        def diff(*files):
            return "".join(
                "diff --git a/%s b/%s\n--- a/%s\n+++ b/%s\n" % (f, f, f, f)
                for f in files
            )

        with tempfile.TemporaryDirectory() as d:
            shutil.copytree(os.path.join(TOP, "patches"), os.path.join(d, "patches"))
            base = read(os.path.join(TOP, "series"))
            targets = {
                n: targetconf.load_target(n) for n in ("x86_64", "arm", "um", "i386")
            }
            before = {n: targetconf.baseline_stamp(TOP, t) for n, t in targets.items()}
            for files, changed in (
                (("arch/sparc/mm/init_64.c",), set()),
                (("arch/sparc/mm/init_64.c", "arch/arm/Makefile"), {"arm"}),
                (("arch/x86/Makefile",), {"x86_64", "um", "i386"}),
                (("arch/sparc/mm/init_64.c", "include/linux/mmzone.h"), set(targets)),
                (("arch/Kconfig",), set(targets)),
            ):
                write(
                    os.path.join(d, "patches", "prereq", "9999-fix.patch"), diff(*files)
                )
                write(
                    os.path.join(d, "series"),
                    base.replace(
                        "# Upstream-bound", "prereq/9999-fix.patch\n# Upstream-bound", 1
                    ),
                )
                after = {n: targetconf.baseline_stamp(d, t) for n, t in targets.items()}
                self.assertEqual(
                    {n for n in targets if after[n] != before[n]}, changed, files
                )

    def test_affects_arch(self):
        sparc = "diff --git a/arch/sparc/a.c b/arch/sparc/a.c\n"
        self.assertFalse(targetconf.affects_arch(sparc, {"x86"}))
        self.assertTrue(targetconf.affects_arch(sparc, {"sparc"}))
        self.assertTrue(targetconf.affects_arch("no diff\n", {"x86"}))
        self.assertEqual(common.srcarch_dirs("um"), {"um", "x86"})
        self.assertEqual(common.srcarch_dirs("i386"), {"x86"})


class GuestTargets(unittest.TestCase):
    """The guests' kernels are allnoconfig plus what they need."""

    def test_guest_kernels_are_allnoconfig_plus_what_they_need(self):
        # Their architecture and compiler are those of the defconfig
        # targets; the guests' fragments name everything they build: what
        # every guest needs, the machine's devices, the architecture's
        # extras, /proc/schedstat for the cpuset selftest, KUnit and
        # binderfs.
        for name, plain, machine, extra in (
            (
                "x86_64",
                "x86_64-defconfig",
                "pc",
                [
                    "pc-numa.config",
                    "compat.config",
                    "x32.config",
                    "sched-domains.config",
                ],
            ),
            ("i386", "i386-defconfig", "pc", ["sched-domains.config"]),
            ("arm-guest", "arm", "virt", ["arm-virt.config", "sched-domains.config"]),
            (
                "arm64-guest",
                "arm64",
                "virt",
                ["arm64-compat.config", "arm64-pauth.config", "sched-domains.config"],
            ),
        ):
            guest, defconfig = targetconf.load_target(name), targetconf.load_target(
                plain
            )
            for key in ("arch", "cross_compile"):
                self.assertEqual(guest[key], defconfig[key], (name, key))
            self.assertEqual(guest["defconfig"], "allnoconfig")
            self.assertIn("allnoconfig", targetconf.ALLCONFIG_TARGETS)
            self.assertEqual(
                guest["fragments"],
                ["qemu-guest.config", machine + "-guest.config"]
                + extra
                + ["kunit.config", "binderfs.config"],
                name,
            )
            self.assertIn("vmlinux", guest["goals"])
            # Built in full by CI, as the guests' kernels are.
            self.assertIsNone(guest["ci_goals"], name)

    def test_big_endian_guest_kernels(self):
        # mips and powerpc have no defconfig target: their guests' kernels
        # are allnoconfig plus what every guest needs, the machine, KUnit
        # and binderfs, built with Debian's cross compilers.
        # The 64-bit MIPS guest's kernel shares the Malta board's fragment.
        for name, arch, cross, machine in (
            (
                "mips",
                "mips",
                "mips-linux-gnu-",
                ["mips-malta.config", "malta-board.config"],
            ),
            ("powerpc", "powerpc", "powerpc-linux-gnu-", ["ppc-mac.config"]),
            (
                "mips64-guest",
                "mips",
                "mips64-linux-gnuabi64-",
                ["mips64-malta.config", "malta-board.config"],
            ),
        ):
            t = targetconf.load_target(name)
            self.assertEqual((t["arch"], t["cross_compile"]), (arch, cross))
            self.assertEqual(t["defconfig"], "allnoconfig")
            self.assertEqual(
                t["fragments"],
                ["qemu-guest.config"] + machine + ["kunit.config", "binderfs.config"],
            )
            self.assertEqual(t["goals"], ["vmlinux"])
            self.assertIsNone(t["ci_goals"], name)

    def test_uniprocessor_guest_kernels(self):
        # The 68040 has no SMP in v4.20: allnoconfig plus the system call
        # families, up-guest.config (qemu-guest.config less its SMP
        # options), the platform fragment of the build-only target m68k and
        # the machine's console.
        t = targetconf.load_target("m68k-guest")
        self.assertEqual((t["arch"], t["cross_compile"]), ("m68k", "m68k-linux-gnu-"))
        self.assertEqual(t["defconfig"], "allnoconfig")
        self.assertEqual(
            t["fragments"],
            [
                "y2038-calls.config",
                "up-guest.config",
                "m68k-mac.config",
                "mac-q800.config",
                "kunit.config",
                "binderfs.config",
            ],
        )
        self.assertIn("m68k-mac.config", targetconf.load_target("m68k")["fragments"])
        self.assertEqual(t["goals"], ["vmlinux"])
        # 32-bit PA-RISC has SMP: every guest's fragment, as mips and ppc.
        t = targetconf.load_target("parisc-guest")
        self.assertEqual((t["arch"], t["cross_compile"]), ("parisc", "hppa-linux-gnu-"))
        self.assertEqual(
            t["fragments"],
            [
                "qemu-guest.config",
                "hppa-qemu.config",
                "kunit.config",
                "binderfs.config",
            ],
        )
        up = set(
            symbol
            for _, _, symbol in targetconf.fragment_lines(
                {"fragments": ["up-guest.config"]}
            )
        )
        guest = set(
            symbol
            for _, _, symbol in targetconf.fragment_lines(
                {"fragments": ["qemu-guest.config"]}
            )
        )
        self.assertEqual(up - guest, set())
        self.assertFalse(up & {"SMP", "CPUSETS", "HOTPLUG_CPU"})

    def test_every_fragment_is_used(self):
        d = os.path.join(TOP, "configs", "targets")
        used = set()
        for fn in os.listdir(d):
            used |= set(targetconf.load_target(fn[: -len(".conf")])["fragments"])
        self.assertEqual(sorted(os.listdir(common.FRAGMENTS)), sorted(used))

    def test_every_guest_boots_in_ci_but_the_debug_and_outside_ci_ones(self):
        # `lk test` boots the guests whose target the build stage built.
        # The debug guests are `lk fuzz`'s (their names say so); a guest
        # left out of CI for another reason says why in its outside_ci
        # key, and `lk test --full` builds its target and boots it.
        d = os.path.join(TOP, "configs", "qemu")
        ci, full = targetconf.matrix("ci"), targetconf.matrix("full")
        outside = []
        for fn in sorted(os.listdir(d)):
            if not fn.endswith(".conf"):
                continue
            conf = common.read_kv(os.path.join(d, fn))
            target = conf["target"]
            debug = fn.endswith("-debug.conf")
            why = conf.get("outside_ci", "")
            self.assertFalse(debug and "outside_ci" in conf, fn)
            self.assertEqual(target in ci, not debug and not why, fn)
            if why:
                outside.append(fn[: -len(".conf")])
                self.assertIn(target, full, fn)
                self.assertGreater(len(why.split()), 5, fn)
        self.assertEqual(outside, ["hppa", "m68k"])

    def test_x32_config_turns_on_x32_only(self):
        lines = [
            line
            for _, line, _ in targetconf.fragment_lines({"fragments": ["x32.config"]})
        ]
        self.assertEqual(lines, ["CONFIG_X86_X32=y"])

    def test_every_patch_is_checked_on_the_plain_defconfigs(self):
        self.assertEqual(
            targetconf.matrix("bisect"),
            ["x86_64-defconfig", "x86_64-nocompat", "i386-defconfig"],
        )
        full = targetconf.matrix("full")
        for name in (
            targetconf.matrix("ci")
            + targetconf.matrix("bisect")
            + targetconf.matrix("bisect-arch")
            + targetconf.matrix("bisect-arch-full")
        ):
            self.assertIn(name, full)
