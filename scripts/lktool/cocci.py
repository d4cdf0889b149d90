# SPDX-License-Identifier: GPL-2.0
"""coccicheck (report mode) before and after each upstream-bound patch."""

from __future__ import annotations

import argparse

from typing import Any, Sequence

import collections
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

from . import apply, common, series


# Seconds spatch may spend on one file for one semantic patch (it takes
# 90 s for locks/double_lock.cocci on drivers/android/binder.c on an idle
# core); a file it gives up on fails the check.
COCCI_FILE_TIMEOUT = 900
COCCI_REPORT_RE = re.compile(r"^(\S+?):(\d+):(?:\d+(?:-\d+)?:)?\s*(.*)$")


class CocciScript:
    """A semantic patch of the tree's scripts/coccinelle/, with the options
    and the least spatch version its '// Options:' and '// Requires:'
    lines give (as scripts/coccicheck reads them)."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.options: list[str] = []
        self.requires = ""
        for line in text.splitlines():
            if "Options:" in line and not self.options:
                self.options = line.split(":", 1)[1].split()
            elif "Requires:" in line and not self.requires:
                self.requires = line.split(":", 1)[1].replace(" ", "")
        self.headers = "--include-headers" in self.options
        self.key = hashlib.sha256(text.encode()).hexdigest()[:16]


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def spatch_version() -> str:
    out = common.run(["spatch", "--version"], capture=True).stdout
    m = re.search(r"spatch version (\S+)", out)
    if not m:
        raise common.Failure("cannot tell spatch's version from: %s" % out[:200])
    return m.group(1)


def cocci_key(script: str, message: str, source_line: str) -> tuple[str, str, str]:
    """What identifies a report across versions of a file: the semantic
    patch, its message with the numbers in it (line numbers of other
    places) left out, and the text of the line it points at."""
    return (script, re.sub(r"\d+", "#", message), source_line.strip())


def cocci_new_reports(before: list[Any], after: list[Any]) -> list[str]:
    """The reports of `after` that `before` does not have (multisets of
    cocci_key() tuples, with their report lines)."""
    left = collections.Counter(k for k, _ in before)
    new = []
    for k, line in after:
        if left[k]:
            left[k] -= 1
        else:
            new.append(line)
    return new


def cocci_versions(
    tree: str, upstream: list[series.PatchEntry], commits: dict[str, str]
) -> tuple[dict[str, list[tuple[str, str | None, str]]], dict[str, tuple[str, str]]]:
    """{patch path: [(file, blob before or None, blob after)]} for the C
    sources and headers each upstream-bound patch adds or changes, and
    {blob: (commit, file)}: every version of a file to check once.

    A version's reports are cached by its blob (with the semantic patch
    and spatch's version) alone, although spatch also reads the files of
    its directory (local includes) and, for the few semantic patches
    without --no-includes, the tip's headers: a change there alone does
    not check the file again (remove $LK_OUT/cocci/ for that)."""
    per_patch: dict[str, list[tuple[str, str | None, str]]] = {}
    blobs: dict[str, tuple[str, str]] = {}
    for e in upstream:
        c = commits[e.path]
        # Raw lines ":MODE MODE OLD NEW STATUS\tFILE"; OLD is all zeros for
        # a new file.
        raw = common.git(
            ["diff-tree", "-r", "--no-commit-id", "--diff-filter=d", c], cwd=tree
        )
        rows = []
        for line in raw.splitlines():
            meta, f = line.split("\t", 1)
            if not f.endswith((".c", ".h")):
                continue
            old, after = meta.split()[2:4]
            before = None if set(old) == {"0"} else old
            rows.append((f, before, after))
            blobs.setdefault(after, (c, f))
            if before:
                blobs.setdefault(before, (c + "^", f))
        per_patch[e.path] = rows
    return per_patch, blobs


def write_blobs(tree: str, wanted: list[tuple[str, str]]) -> None:
    """Write git blobs to files: wanted is [(blob, path)]."""
    if not wanted:
        return
    with subprocess.Popen(
        ["git", "-C", tree, "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=common.clean_env(None),
    ) as p:
        assert p.stdin is not None and p.stdout is not None
        for blob, path in wanted:
            # One at a time: with every request written first, git would
            # block on a full pipe that nobody reads.
            p.stdin.write((blob + "\n").encode())
            p.stdin.flush()
            header = p.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise common.Failure(
                    "git cat-file: no blob %s for %s in %s" % (blob, path, tree)
                )
            data = p.stdout.read(int(header[2]))
            p.stdout.read(1)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)


def tree_blobs(
    tree: str, commit: str, paths: Sequence[str], recursive: bool = False
) -> list[tuple[str, str]]:
    """[(blob, path)] of the files (not symlinks or submodules) that
    `git ls-tree` lists at commit for paths."""
    listing = common.git(
        ["ls-tree"] + (["-r"] if recursive else []) + [commit] + list(paths), cwd=tree
    )
    out = []
    for line in listing.splitlines():
        meta, name = line.split("\t", 1)
        mode, kind, sha = meta.split()
        if kind == "blob" and mode != "120000":
            out.append((sha, name))
    return out


def stage_versions(
    tree: str, blobs: dict[str, tuple[str, str]], root: str
) -> dict[str, str]:
    """Lay each version out as root/BLOB/FILE, beside the files of its
    directory at the same commit (its local includes; fs/aio.c includes
    fs/aio_test.c).  {blob: staged path}."""
    staged, wanted = {}, []
    for blob, (commit, f) in sorted(blobs.items()):
        d = os.path.dirname(f)
        base = os.path.join(root, blob[:16])
        staged[blob] = os.path.join(base, f)
        for sha, name in tree_blobs(tree, commit, [(d + "/") if d else "."]):
            if name.endswith((".c", ".h")):
                wanted.append((sha, os.path.join(base, name)))
    write_blobs(tree, wanted)
    return staged


def run_spatch(
    script: CocciScript,
    files: list[str],
    includes: list[str],
    logfile: str,
    spatch_jobs: int,
) -> tuple[bool, list[str], str, dict[str, str]]:
    """scripts/coccicheck's report mode for one semantic patch on files
    (each a group of its own, by absolute path: spatch reads a relative
    one as a directory to change to); (ok, output lines, first error
    line, {file: exception} for the files it gave up on)."""
    groups = logfile + ".groups"
    with open(groups, "w") as f:
        f.write("".join(x + "\n\n" for x in files))
    cmd = (
        [
            "spatch",
            "-D",
            "report",
            "--no-show-diff",
            "--very-quiet",
            "--cocci-file",
            script.path,
        ]
        + script.options
        + includes
        + ["--file-groups", groups, "--timeout", str(COCCI_FILE_TIMEOUT)]
    )
    if spatch_jobs > 1:
        cmd += ["--jobs", str(spatch_jobs), "--chunksize", "1"]
    # With --jobs, spatch keeps its workers' output in a directory it
    # makes in its working directory (NAME_DATE_PID) and may leave it
    # there: never the checkout's.
    with tempfile.TemporaryDirectory(
        prefix="spatch-", dir=os.path.dirname(logfile)
    ) as cwd:
        r = common.run(cmd, cwd=cwd, capture=True, check=False, timeout=3600)
    with open(logfile, "a") as f:
        f.write("$ %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    err = [l for l in r.stderr.splitlines() if l.strip()]
    gave_up = {}
    for line in err:
        m = re.match(r"^EXN: (.*) in (/\S+)$", line)
        if m:
            gave_up[m.group(2)] = m.group(1)
    return (
        r.returncode == 0,
        r.stdout.splitlines(),
        err[0] if err else "exit %d" % r.returncode,
        gave_up,
    )


# What v4.20's semantic patches report on every version of a file that
# the series touches (v4.20's and each patch's), recorded (`lk cocci
# --record-baseline`) as the warning baselines are: v4.20's versions never
# change and hold the slowest single check (locks/double_lock.cocci on
# binder.c); the series' versions are looked up by their blob, so a patch
# that changes a file is checked again where it changed, and nothing else
# is.  `lk test --full` uses the record for v4.20's versions only.
COCCI_BASELINE = os.path.join(common.TOP, "configs", "cocci", "reports.json")


def read_cocci_baseline(
    version: str, path: str | None = None
) -> dict[tuple[str, str], list[Any]]:
    """{(semantic patch key, blob): reports} of the committed record; {}
    if it is missing or was recorded with another spatch version.

    The record lists the semantic patches ("scripts") and the versions
    ("blobs", each with the scripts that did not check it: spatch gave
    up), and the reports that are not empty: every other pair that the
    record covers had none."""
    try:
        with open(path or COCCI_BASELINE) as f:
            data = json.load(f)
    except OSError:
        return {}
    if data.get("spatch") != version:
        return {}
    reports = data.get("reports", {})
    return {
        (key, blob): [
            (tuple(k), line) for k, line in reports.get(key, {}).get(blob, [])
        ]
        for blob, unchecked in data.get("blobs", {}).items()
        for key in data.get("scripts", [])
        if key not in unchecked
    }


def write_cocci_baseline(
    version: str,
    reports: dict[tuple[str, str], list[Any]],
    blobs: dict[str, tuple[str, str]],
    scripts: list[CocciScript],
    path: str | None = None,
) -> None:
    """Record the reports of scripts (the semantic patches spatch ran) on
    blobs ({blob: (commit, file)}: every version of a touched file) in
    the committed file; a header counts for the scripts that read
    headers only."""
    keys = sorted(s.key for s in scripts)
    per: dict[str, dict[str, list[Any]]] = {}
    unchecked: dict[str, list[str]] = {}
    for blob, (_, name) in sorted(blobs.items()):
        unchecked[blob] = sorted(
            s.key
            for s in scripts
            if (s.headers or not name.endswith(".h")) and (s.key, blob) not in reports
        )
        for key in keys:
            rows = reports.get((key, blob))
            if rows:
                per.setdefault(key, {})[blob] = [[list(k), line] for k, line in rows]
    path = path or COCCI_BASELINE
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(
            {"spatch": version, "scripts": keys, "blobs": unchecked, "reports": per},
            f,
            indent=1,
            sort_keys=True,
        )
        f.write("\n")
    common.log(
        "cocci: recorded %d semantic patches on %d file versions in "
        "%s" % (len(keys), len(blobs), os.path.relpath(path, common.TOP))
    )


def v420_versions(tree: str, blobs: dict[str, tuple[str, str]]) -> set[str]:
    """The blobs of blobs ({blob: (commit, file)}) that are v4.20's own
    version of their file."""
    files = sorted(set(f for _, f in blobs.values()))
    at_base = set(tree_blobs(tree, "v4.20", files)) if files else set()
    return {b for b, (_, f) in blobs.items() if (b, f) in at_base}


def do_cocci(
    args: argparse.Namespace,
    results: common.Results,
    tree: str,
    entries: list[series.PatchEntry],
    commits: dict[str, str] | None = None,
) -> None:
    """coccicheck (report mode) before and after each upstream-bound patch
    on the C files it touches: no patch may add a report.  Each version of
    a file is checked once per semantic patch and the reports are kept in
    $LK_OUT/cocci/, keyed by spatch's version, the semantic patch and the
    file's blob, so a later run checks only what changed.  Every recorded
    version's reports come from the committed record (COCCI_BASELINE)
    when it was made with this spatch, with args.full (`lk test --full`)
    only the v4.20 versions': the series' are then checked by this spatch,
    not taken from the record.  With args.record_baseline every version's
    reports come from $LK_OUT/cocci/ or spatch (never from the record) and
    are recorded there."""
    if not shutil.which("spatch"):
        raise common.Failure("spatch is not installed; run 'scripts/lk deps'")
    upstream = [e for e in entries if e.upstream]
    commits = commits or apply.patch_commits(tree, entries)
    tip = commits[entries[-1].path]
    out = common.out_dir(args)
    version = spatch_version()
    cache = os.path.join(out, "cocci", "spatch-" + version)
    os.makedirs(out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="cocci-", dir=out)
    logfile = os.path.join(out, "logs", "cocci.log")
    os.makedirs(os.path.dirname(logfile), exist_ok=True)
    with open(logfile, "w"):
        pass
    try:
        per_patch, blobs = cocci_versions(tree, upstream, commits)
        record = getattr(args, "record_baseline", False) is True
        baseline = {} if record else read_cocci_baseline(version)
        v420 = v420_versions(tree, blobs)
        if getattr(args, "full", False) is True:
            baseline = {k: v for k, v in baseline.items() if k[1] in v420}
        # The semantic patches and the headers of the tip (-I, for the few
        # semantic patches that read includes), as coccicheck on the tip.
        tipdir = os.path.join(scratch, "tip")
        wanted = [
            (sha, os.path.join(tipdir, name))
            for sha, name in tree_blobs(
                tree,
                tip,
                ["scripts/coccinelle", "include", "arch/x86/include"],
                recursive=True,
            )
        ]
        own = os.path.join(tipdir, "scripts", "coccinelle") + os.sep
        write_blobs(tree, [w for w in wanted if w[1].startswith(own)])
        scripts = []
        for name in sorted(n for _, n in wanted if n.endswith(".cocci")):
            with open(name) as fh:
                scripts.append(CocciScript(name, fh.read()))
        includes = []
        for d in (
            "arch/x86/include",
            "include",
            "arch/x86/include/uapi",
            "include/uapi",
        ):
            includes += ["-I", os.path.join(tipdir, d)]
        includes += ["--include", os.path.join(tipdir, "include/linux/kconfig.h")]
        staged: dict[str, str] = {}
        lines_of: dict[str, list[str]] = {}

        def stage(todo: list[str]) -> None:
            """Write what spatch reads for the versions in todo, the first
            time one is checked: the tip's headers, and each version
            beside the files of its directory.  A run whose reports all
            come from the record or the cache writes none of it."""
            if not staged:
                write_blobs(tree, [w for w in wanted if not w[1].startswith(own)])
            new = {b: blobs[b] for b in todo if b not in staged}
            for blob, path in stage_versions(
                tree, new, os.path.join(scratch, "v")
            ).items():
                staged[blob] = path
                with open(path, errors="replace") as fh:
                    lines_of[blob] = fh.read().splitlines()

        reports = {}  # (script.key, blob) -> [(cocci key, report line)]
        usable = []
        for s in scripts:
            rel = os.path.relpath(s.path, tipdir)
            if s.requires and version_tuple(version) < version_tuple(s.requires):
                results.skipped(
                    "cocci: " + rel,
                    "needs spatch %s, this is "
                    "%s (coccicheck skips it too)" % (s.requires, version),
                )
                continue
            todo = []
            for blob, (_, f) in sorted(blobs.items()):
                if f.endswith(".h") and not s.headers:
                    continue
                if (s.key, blob) in baseline:
                    reports[(s.key, blob)] = baseline[(s.key, blob)]
                    continue
                cached = os.path.join(cache, s.key, blob + ".json")
                try:
                    with open(cached) as fh:
                        reports[(s.key, blob)] = [
                            (tuple(k), line) for k, line in json.load(fh)
                        ]
                except (OSError, ValueError):
                    todo.append(blob)
            if todo:
                stage(todo)
                ok, lines, err, gave_up = run_spatch(
                    s,
                    [staged[b] for b in todo],
                    includes,
                    logfile,
                    int(common.jobs()) - 1 or 1,
                )
                if not ok:
                    results.skipped(
                        "cocci: " + rel, "spatch %s cannot run it: %s" % (version, err)
                    )
                    continue
                if gave_up:
                    results.failed(
                        "cocci: " + rel,
                        "spatch gave up on %s"
                        % "; ".join(
                            "%s (%s)" % (blobs[b][1], gave_up[staged[b]])
                            for b in todo
                            if staged[b] in gave_up
                        ),
                    )
                found: dict[str, list[Any]] = {
                    b: [] for b in todo if staged[b] not in gave_up
                }
                by_path = {staged[b]: b for b in found}
                for line in lines:
                    m = COCCI_REPORT_RE.match(line)
                    hit = by_path.get(m.group(1)) if m else None
                    if m is None or hit is None:
                        continue
                    n = int(m.group(2))
                    src = lines_of[hit][n - 1] if 0 < n <= len(lines_of[hit]) else ""
                    shown = blobs[hit][1] + line[len(m.group(1)) :]
                    found[hit].append((cocci_key(rel, m.group(3), src), shown))
                for blob, rows in found.items():
                    reports[(s.key, blob)] = rows
                    d = os.path.join(cache, s.key)
                    os.makedirs(d, exist_ok=True)
                    tmp = os.path.join(d, blob + ".json.tmp")
                    with open(tmp, "w") as fh:
                        json.dump(rows, fh)
                    os.replace(tmp, os.path.join(d, blob + ".json"))
            usable.append(s)
        if record:
            write_cocci_baseline(version, reports, blobs, usable)
        for e in upstream:
            rows = per_patch[e.path]
            if not rows:
                continue
            new, n_before, n_after = [], 0, 0
            for f, before, after in rows:
                for s in usable:
                    if f.endswith(".h") and not s.headers:
                        continue
                    b = reports.get((s.key, before), []) if before else []
                    a = reports.get((s.key, after), [])
                    n_before += len(b)
                    n_after += len(a)
                    new += cocci_new_reports(b, a)
            what = "cocci: " + e.path
            detail = (
                "%d file(s), %d semantic patches: %d report(s) "
                "before, %d after" % (len(rows), len(usable), n_before, n_after)
            )
            if new:
                results.failed(
                    what,
                    "%s, new: %s (log: %s)" % (detail, "; ".join(new[:5]), logfile),
                )
            else:
                results.passed(what, detail + ", none new")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# do_cocci() beside the builds (percheck.py, pipeline.py): it must not stop
# the lane it shares with them, so its failure is a FAIL row.
guarded_cocci = common.failure_as_row("cocci", do_cocci)
