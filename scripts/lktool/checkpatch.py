# SPDX-License-Identifier: GPL-2.0
"""checkpatch --strict on each upstream-bound patch, with the exceptions
of scripts/checkpatch-exceptions."""

from __future__ import annotations

import argparse

from typing import Sequence

import collections
import hashlib
import json
import os
import re

from . import common, series


CheckpatchException = collections.namedtuple(
    "CheckpatchException", "patch type file text reason lineno"
)
Complaint = collections.namedtuple("Complaint", "level type message file quoted")
CHECKPATCH_EXCEPTIONS_FORMAT = "PATCH | TYPE | FILE | LINE TEXT | reason"
# checkpatch's summary line: a report without it did not run to its end.
TOTAL_RE = re.compile(r"^total: (\d+) errors, (\d+) warnings(?:, (\d+) checks)?", re.M)


def checkpatch_exceptions(
    path: str | None = None,
) -> dict[str, list[CheckpatchException]]:
    """{patch: [CheckpatchException, ...]} from scripts/checkpatch-exceptions.

    Each line names one occurrence: the patch, checkpatch's type, the file
    the complaint is about ("-" for the commit message) and text that the
    line checkpatch quotes contains.  A complaint of the same type anywhere
    else in the patch is not excused.
    """
    path = path or os.path.join(common.TOP, "scripts", "checkpatch-exceptions")
    allow: dict[str, list[CheckpatchException]] = collections.defaultdict(list)
    if not os.path.exists(path):
        return allow
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.lstrip().startswith("#") or not line.strip():
                continue
            parts = [p.strip() for p in line.rstrip("\n").split(" | ")]
            if len(parts) != 5 or not all(parts):
                raise common.Failure(
                    "%s:%d: want '%s'" % (path, n, CHECKPATCH_EXCEPTIONS_FORMAT)
                )
            if not re.match(r"^[A-Z0-9_]+$", parts[1]):
                raise common.Failure(
                    "%s:%d: %r is not a checkpatch type" % (path, n, parts[1])
                )
            allow[parts[0]].append(
                CheckpatchException(
                    parts[0], parts[1], parts[2], parts[3], parts[4], lineno=n
                )
            )
    return allow


def patch_file_at(patch_lines: list[str], linenr: int) -> str:
    """The file that line linenr (1-based) of a patch belongs to, or "-"
    for the commit message and anything before the first diff."""
    for line in reversed(patch_lines[:linenr]):
        m = re.match(r"^diff --git a/\S+ b/(\S+)$", line)
        if m:
            return m.group(1)
    return "-"


def checkpatch_complaints(text: str, patch_lines: list[str]) -> list[Complaint]:
    """The complaints of checkpatch --show-types output, each with the file
    it is about and the first line that checkpatch quotes."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = re.match(r"^(ERROR|WARNING|CHECK):(\w+):\s*(.*)$", line)
        if not m:
            continue
        where, quoted = "-", ""
        loc = re.match(
            r"^#(\d+): (?:FILE: (.+?):\d+:)?\s*$",
            lines[i + 1] if i + 1 < len(lines) else "",
        )
        if loc:
            where = loc.group(2) or patch_file_at(patch_lines, int(loc.group(1)))
            quoted = lines[i + 2] if i + 2 < len(lines) else ""
        out.append(Complaint(m.group(1), m.group(2), m.group(3), where, quoted))
    return out


def excuses(exc: CheckpatchException, complaint: Complaint) -> bool:
    return (
        exc.type == complaint.type
        and exc.file == complaint.file
        and exc.text in complaint.quoted
    )


def checkpatch_output(
    tree: str, patch: str, logfile: str, cache: str | None = None
) -> str:
    """checkpatch --strict's report on one patch (its log in logfile).

    With cache (a directory), a report is kept there under a key of the
    tree's commit tree id and the patch's bytes, which are all that
    checkpatch reads (its script and data files are the tree's), and a
    run with the same key reads it instead of running checkpatch again:
    a warm run spends no CPU on patches that did not change.  Only a
    report that ran to its summary is kept.

    Raises Failure when checkpatch itself did not run to its summary.
    """
    key = None
    if cache:
        with open(patch, "rb") as f:
            text = f.read()
        head = common.git(["rev-parse", "HEAD^{tree}"], cwd=tree).strip()
        key = hashlib.sha256(head.encode() + b"\0" + text).hexdigest()
        kept = os.path.join(cache, key + ".json")
        if os.path.exists(kept):
            with open(kept) as f:
                out = json.load(f)["report"]
            with open(logfile, "w") as f:
                f.write(out)
            return out
    cp = os.path.join(tree, "scripts", "checkpatch.pl")
    # checkpatch runs 'python scripts/spdxcheck.py' for each SPDX tag a
    # patch adds: Debian's python (python-is-python3, with python3-ply and
    # python3-git), not one that an earlier PATH entry may hold without
    # them.
    env = dict(os.environ)
    env["PATH"] = "/usr/bin:" + env.get("PATH", "")
    r = common.run(
        ["perl", cp, "--strict", "--no-signoff", "--show-types", "--root", tree, patch],
        cwd=tree,
        capture=True,
        check=False,
        env=env,
    )
    with open(logfile, "w") as f:
        f.write(r.stdout + r.stderr)
    if "Traceback (most recent call last)" in r.stderr:
        raise common.Failure(
            "checkpatch's SPDX check (scripts/spdxcheck.py) did "
            "not run; log at %s" % logfile
        )
    if r.returncode > 1 or not TOTAL_RE.search(r.stdout):
        raise common.Failure(
            "checkpatch did not finish (exit %d); log at %s" % (r.returncode, logfile)
        )
    if cache and key:
        os.makedirs(cache, exist_ok=True)
        tmp = os.path.join(cache, key + ".tmp")
        with open(tmp, "w") as f:
            json.dump({"report": r.stdout}, f)
        os.replace(tmp, os.path.join(cache, key + ".json"))
    return r.stdout


def run_checkpatch(
    tree: str,
    patch: str,
    logfile: str,
    allowed: Sequence[CheckpatchException] = (),
    cache: str | None = None,
) -> tuple[list[str], list[CheckpatchException]]:
    """checkpatch --strict on one patch: (unexcused complaints, unused
    exceptions).  allowed holds the patch's CheckpatchExceptions; cache
    is checkpatch_output()'s.

    Raises Failure when checkpatch itself did not run to its summary.
    """
    text = checkpatch_output(tree, patch, logfile, cache)
    with open(patch, errors="replace") as f:
        patch_lines = f.read().splitlines()
    problems, used = [], set()
    for c in checkpatch_complaints(text, patch_lines):
        hits = [e for e in allowed if excuses(e, c)]
        used.update(hits)
        if not hits:
            problems.append(
                "%s:%s: %s (%s: %s)"
                % (c.level, c.type, c.message, c.file, c.quoted.strip())
            )
    total = TOTAL_RE.search(text)
    complained = bool(total and any(int(n or 0) for n in total.groups()))
    if complained and not problems and not used:
        raise common.Failure(
            "checkpatch failed but reported nothing; log at %s" % logfile
        )
    return problems, [e for e in allowed if e not in used]


def do_checkpatch(
    args: argparse.Namespace,
    results: common.Results,
    tree: str,
    entries: list[series.PatchEntry],
) -> None:
    """checkpatch --strict on each upstream-bound patch, with the applied
    tree at the series' tip as its --root."""
    series_dir = os.path.abspath(args.series_dir)
    logdir = os.path.join(common.out_dir(args), "logs")
    os.makedirs(logdir, exist_ok=True)
    allow = checkpatch_exceptions()
    for e in entries:
        if not e.upstream:
            continue
        logfile = os.path.join(
            logdir, "checkpatch-%s.log" % series.slug(os.path.basename(e.path))
        )
        try:
            probs, unused = run_checkpatch(
                tree,
                os.path.join(series_dir, "patches", e.path),
                logfile,
                allow.get(series.patch_key(e.path), ()),
                cache=os.path.join(common.out_dir(args), "cache", "checkpatch"),
            )
        except common.Failure as err:
            results.failed("checkpatch: " + e.path, str(err))
            continue
        if probs:
            results.failed(
                "checkpatch: " + e.path,
                "%d complaint(s), first: "
                "%s; log at %s" % (len(probs), probs[0], logfile),
            )
        elif unused:
            results.failed(
                "checkpatch: " + e.path,
                "scripts/checkpatch-"
                "exceptions:%d excuses a %s complaint that "
                "checkpatch no longer makes; remove it"
                % (unused[0].lineno, unused[0].type),
            )
        else:
            results.passed("checkpatch: " + e.path)
    if series_dir != common.TOP:
        return  # the exceptions file is this checkout's series'
    for path in sorted(
        set(allow) - {series.patch_key(e.path) for e in entries if e.upstream}
    ):
        results.failed(
            "checkpatch: exceptions",
            "scripts/checkpatch-"
            "exceptions:%d names %s, which is not an upstream-"
            "bound patch of the series" % (allow[path][0].lineno, path),
        )
