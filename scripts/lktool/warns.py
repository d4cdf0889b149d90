# SPDX-License-Identifier: GPL-2.0
"""Compiler warnings: parse a build log, compare with the committed baselines,
record them."""

from __future__ import annotations

import argparse

from typing import Mapping, Sequence

import collections
import os
import re

from . import apply, build, common, targetconf


WARN_RE = re.compile(
    r"^(?P<file>[^\s:]+?|\{standard input\}):(?:\d+:)?(?:\d+:)?\s*"
    r"(?P<kind>warning|Warning|WARNING):\s*(?P<msg>.*)$"
)
SPARSE_ERROR_RE = re.compile(
    r"^(?P<file>[^\s:]+?):\d+:\d+:\s*(?P<kind>error):\s*(?P<msg>.*)$"
)
ERROR_RE = re.compile(
    r"(: (fatal )?error:|: Error:|^make(\[\d+\])?: \*\*\*|"
    r"undefined reference|multiple definition|"
    r"No rule to make target)"
)


def first_error(text: str) -> str:
    """The first line of a build log that reports an error, or '?'."""
    for line in text.splitlines():
        if ERROR_RE.search(line):
            return line.strip()
    return "?"


def normalise_path(path: str, roots: Sequence[str]) -> str:
    for r in roots:
        if r and path.startswith(r.rstrip("/") + "/"):
            return path[len(r.rstrip("/")) + 1 :]
    return path


def build_roots(build_dir: str, tree: str) -> tuple[str, str, str]:
    """The prefixes that parse_warnings() drops from a build's paths: the
    build and source directories, and the source directory as seen from
    the build directory (a ccache with base_dir set makes the compiler
    see it so, as lk's did before cli.ccache_env())."""
    return (build_dir, tree, os.path.relpath(tree, build_dir))


def parse_warnings(
    text: str, roots: Sequence[str] = (), errors: bool = False
) -> collections.Counter[str]:
    """Return a Counter of 'file: message' for every warning in a build log.

    Line and column numbers are dropped, so that a warning keeps its key
    when a patch moves code around; build and source directories are made
    relative.
    """
    found: collections.Counter[str] = collections.Counter()
    for line in text.splitlines():
        line = line.strip()
        m = WARN_RE.match(line)
        if not m and errors:
            m = SPARSE_ERROR_RE.match(line)
        if m:
            f = normalise_path(m.group("file"), roots)
            msg = m.group("msg")
        elif line.startswith("WARNING: "):
            # modpost: "WARNING: vmlinux.o(.text+0x12): Section mismatch..."
            f, msg = "modpost", line[len("WARNING: ") :]
        else:
            continue
        # gcc quotes with U+2018/U+2019 under a UTF-8 locale, ' otherwise.
        msg = msg.replace("\u2018", "'").replace("\u2019", "'")
        # gcc's temporary assembly files have random names.
        if re.match(r"^/tmp/cc\w+\.s$", f) or f == "{standard input}":
            f = "<assembler input>"
        # Offsets move with every change to the code around them.
        msg = re.sub(r"\b0x[0-9a-f]+\b", "0x?", msg)
        for r in roots:
            if r:
                msg = msg.replace(r.rstrip("/") + "/", "")
        found["%s: %s" % (f, msg.strip())] += 1
    return found


def read_baseline(path: str) -> tuple[collections.Counter[str] | None, str | None]:
    base: collections.Counter[str] = collections.Counter()
    stamp = None
    if not os.path.exists(path):
        return None, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# prerequisite stack: "):
                stamp = line.split(": ", 1)[1]
            if not line or line.startswith("#"):
                continue
            n, _, key = line.partition(" ")
            base[key] += int(n)
    return base, stamp


def same_files(counts: Mapping[str, int]) -> collections.Counter[str]:
    """counts with the file of each "file: message" key normalised
    (a/b/../c to a/c); keys of the same warning add up."""
    out: collections.Counter[str] = collections.Counter()
    for key, n in counts.items():
        path, sep, rest = key.partition(":")
        if sep and "/../" in path:
            key = os.path.normpath(path) + sep + rest
        out[key] += n
    return out


def new_warnings(
    warnings: collections.Counter[str], base: Mapping[str, int]
) -> collections.Counter[str]:
    """The warnings that the baseline does not have.

    A warning in a .c file is new if it appears more often than in the
    baseline.  One in a header is new only if the baseline lacks it: a
    header's warning is printed once per file that includes it, so a patch
    that adds an includer would otherwise be blamed for it.
    """
    # One file under two spellings (gas names an included file by the path
    # of the object that includes it: cpu/sh4/../sh3/../../entry-common.S
    # and cpu/sh3/../../entry-common.S): compared by its normalised path.
    warnings = same_files(warnings)
    base = same_files(base)
    new: collections.Counter[str] = collections.Counter()
    for key, n in warnings.items():
        if key.split(":", 1)[0].endswith(".h"):
            if key not in base:
                new[key] = n
        elif n > base.get(key, 0):
            new[key] = n - base.get(key, 0)
    return new


def judge_warnings(
    warnings: collections.Counter[str],
    base_path: str,
    stamp: str | None,
    incremental: bool,
    listing: str,
) -> tuple[str, str]:
    """Compare a build's warnings with the baseline: (status, detail)."""
    rel = os.path.relpath(base_path, common.TOP)
    base, base_stamp = read_baseline(base_path)
    if base is None:
        return ("FAIL", "no baseline %s; run 'scripts/lk baseline' and commit it" % rel)
    if stamp and base_stamp != stamp:
        return (
            "FAIL",
            "%s was made for another prerequisite stack; run "
            "'scripts/lk baseline' and commit it" % rel,
        )
    new = new_warnings(warnings, base)
    if new:
        return (
            "FAIL",
            "%d new warning(s) against the v4.20 baseline, "
            "first: %s; all in %s" % (sum(new.values()), sorted(new)[0], listing),
        )
    if incremental:
        # Objects that were up to date printed nothing: a warning they had
        # last time would go unseen.
        return (
            "SKIP",
            "incremental build: only rebuilt objects were "
            "compared (none new); use --fresh for the full comparison",
        )
    return "PASS", "%d warnings, none new (baseline %d)" % (
        sum(warnings.values()),
        sum(base.values()),
    )


def write_baseline(
    name: str, goals: list[str], warnings: Mapping[str, int], stamp: str
) -> None:
    path = os.path.join(common.WARNINGS, name + ".txt")
    with open(path, "w") as f:
        f.write(
            "# Warnings of v4.20 plus the prerequisite stack, target %s "
            "(make %s).\n" % (name, " ".join(goals))
        )
        f.write("# Written by 'scripts/lk baseline'; count, file, message.\n")
        f.write("# prerequisite stack: %s\n" % stamp)
        f.write(
            "# (a hash of the prerequisite patches, the target's .conf "
            "and fragments,\n#  and the compiler's version)\n"
        )
        fails = targetconf.load_target(name)["baseline_fails"]
        if fails:
            f.write(
                "# Made with make -k: v4.20 cannot compile %s in this "
                "configuration\n# (baseline_fails).\n" % " ".join(fails)
            )
        for k, n in sorted(warnings.items()):
            f.write("%d %s\n" % (n, k))
    common.log(
        "baseline: %s: %d warnings in %s"
        % (name, sum(warnings.values()), os.path.relpath(path, common.TOP))
    )


def complete_log_of(
    out: str, name: str, commit: str, goals: list[str], stamp: str
) -> collections.Counter[str] | None:
    """Warnings of an earlier complete build of `commit`, if there is one."""
    path = os.path.join(out, "logs", "warnings-%s.txt" % name)
    if not os.path.exists(path):
        return None
    meta: dict[str, str] = {}
    warnings: collections.Counter[str] = collections.Counter()
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^# (\w+): (.*)$", line)
            if m:
                meta[m.group(1)] = m.group(2)
            elif line:
                n, _, key = line.partition(" ")
                warnings[key] += int(n)
    if (
        meta.get("tree") != commit
        or meta.get("complete") != "yes"
        or meta.get("goals") != " ".join(goals)
        or meta.get("stamp") != stamp
    ):
        return None
    return warnings


def do_baseline(args: argparse.Namespace) -> bool:
    """Record the warnings of the prerequisite-only tree, per target.

    A complete build of exactly that tree made earlier (by `lk build` from
    empty build directories) is reused; otherwise the tree is built afresh.
    """
    out = common.out_dir(args)
    tree = apply.applied_tree(args)
    prereq = common.git(["rev-parse", "prereq"], cwd=tree)
    series_dir = os.path.abspath(args.series_dir)
    results = common.Results()
    todo = []
    for name in args.target or targetconf.matrix("full"):
        t = targetconf.load_target(name)
        stamp = targetconf.baseline_stamp(series_dir, t)
        w = complete_log_of(out, name, prereq, t["goals"], stamp)
        if w is None:
            todo.append(t)
        else:
            common.log(
                "baseline: %s: reusing the complete build of %s" % (name, prereq[:12])
            )
            write_baseline(name, t["goals"], w, stamp)
    if not todo:
        return True
    common.git(["checkout", "-q", "-f", "prereq"], cwd=tree)
    try:
        for t in todo:
            stamp = targetconf.baseline_stamp(series_dir, t)
            w = build.build_target(
                t,
                tree,
                os.path.join(out, "baseline"),
                t["goals"],
                results,
                None,
                fresh=True,
                stamp=stamp,
                before_tip=True,
            )
            if w is not None:
                write_baseline(t["name"], t["goals"], w, stamp)
    finally:
        common.git(["checkout", "-q", "-f", "series"], cwd=tree)
    common.log(results.summary())
    return results.ok()
