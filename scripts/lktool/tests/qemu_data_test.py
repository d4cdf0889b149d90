# SPDX-License-Identifier: GPL-2.0
"""Tests of the guests' data files and keys."""

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

from .. import boot, common, qemu, qemu_conf, serial, userspace, verdict
from .qemu_support import (
    TOKEN,
    assert_gone,
    boot_code,
    canned,
    judge,
    one_test,
    record_when_running,
    row,
    sigterm_while_booting,
    sleeping_qemu,
    statuses,
    stop,
)
from .support import HERE


class DataFiles(unittest.TestCase):
    def test_guests(self):
        names = qemu_conf.guest_names()
        self.assertIn("x86_64", names)
        self.assertIn("i386", names)
        for name in names:
            g = qemu_conf.load_guest(name)
            self.assertIn(g["init_abi"], g["abis"])
            for abi in g["abis"]:
                self.assertTrue(qemu_conf.load_abi(abi)["cc"])
        self.assertEqual(qemu_conf.load_guest("x86_64")["abis"], ["64", "32"])
        self.assertEqual(qemu_conf.load_guest("i386")["abis"], ["32"])
        # arm64 runs 32-bit arm programs through AArch32 compat.
        self.assertEqual(qemu_conf.load_guest("arm64")["abis"], ["arm64", "arm"])
        self.assertEqual(qemu_conf.load_guest("arm")["abis"], ["arm"])
        # The 32-bit big-endian guests run their own ABI only.
        self.assertEqual(qemu_conf.load_guest("mips")["abis"], ["mips"])
        self.assertEqual(qemu_conf.load_guest("ppc")["abis"], ["ppc"])
        for name in ("m68k", "hppa"):
            self.assertEqual(qemu_conf.load_guest(name)["abis"], [name])
        # The 64-bit MIPS kernel runs the same o32 programs through compat.
        mips64 = qemu_conf.load_guest("mips64")
        self.assertEqual((mips64["abis"], mips64["init_abi"]), (["mips"], "mips"))
        self.assertEqual(mips64["target"], "mips64-guest")
        # Pointer authentication: absent on the Cortex-A57, present on max.
        max_ = qemu_conf.load_guest("arm64-max")
        self.assertEqual(max_["target"], qemu_conf.load_guest("arm64")["target"])
        self.assertEqual(max_["tests"], ["pac_test", "pac_kvm_test", "pacga_el2_test"])
        for name, has in (("arm64", "absent"), ("arm64-max", "present")):
            patterns = dict(
                (k, rx.pattern) for k, rx in qemu_conf.load_guest(name)["expects"]
            )
            self.assertEqual(patterns["expect_paca"], "^# HWCAP_PACA: %s$" % has, name)

    def test_abis(self):
        self.assertEqual(
            qemu_conf.abi_names(),
            ["32", "64", "arm", "arm64", "hppa", "m68k", "mips", "ppc"],
        )
        for name, cc, arch in (
            ("arm", "arm-linux-gnueabihf-gcc", "arm"),
            ("arm64", "aarch64-linux-gnu-gcc", "arm64"),
            ("mips", "mips-linux-gnu-gcc", "mips"),
            ("ppc", "powerpc-linux-gnu-gcc", "powerpc"),
            ("m68k", "m68k-linux-gnu-gcc", "m68k"),
            ("hppa", "hppa-linux-gnu-gcc", "parisc"),
        ):
            a = qemu_conf.load_abi(name)
            self.assertEqual((a["name"], a["cc"], a["headers_arch"]), (name, cc, arch))
            self.assertIn("-static", a["cflags"])
        # The arm headers' system call numbers are generated from the
        # table in arch/arm/tools.
        self.assertEqual(
            qemu_conf.load_abi("arm")["headers_inputs"],
            ["arch/arm/include/uapi", "arch/arm/tools"],
        )
        # powerpc's headers come from arch/powerpc (ARCH=powerpc).
        self.assertEqual(
            userspace.headers_srcarch(qemu_conf.load_abi("ppc")), "powerpc"
        )
        with self.assertRaisesRegex(
            common.Failure, r"ABIs: 32 64 arm arm64 hppa m68k mips ppc\)"
        ):
            qemu_conf.load_abi("armel")

    def test_abi_header_inputs_are_in_the_tree(self):
        tree = os.path.join(common.out_dir(), "tree")
        if not os.path.isdir(tree):
            self.skipTest("no kernel tree at %s (scripts/lk apply)" % tree)
        for name in qemu_conf.abi_names():
            for rel in qemu_conf.load_abi(name)["headers_inputs"]:
                self.assertTrue(os.path.isdir(os.path.join(tree, rel)), (name, rel))

    def test_never_kvm(self):
        g = qemu_conf.load_guest("i386")
        cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
        self.assertEqual(cmd[1:3], ["-accel", "tcg"])
        self.assertFalse([c for c in cmd if "kvm" in c])
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "bad.conf"), "w") as f:
                f.write(
                    "target = x\nkernel = k\nqemu = q\nabis = 64\n"
                    "init_abi = 64\nqemu_args = -enable-kvm\n"
                )
            with self.assertRaises(common.Failure):
                qemu_conf.load_guest("bad", conf_dir=d)
            for accel in ("kvm", "tcg:kvm", "hvf,thread=single"):
                with self.assertRaises(common.Failure, msg=accel):
                    qemu_conf.load_guest("i386", overrides={"accel": accel})

    def test_accel_options(self):
        g = qemu_conf.load_guest("x86_64", overrides={"accel": "tcg,thread=single"})
        cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
        self.assertEqual(cmd[1:3], ["-accel", "tcg,thread=single"])

    def test_command_line(self):
        g = qemu_conf.load_guest("x86_64", overrides={"smp": "2"})
        cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
        append = cmd[cmd.index("-append") + 1]
        self.assertIn("console=ttyS0 panic=-1", append)
        self.assertIn("lkqemu.token=%s" % TOKEN, append)
        self.assertEqual(cmd[cmd.index("-smp") + 1], "2")
        for arg in ("-nographic", "-no-reboot"):
            self.assertIn(arg, cmd)

    def test_arm_command_lines(self):
        # The virt machine, its CPU, and the console on its PL011 UART.
        for name, binary, cpu, abi in (
            ("arm", "qemu-system-arm", "cortex-a15", "arm"),
            ("arm64", "qemu-system-aarch64", "cortex-a57", "arm64"),
        ):
            g = qemu_conf.load_guest(name)
            cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
            self.assertEqual(cmd[:3], [binary, "-accel", "tcg"])
            self.assertEqual(cmd[cmd.index("-M") + 1], "virt")
            self.assertEqual(cmd[cmd.index("-cpu") + 1], cpu)
            self.assertEqual(cmd[cmd.index("-nic") + 1], "none")
            append = cmd[cmd.index("-append") + 1]
            self.assertTrue(append.startswith("console=ttyAMA0 panic=-1 "), append)
            self.assertIn("lkqemu.abi=%s" % abi, append)
            self.assertEqual(cmd[cmd.index("-kernel") + 1], "/k")

    def test_console_on_a_later_serial_port(self):
        # A board whose first serial port is not the console's (console_port
        # N): the ports before it get -serial null, stdio is the Nth.
        g = qemu_conf.load_guest("m68k", overrides={"console_port": "2"})
        cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
        serial = [cmd[i + 1] for i, c in enumerate(cmd) if c == "-serial"]
        self.assertEqual(serial, ["null", "null", "stdio"])
        self.assertEqual(cmd[cmd.index("-kernel") + 1], "/k")
        # The guests' console is the first port (q800's SCC included).
        for name in qemu_conf.guest_names():
            g = qemu_conf.load_guest(name)
            self.assertEqual(g["console_port"], 0, name)
            cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
            serial = [cmd[i + 1] for i, c in enumerate(cmd) if c == "-serial"]
            self.assertEqual(serial, ["stdio"], name)
        for bad in ("-1", "one"):
            with self.assertRaises(common.Failure, msg=bad):
                qemu_conf.load_guest("m68k", overrides={"console_port": bad})

    def test_m68k_and_hppa_command_lines(self):
        for name, binary, machine, kernel in (
            ("m68k", "qemu-system-m68k", ["-M", "q800"], "vmlinux"),
            ("hppa", "qemu-system-hppa", ["-nic", "none"], "vmlinux"),
        ):
            g = qemu_conf.load_guest(name)
            self.assertEqual(g["kernel"], kernel)
            cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
            self.assertEqual(cmd[:3], [binary, "-accel", "tcg"])
            self.assertEqual(cmd[-2:], machine)
            self.assertEqual(cmd[cmd.index("-smp") + 1], "1")
            append = cmd[cmd.index("-append") + 1]
            self.assertTrue(append.startswith("console=ttyS0 panic=-1 "), append)
            self.assertIn("lkqemu.abi=%s" % name, append)

    def test_big_endian_command_lines(self):
        # Malta and mac99 load the ELF vmlinux themselves; one CPU each, the
        # console on the 16550 (Malta) and the ESCC (mac99, as ttyS0).
        for name, binary, machine, abi, memory in (
            ("mips", "qemu-system-mips", "malta", "mips", "256"),
            ("ppc", "qemu-system-ppc", "mac99", "ppc", "512"),
        ):
            g = qemu_conf.load_guest(name)
            self.assertEqual(g["kernel"], "vmlinux")
            cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
            self.assertEqual(cmd[:3], [binary, "-accel", "tcg"])
            self.assertEqual(cmd[cmd.index("-M") + 1], machine)
            self.assertEqual(cmd[cmd.index("-nic") + 1], "none")
            self.assertEqual(cmd[cmd.index("-smp") + 1], "1")
            self.assertEqual(cmd[cmd.index("-m") + 1], memory)
            append = cmd[cmd.index("-append") + 1]
            self.assertTrue(append.startswith("console=ttyS0 panic=-1 "), append)
            self.assertIn("lkqemu.abi=%s" % abi, append)

    def test_big_endian_abis_run_the_time64_tests(self):
        # Both variants of time64_calls_test, as on i386 and arm.
        specs = dict((s.name, s) for s in qemu_conf.read_selftests())
        for name in ("time64_calls_test", "time64_calls_test_t64"):
            for abi in ("32", "arm", "mips", "ppc"):
                self.assertIn(abi, specs[name].abis, (name, abi))
        self.assertIn("-D_TIME_BITS=64", specs["time64_calls_test_t64"].flags)

    def test_selftest_list(self):
        specs = qemu_conf.read_selftests()
        self.assertTrue(specs)
        tree = os.path.join(common.out_dir(), "tree")
        for s in specs:
            self.assertTrue(set(s.abis) <= set(qemu_conf.abi_names()))
            if os.path.isdir(tree):
                self.assertTrue(os.path.exists(os.path.join(tree, s.source)), s.source)

    def test_selftest_syntax(self):
        specs = qemu_conf.parse_selftests(
            "# comment\n"
            "tools/testing/selftests/x/a.c 64,32 timeout=5 -lrt -DX=1 # c\n"
            "b.c 32 name=bee\n"
        )
        self.assertEqual(
            specs[0],
            qemu_conf.TestSpec(
                "tools/testing/selftests/x/a.c", ("64", "32"), "a", 5, ("-lrt", "-DX=1")
            ),
        )
        self.assertEqual((specs[1].name, specs[1].timeout), ("bee", 60))
        for bad in (
            "a.c",
            "a.c 16",
            "a.c 64 retries=2",
            "a.c 64 timeout=0",
            "a.o 64",
            "a.c 64\na.c 32",
            "a.c armel",
        ):
            with self.subTest(bad=bad):
                with self.assertRaises(common.Failure):
                    qemu_conf.parse_selftests(bad)

    def test_wall_limit(self):
        g = qemu_conf.load_guest("i386")
        self.assertEqual(
            boot.wall_limit(g, [("32/a", 5), ("32/b", 10)]),
            g["boot_timeout"] + 5 + 10 + 2 * (boot.KILL_WAIT + 2),
        )
        self.assertEqual(
            boot.wall_limit(g, [], 4, True),
            4 * (g["boot_timeout"] + g["kmemleak_timeout"]),
        )

    def test_config_fragments(self):
        # What each debug target's fragments add up to, not one file.
        for target, must in (
            ("x86_64-debug", ("CONFIG_KASAN=y", "CONFIG_DEBUG_KMEMLEAK=y")),
            ("i386-debug", ("CONFIG_DEBUG_KMEMLEAK=y",)),
        ):
            with open(
                os.path.join(common.TOP, "configs", "targets", target + ".conf")
            ) as f:
                frags = re.search(r"(?m)^fragments = (.*)$", f.read()).group(1).split()
            text = ""
            for name in frags:
                with open(os.path.join(common.FRAGMENTS, name)) as f:
                    text += f.read()
            for opt in must + ("CONFIG_DEBUG_FS=y",):
                self.assertIn(opt + "\n", text)
            self.assertRegex(
                text, r"CONFIG_DEBUG_KMEMLEAK_EARLY_LOG_SIZE=" r"\d{4,5}\n"
            )

    def test_help(self):
        r = subprocess.run(
            [sys.executable, os.path.join(HERE, "lk_qemu.py"), "--help"],
            stdout=subprocess.PIPE,
            universal_newlines=True,
        )
        self.assertEqual(r.returncode, 0)
        self.assertIn("initramfs", r.stdout)


# A selftest list of the GuestKeys tests' own (sources under /src).
GUEST_SPECS = """\
/src/pac_test.c  arm64  timeout=7
/src/other.c  arm64,arm
/src/x86.c  64,32
"""

# pac_test's report lines in the serial log: CR LF line ends, and a kernel
# record that cuts into one of them.
PAC_OUTPUT = (
    "# HWCAP_PACA: present\r\n# HWCAP_PACG: pre[    1.500000] "
    "random: crng init done\r\nsent\r\n"
)


def pac_log(done=True):
    """The serial log of a boot of guest g that ran arm64/pac_test."""
    text = one_test("arm64/pac_test", PAC_OUTPUT, "exit=0" if done else None, done)
    return canned(text, tests=("arm64/pac_test",), guest="g")


class GuestKeys(unittest.TestCase):
    """The optional guest keys tests = and expect[_<x>] =."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lk-qemu-test-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.specs = qemu_conf.parse_selftests(GUEST_SPECS)

    def guest(self, extra="", name="g"):
        """A guest of a conf of our own: arm64 user space, plus extra."""
        with open(os.path.join(self.tmp, name + ".conf"), "w") as f:
            f.write(
                "target = t\nkernel = Image\nqemu = qemu-system-aarch64"
                "\nabis = arm64\ninit_abi = arm64\n" + extra
            )
        return qemu_conf.load_guest(name, conf_dir=self.tmp)

    def expect_rows(self, guest, text, path="/logs/qemu-g.log"):
        r = serial.parse_log(text, path) if text is not None else None
        return verdict.judge_expects(guest, r, path)

    def test_tests_key_chooses_the_selftests(self):
        names = lambda g: [s.name for s in qemu_conf.guest_tests(g, self.specs)]
        self.assertEqual(names(self.guest()), ["pac_test", "other"])
        self.assertEqual(names(self.guest("tests =\n")), ["pac_test", "other"])
        # In the list's order, whatever the key's.
        self.assertEqual(
            names(self.guest("tests = other pac_test\n")), ["pac_test", "other"]
        )
        self.assertEqual(names(self.guest("tests = pac_test\n")), ["pac_test"])

    def test_unknown_test_name_is_an_error(self):
        # x86.c is in the list, but for none of the guest's ABIs.
        for names in ("nosuch", "pac_test x86"):
            with self.subTest(names=names):
                g = self.guest("tests = %s\n" % names)
                with self.assertRaisesRegex(
                    common.Failure,
                    r"g\.conf: tests: no selftest "
                    r"(nosuch|x86) for ABI arm64 in the selftest list",
                ):
                    qemu_conf.guest_tests(g, self.specs)

    def test_commands_stop_at_an_unknown_test_name(self):
        # Before anything is built or booted (the real arm64 guest,
        # with our own selftest list).
        tests = os.path.join(self.tmp, "selftests.txt")
        with open(tests, "w") as f:
            f.write(GUEST_SPECS)
        for cmd in ("run", "initramfs", "boot"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = qemu.main(
                    [
                        "--out",
                        self.tmp,
                        cmd,
                        "--guest",
                        "arm64",
                        "--tests",
                        tests,
                        "--set",
                        "tests=pac_test nosuch",
                    ]
                )
            self.assertEqual(rc, 2, cmd)
            self.assertIn("lk_qemu %s: " % cmd, err.getvalue())
            self.assertIn(
                "arm64.conf: tests: no selftest nosuch for ABI arm64 or arm",
                err.getvalue(),
            )

    def test_initramfs_command_packs_the_listed_tests(self):
        tests = os.path.join(self.tmp, "selftests.txt")
        with open(tests, "w") as f:
            f.write(GUEST_SPECS)
        scratch = os.path.join(self.tmp, "scratch")
        for abi, name in (
            ("arm64", "init"),
            ("arm64", "pac_test"),
            ("arm64", "other"),
            ("arm", "other"),
        ):
            os.makedirs(os.path.join(scratch, "bin", abi), exist_ok=True)
            with open(os.path.join(scratch, "bin", abi, name), "wb") as f:
                f.write(b"\x7fELF")
        packed = []
        real = userspace.make_initramfs
        userspace.make_initramfs = lambda *a: packed.append(real(*a))
        try:
            for tests_key in ("", "pac_test"):
                with contextlib.redirect_stdout(io.StringIO()):
                    self.assertEqual(
                        qemu.main(
                            [
                                "--out",
                                self.tmp,
                                "initramfs",
                                "--guest",
                                "arm64",
                                "--tests",
                                tests,
                                "--scratch",
                                scratch,
                                "--set",
                                "tests=" + tests_key,
                            ]
                        ),
                        0,
                    )
        finally:
            userspace.make_initramfs = real
        self.assertEqual(
            packed, [["arm64/pac_test", "arm64/other", "arm/other"], ["arm64/pac_test"]]
        )

    def test_run_guest_builds_boots_and_expects_the_listed_tests(self):
        # Compiling and booting faked: a canned log for what was expected.
        os.makedirs(os.path.join(self.tmp, "src"))
        specs = qemu_conf.parse_selftests(
            GUEST_SPECS.replace("/src/", os.path.join(self.tmp, "src") + "/")
        )
        for s in specs:
            open(s.source, "w").close()
        kernel = os.path.join(self.tmp, "Image")
        open(kernel, "w").close()
        compiled, booted = [], []

        def fake_compile(abi, source, output, logfile, includes=(), flags=()):
            compiled.append(os.path.basename(output))
            os.makedirs(os.path.dirname(output), exist_ok=True)
            with open(output, "wb") as f:
                f.write(b"\x7fELF")
            return output

        def fake_boot(guest, kernel, initramfs, log_path, expected=(), *args, **kwargs):
            booted.append(list(expected))
            with open(log_path, "w", newline="") as f:
                f.write(pac_log())

        g = self.guest(
            "tests = pac_test\nexpect_paca = ^# HWCAP_PACA: "
            "present$\nexpect_pacg = ^# HWCAP_PACG: absent$\n"
        )
        real = userspace.compile_program, boot.boot
        userspace.compile_program, boot.boot = fake_compile, fake_boot
        try:
            results = common.Results(echo=False)
            with contextlib.redirect_stdout(io.StringIO()):
                qemu.run_guest(
                    g,
                    specs,
                    None,
                    os.path.join(self.tmp, "scratch"),
                    self.tmp,
                    results,
                    build_dir=self.tmp,
                    kernel=kernel,
                )
        finally:
            userspace.compile_program, boot.boot = real
        self.assertEqual(compiled, ["pac_test", "init"])
        self.assertEqual(booted, [["arm64/pac_test"]])
        st = statuses(results.rows)
        self.assertEqual(st["qemu g/arm64: pac_test"], "PASS", results.rows)
        self.assertEqual(st["qemu g: expect paca"], "PASS", results.rows)
        self.assertEqual(st["qemu g: expect pacg"], "FAIL", results.rows)

    def test_expect_rows(self):
        g = self.guest(
            "expect = ^\\[ +\\d+\\.\\d+\\] random: crng init "
            "done$\nexpect_paca = ^# HWCAP_PACA: present$\n"
            "expect_pacg = ^# HWCAP_PACG: present$\n"
            "expect_gone = ^# HWCAP_PACA: absent$\n"
            "expect_host = ^# lk-qemu-host\n"
        )
        rows = self.expect_rows(g, pac_log())
        # One row per key, in key order; the host's lines are not the
        # serial log.
        self.assertEqual(
            [r[:2] for r in rows],
            [
                ("PASS", "qemu g: expect"),
                ("FAIL", "qemu g: expect gone"),
                ("FAIL", "qemu g: expect host"),
                ("PASS", "qemu g: expect paca"),
                ("PASS", "qemu g: expect pacg"),
            ],
        )
        self.assertEqual(
            row(rows, "qemu g: expect gone")[2],
            "no match for /^# HWCAP_PACA: absent$/ in the "
            "serial log; log at /logs/qemu-g.log",
        )

    def test_unfinished_boot_fails_its_expects(self):
        # The guest crashed after printing what is expected: unproven.
        g = self.guest("expect_paca = ^# HWCAP_PACA: present$\n")
        crashed = pac_log(done=False)
        self.assertEqual(row(judge(crashed), "qemu g/arm64: pac_test")[0], "FAIL")
        for text in (crashed, None):  # None: qemu did not run
            rows = self.expect_rows(g, text)
            self.assertEqual(len(rows), 1)
            self.assertEqual(rows[0][:2], ("FAIL", "qemu g: expect paca"))
            self.assertIn("not checked: the guest did not finish its tests", rows[0][2])
            self.assertIn("/^# HWCAP_PACA: present$/", rows[0][2])
        # No expect keys, no rows.
        self.assertEqual(self.expect_rows(self.guest(), crashed), [])

    def test_invalid_regex_is_an_error(self):
        with self.assertRaisesRegex(
            common.Failure, r"g\.conf: expect_x is " r"not a regular expression"
        ):
            self.guest("expect_x = ^(# unbalanced$\n")
        with self.assertRaisesRegex(common.Failure, "expect is not"):
            qemu_conf.load_guest(
                "g", conf_dir=self.tmp, overrides={"expect": "a[", "expect_x": "b"}
            )

    def test_hash_is_text_in_expect_values_only(self):
        g = self.guest(
            "# expect_c = (\n  expect_a = ^# A #1$ \n"
            "expectation = x # comment\nexpect_b =\n"
            "memory = 256 # MiB\n"
        )
        self.assertEqual(
            [(k, rx.pattern) for k, rx in g["expects"]], [("expect_a", "^# A #1$")]
        )
        self.assertEqual((g["memory"], g["expectation"]), ("256", "x"))


class Interrupted(unittest.TestCase):
    """SIGTERM to the tool during a boot kills qemu too (it runs in a
    session of its own, so the signal does not reach it)."""

    def test_sigterm_kills_qemu(self):
        with tempfile.TemporaryDirectory() as d:
            fake, pidfile, kernel, log = sleeping_qemu(d)
            code = boot_code(HERE, fake, kernel, log)
            sigterm_while_booting(self, code, pidfile)
            with open(log) as f:
                self.assertRegex(f.read(), r"end status=-9 killed=interrupted ")

    def test_sigterm_as_soon_as_qemu_runs_kills_it(self):
        """On a loaded machine the signal can come while boot() has just
        started qemu and not yet begun to watch it: qemu is killed all
        the same.  (Here the signal comes the moment boot() records the
        process.)"""
        with tempfile.TemporaryDirectory() as d:
            fake, pidfile, kernel, log = sleeping_qemu(d)
            now = record_when_running(
                pidfile, after="os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)"
            )
            code = boot_code(HERE, fake, kernel, log, before=now)
            p = subprocess.Popen([sys.executable, "-c", code])
            self.addCleanup(p.kill)
            self.assertEqual(p.wait(timeout=60), 128 + signal.SIGTERM)
            with open(pidfile) as f:
                qemu_pid = int(f.read())
            self.addCleanup(stop, qemu_pid)
            assert_gone(self, qemu_pid)
