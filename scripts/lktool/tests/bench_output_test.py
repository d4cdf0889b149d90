# SPDX-License-Identifier: GPL-2.0
"""Tests of the benchmark (bench.py, bench_output.py) and of
scripts/qemu/bench*.c: the CSV, table and chart, the guest overrides, the
manifest and the initramfs; and bench compiled for the 64 and 32 ABIs
with -Wall -Wextra -Werror and run on the host (no guest booted, no
kernel built).  bench_test.py has the parser and the judgement.

  python3 scripts/lktool/tests bench            all the benchmark's tests
  python3 scripts/lktool/tests --quick bench    no compiler, no bench run

bench is compiled against the host's kernel headers and, when
`lk_qemu.py build` or `lk_bench.py` exported them, against the tree's
($LK_OUT/qemu/headers/x86/usr/include).  With strace installed, its error
paths are driven by strace's fault injection (ENOSYS from the _time64
calls, an error after the check); without it those tests are skipped and
say so.  The chart test needs python3-matplotlib (else skipped).
"""

import contextlib
import csv
import gzip
import importlib
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

from unittest import mock

from .. import bench, bench_judge, bench_output, boot, common, qemu_conf, userspace
from .bench_test import (
    CASES_32,
    CASES_64,
    INCLUDES,
    INIT_LINE,
    INIT_MAX_ARGS,
    TOKEN,
    case,
    numbered,
)
from . import support
from .qemu_support import cpio_files
from .support import QUICK


def some_rows():
    return [
        bench_judge.judge_case(
            "x86_64", "64", "ppoll", case("p", 1234.0), [case("p", 1200.0)] * 2
        ),
        bench_judge.judge_case(
            "i386", "32", "ppoll-time64", case("p", error="ENOSYS"), [case("p", 745.5)]
        ),
        bench_judge.judge_case("i386", "32", "futex-wake", None, [None]),
    ]


class Output(unittest.TestCase):
    def test_csv(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "bench.csv")
            bench_output.write_csv(path, some_rows())
            with open(path, newline="") as f:
                got = list(csv.reader(f))
            self.assertEqual(os.listdir(os.path.dirname(path)), ["bench.csv"])
        self.assertEqual(
            got,
            [
                ["guest", "abi", "case", "base", "tip", "ratio"],
                ["x86_64", "64", "ppoll", "1234.00", "1200.00", "0.9724"],
                ["i386", "32", "ppoll-time64", "ENOSYS", "745.50", ""],
                ["i386", "32", "futex-wake", "", "", ""],
            ],
        )

    def test_table(self):
        lines = bench_output.table(some_rows())
        self.assertEqual(len(lines), 4)
        self.assertEqual(
            lines[0].split(), ["guest/abi", "case", "base", "tip", "ratio", "status"]
        )
        self.assertEqual(
            lines[1].split(),
            ["x86_64/64", "ppoll", "1234.00", "1200.00", "0.97", "PASS"],
        )
        self.assertEqual(
            lines[3].split(), ["i386/32", "futex-wake", "-", "-", "-", "FAIL"]
        )
        # right-aligned numbers: the columns end in the same place
        ends = {l.index("PASS" if "PASS" in l else "FAIL") for l in lines[1:]}
        self.assertEqual(len(ends), 1)

    def test_chart_without_matplotlib(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(
            sys.modules, {"matplotlib": None}
        ):
            path = os.path.join(d, "bench.png")
            self.assertFalse(bench_output.chart(path, some_rows()))
            self.assertFalse(os.path.exists(path))

    def test_chart(self):
        if importlib.util.find_spec("matplotlib") is None:
            self.skipTest("python3-matplotlib is not installed")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out", "bench.png")
            self.assertTrue(bench_output.chart(path, some_rows()))
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_chart_by_debians_python_from_the_csv(self):
        """Another python3 first on PATH: Debian's draws from the CSV."""
        if (
            not os.path.exists(bench_output.DEBIAN_PYTHON)
            or subprocess.run(
                [bench_output.DEBIAN_PYTHON, "-c", "import matplotlib"],
                stderr=subprocess.DEVNULL,
            ).returncode
        ):
            self.skipTest("no python3-matplotlib for %s" % bench_output.DEBIAN_PYTHON)
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(
            sys.modules, {"matplotlib": None}
        ), mock.patch.object(sys, "executable", "/nonexistent/python3"):
            csv_path = os.path.join(d, "bench.csv")
            bench_output.write_csv(csv_path, some_rows())
            self.assertEqual(
                [r.case for r in bench_output.read_csv_ratios(csv_path)], ["ppoll"]
            )
            path = os.path.join(d, "bench.png")
            self.assertTrue(bench_output.chart(path, some_rows(), csv_path))
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            # without the CSV there is nothing to hand over
            self.assertFalse(bench_output.chart(path + "2", some_rows()))


class Guests(unittest.TestCase):
    def test_x86_64(self):
        g = bench.bench_guest("x86_64")
        self.assertEqual(g["smp"], "1")
        self.assertEqual(g["qemu_args"], ["-nic", "none"] + list(bench.ICOUNT))
        self.assertNotIn("maxcpus", g["append"])
        self.assertEqual(g["abis"], ["64", "32"])
        cmd = boot.qemu_command(g, "/k", "/rd", TOKEN)
        self.assertEqual(cmd[cmd.index("-smp") + 1], "1")
        self.assertEqual(cmd[cmd.index("-icount") + 1], "shift=0,sleep=off")
        self.assertNotIn("-numa", cmd)
        self.assertFalse([a for a in cmd if "memory-backend" in a])
        self.assertNotIn("maxcpus", cmd[cmd.index("-append") + 1])

    def test_i386(self):
        g = bench.bench_guest("i386")
        self.assertEqual((g["smp"], g["abis"], g["init_abi"]), ("1", ["32"], "32"))
        self.assertIn("-icount", g["qemu_args"])

    def test_other_keys_are_kept(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "g.conf"), "w") as f:
                f.write(
                    "target = t\nkernel = k\nqemu = q\nabis = 32\n"
                    "init_abi = 32\nsmp = 4\nqemu_args = -numa x\n"
                    "append = quiet maxcpus=3 foo=1\nmemory = 256\n"
                )
            g = bench.bench_guest("g", d)
        self.assertEqual(g["append"], "quiet foo=1")
        self.assertEqual(g["memory"], "256")
        self.assertEqual(g["qemu_args"][:2], ["-nic", "none"])


class Manifest(unittest.TestCase):
    def test_lines(self):
        lines = bench.manifest_lines(["64", "32"], 300, 7, 45)
        self.assertEqual(
            lines,
            [
                "45 64/bench /lk-qemu/64/bench --calls 300 --batches 7\n",
                "45 32/bench /lk-qemu/32/bench --calls 300 --batches 7\n",
            ],
        )
        for line in lines:
            self.assertLess(len(line.encode()), INIT_LINE)
            self.assertLessEqual(len(line.split()) - 2, INIT_MAX_ARGS)

    def test_limits(self):
        self.assertEqual(bench.bench_timeout(200, 11), bench.MIN_TIMEOUT)
        # the largest run: 25 cases * 103 batches * 10^10 instructions
        big = bench.bench_timeout(bench.MAX_CALLS, bench.MAX_BATCHES)
        self.assertGreaterEqual(big, 2 * 25 * 103 * 10**10 / 10**9)
        g = bench.bench_guest("i386")
        limit = bench.wall_limit(g, [20])
        self.assertEqual(
            limit,
            g["boot_timeout"] + 20 * 10**9 / bench.ICOUNT_RATE + boot.KILL_WAIT + 2,
        )
        self.assertEqual(
            bench.wall_limit(g, [20, 20], scale=4) - g["boot_timeout"] * 4,
            2 * (limit - g["boot_timeout"]),
        )

    def test_cases_constant_counts_the_32_bit_cases(self):
        self.assertEqual(bench.CASES, len(CASES_32))

    def test_init_limits_are_what_this_test_assumes(self):
        with open(userspace.INIT_C) as f:
            src = f.read()
        self.assertRegex(src, r"#define MAX_ARGS\s+%d\b" % INIT_MAX_ARGS)
        self.assertIn("line[%d]" % INIT_LINE, src)

    def test_limits_match_bench_c(self):
        src = ""
        for path in bench.BENCH_SOURCES:
            with open(path) as f:
                src += f.read()
        for name, value in (
            ("MAX_BATCHES", bench.MAX_BATCHES),
            ("MAX_CALLS", bench.MAX_CALLS),
        ):
            self.assertRegex(src, r"#define %s\s+%d\n" % (name, value))
        self.assertIn(
            "long calls = %d, batches = %d;"
            % (bench.DEFAULT_CALLS, bench.DEFAULT_BATCHES),
            src,
        )

    def test_initramfs(self):
        with tempfile.TemporaryDirectory() as d:
            paths = {}
            for n in ("init", "b64", "b32"):
                paths[n] = os.path.join(d, n)
                with open(paths[n], "wb") as f:
                    f.write(b"\x7fELF-" + n.encode())
            lines = bench.manifest_lines(["64", "32"], 200, 11, 20)
            rd = os.path.join(d, "x", "bench.cpio.gz")
            bench.bench_initramfs(
                rd, paths["init"], [("64", paths["b64"]), ("32", paths["b32"])], lines
            )
            with gzip.open(rd) as f:
                files = cpio_files(f.read())
        for path, content in (
            ("init", b"init"),
            ("lk-qemu/64/bench", b"b64"),
            ("lk-qemu/32/bench", b"b32"),
        ):
            mode, data = files[path]
            self.assertEqual(data, b"\x7fELF-" + content, path)
            self.assertTrue(stat.S_ISREG(mode), path)
            self.assertEqual(mode & 0o777, 0o755, path)
        self.assertEqual(files["lk-qemu/manifest"][1].decode(), "".join(lines))
        self.assertTrue(stat.S_ISCHR(files["dev/console"][0]))
        self.assertTrue(stat.S_ISDIR(files["tmp"][0]))
        # what the manifest runs is in the archive
        for line in lines:
            self.assertIn(line.split()[2].lstrip("/"), files)


class Main(unittest.TestCase):
    def test_bad_numbers(self):
        for args in (["--calls", "0"], ["--batches", "102"], ["--repeat", "x"]):
            with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(
                SystemExit
            ) as cm:
                bench.main(args + ["--out", "/nonexistent"])
            self.assertEqual(cm.exception.code, 2, args)
            self.assertIn("wants a number", err.getvalue())

    def test_non_x86_guest(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stderr(
            io.StringIO()
        ) as err, contextlib.redirect_stdout(io.StringIO()):
            code = bench.main(["--guest", "arm64", "--out", d])
        self.assertEqual(code, 2)
        self.assertIn("x86 guests only", err.getvalue())


def host_headers():
    """Include directories to build bench against: [(label, dirs)]."""
    out = [("system", [])]
    exported = os.path.join(
        common.out_dir(), "qemu", "headers", "x86", "usr", "include"
    )
    if os.path.isdir(os.path.join(exported, "linux")):
        out.append(("exported", [exported]))
    return out


def kernel_has_time64():
    m = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return bool(m) and (int(m.group(1)), int(m.group(2))) >= (5, 1)


@unittest.skipIf(QUICK, "--quick: no compiler")
class Program(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="lk-bench-test.")
        cls.builds = {}
        for abi_name in ("64", "32"):
            abi = qemu_conf.load_abi(abi_name)
            for label, inc in host_headers():
                out = os.path.join(cls.dir, "bench-%s-%s" % (abi_name, label))
                if not shutil.which(abi["cc"]):
                    cls.builds[abi_name, label] = (
                        None,
                        "%s is not installed" % abi["cc"],
                    )
                    continue
                r = subprocess.run(
                    [abi["cc"]]
                    + abi["cflags"]
                    + ["-Wextra", "-Werror"]
                    + ["-I" + i for i in inc]
                    + ["-o", out]
                    + bench.BENCH_SOURCES,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    universal_newlines=True,
                )
                cls.builds[abi_name, label] = (
                    out if r.returncode == 0 else None,
                    r.stdout,
                )

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def binary(self, abi):
        """bench built for abi, on a host that can run it (else skip)."""
        prog, text = self.builds[abi, "system"]
        if prog is None and "not installed" in text:
            self.skipTest(text)
        self.assertIsNotNone(prog, text)
        support.skip_unless_host_runs(self, abi)
        return prog

    def run_bench(self, argv, prefix=(), timeout=120):
        return subprocess.run(
            list(prefix) + argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=timeout,
        )

    def test_compiles_without_warnings(self):
        for (abi, label), (prog, text) in sorted(self.builds.items()):
            with self.subTest(abi=abi, headers=label):
                if prog is None and "not installed" in text:
                    self.skipTest(text)
                self.assertIsNotNone(prog, text)

    def check_run(self, abi, names):
        r = self.run_bench([self.binary(abi), "--calls", "20", "--batches", "3"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = bench_judge.parse_bench(numbered(r.stdout))
        self.assertEqual(run.malformed, [])
        self.assertTrue(run.done)
        self.assertEqual(run.abi, abi)
        self.assertEqual(list(run.cases), names)
        self.assertEqual(run.config.get("calls"), "20")
        self.assertEqual(run.config.get("batches"), "3")
        for c in run.cases.values():
            if (
                c.error == "ENOSYS"
                and bench_judge.is_time64(c.name)
                and not kernel_has_time64()
            ):
                continue
            self.assertIsNone(c.error, c)
            self.assertEqual((c.n, c.batches), (20, 3), c)
            self.assertLessEqual(c.min, c.median)
            self.assertLessEqual(c.median, c.max)
            base = (
                c.name[: -len("-time64")] if bench_judge.is_time64(c.name) else c.name
            )
            self.assertEqual(c.fields.get("includes"), INCLUDES.get(base), c)
        # the harness is cheap next to a system call (host, not icount)
        self.assertLess(run.cases["empty"].median, run.cases["getppid"].median)
        return run

    def test_runs_64(self):
        self.check_run("64", CASES_64)

    def test_runs_32(self):
        self.check_run("32", CASES_32)

    def test_usage(self):
        prog = self.binary("64")
        for argv in (
            ["--calls"],
            ["--calls", "0"],
            ["--batches", "102"],
            ["--calls", "5x"],
            ["--bogus"],
        ):
            r = self.run_bench([prog] + argv)
            self.assertEqual(r.returncode, 2, argv)
            self.assertIn("usage: bench", r.stderr)
            self.assertEqual(r.stdout, "")

    def strace(self, abi, injections):
        if not shutil.which("strace"):
            self.skipTest("strace is not installed")
        calls = sorted(set(i.split(":")[0] for i in injections))
        prefix = [
            "strace",
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "-e",
            "trace=" + ",".join(calls),
        ]
        for i in injections:
            prefix += ["-e", "inject=" + i]
        r = self.run_bench([self.binary(abi), "--calls", "5", "--batches", "3"], prefix)
        if "ptrace" in r.stderr and "Operation not permitted" in r.stderr:
            self.skipTest("strace may not trace here: " + r.stderr.strip())
        return r, bench_judge.parse_bench(numbered(r.stdout))

    def test_enosys_cases_are_reported_not_timed(self):
        calls = (
            "pselect6_time64",
            "ppoll_time64",
            "io_pgetevents_time64",
            "recvmmsg_time64",
            "rt_sigtimedwait_time64",
            "futex_time64",
        )
        r, run = self.strace("32", ["%s:error=ENOSYS" % c for c in calls])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(run.done)
        self.assertEqual(list(run.cases), CASES_32)
        for c in run.cases.values():
            if bench_judge.is_time64(c.name):
                self.assertEqual((c.error, c.median), ("ENOSYS", None), c)
            else:
                self.assertIsNone(c.error, c)

    def test_failed_cases_do_not_stop_the_others(self):
        r, run = self.strace(
            "64", ["rt_sigtimedwait:error=EINTR", "recvmmsg:error=EINVAL"]
        )
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(run.cases["rt_sigtimedwait"].error, "EINTR")
        self.assertEqual(run.cases["recvmmsg"].error, "EINVAL")
        # the cases after them still measure
        self.assertIsNone(run.cases["futex-wake"].error)
        self.assertIsNone(run.cases["set_robust_list"].error)

    def test_included_call_failing_is_named(self):
        r, run = self.strace("64", ["tgkill:error=EPERM"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(run.cases["rt_sigtimedwait"].error, "EPERM")
        self.assertEqual(run.cases["rt_sigtimedwait"].fields.get("in"), "tgkill")

    def test_unexpected_result_while_timed_exits_1(self):
        # the check's call succeeds, a later one fails
        r, run = self.strace("64", ["getppid:error=EPERM:when=4+"])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(run.cases["getppid"].error, "unstable")
        self.assertTrue(run.done)
        self.assertIsNone(run.cases["ppoll"].error)
