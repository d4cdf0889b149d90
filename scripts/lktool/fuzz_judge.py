# SPDX-License-Identifier: GPL-2.0
"""lk_fuzz's verdict on a guest's serial log: a row per phase with
trinity's call count and the churns' operations, and what a known report
or the emulator explains (configs/fuzz/known-reports.txt, fuzz_emulator).
"""

from __future__ import annotations

from typing import Sequence

import collections
import os
import re

from . import common, fuzz_emulator, fuzz_trinity, serial, verdict

# What fuzz.fuzz_guest() plans for a phase: (manifest name, phase, seed,
# trinity's path in the guest).
PlanEntry = tuple[str, fuzz_trinity.Phase, int, str]

# trinity's main process every 10000 calls or so
ITER_RE = re.compile(r"^\[main\] (\d+) iterations\.", re.M)
RAN_RE = re.compile(r"Ran (\d+) syscalls\. Successes: (\d+)\s+Failures: " r"(\d+)")
CHURN_RE = re.compile(r"lk-fuzz: (\w+) churn ops=(\d+) errors=(\d+)")


KNOWN_REPORTS = os.path.join(common.CONFIGS, "fuzz", "known-reports.txt")
Known = collections.namedtuple("Known", "name kind match why")


def read_known(path: str = KNOWN_REPORTS) -> list[Known]:
    """The entries of configs/fuzz/known-reports.txt (see its comment)."""
    entries: list[Known] = []
    cur: dict[str, str] = {}
    key = None
    with open(path) as f:
        lines = [l.rstrip("\n") for l in f] + [""]
    for n, line in enumerate(lines, 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if cur:
                if set(cur) != {"name", "kind", "match", "why"}:
                    raise common.Failure(
                        "%s: entry ending at line %d needs name, "
                        "kind, match and why" % (path, n)
                    )
                try:
                    rx = re.compile(cur["match"])
                except re.error as e:
                    raise common.Failure(
                        "%s: %s: bad match: %s" % (path, cur["name"], e)
                    )
                entries.append(
                    Known(cur["name"], cur["kind"], rx, " ".join(cur["why"].split()))
                )
            cur, key = {}, None
            continue
        m = re.match(r"^(\w+):\s+(.*)$", line)
        if m and not line[0].isspace():
            key = m.group(1)
            cur[key] = m.group(2)
        elif line[0].isspace() and key:
            cur[key] += " " + line.strip()
        else:
            raise common.Failure("%s:%d: not 'key: value'" % (path, n))
    return entries


def known_report(issue: serial.Issue, known: Sequence[Known]) -> Known | None:
    """The Known entry an lk_qemu Issue is, or None."""
    return next(
        (k for k in known if k.kind == issue.kind and k.match.search(issue.text)), None
    )


def judge_phases(
    r: serial.Report, plan: list[PlanEntry], seconds: int, known: Sequence[Known] = ()
) -> list[tuple[str, str, str]]:
    """Rows for the phases: lk_qemu's judgement plus trinity's call count.

    Kernel reports that are known v4.20 reports (known: read_known()) are
    SKIP rows of their own instead of failures, and so are those, and the
    phases stuck, that QEMU's IRET to vm86 mode caused (fuzz_emulator).
    """
    rows: list[tuple[str, str, str]] = []

    def skip(i: serial.Issue, what: str, why: str) -> None:
        rows.append(
            (
                "SKIP",
                "fuzz %s: %s" % (r.guest, what),
                "%s during %s: %s (%s); log at %s:%d"
                % (i.kind, i.during, i.text[:120], why, r.log_path, i.line),
            )
        )

    if fuzz_emulator.probe_says_yes(r.lines):
        emulated = [i for i in r.issues if fuzz_emulator.vm86_sleep_report(i, r.lines)]
        r.issues = [i for i in r.issues if i not in emulated]
        for i in emulated:
            skip(
                i,
                "emulator report",
                "a fault in the vm86 mode that QEMU's IRET let user space "
                "enter: lktool/fuzz_emulator.py",
            )
    seen = [(i, known_report(i, known)) for i in r.issues]
    r.issues = [i for i, k in seen if k is None]
    for i, k in seen:
        if k is not None:
            skip(
                i,
                "known v4.20 report",
                "%s in %s" % (k.name, os.path.relpath(KNOWN_REPORTS, common.TOP)),
            )
    seeds = {name: seed for name, _, seed, _ in plan}
    keys = {verdict.result_name("fuzz " + r.guest, n): n for n in seeds}
    for status, name, detail in verdict.judge(r, prefix="fuzz"):
        key = keys.get(name)
        if key is None or key not in r.tests:
            rows.append((status, name, detail))
            continue
        lines = [t for _, t in r.tests[key].output]
        text = "\n".join(lines)
        ran = RAN_RE.findall(text)
        churn = CHURN_RE.findall(text)
        calls = sum(int(x[0]) for x in ran)
        emulator = None
        if status == "FAIL" and detail.startswith("exit 1;"):
            emulator = fuzz_emulator.stuck_in_vm86(lines)
        counted = bool(ran)
        if emulator and not ran:
            # trinity's main process, killed, gave no total: its last count
            calls = max((int(n) for n in ITER_RE.findall(text)), default=0)
            counted = calls > 0
        what = "%d calls (seed %d) in %ds" % (calls, seeds[key], seconds)
        if churn:
            what += ", %s" % ", ".join("%s churn %s ops" % (c[0], c[1]) for c in churn)
        if emulator:
            status = "PASS"
            what += "; %s, left there with SIGKILL pending; log at %s:%d" % (
                emulator,
                r.log_path,
                r.tests[key].line,
            )
        if status == "PASS" and not counted:
            rows.append(
                (
                    "FAIL",
                    name,
                    "trinity did not report its calls "
                    "(no 'Ran N syscalls' line); log at %s:%d"
                    % (r.log_path, r.tests[key].line),
                )
            )
        elif status == "PASS" and not calls:
            rows.append(
                (
                    "FAIL",
                    name,
                    "trinity made no call; log at %s:%d"
                    % (r.log_path, r.tests[key].line),
                )
            )
        elif status == "PASS":
            rows.append((status, name, what))
        else:
            rows.append((status, name, "%s; %s" % (detail, what)))
    return rows
