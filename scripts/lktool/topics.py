# SPDX-License-Identifier: GPL-2.0
"""Each topic applies to plain v4.20 with git am, alone and in any order."""

from __future__ import annotations

import argparse

import collections
import os
import subprocess
import tempfile

from . import common, series


def am_trees(repo: str, runs: list[tuple[str, str]]) -> list[str | None]:
    """For each (start, mbox text) of runs, the git tree id of start with
    the mbox applied as git am applies it, or None if it does not apply.

    git am is git mailsplit, git mailinfo and git apply --index of each
    mail; this runs the same three on a throw-away index read from start,
    without a work tree: checking out v4.20's 62,000 files for each run
    took 30 to 60 s on the CI machine, the index takes a second.
    """
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"))
        for n, (start, text) in enumerate(runs):
            out.append(
                am_tree_in_index(repo, start, text, os.path.join(tmp, str(n)), env)
            )
    return out


def am_tree_in_index(
    repo: str, start: str, text: str, tmp: str, env: dict[str, str]
) -> str | None:
    """One run of am_trees(), in the index that env names and folder tmp."""
    mails = os.path.join(tmp, "mails")
    os.makedirs(mails)
    mbox = os.path.join(tmp, "mbox")
    with open(mbox, "w", encoding="utf-8") as f:
        f.write(text)
    common.git(["read-tree", start], cwd=repo, env=env)
    n = common.run(
        ["git", "mailsplit", "--keep-cr", "-o" + mails, mbox],
        cwd=repo,
        capture=True,
        check=False,
    )
    if n.returncode or not n.stdout.strip().isdigit():
        return None
    for mail in sorted(os.listdir(mails)):
        msg, patch = os.path.join(tmp, "msg"), os.path.join(tmp, "patch")
        with open(os.path.join(mails, mail), "rb") as f:
            info = subprocess.run(
                ["git", "mailinfo", msg, patch],
                cwd=repo,
                stdin=f,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=common.clean_env(),
            )
        # git am stops at a mail without a patch ("Patch is empty").
        if info.returncode or not os.path.getsize(patch):
            return None
        r = common.run(
            ["git", "apply", "--cached", patch],
            cwd=repo,
            env=env,
            capture=True,
            check=False,
        )
        if r.returncode:
            return None
    return common.git(["write-tree"], cwd=repo, env=env)


def am_tree(repo: str, start: str, mbox_text: str) -> str | None:
    return am_trees(repo, [(start, mbox_text)])[0]


def series_mbox(series_dir: str, entries: list[series.PatchEntry]) -> str:
    out = []
    for e in entries:
        with open(os.path.join(series_dir, "patches", e.path), encoding="utf-8") as f:
            out.append(f.read().rstrip("\n") + "\n\n")
    return "".join(out)


def do_topics(
    args: argparse.Namespace,
    results: common.Results,
    tree: str,
    entries: list[series.PatchEntry],
) -> None:
    """Every topic applies with git am to plain v4.20 on its own (on top of
    the topic its cover letter says it needs, if any), its KUnit follow-up
    on top of it, and the topics in reverse order (a needed topic still
    first) give the tree that they give in the order of series."""
    series_dir = os.path.abspath(args.series_dir)
    by: collections.OrderedDict[
        str, list[series.PatchEntry]
    ] = collections.OrderedDict()
    for e in entries:
        if e.upstream:
            by.setdefault(e.section, []).append(e)
    topics = [sec for sec in by if "/" not in sec]
    if not topics:
        return

    def needed(t):
        cover = os.path.join(series_dir, "patches", t, "cover-letter")
        if not os.path.exists(cover):
            return []
        n = series.read_cover(cover)[0].get("needs")
        return needed(n) + [n] if n in by else []

    def below(t):
        return [e for n in needed(t) for e in by[n]]

    def whole(t):
        return by[t] + by.get(t + "/" + series.FOLLOWUP, [])

    runs = [("v4.20", series_mbox(series_dir, below(t) + by[t])) for t in topics]
    runs += [
        ("v4.20", series_mbox(series_dir, below(t) + whole(t)))
        for t in topics
        if t + "/" + series.FOLLOWUP in by
    ]
    forward = [e for t in topics for e in whole(t)]
    back = []
    for t in reversed(topics):
        back += [n for n in needed(t) + [t] if n not in back]
    backward = [e for t in back for e in whole(t)]
    runs += [
        ("v4.20", series_mbox(series_dir, forward)),
        ("v4.20", series_mbox(series_dir, backward)),
    ]
    got = am_trees(tree, runs)
    for t, tid in zip(topics, got):
        on = "".join(" + topic %s" % n for n in needed(t))
        if tid is None:
            results.failed(
                "topic %s" % t,
                "patches/%s/ does not apply to plain v4.20%s with git am" % (t, on),
            )
        else:
            results.passed(
                "topic %s" % t, "%d patches apply to plain v4.20%s" % (len(by[t]), on)
            )
    rest = got[len(topics) :]
    for t in [t for t in topics if t + "/" + series.FOLLOWUP in by]:
        tid, rest = rest[0], rest[1:]
        name = "topic %s/%s" % (t, series.FOLLOWUP)
        if tid is None:
            results.failed(name, "does not apply on top of topic %s" % t)
        else:
            results.passed(
                name,
                "%d patches apply on top of topic %s"
                % (len(by[t + "/" + series.FOLLOWUP]), t),
            )
    fwd, bwd = rest
    if fwd is None or bwd is None or fwd != bwd:
        results.failed(
            "topics in any order",
            "the topics applied to plain "
            "v4.20 in series order give tree %s, in reverse order "
            "%s" % (str(fwd)[:12], str(bwd)[:12]),
        )
    else:
        results.passed(
            "topics in any order", "%s, in series order and in reverse" % fwd[:12]
        )
