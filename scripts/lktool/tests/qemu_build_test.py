# SPDX-License-Identifier: GPL-2.0
"""Tests of the guests' user space: header export, initramfs, /init, the
sources of the guest programs."""

import glob
import os
import shutil
import subprocess
import tempfile
import unittest

from .. import common, qemu_conf, userspace
from .support import QUICK


class HeaderExport(unittest.TestCase):
    """One uapi header export serves every ABI of a source directory."""

    def test_x86_abis_share_one_export_and_arm_does_not(self):
        exports = []

        def fake_make(cmd, logfile):
            usr = [a for a in cmd if a.startswith("INSTALL_HDR_PATH=")][0]
            os.makedirs(os.path.join(usr.split("=", 1)[1], "include", "linux"))
            exports.append([a for a in cmd if a.startswith("ARCH=")][0])
            return 0

        with tempfile.TemporaryDirectory() as d:
            tree = os.path.join(d, "tree")
            for rel in userspace.HEADERS_COMMON_INPUTS + (
                "arch/x86/include/uapi",
                "arch/arm/include/uapi",
            ):
                if rel.endswith("uapi"):
                    os.makedirs(os.path.join(tree, rel, "asm"))
                    rel = os.path.join(rel, "asm", "unistd.h")
                os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
                with open(os.path.join(tree, rel), "w") as f:
                    f.write(rel)
            x86 = {
                "headers_arch": "x86_64",
                "headers_inputs": ["arch/x86/include/uapi"],
            }
            i386 = dict(x86, headers_arch="i386")
            arm = {"headers_arch": "arm", "headers_inputs": ["arch/arm/include/uapi"]}
            scratch = os.path.join(d, "scratch")
            log = os.path.join(d, "log")
            real = userspace.run_logged
            userspace.run_logged = fake_make
            try:
                a = userspace.export_headers(tree, x86, scratch, log)
                b = userspace.export_headers(tree, i386, scratch, log)
                c = userspace.export_headers(tree, arm, scratch, log)
                # A changed input makes the shared export stale.
                with open(
                    os.path.join(tree, "arch/x86/include/uapi/asm/unistd.h"), "a"
                ) as f:
                    f.write("changed")
                e = userspace.export_headers(tree, i386, scratch, log)
            finally:
                userspace.run_logged = real
        self.assertEqual(a, b)
        self.assertEqual(a, e)
        self.assertNotEqual(a, c)
        self.assertEqual(exports, ["ARCH=x86_64", "ARCH=arm", "ARCH=i386"])


class ProgramSources(unittest.TestCase):
    def test_every_c_file_is_built_into_one_program(self):
        programs = {"init": [userspace.INIT_C]}
        for name in ("fuzz", "bench"):
            programs[name] = userspace.program_sources(name)
        for name, sources in programs.items():
            self.assertEqual(os.path.basename(sources[0]), name + ".c", sources)
        built = [s for sources in programs.values() for s in sources]
        self.assertEqual(
            sorted(built), sorted(glob.glob(os.path.join(userspace.PROGRAMS, "*.c")))
        )
        self.assertGreater(len(programs["fuzz"]), 1)
        self.assertGreater(len(programs["bench"]), 1)

    def test_failure_names_every_source(self):
        abi = {"name": "64", "cc": "false", "cflags": []}
        with tempfile.TemporaryDirectory() as d, self.assertRaises(
            common.Failure
        ) as cm:
            userspace.compile_program(
                abi, ["/x/p.c", "/x/p_a.c", "/x/p_b.c"], d + "/p", d + "/log"
            )
        self.assertIn("/x/p.c (with p_a.c, p_b.c) did not compile", str(cm.exception))


def cpio(archive, options):
    """What cpio with options prints of a gzipped archive."""
    return subprocess.run(
        "gzip -dc %s | cpio %s" % (archive, options),
        shell=True,
        stdout=subprocess.PIPE,
        universal_newlines=True,
    ).stdout


class Initramfs(unittest.TestCase):
    @unittest.skipUnless(shutil.which("cpio"), "cpio is not installed")
    def test_archive_lists_with_cpio(self):
        with tempfile.TemporaryDirectory() as d:
            init = os.path.join(d, "init")
            prog = os.path.join(d, "prog")
            for p in (init, prog):
                with open(p, "wb") as f:
                    f.write(b"\x7fELF" + os.urandom(5))
            spec = qemu_conf.TestSpec("x.c", ("32",), "prog", 7, ())
            rd = os.path.join(d, "rd.cpio.gz")
            names = userspace.make_initramfs(
                rd, init, [userspace.Built(spec, "32", prog)], scale=2
            )
            self.assertEqual(names, ["32/prog"])
            listing = cpio(rd, "-itv --quiet")
            manifest = cpio(rd, "-i --quiet --to-stdout lk-qemu/manifest")
        self.assertRegex(
            listing, r"(?m)^crw------- +1 root +root +5, +1 .* " r"dev/console$"
        )
        self.assertRegex(listing, r"(?m)^-rwxr-xr-x .* root +root .* init$")
        self.assertRegex(listing, r"(?m) lk-qemu/32/prog$")
        self.assertEqual(manifest, "14 32/prog /lk-qemu/32/prog\n")


@unittest.skipIf(QUICK, "--quick: no compiler")
class InitSource(unittest.TestCase):
    def test_init_compiles_without_warnings(self):
        for name in qemu_conf.abi_names():
            abi = qemu_conf.load_abi(name)
            if not shutil.which(abi["cc"]):
                self.fail("%s is not installed (scripts/packages.txt)" % abi["cc"])
            with tempfile.TemporaryDirectory() as d:
                r = subprocess.run(
                    [
                        abi["cc"],
                        "-static",
                        "-O2",
                        "-Wall",
                        "-Wextra",
                        "-Werror",
                        "-o",
                        os.path.join(d, "init"),
                        userspace.INIT_C,
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    universal_newlines=True,
                )
                self.assertEqual(r.returncode, 0, r.stdout)
