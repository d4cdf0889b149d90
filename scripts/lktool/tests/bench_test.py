# SPDX-License-Identifier: GPL-2.0
"""Tests of the benchmark's parser (alone and in canned serial logs) and of
the judgement of ratios and of the repeat check."""

import unittest

from .. import bench_judge, serial
from .qemu_support import serial_log


TOKEN = "a1b2c3d4e5f60718"

# init.c's manifest limits: words after the name, and its line buffer
INIT_MAX_ARGS = 32
INIT_LINE = 1024
# bench_cases.c's cases, in its order; a call that can take a sigmask has two,
# without one and with one (-sigmask).  After them, the 32-bit build
# measures the _time64 twin of each call with a timespec: every call but
# getppid, epoll_pwait and set_robust_list ("empty" makes none).
SIGMASK_CALLS = ("ppoll", "pselect6", "epoll_pwait", "io_pgetevents")
CASES_64 = (
    ["empty", "getppid"]
    + [c + s for c in SIGMASK_CALLS for s in ("", "-sigmask")]
    + ["rt_sigtimedwait", "futex-wake", "futex-wait-mismatch", "recvmmsg"]
    + ["set_robust_list"]
)
NO_TIMESPEC = ("empty", "getppid", "epoll_pwait", "set_robust_list")
TWINS = [c for c in CASES_64 if c.removesuffix("-sigmask") not in NO_TIMESPEC]
CASES_32 = CASES_64 + [c + "-time64" for c in TWINS]
INCLUDES = {"rt_sigtimedwait": "tgkill", "recvmmsg": "sendto"}


def numbered(text):
    return list(enumerate(text.splitlines(), 1))


def case_line(abi, name, med, lo=None, hi=None, n=200, batches=11, extra=""):
    return "bench %s %s median=%.2f min=%.2f max=%.2f n=%d batches=%d%s" % (
        abi,
        name,
        med,
        med if lo is None else lo,
        med if hi is None else hi,
        n,
        batches,
        extra,
    )


def output(abi, values, errors=(), done=True):
    """A bench program's output: values {case: median}, errors {case: e}."""
    lines = [
        "bench %s config calls=200 batches=11 warmup=1 unit=ns "
        "subtract=empty align=tick" % abi
    ]
    for name, v in values.items():
        lines.append(case_line(abi, name, v))
    for name, e in dict(errors).items():
        lines.append("bench %s %s error=%s" % (abi, name, e))
    if done:
        lines.append("bench done")
    return "\n".join(lines) + "\n"


def case(name, med=None, error=None):
    if error:
        return bench_judge.Case(
            name, None, None, None, None, None, error, {"error": error}
        )
    return bench_judge.Case(name, med, med, med, 200, 11, None, {})


class Parse(unittest.TestCase):
    def test_cases_errors_and_extras(self):
        text = output("32", {"empty": 16.2, "ppoll": 740.0}, {"ppoll-time64": "ENOSYS"})
        text = text.replace(
            "bench 32 ppoll median",
            "[    1.200000] random: crng init done\nbench 32 ppoll median",
        )
        run = bench_judge.parse_bench(numbered(text))
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
        run = bench_judge.parse_bench(
            numbered(
                case_line(
                    "64", "recvmmsg", 3052.03, 3052.02, 3062.5, extra=" includes=sendto"
                )
                + "\nbench done\n"
            )
        )
        c = run.cases["recvmmsg"]
        self.assertEqual((c.median, c.min, c.max), (3052.03, 3052.02, 3062.5))
        self.assertEqual(c.fields["includes"], "sendto")

    def test_malformed_lines(self):
        text = "\n".join(
            [
                "bench 64 ppoll median=abc min=1 max=1 n=1 batches=1",
                "bench 64 pselect6",
                "bench 64 epoll_pwait median=1.00 min=1.00 max=1.00 n=1",
                "bench 32 futex-wake median=1.00 min=1.00 max=1.00 n=1 batches=1",
                "bench 64 getppid median=1.00 min=1.00 max=1.00 n=1 batches=1",
                "bench 64 odd line with spaces",
                "bench done",
                case_line("64", "late", 1.0),
            ]
        )
        run = bench_judge.parse_bench(numbered(text))
        self.assertEqual(list(run.cases), ["getppid"])
        self.assertEqual([n for n, _ in run.malformed], [1, 2, 3, 4, 6, 8])
        self.assertTrue(run.done)

    def test_no_done(self):
        run = bench_judge.parse_bench(
            numbered(output("64", {"empty": 11.3}, done=False))
        )
        self.assertFalse(run.done)
        self.assertIn("empty", run.cases)

    def test_other_output_is_not_bench_output(self):
        run = bench_judge.parse_bench(
            numbered("benchmark: no\n  bench 64 x median=1\nbench done\n")
        )
        self.assertEqual(run.cases, {})
        self.assertEqual(run.malformed, [])

    def test_from_a_serial_log(self):
        text64 = output("64", {"empty": 11.34, "ppoll": 659.0})
        text32 = output("32", {"ppoll": 724.0}, {"ppoll-time64": "ENOSYS"})
        # a kernel record cutting into a line of bench's output
        text32 = text32.replace(
            "bench 32 ppoll median=724.00",
            "bench 32 ppo[    1.500000] clocksource: tsc: unstable\n"
            "ll median=724.00",
        )
        r = serial.parse_log(
            serial_log(
                [("64/bench", text64, "exit=0"), ("32/bench", text32, "exit=0")], TOKEN
            )
        )
        runs = bench_judge.runs_of(r, ["64", "32", "arm"])
        self.assertEqual(set(runs), {"64", "32", "arm"})
        self.assertIsNone(runs["arm"])
        self.assertEqual(runs["64"].cases["ppoll"].median, 659.0)
        self.assertEqual(runs["32"].cases["ppoll"].median, 724.0)
        self.assertEqual(runs["32"].cases["ppoll-time64"].error, "ENOSYS")
        self.assertEqual(runs["32"].malformed, [])
        self.assertTrue(runs["32"].done and runs["64"].done)

    def test_no_report(self):
        self.assertEqual(bench_judge.runs_of(None, ["64"]), {"64": None})


class Judge(unittest.TestCase):
    def judge(self, name, base, tips, why=None):
        return bench_judge.judge_case("x86_64", "64", name, base, tips, why)

    def test_ratio_row(self):
        r = self.judge("ppoll", case("ppoll", 1234.0), [case("ppoll", 1200.0)])
        self.assertEqual(r.status, "PASS")
        self.assertEqual(bench_judge.row_name(r), "bench x86_64/64: ppoll")
        self.assertEqual(r.detail, "base 1234.0, tip 1200.0, ratio 0.97")
        self.assertAlmostEqual(r.ratio, 1200.0 / 1234.0)
        self.assertEqual((r.base, r.tip), ("1234.00", "1200.00"))
        self.assertIsNone(r.identical)

    def test_same_kernel_gives_exactly_one(self):
        r = self.judge(
            "recvmmsg", case("recvmmsg", 3052.03), [case("recvmmsg", 3052.03)]
        )
        self.assertEqual(r.ratio, 1.0)
        self.assertIn("ratio 1.00", r.detail)

    def test_error_on_tip_fails(self):
        r = self.judge("ppoll", case("ppoll", 700.0), [case("ppoll", error="EINVAL")])
        self.assertEqual(r.status, "FAIL")
        self.assertIn("error on tip: EINVAL", r.detail)
        self.assertEqual(r.tip, "EINVAL")

    def test_time64_enosys_on_base_passes_with_tip_only(self):
        r = self.judge(
            "ppoll-time64",
            case("ppoll-time64", error="ENOSYS"),
            [case("ppoll-time64", 745.0)],
        )
        self.assertEqual(r.status, "PASS")
        self.assertEqual(r.detail, "tip 745.0 (base: ENOSYS, as expected)")
        self.assertIsNone(r.ratio)
        self.assertEqual(r.base, "ENOSYS")

    def test_a_v4_20_bug_on_base_is_judged_on_tip(self):
        r = bench_judge.judge_case(
            "x86_64",
            "32",
            "io_pgetevents-sigmask",
            case("io_pgetevents-sigmask", error="EINVAL"),
            [case("io_pgetevents-sigmask", 673.0)],
        )
        self.assertEqual(r.status, "PASS")
        self.assertIn("tip 673.0 (base: EINVAL, a v4.20 bug:", r.detail)
        self.assertIsNone(r.ratio)
        # only there, and only with that error
        for guest, abi, err in (
            ("i386", "32", "EINVAL"),
            ("x86_64", "64", "EINVAL"),
            ("x86_64", "32", "EFAULT"),
        ):
            with self.subTest(guest=guest, abi=abi, err=err):
                r = bench_judge.judge_case(
                    guest,
                    abi,
                    "io_pgetevents-sigmask",
                    case("io_pgetevents-sigmask", error=err),
                    [case("io_pgetevents-sigmask", 673.0)],
                )
                self.assertEqual(r.status, "FAIL")

    def test_time64_with_a_base_value_gets_a_ratio(self):
        r = self.judge("futex-wake-time64", case("x", 400.0), [case("x", 440.0)])
        self.assertEqual(r.status, "PASS")
        self.assertIn("ratio 1.10", r.detail)

    def test_other_base_errors_fail(self):
        r = self.judge("ppoll", case("ppoll", error="ENOSYS"), [case("ppoll", 700.0)])
        self.assertEqual(r.status, "FAIL")
        self.assertIn("error on base: ENOSYS", r.detail)
        r = self.judge(
            "ppoll-time64",
            case("ppoll-time64", error="EFAULT"),
            [case("ppoll-time64", 700.0)],
        )
        self.assertEqual(r.status, "FAIL")
        self.assertIn("expected: ENOSYS", r.detail)

    def test_missing_results_fail(self):
        r = self.judge(
            "ppoll",
            case("ppoll", 700.0),
            [None],
            {"tip": "the guest did not finish; log at /l"},
        )
        self.assertEqual(r.status, "FAIL")
        self.assertIn("no result on tip: the guest did not finish", r.detail)
        r = self.judge(
            "ppoll", None, [case("ppoll", 700.0)], {"base": "no kernel at /b/bzImage"}
        )
        self.assertEqual(r.status, "FAIL")
        self.assertIn("no result on base: no kernel at /b/bzImage", r.detail)
        self.assertEqual(r.base, "")
        r = self.judge("ppoll", case("ppoll", 700.0), [])
        self.assertEqual(r.status, "FAIL")

    def test_repeat_identical(self):
        r = self.judge("ppoll", case("ppoll", 659.0), [case("ppoll", 659.0)] * 3)
        self.assertEqual(r.status, "PASS")
        self.assertTrue(r.identical)
        self.assertIn("identical in 3 tip boots", r.detail)

    def test_repeat_differs(self):
        r = self.judge(
            "recvmmsg",
            case("recvmmsg", 3124.0),
            [case("recvmmsg", 3124.0), case("recvmmsg", 3124.01)],
        )
        self.assertEqual(r.status, "FAIL")
        self.assertFalse(r.identical)
        self.assertIn("not reproducible: tip medians 3124.00, 3124.01", r.detail)

    def test_repeat_missing_or_error_in_a_later_boot(self):
        for later, text in ((None, "none"), (case("x", error="EINTR"), "EINTR")):
            r = self.judge("x", case("x", 10.0), [case("x", 10.0), later])
            self.assertEqual(r.status, "FAIL", later)
            self.assertIn("tip medians 10.00, %s" % text, r.detail)

    def test_guest(self):
        def run(abi, values, errors=(), done=True):
            return bench_judge.parse_bench(numbered(output(abi, values, errors, done)))

        base = {
            "64": run("64", {"empty": 11.0, "ppoll": 600.0, "gone": 5.0}),
            "32": run("32", {"ppoll": 700.0}, {"ppoll-time64": "ENOSYS"}),
        }
        tips = [
            {
                "64": run("64", {"empty": 11.0, "ppoll": 660.0}),
                "32": run("32", {"ppoll": 700.0, "ppoll-time64": 705.0}),
            },
            {"64": run("64", {"empty": 11.0, "ppoll": 660.0}), "32": None},
        ]
        rows = bench_judge.judge_guest(
            "x86_64", ["64", "32"], base, tips, {"tip": "the guest did not finish"}
        )
        got = [(r.abi, r.case, r.status) for r in rows]
        self.assertEqual(
            got,
            [
                ("64", "empty", "PASS"),
                ("64", "ppoll", "PASS"),
                ("64", "gone", "FAIL"),
                ("32", "ppoll", "FAIL"),
                ("32", "ppoll-time64", "FAIL"),
            ],
        )
        self.assertIn("ratio 1.10", rows[1].detail)
        self.assertIn("no result on tip", rows[2].detail)
        self.assertIn("tip medians 700.00, none", rows[3].detail)
        self.assertEqual(
            bench_judge.repeat_summary(rows, 2), "2 of 4 cases identical in 2 tip boots"
        )
        self.assertIsNone(bench_judge.repeat_summary(rows, 1))

    def test_run_problems(self):
        good = bench_judge.parse_bench(numbered(output("64", {"ppoll": 1.0})))
        self.assertEqual(
            bench_judge.run_problems(
                "x86_64", "tip1", {"64": good, "32": None}, 200, 11
            ),
            [],
        )
        bad = bench_judge.parse_bench(
            numbered(case_line("64", "ppoll", 1.0, n=100) + "\nbench 64 junk median=\n")
        )
        rows = bench_judge.run_problems("x86_64", "tip1", {"64": bad}, 200, 11)
        self.assertEqual([r[0] for r in rows], ["FAIL"] * 3)
        self.assertEqual({r[1] for r in rows}, {"bench x86_64 tip1/64: output"})
        text = " | ".join(r[2] for r in rows)
        self.assertIn("no 'bench done'", text)
        self.assertIn("malformed line 2", text)
        self.assertIn("ppoll ran n=100 batches=11, not n=200 batches=11", text)
