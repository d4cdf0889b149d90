# SPDX-License-Identifier: GPL-2.0
"""The tools' own unit tests, run as a stage: one result per test."""

from __future__ import annotations

import argparse

from typing import Callable, Iterator, Sequence

import bisect
import os
import re
import sys
import threading

from . import common, lint


# The groups of lktool/tests/__main__.py and the tags of their results.
SELFTEST_SCRIPTS = (
    ("lk", "selftest"),
    ("broken", "selftest-broken"),
    ("broken-series", "selftest-broken-series"),
    ("qemu", "selftest-qemu"),
    ("qemu-arm", "selftest-qemu-arm"),
    ("fuzz", "selftest-fuzz"),
    ("bench", "selftest-bench"),
    ("lava", "selftest-lava"),
    ("mlist", "selftest-mlist"),
)
# The groups that read what the qemu stage of the run has done (its
# guests' logs and results, LK_QEMU_STAGE_GUESTS) or boot guests of
# their own to the second: beside the guest lane they wait for it.
GUEST_GROUPS = ("qemu", "qemu-arm", "lava")
# How the tests are run: the directory's __main__.py, then the group.
TESTS = os.path.join("scripts", "lktool", "tests")


def do_selftest(
    args: argparse.Namespace,
    results: common.Results,
    qemu_ran: Sequence[str] = (),
    guests_done: Callable[[], Sequence[str]] | None = None,
) -> None:
    """Run the tools' own tests and report each of them, then their static
    checks (lint.py).

    The groups run side by side: lk and broken mostly compile (broken
    builds kernel objects at deliberately broken patches; broken-series
    applies, checks and mails such series: the two share no build
    directory, and together they used to be the longest group), qemu and
    qemu-arm mostly wait for one-CPU QEMU guests (the x86 ones and the
    arm ones: their wall-clock-limit cases wait half a minute each), and
    fuzz and bench take seconds, so together they take little more than
    the longest.  qemu_ran names the guests whose
    listed selftests the qemu stage of this run has just run; the QEMU
    tests do not boot them for that again.

    With guests_done, `lk test` starts the stage while its guest lane
    still boots guests: the GUEST_GROUPS call guests_done() first, which
    returns the guests the lane ran once it has finished, and the other
    groups do not wait for it.
    """
    runs, errors = {}, []

    def one(script, tag):
        try:
            ran: Sequence[str] = ()
            if script in GUEST_GROUPS:
                ran = guests_done() if guests_done else qemu_ran
            elif not guests_done:
                ran = qemu_ran
            runs[tag] = run_selftest_script(args, script, tag, ran)
        except (OSError, common.Failure) as e:
            errors.append("%s: %s" % (tag, e))

    threads = [threading.Thread(target=one, args=st) for st in SELFTEST_SCRIPTS]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for script, tag in SELFTEST_SCRIPTS:
        if tag in runs:
            report_selftest_script(results, script, tag, *runs[tag])
    for e in errors:
        results.failed("selftest", e)
    lint.do_lint(args, results)


# "test_x (lktool.tests.m.Class.test_x) ... ok" (Python 3.11; before it
# "test_x (m.Class) ... ok"), or "setUpClass (m.Class) ... skipped".
UNITTEST_HEAD_RE = re.compile(r"^(\w+) \(([\w.]+)\)(?: \.\.\. (.*))?$")

# A test with a docstring: unittest -v prints its first line, then " ... ".
UNITTEST_DOC_RE = re.compile(r"^.* \.\.\. (.*)$")
UNITTEST_DONE_RE = re.compile(r"(\.\.\. |^)(\[[^]\n]*\] )*" r"(ok|FAIL|ERROR|skipped)")
UNITTEST_OUTCOME_RE = re.compile(
    r"^(?:\[[^]\n]*\] )*" r"(ok|FAIL|ERROR|skipped.*|expected failure)$"
)


def outcome_key(method: str, where: str) -> str:
    """'Class.test' of unittest's "test (module.Class.test)" (Python 3.11)
    or "test (module.Class)"."""
    parts = where.split(".")
    if parts[-1] == method and len(parts) > 1:
        parts.pop()
    return "%s.%s" % (parts[-1], method)


def unittest_outcomes(text: str) -> Iterator[tuple[str, str]]:
    """(Class.test, outcome) from `unittest -v` output.

    Output a test prints (a warning, say) can split "test (...) ... ok"
    over several lines; the outcome is then the next line that is one.
    """
    pending, doc = None, False
    for line in text.splitlines():
        m = UNITTEST_HEAD_RE.match(line)
        if m:
            pending = outcome_key(m.group(1), m.group(2))
            doc = m.group(3) is None
            line = m.group(3) or ""
        elif doc:
            doc = False
            d = UNITTEST_DOC_RE.match(line)
            if d:
                line = d.group(1)
        if pending is None:
            continue
        o = UNITTEST_OUTCOME_RE.match(line)
        if o:
            yield pending, o.group(1)
            pending = None


# The head of a failure's block at the end of `unittest -v` output.
UNITTEST_FAILURE_RE = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)$")
UNITTEST_RULE_RE = re.compile(r"^(=+|-+)$")
# How much of a failure's exception a result line carries.
FAILURE_TEXT = 600


def unittest_failures(text: str) -> dict[str, str]:
    """{Class.test: its exception, on one line} from `unittest -v` output.

    A result line is all that a CI log keeps of a test run elsewhere, so it
    says why: the lines after the traceback's last frame.
    """
    found, lines = {}, text.splitlines()
    all_rules = [
        j for j, l in enumerate(lines) if len(l) >= 70 and UNITTEST_RULE_RE.match(l)
    ]
    for i, line in enumerate(lines):
        m = UNITTEST_FAILURE_RE.match(line)
        if not m:
            continue
        # Its head (and docstring) ends at a rule, its text at the next.
        k = bisect.bisect_right(all_rules, i)
        rules = all_rules[k : k + 2]
        if not rules:
            continue
        block = lines[rules[0] + 1 : rules[1] if len(rules) > 1 else None]
        frames = [n for n, l in enumerate(block) if l.startswith("  File ")]
        start = frames[-1] + 1 if frames else 0
        while start < len(block) and block[start].startswith("    "):
            start += 1
        words = " ".join(l.strip() for l in block[start:] if l.strip())
        if len(words) > FAILURE_TEXT:
            words = words[: FAILURE_TEXT - 3] + "..."
        found[outcome_key(m.group(1), m.group(2))] = words
    return found


def run_selftest_script(
    args: argparse.Namespace, script: str, tag: str, qemu_ran: Sequence[str] = ()
) -> tuple[int, str]:
    """Run one of the tools' test scripts: (exit status, log file)."""
    cmd = [sys.executable, os.path.join(common.TOP, TESTS), script]
    if args.quick:
        cmd.insert(2, "--quick")
    logfile = os.path.join(common.out_dir(args), "logs", "%s.log" % tag)
    env = dict(
        os.environ,
        LK_OUT=common.out_dir(args),
        LK_QEMU_STAGE_GUESTS=" ".join(qemu_ran),
        LK_TEST_TIMES=logfile[: -len(".log")] + "-times.txt",
    )
    os.makedirs(os.path.dirname(logfile), exist_ok=True)
    open(logfile, "w").close()
    r = common.run_watched(cmd, logfile, tag, UNITTEST_DONE_RE, "tests done", env=env)
    return r.returncode, logfile


def report_selftest_script(
    results: common.Results, script: str, tag: str, returncode: int, logfile: str
) -> None:
    """One result per test of a script's `unittest -v` log."""
    with open(logfile, errors="replace") as f:
        text = f.read()
    seen, classes, why = 0, 0, unittest_failures(text)
    for test, outcome in unittest_outcomes(text):
        # A skipped class reports "setUpClass (...) ... skipped", which
        # unittest's "Ran N tests" does not count.
        if test.endswith(".setUpClass"):
            classes += 1
        else:
            seen += 1
        name = "%s: %s" % (tag, test)
        if outcome == "ok":
            results.passed(name)
        elif outcome.startswith("skipped"):
            results.skipped(name, outcome[len("skipped ") :].strip("'"))
        elif why.get(test):
            results.failed(name, "%s; log at %s" % (why[test], logfile))
        else:
            results.failed(name, "see %s" % logfile)
    ran = re.search(r"^Ran (\d+) tests? in ", text, re.M)
    if ran and int(ran.group(1)) != seen:
        results.failed(
            tag,
            "%s %s ran %s tests but %d outcomes could "
            "be read; log at %s" % (TESTS, script, ran.group(1), seen, logfile),
        )
    if returncode and not results.has_failure(tag + ":"):
        results.failed(
            tag, "%s %s exited %d; log at %s" % (TESTS, script, returncode, logfile)
        )
    elif not seen and not classes:
        # (A group of classes that all skip, as the boots do without
        # their kernels, reports each class.)
        results.failed(tag, "%s %s ran no test; log at %s" % (TESTS, script, logfile))
