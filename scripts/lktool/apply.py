# SPDX-License-Identifier: GPL-2.0
"""git am the series onto v4.20 in the work directory, and export it back."""

from __future__ import annotations

import argparse

import collections
import hashlib
import os
import re
import shutil
import threading

from . import basetree, common, series, trailers


def git_env() -> dict[str, str]:
    """Identity for the commits that git am makes in our scratch tree."""
    env = dict(os.environ)
    env.setdefault("GIT_COMMITTER_NAME", "lk apply")
    env.setdefault("GIT_COMMITTER_EMAIL", "lk-apply@localhost")
    return env


def is_managed(tree: str) -> bool:
    """True if `tree` is a clone that lk made (and may reset or remove)."""
    r = common.run(["git", "config", "lk.managed"], cwd=tree, capture=True, check=False)
    return r.stdout.strip() == "true"


def prepare_tree(base: str, kind: str, tree: str) -> None:
    """Make `tree` a fresh clone of the base with branch 'series' at v4.20.

    Only a clone that lk made itself is reset or replaced; anything else at
    that path stops the run.
    """
    reuse = False
    if os.path.isdir(os.path.join(tree, ".git")):
        if not is_managed(tree):
            raise common.Failure(
                "%s is a git tree that lk did not make; refusing to "
                "reset it (choose another --out or LK_OUT)" % tree
            )
        want = (
            common.git(["rev-parse", "v4.20^{tree}"], cwd=base)
            if kind == "git"
            else None
        )
        have = common.run(
            ["git", "rev-parse", "-q", "--verify", "v4.20^{tree}"],
            cwd=tree,
            capture=True,
            check=False,
        ).stdout.strip()
        reuse = want is not None and want == have
    elif os.path.exists(tree) and os.listdir(tree):
        raise common.Failure(
            "%s exists and is not a clone made by lk; refusing to "
            "remove it (choose another --out or LK_OUT)" % tree
        )
    if reuse:
        common.run(["git", "am", "--abort"], cwd=tree, capture=True, check=False)
        common.git(["checkout", "-q", "-f", "--detach", "v4.20"], cwd=tree)
        common.git(["clean", "-q", "-fdx"], cwd=tree)
    else:
        if os.path.exists(tree):
            shutil.rmtree(tree)
        os.makedirs(os.path.dirname(tree), exist_ok=True)
        if kind == "git":
            common.run(
                ["git", "clone", "-q", "--shared", "--no-checkout", base, tree],
                capture=True,
            )
            common.git(
                ["fetch", "-q", base, "refs/tags/v4.20:refs/tags/v4.20"], cwd=tree
            )
        else:
            common.log("apply: importing plain tree %s into git" % base)
            shutil.copytree(base, tree, symlinks=True)
            basetree.make_git_base(tree)
        common.git(["config", "lk.managed", "true"], cwd=tree)
        common.git(["config", "user.name", "lk apply"], cwd=tree)
        common.git(["config", "user.email", "lk-apply@localhost"], cwd=tree)
        common.git(["checkout", "-q", "-f", "--detach", "v4.20"], cwd=tree)
    common.git(["checkout", "-q", "-B", "series", "v4.20"], cwd=tree)


def apply_series(
    series_dir: str, tree: str, entries: list[series.PatchEntry], logfile: str
) -> dict[str, str]:
    """git am every entry onto branch 'series'; return {path: commit}."""
    commits = {}
    pdir = os.path.join(series_dir, "patches")
    for e in entries:
        # Committer date = author date: the same series always gives the
        # same commit ids, so logs and baselines can name them.
        r = common.run(
            [
                "git",
                "am",
                "-q",
                "--keep-cr",
                "--no-3way",
                "--committer-date-is-author-date",
                os.path.join(pdir, e.path),
            ],
            cwd=tree,
            env=git_env(),
            capture=True,
            check=False,
        )
        with open(logfile, "a") as f:
            f.write("git am %s\n%s%s" % (e.path, r.stdout, r.stderr))
        if r.returncode:
            out = r.stdout + r.stderr
            files = sorted(
                set(
                    re.findall(
                        r"(?:patch failed|does not exist in index|already exists in "
                        r"working directory|error: while searching for):?\s*"
                        r"([^\s:]+)",
                        out,
                    )
                )
            )
            files += sorted(
                set(re.findall(r"^error: ([^:\s]+): ", out, re.M)) - set(files)
            )
            errors = re.findall(r"^error: (.*)$", out, re.M)
            common.run(["git", "am", "--abort"], cwd=tree, capture=True, check=False)
            raise common.Failure(
                "patch patches/%s does not apply (failing file: %s; "
                "%s); log at %s"
                % (
                    e.path,
                    ", ".join(files) or "none named",
                    errors[0] if errors else "no error message",
                    logfile,
                )
            )
        commits[e.path] = common.git(["rev-parse", "HEAD"], cwd=tree)
    return commits


def series_stamp(series_dir: str) -> str:
    """Hash of the series file and every patch it lists."""
    h = hashlib.sha256()
    with open(os.path.join(series_dir, "series"), "rb") as f:
        h.update(f.read())
    for e in series.read_series(series_dir):
        with open(os.path.join(series_dir, "patches", e.path), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


# The guest lane's threads (qemu_stages.GuestLane) each check the tree
# out: one git checkout at a time, or the second finds the index locked.
TREE_LOCK = threading.Lock()


def applied_tree(args: argparse.Namespace, keep_edits: bool = False) -> str:
    """The applied tree, checked to hold the current series, at its tip.

    Local changes to its files are thrown away (the stages test the series
    as it is), unless keep_edits: `lk kunit` tests a tree that a person is
    editing, and says which files differ from the series."""
    tree = os.path.join(common.out_dir(args), "tree")
    if not os.path.isdir(os.path.join(tree, ".git")) or not is_managed(tree):
        raise common.Failure(
            "no applied tree at %s; run 'scripts/lk apply' first" % tree
        )
    have = common.run(
        ["git", "config", "lk.series"], cwd=tree, capture=True, check=False
    ).stdout.strip()
    if have != series_stamp(os.path.abspath(args.series_dir)):
        raise common.Failure(
            "%s holds another version of the series (or a "
            "half-applied one); run 'scripts/lk apply'" % tree
        )
    if not keep_edits:
        with TREE_LOCK:
            common.git(["checkout", "-q", "-f", "series"], cwd=tree)
        return tree
    with TREE_LOCK:
        common.git(["checkout", "-q", "series"], cwd=tree)
    changed = common.run(
        ["git", "diff", "--name-only", "HEAD"], cwd=tree, capture=True
    ).stdout.split()
    if changed:
        common.log(
            "%s: testing %d file(s) changed from the series: %s"
            % (
                tree,
                len(changed),
                " ".join(changed[:5]) + (" ..." if len(changed) > 5 else ""),
            )
        )
    return tree


def do_apply(
    args: argparse.Namespace, results: common.Results | None = None
) -> tuple[str, list[series.PatchEntry], dict[str, str]]:
    out = common.out_dir(args)
    series_dir = os.path.abspath(args.series_dir)
    os.makedirs(out, exist_ok=True)
    logfile = os.path.join(out, "apply.log")
    open(logfile, "w").close()
    base, kind = basetree.find_base(allow_download=not args.no_download)
    entries = series.read_series(series_dir)
    tree = os.path.join(out, "tree")
    prepare_tree(base, kind, tree)
    common.git(["config", "--unset-all", "lk.series"], cwd=tree, check=False)
    commits = apply_series(series_dir, tree, entries, logfile)
    common.git(["config", "lk.series", series_stamp(series_dir)], cwd=tree)
    prereq = [e for e in entries if not e.upstream]
    tip_pre = (
        commits[prereq[-1].path]
        if prereq
        else common.git(["rev-parse", "v4.20"], cwd=tree)
    )
    common.git(["branch", "-f", "prereq", tip_pre], cwd=tree)
    msg = "applied %d patches (%d prerequisite, %d upstream-bound) in %s" % (
        len(entries),
        len(prereq),
        len(entries) - len(prereq),
        tree,
    )
    if results:
        results.passed("apply", msg)
    else:
        common.log("apply: " + msg)
    return tree, entries, commits


def patch_commits(tree: str, entries: list[series.PatchEntry]) -> dict[str, str]:
    """{patch path: commit} of the applied branch, in series order."""
    revs = common.git(["rev-list", "--reverse", "v4.20..series"], cwd=tree).split()
    if len(revs) != len(entries):
        raise common.Failure(
            "the applied tree %s does not match the series; run "
            "'scripts/lk apply'" % tree
        )
    return dict(zip((e.path for e in entries), revs))


def cmd_export(args: argparse.Namespace) -> int:
    """Regenerate patches/ and the file names in series from a kernel
    branch: prerequisite commits in v4.20..prereq, upstream-bound ones in
    prereq..HEAD.

    Each commit goes to the section of series that lists its name (the
    slug of its subject, with or without a number): a new commit needs a
    line of its own there first (FOLDER/its-subject.patch).  Files are
    numbered by their place in their folder, as git format-patch numbers
    a series, so that `git am patches/TOPIC/*.patch` applies a topic.
    """
    tree = os.path.abspath(args.tree)
    for ref in ("v4.20", "prereq", "HEAD"):
        if common.run(
            ["git", "rev-parse", "-q", "--verify", ref],
            cwd=tree,
            capture=True,
            check=False,
        ).returncode:
            raise common.Failure(
                "%s has no %s: export wants prerequisite commits in "
                "v4.20..prereq and upstream-bound ones in "
                "prereq..HEAD" % (tree, ref)
            )
    series_dir = os.path.abspath(args.series_dir)
    pdir = os.path.join(series_dir, "patches")
    entries = series.read_series(series_dir)

    def key(path):
        return os.path.basename(series.patch_key(path))[: -len(".patch")]

    by_key = {key(e.path): e for e in entries}
    commits: list[tuple[str, series.PatchEntry, str]] = []
    for rng, upstream in (("v4.20..prereq", False), ("prereq..HEAD", True)):
        for c in common.git(["rev-list", "--reverse", rng], cwd=tree).split():
            subject = common.git(["log", "-1", "--format=%s", c], cwd=tree)
            k = series.slug(subject)
            e = by_key.get(k)
            if e is None or e.upstream != upstream:
                raise common.Failure(
                    "%s %r is not in series as a%s patch: add the line "
                    "%s/%s.patch to its section, then export again"
                    % (
                        c[:12],
                        subject,
                        "n upstream-bound" if upstream else " prerequisite",
                        "TOPIC" if upstream else "prereq",
                        k,
                    )
                )
            if any(k == x[2] for x in commits):
                raise common.Failure("two commits have the subject %r" % subject)
            commits.append((c, e, k))
    seen: list[str] = []
    for _, e, _ in commits:
        if seen and seen[-1] == e.section:
            continue
        if e.section in seen:
            raise common.Failure(
                "the branch interleaves section %s with another; "
                "keep each section's commits together" % e.section
            )
        seen.append(e.section)
    listed = []
    for e in entries:
        if e.section not in listed:
            listed.append(e.section)
    if [x for x in listed if x in seen] != seen:
        raise common.Failure(
            "the branch has the sections in the order %s, series "
            "in the order %s" % (" ".join(seen), " ".join(listed))
        )
    index: collections.Counter[str] = collections.Counter()
    names = {}
    by_section = collections.defaultdict(list)
    for c, e, k in commits:
        d = series.section_dir(e)
        index[d] += 1
        names[k] = os.path.join(d, "%04d-%s.patch" % (index[d], k))
        by_section[e.section].append(names[k])
        text = common.run(
            [
                "git",
                "format-patch",
                "-1",
                "--stdout",
                "--no-signature",
                "--zero-commit",
                c,
            ],
            cwd=tree,
            capture=True,
        ).stdout
        dropped = trailers.dropped(os.path.join(pdir, e.path), text)
        if dropped:
            common.log(
                "export: patches/%s: the commit lacks %s, which patches/%s had "
                "(lk export --trailers): add it to the commit if it still holds"
                % (names[k], "; ".join(dropped), e.path)
            )
        os.makedirs(os.path.join(pdir, d), exist_ok=True)
        with open(os.path.join(pdir, names[k]), "w") as f:
            f.write(text)
    for root, _, files in os.walk(pdir):
        for fn in files:
            rel = os.path.relpath(os.path.join(root, fn), pdir)
            if fn.endswith(".patch") and rel not in names.values():
                os.unlink(os.path.join(root, fn))
                common.log("export: removed patches/%s" % rel)
    # series: the same comments and sections, each section's lines the
    # names of its commits in branch order.
    path = os.path.join(series_dir, "series")
    with open(path) as f:
        lines = f.read().splitlines()
    out, done, section = [], set(), None
    for line in lines:
        m = re.match(r"#\s*section:\s*(\S+)", line.strip())
        if m:
            section = m.group(1)
        if not line.strip() or line.lstrip().startswith("#"):
            out.append(line)
            continue
        if section not in done:
            out += by_section.get(section, [])
            done.add(section)
        if key(line.strip()) not in names:
            common.log("export: series: dropped %s (no such commit)" % line.strip())
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    for c, e, k in commits:
        common.log(names[k])
    common.log("export: wrote %d patches and their names in series" % len(commits))
    return 0
