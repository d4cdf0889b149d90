# SPDX-License-Identifier: GPL-2.0
"""What the bench program printed, judged case by case: base against tip."""

from __future__ import annotations

from typing import Any, Sequence

import collections
import re

from . import serial, userspace


PROGRAM = "bench"
TIME64_SUFFIX = "-time64"

# What base is expected to say for the _time64 cases.
BASE_TIME64_ERROR = "ENOSYS"

# Errors of v4.20 that the series fixes, expected on the base kernel:
# (guest, abi, case) -> (error, why).  Such a case is judged on tip alone.
BASE_BUGS = {
    ("x86_64", "32", "io_pgetevents-sigmask"): (
        "EINVAL",
        "v4.20's compat struct __compat_aio_sigset has a 64-bit "
        "pointer, so a 32-bit caller's sigsetsize is read from the wrong "
        "place; the series' 'aio: fix the layout of struct "
        "__compat_aio_sigset' fixes it",
    )
}

# "bench <abi> <word> key=value ..."; the values have no spaces.
LINE_RE = re.compile(r"^bench (\S+) (\S+)((?: [A-Za-z_]+=\S*)*)\s*$")
CASE_FIELDS = ("median", "min", "max")
Case = collections.namedtuple("Case", "name median min max n batches error fields")


class Run:
    """What one bench program printed (one ABI, one boot)."""

    def __init__(self) -> None:
        self.abi: str | None = None
        self.config: dict[str, str] = {}
        self.cases: collections.OrderedDict[str, Case] = collections.OrderedDict()
        self.done = False
        self.malformed: list[tuple[int, str]] = []  # (line number, text)


def parse_bench(output: list[tuple[int, str]]) -> Run:
    """Parse a bench program's output ([(line number, text)]) into a Run.

    Lines that do not start with "bench " (a kernel's console records)
    are not bench's and are left alone; a "bench " line that is not in
    the format is kept in Run.malformed.
    """
    run = Run()
    for n, line in output:
        line = line.rstrip()
        if not line.startswith("bench "):
            continue
        if line == "bench done":
            run.done = True
            continue
        m = LINE_RE.match(line)
        if not m or run.done:
            run.malformed.append((n, line))
            continue
        abi, word, rest = m.group(1), m.group(2), serial.fields(m.group(3))
        if run.abi is None:
            run.abi = abi
        elif abi != run.abi:
            run.malformed.append((n, line))
            continue
        if word == "config":
            run.config = rest
            continue
        if "error" in rest:
            run.cases[word] = Case(
                word, None, None, None, None, None, rest["error"], rest
            )
            continue
        try:
            vals = [float(rest[k]) for k in CASE_FIELDS]
            n_calls, batches = int(rest["n"]), int(rest["batches"])
        except (KeyError, ValueError):
            run.malformed.append((n, line))
            continue
        run.cases[word] = Case(
            word, vals[0], vals[1], vals[2], n_calls, batches, None, rest
        )
    return run


def runs_of(report: serial.Report | None, abis: list[str]) -> dict[str, Run | None]:
    """{abi: Run or None} of a parsed boot (lk_qemu.Report)."""
    out = {}
    for abi in abis:
        t = (
            report.tests.get(userspace.manifest_name(abi, PROGRAM))
            if report is not None
            else None
        )
        out[abi] = parse_bench(t.output) if t is not None else None
    return out


def is_time64(case: str) -> bool:
    return case.endswith(TIME64_SUFFIX)


def fmt(v: float) -> str:
    return "%.1f" % v


def ratio_of(base: float | None, tip: float | None) -> float | None:
    """tip / base, or None when it means nothing."""
    if base is None or tip is None or base <= 0:
        return None
    return tip / base


Row = collections.namedtuple(
    "Row", "guest abi case base tip ratio status detail identical"
)


def value(c: Case | None) -> str:
    """A Case as a CSV/table cell: its median, its error or ''."""
    if c is None:
        return ""
    if c.error:
        return c.error
    return "%.2f" % c.median


def judge_case(
    guest: str,
    abi: str,
    case: str,
    base: Case | None,
    tips: list[Case | None],
    why_missing: dict[str, Any] | None = None,
) -> Row:
    """Judge one case: a Row.

    base: its Case on the base kernel or None (no result); tips: its Case
    in each tip boot, or None.  why_missing: {"base": text, "tip": text}
    (why a kernel gave no results), for the details.
    """
    why = why_missing or {}
    tip = tips[0] if tips else None
    rat = None
    identical = None
    status, detail = "PASS", ""
    if tip is None:
        status, detail = "FAIL", "no result on tip%s" % (
            ": " + why["tip"] if why.get("tip") else ""
        )
    elif tip.error:
        status, detail = "FAIL", "error on tip: %s%s" % (
            tip.error,
            " (base: %s)" % value(base) if base else "",
        )
    elif base is None:
        status, detail = "FAIL", "tip %s, no result on base%s" % (
            fmt(tip.median),
            ": " + why["base"] if why.get("base") else "",
        )
    elif base.error:
        bug = BASE_BUGS.get((guest, abi, case))
        if is_time64(case) and base.error == BASE_TIME64_ERROR:
            detail = "tip %s (base: %s, as expected)" % (fmt(tip.median), base.error)
        elif bug and base.error == bug[0]:
            detail = "tip %s (base: %s, a v4.20 bug: %s)" % (
                fmt(tip.median),
                base.error,
                bug[1],
            )
        else:
            status = "FAIL"
            detail = "tip %s, error on base: %s%s" % (
                fmt(tip.median),
                base.error,
                " (expected: %s)" % BASE_TIME64_ERROR if is_time64(case) else "",
            )
    else:
        rat = ratio_of(base.median, tip.median)
        detail = "base %s, tip %s, ratio %s" % (
            fmt(base.median),
            fmt(tip.median),
            "%.2f" % rat if rat is not None else "-",
        )
    if len(tips) > 1 and tip is not None and not tip.error:
        meds = [t.median if t is not None and not t.error else None for t in tips]
        identical = all(m == meds[0] for m in meds)
        if identical:
            detail += "; identical in %d tip boots" % len(tips)
        else:
            status = "FAIL"
            detail += "; not reproducible: tip medians %s" % ", ".join(
                "%.2f" % m if m is not None else (t.error if t is not None else "none")
                for m, t in zip(meds, tips)
            )
    return Row(
        guest, abi, case, value(base), value(tip), rat, status, detail, identical
    )


def case_names(runs: Sequence[Run | None]) -> list[str]:
    """The case names of some Runs (or None), in order of appearance."""
    names = []
    for r in runs:
        for name in r.cases if r is not None else ():
            if name not in names:
                names.append(name)
    return names


def judge_guest(
    guest: str,
    abis: list[str],
    base_runs: dict[str, Run | None],
    tip_runs: list[dict[str, Run | None]],
    why_missing: dict[str, Any] | None = None,
) -> list[Row]:
    """Rows of a guest: base_runs {abi: Run|None}, tip_runs [same]."""
    rows = []
    for abi in abis:
        b = base_runs.get(abi)
        ts = [t.get(abi) for t in tip_runs]
        for case in case_names(ts + [b]):
            rows.append(
                judge_case(
                    guest,
                    abi,
                    case,
                    b.cases.get(case) if b else None,
                    [t.cases.get(case) if t else None for t in ts],
                    why_missing,
                )
            )
    return rows


def row_name(r: Row) -> str:
    return "bench %s/%s: %s" % (r.guest, r.abi, r.case)


def run_problems(
    guest: str, label: str, runs: dict[str, Run | None], calls: int, batches: int
) -> list[tuple[str, str, str]]:
    """Rows for a boot's bench output that is incomplete or odd."""
    rows = []
    for abi, run in sorted(runs.items()):
        name = "bench %s %s/%s: output" % (guest, label, abi)
        if run is None:
            continue
        if not run.done:
            rows.append(
                ("FAIL", name, "no 'bench done' line: the program stopped early")
            )
        for n, line in run.malformed:
            rows.append(("FAIL", name, "malformed line %d: %r" % (n, line[:120])))
        for c in run.cases.values():
            if c.error is None and (c.n != calls or c.batches != batches):
                rows.append(
                    (
                        "FAIL",
                        name,
                        "%s ran n=%s batches=%s, not "
                        "n=%d batches=%d" % (c.name, c.n, c.batches, calls, batches),
                    )
                )
    return rows


def repeat_summary(rows: list[Row], repeat: int) -> str | None:
    """'N of M cases identical in R tip boots', or None without repeats."""
    if repeat < 2:
        return None
    checked = [r for r in rows if r.identical is not None]
    same = sum(1 for r in checked if r.identical)
    return "%d of %d cases identical in %d tip boots" % (same, len(checked), repeat)
