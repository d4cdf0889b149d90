#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tests of scripts/lk_bench.py and scripts/qemu/bench.c: the parser of
bench's lines (alone and in canned serial logs), the judgement of ratios
and of the repeat check, the CSV, table and chart, the guest overrides,
the manifest and the initramfs; and bench.c compiled for the 64 and 32
ABIs with -Wall -Wextra -Werror and run on the host (no guest booted, no
kernel built).

  python3 scripts/lk_bench_test.py            all tests
  python3 scripts/lk_bench_test.py --quick    no compiler, no bench run

bench.c is compiled against the host's kernel headers and, when
`lk_qemu.py build` or `lk_bench.py` exported them, against the tree's
($LK_OUT/qemu/headers/x86/usr/include).  With strace installed, its error
paths are driven by strace's fault injection (ENOSYS from the _time64
calls, an error after the check); without it those tests are skipped and
say so.  The chart test needs python3-matplotlib (else skipped).
"""

import contextlib
import csv
import gzip
import importlib.util
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lk_bench  # noqa: E402
import lk_qemu  # noqa: E402

QUICK = "--quick" in sys.argv
if QUICK:
    sys.argv.remove("--quick")

TOKEN = "a1b2c3d4e5f60718"
# init.c's manifest limits: words after the name, and its line buffer
INIT_MAX_ARGS = 32
INIT_LINE = 1024

CASES_64 = ["empty", "getppid", "ppoll", "ppoll-sigmask", "pselect6",
            "pselect6-sigmask", "epoll_pwait", "epoll_pwait-sigmask",
            "io_pgetevents", "io_pgetevents-sigmask", "rt_sigtimedwait",
            "futex-wake", "futex-wait-mismatch", "recvmmsg",
            "set_robust_list"]
TWINS = ["ppoll", "ppoll-sigmask", "pselect6", "pselect6-sigmask",
         "io_pgetevents", "io_pgetevents-sigmask", "rt_sigtimedwait",
         "futex-wake", "futex-wait-mismatch", "recvmmsg"]
CASES_32 = CASES_64 + [c + "-time64" for c in TWINS]
INCLUDES = {"rt_sigtimedwait": "tgkill", "recvmmsg": "sendto"}


def numbered(text):
    return list(enumerate(text.splitlines(), 1))


def case_line(abi, name, med, lo=None, hi=None, n=200, batches=11,
              extra=""):
    return "bench %s %s median=%.2f min=%.2f max=%.2f n=%d batches=%d%s" % (
        abi, name, med, med if lo is None else lo, med if hi is None else hi,
        n, batches, extra)


def output(abi, values, errors=(), done=True):
    """A bench program's output: values {case: median}, errors {case: e}."""
    lines = ["bench %s config calls=200 batches=11 warmup=1 unit=ns "
             "subtract=empty align=tick" % abi]
    for name, v in values.items():
        lines.append(case_line(abi, name, v))
    for name, e in dict(errors).items():
        lines.append("bench %s %s error=%s" % (abi, name, e))
    if done:
        lines.append("bench done")
    return "\n".join(lines) + "\n"


def serial_log(runs, guest="x86_64"):
    """A serial log as lk_qemu.boot() writes it: runs [(name, output)]."""
    out = ["# lk-qemu-host %s guest=%s kernel=/k/bzImage" % (TOKEN, guest),
           "# lk-qemu-host %s tests=%s" % (TOKEN, ",".join(
               n for n, _ in runs)),
           "# lk-qemu-host %s limit=400" % TOKEN,
           "[    0.000000] Linux version 4.20.0 (gcc 12.2.0)",
           "[    0.900000] Run /init as init process",
           "lk-qemu %s start abi=64 tests=%d uname=4.20.0/x86_64"
           % (TOKEN, len(runs))]
    for name, text in runs:
        out.append("lk-qemu %s begin %s" % (TOKEN, name))
        out.extend(text.splitlines())
        out.append("lk-qemu %s end %s exit=0 time=0.4" % (TOKEN, name))
    out += ["lk-qemu %s done ran=%d" % (TOKEN, len(runs)),
            "[    2.000000] reboot: Power down",
            "# lk-qemu-host %s end status=0 killed=no elapsed=11 start=9 "
            "done=10" % TOKEN]
    return "\n".join(out) + "\n"


def case(name, med=None, error=None):
    if error:
        return lk_bench.Case(name, None, None, None, None, None, error,
                             {"error": error})
    return lk_bench.Case(name, med, med, med, 200, 11, None, {})


def cpio_files(data):
    """{path: (mode, contents)} of a newc archive (this test's reader)."""
    files = {}
    off = 0
    while True:
        if data[off:off + 6] != b"070701":
            raise AssertionError("no newc header at %d" % off)
        nums = [int(data[off + 6 + 8 * k:off + 14 + 8 * k], 16)
                for k in range(13)]
        mode, size, namesize = nums[1], nums[6], nums[11]
        name_at = off + 110
        name = data[name_at:name_at + namesize - 1].decode()
        body = name_at + namesize
        body += -body % 4
        if name == "TRAILER!!!":
            return files
        files[name] = (mode, data[body:body + size])
        off = body + size
        off += -off % 4


# --------------------------------------------------------------------------
# parse

class Parse(unittest.TestCase):
    def test_cases_errors_and_extras(self):
        text = output("32", {"empty": 16.2, "ppoll": 740.0},
                      {"ppoll-time64": "ENOSYS"})
        text = text.replace("bench 32 ppoll median",
                            "[    1.200000] random: crng init done\n"
                            "bench 32 ppoll median")
        run = lk_bench.parse_bench(numbered(text))
        self.assertEqual(run.abi, "32")
        self.assertTrue(run.done)
        self.assertEqual(run.malformed, [])
        self.assertEqual(list(run.cases), ["empty", "ppoll", "ppoll-time64"])
        self.assertEqual(run.cases["ppoll"].median, 740.0)
        self.assertEqual(run.cases["ppoll"].n, 200)
        self.assertEqual(run.cases["ppoll"].batches, 11)
        self.assertIsNone(run.cases["ppoll"].error)
        self.assertEqual(run.cases["ppoll-time64"].error, "ENOSYS")
        self.assertIsNone(run.cases["ppoll-time64"].median)
        self.assertEqual(run.config["calls"], "200")

    def test_min_max_and_includes(self):
        run = lk_bench.parse_bench(numbered(
            case_line("64", "recvmmsg", 3052.03, 3052.02, 3062.5,
                      extra=" includes=sendto") + "\nbench done\n"))
        c = run.cases["recvmmsg"]
        self.assertEqual((c.median, c.min, c.max), (3052.03, 3052.02,
                                                    3062.5))
        self.assertEqual(c.fields["includes"], "sendto")

    def test_malformed_lines(self):
        text = "\n".join([
            "bench 64 ppoll median=abc min=1 max=1 n=1 batches=1",
            "bench 64 pselect6",
            "bench 64 epoll_pwait median=1.00 min=1.00 max=1.00 n=1",
            "bench 32 futex-wake median=1.00 min=1.00 max=1.00 n=1 "
            "batches=1",
            "bench 64 getppid median=1.00 min=1.00 max=1.00 n=1 batches=1",
            "bench 64 odd line with spaces",
            "bench done",
            case_line("64", "late", 1.0)])
        run = lk_bench.parse_bench(numbered(text))
        self.assertEqual(list(run.cases), ["getppid"])
        self.assertEqual([n for n, _ in run.malformed], [1, 2, 3, 4, 6, 8])
        self.assertTrue(run.done)

    def test_no_done(self):
        run = lk_bench.parse_bench(numbered(output("64", {"empty": 11.3},
                                                   done=False)))
        self.assertFalse(run.done)
        self.assertIn("empty", run.cases)

    def test_other_output_is_not_bench_output(self):
        run = lk_bench.parse_bench(numbered(
            "benchmark: no\n  bench 64 x median=1\nbench done\n"))
        self.assertEqual(run.cases, {})
        self.assertEqual(run.malformed, [])

    def test_from_a_serial_log(self):
        text64 = output("64", {"empty": 11.34, "ppoll": 659.0})
        text32 = output("32", {"ppoll": 724.0}, {"ppoll-time64": "ENOSYS"})
        # a kernel record cutting into a line of bench's output
        text32 = text32.replace(
            "bench 32 ppoll median=724.00",
            "bench 32 ppo[    1.500000] clocksource: tsc: unstable\n"
            "ll median=724.00")
        r = lk_qemu.parse_log(serial_log([("64/bench", text64),
                                          ("32/bench", text32)]))
        runs = lk_bench.runs_of(r, ["64", "32", "arm"])
        self.assertEqual(set(runs), {"64", "32", "arm"})
        self.assertIsNone(runs["arm"])
        self.assertEqual(runs["64"].cases["ppoll"].median, 659.0)
        self.assertEqual(runs["32"].cases["ppoll"].median, 724.0)
        self.assertEqual(runs["32"].cases["ppoll-time64"].error, "ENOSYS")
        self.assertEqual(runs["32"].malformed, [])
        self.assertTrue(runs["32"].done and runs["64"].done)

    def test_no_report(self):
        self.assertEqual(lk_bench.runs_of(None, ["64"]), {"64": None})


# --------------------------------------------------------------------------
# judge

class Judge(unittest.TestCase):
    def judge(self, name, base, tips, why=None):
        return lk_bench.judge_case("x86_64", "64", name, base, tips, why)

    def test_ratio_row(self):
        r = self.judge("ppoll", case("ppoll", 1234.0), [case("ppoll",
                                                             1200.0)])
        self.assertEqual(r.status, "PASS")
        self.assertEqual(lk_bench.row_name(r), "bench x86_64/64: ppoll")
        self.assertEqual(r.detail, "base 1234.0, tip 1200.0, ratio 0.97")
        self.assertAlmostEqual(r.ratio, 1200.0 / 1234.0)
        self.assertEqual((r.base, r.tip), ("1234.00", "1200.00"))
        self.assertIsNone(r.identical)

    def test_same_kernel_gives_exactly_one(self):
        r = self.judge("recvmmsg", case("recvmmsg", 3052.03),
                       [case("recvmmsg", 3052.03)])
        self.assertEqual(r.ratio, 1.0)
        self.assertIn("ratio 1.00", r.detail)

    def test_error_on_tip_fails(self):
        r = self.judge("ppoll", case("ppoll", 700.0),
                       [case("ppoll", error="EINVAL")])
        self.assertEqual(r.status, "FAIL")
        self.assertIn("error on tip: EINVAL", r.detail)
        self.assertEqual(r.tip, "EINVAL")

    def test_time64_enosys_on_base_passes_with_tip_only(self):
        r = self.judge("ppoll-time64", case("ppoll-time64", error="ENOSYS"),
                       [case("ppoll-time64", 745.0)])
        self.assertEqual(r.status, "PASS")
        self.assertEqual(r.detail, "tip 745.0 (base: ENOSYS, as expected)")
        self.assertIsNone(r.ratio)
        self.assertEqual(r.base, "ENOSYS")

    def test_a_v4_20_bug_on_base_is_judged_on_tip(self):
        r = lk_bench.judge_case(
            "x86_64", "32", "io_pgetevents-sigmask",
            case("io_pgetevents-sigmask", error="EINVAL"),
            [case("io_pgetevents-sigmask", 673.0)])
        self.assertEqual(r.status, "PASS")
        self.assertIn("tip 673.0 (base: EINVAL, a v4.20 bug:", r.detail)
        self.assertIsNone(r.ratio)
        # only there, and only with that error
        for guest, abi, err in (("i386", "32", "EINVAL"),
                                ("x86_64", "64", "EINVAL"),
                                ("x86_64", "32", "EFAULT")):
            with self.subTest(guest=guest, abi=abi, err=err):
                r = lk_bench.judge_case(
                    guest, abi, "io_pgetevents-sigmask",
                    case("io_pgetevents-sigmask", error=err),
                    [case("io_pgetevents-sigmask", 673.0)])
                self.assertEqual(r.status, "FAIL")

    def test_time64_with_a_base_value_gets_a_ratio(self):
        r = self.judge("futex-wake-time64", case("x", 400.0),
                       [case("x", 440.0)])
        self.assertEqual(r.status, "PASS")
        self.assertIn("ratio 1.10", r.detail)

    def test_other_base_errors_fail(self):
        r = self.judge("ppoll", case("ppoll", error="ENOSYS"),
                       [case("ppoll", 700.0)])
        self.assertEqual(r.status, "FAIL")
        self.assertIn("error on base: ENOSYS", r.detail)
        r = self.judge("ppoll-time64", case("ppoll-time64", error="EFAULT"),
                       [case("ppoll-time64", 700.0)])
        self.assertEqual(r.status, "FAIL")
        self.assertIn("expected: ENOSYS", r.detail)

    def test_missing_results_fail(self):
        r = self.judge("ppoll", case("ppoll", 700.0), [None],
                       {"tip": "the guest did not finish; log at /l"})
        self.assertEqual(r.status, "FAIL")
        self.assertIn("no result on tip: the guest did not finish", r.detail)
        r = self.judge("ppoll", None, [case("ppoll", 700.0)],
                       {"base": "no kernel at /b/bzImage"})
        self.assertEqual(r.status, "FAIL")
        self.assertIn("no result on base: no kernel at /b/bzImage",
                      r.detail)
        self.assertEqual(r.base, "")
        r = self.judge("ppoll", case("ppoll", 700.0), [])
        self.assertEqual(r.status, "FAIL")

    def test_repeat_identical(self):
        r = self.judge("ppoll", case("ppoll", 659.0),
                       [case("ppoll", 659.0)] * 3)
        self.assertEqual(r.status, "PASS")
        self.assertTrue(r.identical)
        self.assertIn("identical in 3 tip boots", r.detail)

    def test_repeat_differs(self):
        r = self.judge("recvmmsg", case("recvmmsg", 3124.0),
                       [case("recvmmsg", 3124.0), case("recvmmsg", 3124.01)])
        self.assertEqual(r.status, "FAIL")
        self.assertFalse(r.identical)
        self.assertIn("not reproducible: tip medians 3124.00, 3124.01",
                      r.detail)

    def test_repeat_missing_or_error_in_a_later_boot(self):
        for later, text in ((None, "none"), (case("x", error="EINTR"),
                                             "EINTR")):
            r = self.judge("x", case("x", 10.0), [case("x", 10.0), later])
            self.assertEqual(r.status, "FAIL", later)
            self.assertIn("tip medians 10.00, %s" % text, r.detail)

    def test_guest(self):
        def run(abi, values, errors=(), done=True):
            return lk_bench.parse_bench(numbered(output(abi, values, errors,
                                                        done)))
        base = {"64": run("64", {"empty": 11.0, "ppoll": 600.0,
                                 "gone": 5.0}),
                "32": run("32", {"ppoll": 700.0},
                          {"ppoll-time64": "ENOSYS"})}
        tips = [{"64": run("64", {"empty": 11.0, "ppoll": 660.0}),
                 "32": run("32", {"ppoll": 700.0, "ppoll-time64": 705.0})},
                {"64": run("64", {"empty": 11.0, "ppoll": 660.0}),
                 "32": None}]
        rows = lk_bench.judge_guest("x86_64", ["64", "32"], base, tips,
                                    {"tip": "the guest did not finish"})
        got = [(r.abi, r.case, r.status) for r in rows]
        self.assertEqual(got, [
            ("64", "empty", "PASS"), ("64", "ppoll", "PASS"),
            ("64", "gone", "FAIL"), ("32", "ppoll", "FAIL"),
            ("32", "ppoll-time64", "FAIL")])
        self.assertIn("ratio 1.10", rows[1].detail)
        self.assertIn("no result on tip", rows[2].detail)
        self.assertIn("tip medians 700.00, none", rows[3].detail)
        self.assertEqual(lk_bench.repeat_summary(rows, 2),
                         "2 of 4 cases identical in 2 tip boots")
        self.assertIsNone(lk_bench.repeat_summary(rows, 1))

    def test_run_problems(self):
        good = lk_bench.parse_bench(numbered(output("64", {"ppoll": 1.0})))
        self.assertEqual(lk_bench.run_problems("x86_64", "tip1", {
            "64": good, "32": None}, 200, 11), [])
        bad = lk_bench.parse_bench(numbered(
            case_line("64", "ppoll", 1.0, n=100) +
            "\nbench 64 junk median=\n"))
        rows = lk_bench.run_problems("x86_64", "tip1", {"64": bad}, 200, 11)
        self.assertEqual([r[0] for r in rows], ["FAIL"] * 3)
        self.assertEqual({r[1] for r in rows},
                         {"bench x86_64 tip1/64: output"})
        text = " | ".join(r[2] for r in rows)
        self.assertIn("no 'bench done'", text)
        self.assertIn("malformed line 2", text)
        self.assertIn("ppoll ran n=100 batches=11, not n=200 batches=11",
                      text)


# --------------------------------------------------------------------------
# output

def some_rows():
    return [
        lk_bench.judge_case("x86_64", "64", "ppoll", case("p", 1234.0),
                            [case("p", 1200.0)] * 2),
        lk_bench.judge_case("i386", "32", "ppoll-time64",
                            case("p", error="ENOSYS"), [case("p", 745.5)]),
        lk_bench.judge_case("i386", "32", "futex-wake", None, [None])]


class Output(unittest.TestCase):
    def test_csv(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "bench.csv")
            lk_bench.write_csv(path, some_rows())
            with open(path, newline="") as f:
                got = list(csv.reader(f))
            self.assertEqual(os.listdir(os.path.dirname(path)),
                             ["bench.csv"])
        self.assertEqual(got, [
            ["guest", "abi", "case", "base", "tip", "ratio"],
            ["x86_64", "64", "ppoll", "1234.00", "1200.00", "0.9724"],
            ["i386", "32", "ppoll-time64", "ENOSYS", "745.50", ""],
            ["i386", "32", "futex-wake", "", "", ""]])

    def test_table(self):
        lines = lk_bench.table(some_rows())
        self.assertEqual(len(lines), 4)
        self.assertEqual(lines[0].split(), ["guest/abi", "case", "base",
                                            "tip", "ratio", "status"])
        self.assertEqual(lines[1].split(), ["x86_64/64", "ppoll", "1234.00",
                                            "1200.00", "0.97", "PASS"])
        self.assertEqual(lines[3].split(), ["i386/32", "futex-wake", "-",
                                            "-", "-", "FAIL"])
        # right-aligned numbers: the columns end in the same place
        ends = {l.index("PASS" if "PASS" in l else "FAIL") for l in lines[1:]}
        self.assertEqual(len(ends), 1)

    def test_chart_without_matplotlib(self):
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict(sys.modules, {"matplotlib": None}):
            path = os.path.join(d, "bench.png")
            self.assertFalse(lk_bench.chart(path, some_rows()))
            self.assertFalse(os.path.exists(path))

    def test_chart(self):
        if importlib.util.find_spec("matplotlib") is None:
            self.skipTest("python3-matplotlib is not installed")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out", "bench.png")
            self.assertTrue(lk_bench.chart(path, some_rows()))
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_chart_by_debians_python_from_the_csv(self):
        """Another python3 first on PATH: Debian's draws from the CSV."""
        if not os.path.exists(lk_bench.DEBIAN_PYTHON) or subprocess.run(
                [lk_bench.DEBIAN_PYTHON, "-c", "import matplotlib"],
                stderr=subprocess.DEVNULL).returncode:
            self.skipTest("no python3-matplotlib for %s"
                          % lk_bench.DEBIAN_PYTHON)
        with tempfile.TemporaryDirectory() as d, \
                mock.patch.dict(sys.modules, {"matplotlib": None}), \
                mock.patch.object(lk_bench.sys, "executable",
                                  "/nonexistent/python3"):
            csv_path = os.path.join(d, "bench.csv")
            lk_bench.write_csv(csv_path, some_rows())
            self.assertEqual([r.case for r in lk_bench.read_csv_ratios(
                csv_path)], ["ppoll"])
            path = os.path.join(d, "bench.png")
            self.assertTrue(lk_bench.chart(path, some_rows(), csv_path))
            with open(path, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            # without the CSV there is nothing to hand over
            self.assertFalse(lk_bench.chart(path + "2", some_rows()))


# --------------------------------------------------------------------------
# guests, manifest, initramfs

class Guests(unittest.TestCase):
    def test_x86_64(self):
        g = lk_bench.bench_guest("x86_64")
        self.assertEqual(g["smp"], "1")
        self.assertEqual(g["qemu_args"], ["-nic", "none"] +
                         list(lk_bench.ICOUNT))
        self.assertNotIn("maxcpus", g["append"])
        self.assertEqual(g["abis"], ["64", "32"])
        cmd = lk_qemu.qemu_command(g, "/k", "/rd", TOKEN)
        self.assertEqual(cmd[cmd.index("-smp") + 1], "1")
        self.assertEqual(cmd[cmd.index("-icount") + 1], "shift=0,sleep=off")
        self.assertNotIn("-numa", cmd)
        self.assertFalse([a for a in cmd if "memory-backend" in a])
        self.assertNotIn("maxcpus", cmd[cmd.index("-append") + 1])

    def test_i386(self):
        g = lk_bench.bench_guest("i386")
        self.assertEqual((g["smp"], g["abis"], g["init_abi"]),
                         ("1", ["32"], "32"))
        self.assertIn("-icount", g["qemu_args"])

    def test_other_keys_are_kept(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "g.conf"), "w") as f:
                f.write("target = t\nkernel = k\nqemu = q\nabis = 32\n"
                        "init_abi = 32\nsmp = 4\nqemu_args = -numa x\n"
                        "append = quiet maxcpus=3 foo=1\nmemory = 256\n")
            g = lk_bench.bench_guest("g", d)
        self.assertEqual(g["append"], "quiet foo=1")
        self.assertEqual(g["memory"], "256")
        self.assertEqual(g["qemu_args"][:2], ["-nic", "none"])


class Manifest(unittest.TestCase):
    def test_lines(self):
        lines = lk_bench.manifest_lines(["64", "32"], 300, 7, 45)
        self.assertEqual(lines, [
            "45 64/bench /lk-qemu/64/bench --calls 300 --batches 7\n",
            "45 32/bench /lk-qemu/32/bench --calls 300 --batches 7\n"])
        for line in lines:
            self.assertLess(len(line.encode()), INIT_LINE)
            self.assertLessEqual(len(line.split()) - 2, INIT_MAX_ARGS)

    def test_limits(self):
        self.assertEqual(lk_bench.bench_timeout(200, 11),
                         lk_bench.MIN_TIMEOUT)
        # the largest run: 25 cases * 103 batches * 10^10 instructions
        big = lk_bench.bench_timeout(lk_bench.MAX_CALLS,
                                     lk_bench.MAX_BATCHES)
        self.assertGreaterEqual(big, 2 * 25 * 103 * 10 ** 10 / 10 ** 9)
        g = lk_bench.bench_guest("i386")
        limit = lk_bench.wall_limit(g, [20])
        self.assertEqual(limit, g["boot_timeout"] + 20 * 10 ** 9 /
                         lk_bench.ICOUNT_RATE + lk_qemu.KILL_WAIT + 2)
        self.assertEqual(lk_bench.wall_limit(g, [20, 20], scale=4) -
                         g["boot_timeout"] * 4, 2 * (limit -
                                                     g["boot_timeout"]))

    def test_cases_constant_counts_the_32_bit_cases(self):
        self.assertEqual(lk_bench.CASES, len(CASES_32))

    def test_init_limits_are_what_this_test_assumes(self):
        with open(lk_qemu.INIT_C) as f:
            src = f.read()
        self.assertRegex(src, r"#define MAX_ARGS\s+%d\b" % INIT_MAX_ARGS)
        self.assertIn("line[%d]" % INIT_LINE, src)

    def test_limits_match_bench_c(self):
        with open(lk_bench.BENCH_C) as f:
            src = f.read()
        for name, value in (("MAX_BATCHES", lk_bench.MAX_BATCHES),
                            ("MAX_CALLS", lk_bench.MAX_CALLS)):
            self.assertRegex(src, r"#define %s\s+%d\n" % (name, value))
        self.assertIn("long calls = %d, batches = %d;" % (
            lk_bench.DEFAULT_CALLS, lk_bench.DEFAULT_BATCHES), src)

    def test_initramfs(self):
        with tempfile.TemporaryDirectory() as d:
            paths = {}
            for n in ("init", "b64", "b32"):
                paths[n] = os.path.join(d, n)
                with open(paths[n], "wb") as f:
                    f.write(b"\x7fELF-" + n.encode())
            lines = lk_bench.manifest_lines(["64", "32"], 200, 11, 20)
            rd = os.path.join(d, "x", "bench.cpio.gz")
            lk_bench.bench_initramfs(rd, paths["init"], [
                ("64", paths["b64"]), ("32", paths["b32"])], lines)
            with gzip.open(rd) as f:
                files = cpio_files(f.read())
        for path, content in (("init", b"init"), ("lk-qemu/64/bench", b"b64"),
                              ("lk-qemu/32/bench", b"b32")):
            mode, data = files[path]
            self.assertEqual(data, b"\x7fELF-" + content, path)
            self.assertTrue(stat.S_ISREG(mode), path)
            self.assertEqual(mode & 0o777, 0o755, path)
        self.assertEqual(files["lk-qemu/manifest"][1].decode(),
                         "".join(lines))
        self.assertTrue(stat.S_ISCHR(files["dev/console"][0]))
        self.assertTrue(stat.S_ISDIR(files["tmp"][0]))
        # what the manifest runs is in the archive
        for line in lines:
            self.assertIn(line.split()[2].lstrip("/"), files)


class Main(unittest.TestCase):
    def test_bad_numbers(self):
        for args in (["--calls", "0"], ["--batches", "102"],
                     ["--repeat", "x"]):
            with contextlib.redirect_stderr(io.StringIO()) as err, \
                    self.assertRaises(SystemExit) as cm:
                lk_bench.main(args + ["--out", "/nonexistent"])
            self.assertEqual(cm.exception.code, 2, args)
            self.assertIn("wants a number", err.getvalue())

    def test_non_x86_guest(self):
        with tempfile.TemporaryDirectory() as d, \
                contextlib.redirect_stderr(io.StringIO()) as err, \
                contextlib.redirect_stdout(io.StringIO()):
            code = lk_bench.main(["--guest", "arm64", "--out", d])
        self.assertEqual(code, 2)
        self.assertIn("x86 guests only", err.getvalue())


# --------------------------------------------------------------------------
# bench.c on the host

def host_headers():
    """Include directories to build bench.c against: [(label, dirs)]."""
    out = [("system", [])]
    exported = os.path.join(lk_qemu.out_dir(), "qemu", "headers", "x86",
                            "usr", "include")
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
            abi = lk_qemu.load_abi(abi_name)
            for label, inc in host_headers():
                out = os.path.join(cls.dir, "bench-%s-%s" % (abi_name,
                                                             label))
                if not shutil.which(abi["cc"]):
                    cls.builds[abi_name, label] = (None, "%s is not "
                                                   "installed" % abi["cc"])
                    continue
                r = subprocess.run(
                    [abi["cc"]] + abi["cflags"] + ["-Wextra", "-Werror"] +
                    ["-I" + i for i in inc] + ["-o", out, lk_bench.BENCH_C],
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                    universal_newlines=True)
                cls.builds[abi_name, label] = (
                    out if r.returncode == 0 else None, r.stdout)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def binary(self, abi):
        prog, text = self.builds[abi, "system"]
        if prog is None and "not installed" in text:
            self.skipTest(text)
        self.assertIsNotNone(prog, text)
        return prog

    def run_bench(self, argv, prefix=(), timeout=120):
        try:
            return subprocess.run(list(prefix) + argv,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=timeout)
        except OSError as e:
            self.skipTest("cannot run %s here: %s" % (argv[0], e))

    def test_compiles_without_warnings(self):
        for (abi, label), (prog, text) in sorted(self.builds.items()):
            with self.subTest(abi=abi, headers=label):
                if prog is None and "not installed" in text:
                    self.skipTest(text)
                self.assertIsNotNone(prog, text)

    def check_run(self, abi, names):
        r = self.run_bench([self.binary(abi), "--calls", "20",
                            "--batches", "3"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        run = lk_bench.parse_bench(numbered(r.stdout))
        self.assertEqual(run.malformed, [])
        self.assertTrue(run.done)
        self.assertEqual(run.abi, abi)
        self.assertEqual(list(run.cases), names)
        self.assertEqual(run.config.get("calls"), "20")
        self.assertEqual(run.config.get("batches"), "3")
        for c in run.cases.values():
            if c.error == "ENOSYS" and lk_bench.is_time64(c.name) and \
                    not kernel_has_time64():
                continue
            self.assertIsNone(c.error, c)
            self.assertEqual((c.n, c.batches), (20, 3), c)
            self.assertLessEqual(c.min, c.median)
            self.assertLessEqual(c.median, c.max)
            base = c.name[:-len("-time64")] if lk_bench.is_time64(c.name) \
                else c.name
            self.assertEqual(c.fields.get("includes"), INCLUDES.get(base),
                             c)
        # the harness is cheap next to a system call (host, not icount)
        self.assertLess(run.cases["empty"].median,
                        run.cases["getppid"].median)
        return run

    def test_runs_64(self):
        self.check_run("64", CASES_64)

    def test_runs_32(self):
        self.check_run("32", CASES_32)

    def test_usage(self):
        prog = self.binary("64")
        for argv in (["--calls"], ["--calls", "0"], ["--batches", "102"],
                     ["--calls", "5x"], ["--bogus"]):
            r = self.run_bench([prog] + argv)
            self.assertEqual(r.returncode, 2, argv)
            self.assertIn("usage: bench", r.stderr)
            self.assertEqual(r.stdout, "")

    def strace(self, abi, injections):
        if not shutil.which("strace"):
            self.skipTest("strace is not installed")
        calls = sorted(set(i.split(":")[0] for i in injections))
        prefix = ["strace", "-f", "-qq", "-o", "/dev/null",
                  "-e", "trace=" + ",".join(calls)]
        for i in injections:
            prefix += ["-e", "inject=" + i]
        r = self.run_bench([self.binary(abi), "--calls", "5", "--batches",
                            "3"], prefix)
        if "ptrace" in r.stderr and "Operation not permitted" in r.stderr:
            self.skipTest("strace may not trace here: " + r.stderr.strip())
        return r, lk_bench.parse_bench(numbered(r.stdout))

    def test_enosys_cases_are_reported_not_timed(self):
        calls = ("pselect6_time64", "ppoll_time64", "io_pgetevents_time64",
                 "recvmmsg_time64", "rt_sigtimedwait_time64",
                 "futex_time64")
        r, run = self.strace("32", ["%s:error=ENOSYS" % c for c in calls])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertTrue(run.done)
        self.assertEqual(list(run.cases), CASES_32)
        for c in run.cases.values():
            if lk_bench.is_time64(c.name):
                self.assertEqual((c.error, c.median), ("ENOSYS", None), c)
            else:
                self.assertIsNone(c.error, c)

    def test_failed_cases_do_not_stop_the_others(self):
        r, run = self.strace("64", ["rt_sigtimedwait:error=EINTR",
                                    "recvmmsg:error=EINVAL"])
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
        self.assertEqual(run.cases["rt_sigtimedwait"].fields.get("in"),
                         "tgkill")

    def test_unexpected_result_while_timed_exits_1(self):
        # the check's call succeeds, a later one fails
        r, run = self.strace("64", ["getppid:error=EPERM:when=4+"])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertEqual(run.cases["getppid"].error, "unstable")
        self.assertTrue(run.done)
        self.assertIsNone(run.cases["ppoll"].error)


if __name__ == "__main__":
    unittest.main(verbosity=2)
