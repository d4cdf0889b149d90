# SPDX-License-Identifier: GPL-2.0
"""Run the tests of lktool:

  python3 scripts/lktool/tests [--quick] [GROUP ...]

GROUP is one of lk, broken, broken-series, qemu, qemu-arm, fuzz, bench,
lava, mlist (default: all of them, in that order); `scripts/lk selftest` runs them
side by side.  An entry is a test module, or module.Class for one class
of it (the boots of one guest are a class: the guests' groups wait on
QEMU side by side; the broken-patch cases are two classes, those that
build at each patch and the others).  --quick leaves out the tests that
need a base tree, a compiler or a QEMU boot; they are reported as
skipped, never as passed.  Each test prints one `unittest -v` line,
which `scripts/lk selftest` reads.
With LK_TEST_TIMES=FILE, each test's seconds (setUpClass counted with
the class's first test) go to FILE, slowest first: where the time goes.
"""
import importlib
import os
import sys
import time
import unittest

# Run as `python3 scripts/lktool/tests`: the package is two levels up.
sys.path.insert(
    0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)

GROUPS = {
    "lk": (
        "series_test",
        "goals_test",
        "ci_goals_test",
        "stages_test",
        "support_test",
        "qemu_stages_test",
        "lint_test",
        "config_test",
        "warnings_test",
        "kselftest_test",
        "cocci_test",
        "kunit_test",
        "checkpatch_test",
        "kept_test",
        "systable_test",
        "trailers_test",
    ),
    "broken": ("broken_test.BrokenBuilds",),
    "broken-series": ("broken_test.BrokenSeries",),
    "qemu": (
        "qemu_parser_test",
        "qemu_reports_test",
        "qemu_data_test",
        "qemu_build_test",
        "qemu_boot_test.BootX86_64",
        "qemu_boot_test.BootI386",
    ),
    "qemu-arm": ("qemu_boot_test.BootArm64", "qemu_boot_test.BootArm"),
    "fuzz": ("fuzz_test", "fuzz_emulator_test", "fuzz_driver_test"),
    "bench": ("bench_test", "bench_output_test"),
    # lk lava: the generator, LAVA's validation of every job, and the i386
    # guest end to end through lava-run (a minute, mostly waiting on QEMU).
    "lava": ("lava_test",),
    "mlist": ("mlist_test",),
}


class TimedResult(unittest.TextTestResult):
    """A TextTestResult that also keeps the seconds between the ends of
    consecutive tests, so that a class's set-up counts with its first."""

    times: list = []
    last = time.monotonic()

    def stopTest(self, test):
        super().stopTest(test)
        now = time.monotonic()
        TimedResult.times.append((now - TimedResult.last, test.id()))
        TimedResult.last = now


def write_times(path):
    with open(path, "w") as f:
        for secs, name in sorted(TimedResult.times, reverse=True):
            f.write("%8.2f  %s\n" % (secs, name))


def main(argv):
    args = list(argv)
    if "--quick" in args:
        args.remove("--quick")
        os.environ["LK_TEST_QUICK"] = "1"
    unknown = [a for a in args if a not in GROUPS]
    if unknown:
        print(
            "usage: python3 scripts/lktool/tests [--quick] [%s ...]" % "|".join(GROUPS),
            file=sys.stderr,
        )
        return 2
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for group in args or list(GROUPS):
        for name in GROUPS[group]:
            name, _, cls = name.partition(".")
            module = importlib.import_module("lktool.tests." + name)
            if cls:
                suite.addTests(loader.loadTestsFromTestCase(getattr(module, cls)))
            else:
                suite.addTests(loader.loadTestsFromModule(module))
    result = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult).run(suite)
    if os.environ.get("LK_TEST_TIMES"):
        write_times(os.environ["LK_TEST_TIMES"])
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
