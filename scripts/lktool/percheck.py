# SPDX-License-Identifier: GPL-2.0
"""The per-patch checks: a build of what each upstream-bound patch touches,
and sparse before and after it."""

from __future__ import annotations

import argparse

from typing import Any

import collections
import hashlib
import json
import os
import shutil
import threading

from . import (
    apply,
    build,
    checkpatch,
    cocci,
    common,
    kbuild,
    kept,
    series,
    targetconf,
    warns,
)


def touched_files(tree: str, commit: str) -> tuple[list[str], list[str]]:
    """(kept, deleted): the files a commit adds or changes, and removes."""
    out = common.git(
        ["diff-tree", "--no-commit-id", "--name-status", "-r", "-M", commit], cwd=tree
    )
    present, deleted = [], []
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0].startswith("D"):
            deleted.append(parts[1])
        else:
            if parts[0].startswith("R"):
                deleted.append(parts[1])
            present.append(parts[-1])
    return present, deleted


def sparse_check(
    t: common.Target, tree: str, build_dir: str, cfiles: list[str], logfile: str
) -> tuple[collections.Counter[str], list[str], list[str]]:
    """Sparse warnings of the given C files (forced with C=2).

    Returns (warnings, checked, problems): files outside this
    architecture's image are left out of `checked`; a make failure is a
    problem, never an empty result.  One make checks all the files: each
    make first checks that the whole build's preparation is up to date,
    which costs more than sparse on one file.
    """
    checked = [
        c for c in cfiles if not kbuild.outside_image(c, common.srcarch(t["arch"]))
    ]
    if not checked:
        return collections.Counter(), [], []
    objs = [c[:-2] + ".o" for c in checked]
    r = common.run(
        build.make_cmd(t, build_dir, tree) + ["C=2"] + objs, capture=True, check=False
    )
    with open(logfile, "a") as f:
        f.write("$ make C=2 %s\n%s%s" % (" ".join(objs), r.stdout, r.stderr))
    if r.returncode:
        return (
            collections.Counter(),
            [],
            [
                "make C=2 %s failed: %s"
                % (" ".join(objs), warns.first_error(r.stdout + r.stderr))
            ],
        )
    return (
        warns.parse_warnings(
            r.stderr, roots=warns.build_roots(build_dir, tree), errors=True
        ),
        checked,
        [],
    )


def built_objects(build_dir: str, cfiles: list[str]) -> list[str]:
    """The C files whose object exists in build_dir."""
    return [c for c in cfiles if os.path.exists(os.path.join(build_dir, c[:-2] + ".o"))]


def sparse_after(
    t: common.Target, tree: str, bdir: str, cfiles: list[str], slog: str
) -> tuple[list[str], collections.Counter[str] | None, list[str]]:
    """Sparse on the C files of a patch at the patch: (files, warnings,
    problems).  Only files whose object the configuration builds are
    checked (the build at the patch has just made them)."""
    open(slog, "w").close()
    files = built_objects(bdir, cfiles)
    if not files:
        return files, None, []
    after, _, probs = sparse_check(t, tree, bdir, files, slog)
    return files, after, probs


def sparse_patch(
    e: series.PatchEntry,
    commit: str,
    tree: str,
    t: common.Target,
    bdir: str,
    cfiles: list[str],
    slog: str,
    after_state: Any,
    results: common.Results,
    previous: Any = None,
) -> tuple[list[str], collections.Counter[str]] | None:
    """Sparse on the C files of one patch, after (after_state, from
    sparse_after(); None if the build at the patch failed) and before
    it: no new warning.

    previous is the (files, warnings) that this returned for the patch
    before: where that patch checked the same files, its result is the
    one at this patch's parent, and is not made again.
    """
    name = "sparse: " + e.path
    if after_state is None:
        results.skipped(name, "the %s build at this patch failed" % t["name"])
        return None
    files, after, probs = after_state
    if not files:
        if cfiles:
            results.skipped(name, "no C file of this patch is built for %s" % t["name"])
        else:
            results.skipped(name, "the patch changes no C file")
        return None
    if probs:
        results.failed(name, "%s; log at %s" % (probs[0], slog))
        return None
    if previous is not None and set(previous[0]) == set(files):
        before = previous[1]
    else:
        common.git(["checkout", "-q", "-f", commit + "^"], cwd=tree)
        try:
            old = [f for f in files if os.path.exists(os.path.join(tree, f))]
            before, _, probs = sparse_check(t, tree, bdir, old, slog)
        finally:
            common.git(["checkout", "-q", "-f", commit], cwd=tree)
        if probs:
            results.failed(name, "at the parent: %s; log at %s" % (probs[0], slog))
            return None
    # The rule of the build warnings: a header's warning counts once per
    # includer, so a new C file would be blamed for the headers' old ones.
    new = warns.new_warnings(after, before)
    if new:
        results.failed(
            name,
            "%d new warning(s), first: %s; log at %s"
            % (sum(new.values()), sorted(new)[0], slog),
        )
    else:
        results.passed(name, "%d C file(s), no new warnings" % len(files))
    return files, after


def fragments_hold(t: common.Target, tree: str, bdir: str) -> bool:
    """Whether every line of t's fragments that the tree at its checked-out
    commit can honour is in bdir's .config.

    At a patch that changes a Kconfig file, kbuild's syncconfig gives the
    symbols it adds their defaults; that is the configuration the target
    asks for unless a fragment sets one of them (the binderfs option at
    the binderfs patch), and only then must the target be configured
    again.  A .kunitconfig target is always configured again.
    """
    if t.get("kunitconfig"):
        return False
    try:
        with open(os.path.join(bdir, ".config")) as f:
            have = set(l.strip() for l in f)
    except OSError:
        return False
    unmet = [
        symbol for _, line, symbol in targetconf.fragment_lines(t) if line not in have
    ]
    return not unmet or not set(unmet) & targetconf.kconfig_symbols(tree)


def do_check(
    args: argparse.Namespace,
    results: common.Results,
    tree: str | None = None,
    entries: list[series.PatchEntry] | None = None,
    commits: dict[str, str] | None = None,
    with_checkpatch: bool = True,
) -> None:
    """checkpatch (unless `lk test` runs it beside its builds), sparse and
    builds at each upstream-bound patch."""
    out = common.out_dir(args)
    series_dir = os.path.abspath(args.series_dir)
    tree = tree or apply.applied_tree(args)
    if entries is None:
        entries = series.read_series(series_dir)
    if commits is None:
        commits = apply.patch_commits(tree, entries)
    upstream = [e for e in entries if e.upstream]
    if not upstream:
        results.skipped("check", "the series has no upstream-bound patch yet")
        return
    if not shutil.which("sparse"):
        raise common.Failure("sparse is not installed; run 'scripts/lk deps'")
    logdir = os.path.join(out, "logs")
    os.makedirs(logdir, exist_ok=True)
    if with_checkpatch:
        checkpatch.do_checkpatch(args, results, tree, entries)
        cocci.guarded_cocci(args, results, tree, entries, commits)
    targets = [
        targetconf.load_target(n)
        for n in (args.bisect_target or targetconf.matrix("bisect"))
    ]
    if not targets:
        raise common.Failure(
            "no target to build at each patch (configs/matrix/bisect is empty)"
        )
    # CI builds the architectures of configs/matrix/bisect-arch at the
    # patches that change them; `lk test --full` (--bisect=full) those of
    # bisect-arch-full too, every 32-bit ABI's build target.
    arch_names = []
    if not args.bisect_target:
        arch_names = targetconf.matrix("bisect-arch")
        if args.bisect == "full":
            arch_names += targetconf.matrix("bisect-arch-full")
    arch_targets = [targetconf.load_target(n) for n in arch_names]
    build_each_patch(
        args, results, tree, upstream, commits, targets, logdir, arch_targets
    )


def build_verdict(
    goals: list[str], cfiles: list[str], built: list[str]
) -> tuple[str, str]:
    """(status, text) of a per-patch build whose make succeeded: goals
    were made, built are those of the patch's C files cfiles whose object
    now exists.  A SKIP only where the make built nothing of the patch: its
    C files are all outside this configuration and the goals are their
    objects alone.  A goal beyond them (a system call table's directory,
    the objects of a header's users, vmlinux) was built: a PASS that says
    which of the C files were not."""
    own = {c[:-2] + ".o" for c in cfiles}
    if cfiles and not built and all(g in own for g in goals):
        return ("SKIP", "none of %s is built in this configuration" % ", ".join(cfiles))
    text = "make %s" % " ".join(goals)
    if len(built) != len(cfiles):
        text += " (%d of %d touched C files are in this configuration)" % (
            len(built),
            len(cfiles),
        )
    return "PASS", text


# The note a kept row carries.
KEPT_NOTE = " (kept: an earlier run checked the same inputs)"


class KeptResults:
    """The rows of each patch's builds and sparse run, kept under
    $LK_OUT/cache/percheck/ by a key of everything they depend on: the
    trees at the patch and at its parent, the files the whole series
    changes (which header users are built), the targets built there,
    their configuration files, the tool's code and the toolchain's
    versions.  A run with the same key reads the rows instead of
    building again: a kernel build is a function of those inputs, and a
    warm run then spends its time on what changed.  Only a patch whose
    rows are all PASS or SKIP is kept (a failure may have a cause
    outside the inputs: a full disk, a killed make); `--rebuild` builds
    every patch again."""

    def __init__(self, directory: str, base: str) -> None:
        self.dir = directory
        self.base = base

    @classmethod
    def for_run(
        cls,
        out: str,
        args: argparse.Namespace,
        own: set[str],
        targets: list[common.Target],
    ) -> KeptResults:
        h = hashlib.sha256()
        h.update(kept.inputs_digest("percheck").encode() + b"\0")
        h.update(kept.toolchain_id(targets).encode() + b"\0")
        h.update(("%s\0%s\0" % (args.bisect, sorted(own))).encode())
        return cls(os.path.join(out, "cache", "percheck"), h.hexdigest())

    def key(self, tree: str, commit: str, names: list[str]) -> str:
        trees = common.git(
            ["rev-parse", commit + "^{tree}", commit + "^^{tree}"], cwd=tree
        ).split()
        text = "%s\0%s\0%s" % (self.base, " ".join(trees), " ".join(names))
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with open(os.path.join(self.dir, key + ".json")) as f:
                kept = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict) or not kept.get("rows"):
            return None
        return kept

    def put(self, key: str, rows: list[tuple[str, str, str]], sparse: Any) -> None:
        """Keep rows (and sparse_patch()'s result, the next patch's
        `previous`) unless one of them is a FAIL."""
        if not rows or any(r[0] not in ("PASS", "SKIP") for r in rows):
            return
        os.makedirs(self.dir, exist_ok=True)
        tmp = os.path.join(self.dir, key + ".tmp")
        with open(tmp, "w") as f:
            json.dump({"rows": [list(r) for r in rows], "sparse": sparse}, f)
        os.replace(tmp, os.path.join(self.dir, key + ".json"))


def touches_arch(files: list[str], t: common.Target) -> bool:
    """Whether a patch changes a file of t's architecture (arch/SRCARCH/):
    the patches that a target of configs/matrix/bisect-arch is built at."""
    return any(f.startswith("arch/%s/" % common.srcarch(t["arch"])) for f in files)


def build_each_patch(
    args: argparse.Namespace,
    results: common.Results,
    tree: str,
    upstream: list[series.PatchEntry],
    commits: dict[str, str],
    targets: list[common.Target],
    logdir: str,
    arch_targets: list[common.Target] | None = None,
) -> None:
    """The per-patch part of do_check(): build what each upstream-bound
    patch touches for each target, and run sparse on its C files.

    arch_targets (configs/matrix/bisect-arch: arm, arm64) are built only
    at the patches that change a file of their architecture, there too
    what the patch touches: the generic code of every patch is built per
    patch on x86 (targets), and on every architecture at the tip.
    Sparse runs on the first of targets that builds the patch's C files,
    or else on the first of arch_targets that does.  Where the rules of
    build_dirs_for() ask for all of vmlinux (a patch of the
    architecture's Kconfig or Makefile), an arch target builds
    arch/SRCARCH/kernel/: a defconfig of arm or arm64 is 20 to 40
    minutes cold, and the tip's arm guests build every object with the
    change (`--bisect=full` all of vmlinux at every patch)."""
    out = common.out_dir(args)
    configured: set[str] = set()
    # The C files the upstream-bound patches add or change (and keep): a
    # patch of headers alone is built at its place as those of them that
    # include the headers (header_users()).
    own = set(
        common.git(
            ["diff", "--name-only", "--diff-filter=d", "prereq", "series"], cwd=tree
        ).split()
    )

    def ready(t, bdir, logfile, kconfig_changed=False):
        # Where a patch changes a Kconfig file, the symbols it adds get
        # their defaults from kbuild's syncconfig, unless a fragment sets
        # one of them: then the target is configured again, or the
        # symbol would not have the value the fragment asks for.
        if t["name"] in configured and not kconfig_changed:
            return
        if t["name"] in configured and fragments_hold(t, tree, bdir):
            # What make would do first anyway; done here so that the
            # goals are chosen from the .config this commit builds.
            common.run(build.make_cmd(t, bdir, tree) + ["syncconfig"], logfile=logfile)
            return
        build.configure(t, tree, bdir, logfile, before_tip=True)
        configured.add(t["name"])

    # What sparse_patch() returned for the patch before, and on which
    # target: the state at this patch's parent.
    previous: tuple[str, Any] = ("", None)
    arch_names = {t["name"] for t in arch_targets or ()}
    keep = None
    if not getattr(args, "rebuild", False):
        keep = KeptResults.for_run(
            out, args, own, list(targets) + list(arch_targets or ())
        )
    n_kept = 0
    try:
        for e in upstream:
            commit = commits[e.path]
            files, deleted = touched_files(tree, commit)
            here = targets + [
                t for t in arch_targets or () if touches_arch(files + deleted, t)
            ]
            key = keep.key(tree, commit, [t["name"] for t in here]) if keep else ""
            held = keep.get(key) if keep else None
            if held:
                for status, name, detail in held["rows"]:
                    results.add(status, name, detail + KEPT_NOTE)
                previous = ("", None)
                if held.get("sparse"):
                    st_name, sfiles, swarn = held["sparse"]
                    previous = (st_name, (sfiles, collections.Counter(swarn)))
                n_kept += 1
                continue
            n0 = len(results.rows)
            cfiles = [f for f in files if f.endswith(".c")]
            stem = series.slug(os.path.basename(e.path))
            kconfig = any(
                os.path.basename(f).startswith("Kconfig") for f in files + deleted
            )
            common.git(["checkout", "-q", "-f", commit], cwd=tree)

            def makefile_diff(path, commit=commit):
                return common.git(["diff", commit + "^", commit, "--", path], cwd=tree)

            slog = os.path.join(logdir, "sparse-%s.log" % stem)
            sparse: dict[str, Any] = {}
            users, users_lock = {}, threading.Lock()

            def build_one(t, rows):
                """Build the patch for target t; its rows go to rows.
                The targets build side by side: each make spends most of
                its time on one core, checking what is up to date."""
                what = "build %s: %s" % (t["name"], e.path)
                try:
                    build_at(t, what, rows)
                except (common.Failure, OSError) as err:
                    rows.append(("FAIL", what, str(err)))
                if t is targets[0] and rows[-1][0] == "FAIL":
                    sparse["after"] = None

            def build_at(t, what, rows):
                bdir = os.path.join(out, "bisect", t["name"])
                blog = os.path.join(logdir, "bisect-%s-%s.log" % (t["name"], stem))
                open(blog, "w").close()
                dirs = (
                    kbuild.build_dirs_for(files, common.srcarch(t["arch"]), deleted)
                    if args.bisect == "touched"
                    else ["vmlinux"]
                )
                sources, header_only, whole = files, False, False
                image = [
                    f
                    for f in files + deleted
                    if not kbuild.outside_image(f, common.srcarch(t["arch"]))
                ]
                if (
                    args.bisect == "touched"
                    and dirs == ["vmlinux"]
                    and image
                    and all(f.endswith(".h") and f in files for f in image)
                ):
                    # Headers alone: the objects of the series' own C
                    # files that include them, not all of vmlinux (the
                    # tip's full builds compile every other user, and
                    # --bisect=full builds all of vmlinux here).
                    key = common.srcarch(t["arch"])
                    with users_lock:
                        if key not in users:
                            users[key] = [
                                f
                                for f in kbuild.header_users(tree, image, key)
                                if f in own
                            ]
                    sources = users[key]
                    dirs = sorted({os.path.dirname(f) + "/" for f in sources})
                    header_only = True
                if (
                    args.bisect == "touched"
                    and dirs == ["vmlinux"]
                    and t["name"] in arch_names
                ):
                    # A change that reaches every object there (the
                    # architecture's Kconfig or Makefile): its own code
                    # here; all of vmlinux at the tip, where CI builds
                    # the architecture's guest kernel in full.
                    dirs = ["arch/%s/kernel/" % common.srcarch(t["arch"])]
                    whole = True
                try:
                    ready(t, bdir, blog, kconfig)
                except common.Failure as err:
                    rows.append(("FAIL", what, str(err)))
                    return
                if not dirs:
                    rows.append(
                        ("PASS", what, "nothing in this architecture's image changes")
                    )
                    return
                goals = (
                    dirs
                    if whole
                    else kbuild.patch_goals(
                        tree,
                        bdir,
                        dirs,
                        sources,
                        makefile_diff,
                        objects_only=header_only,
                    )
                )
                if not goals:
                    rows.append(
                        (
                            "SKIP",
                            what,
                            "none of %s is built in this "
                            "configuration" % ", ".join(d + "*" for d in dirs),
                        )
                    )
                    return
                r = common.run_watched(
                    build.make_cmd(t, bdir, tree) + goals,
                    blog,
                    what,
                    build.BUILD_STEP_RE,
                    "files built",
                )
                with open(blog, errors="replace") as f:
                    text = f.read()
                built = built_objects(bdir, cfiles)
                if r.returncode:
                    rows.append(
                        (
                            "FAIL",
                            what,
                            "make %s failed: %s; log at %s"
                            % (" ".join(goals), warns.first_error(text), blog),
                        )
                    )
                    return
                status, text = build_verdict(goals, cfiles, built)
                rows.append((status, what, text))
                if t is targets[0]:
                    sparse["after"] = sparse_after(t, tree, bdir, cfiles, slog)

            rows: list[list[tuple[str, str, str]]] = [[] for _ in here]
            threads = [
                threading.Thread(target=build_one, args=(t, r))
                for t, r in zip(here, rows)
            ]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            for r in rows:
                for row in r:
                    results.add(*row)
            st, after = targets[0], sparse.get("after", ([], None, []))
            if after is not None and not after[0] and cfiles:
                # None of the C files is built on x86 (arm64's own code,
                # say): sparse checks them where they are built.
                for t, r in zip(here[len(targets) :], rows[len(targets) :]):
                    bdir = os.path.join(out, "bisect", t["name"])
                    if r and r[-1][0] == "PASS" and built_objects(bdir, cfiles):
                        st = t
                        after = sparse_after(t, tree, bdir, cfiles, slog)
                        break
            done = sparse_patch(
                e,
                commit,
                tree,
                st,
                os.path.join(out, "bisect", st["name"]),
                cfiles,
                slog,
                after,
                results,
                previous[1] if previous[0] == st["name"] else None,
            )
            previous = (st["name"], done)
            if keep:
                keep.put(
                    key,
                    results.rows[n0:],
                    [st["name"], done[0], dict(done[1])] if done else None,
                )
    finally:
        common.git(["checkout", "-q", "-f", "series"], cwd=tree)
    if n_kept:
        common.log(
            "check: the builds and sparse of %d of %d patches kept from an "
            "earlier run with the same inputs (%s; --rebuild builds them again)"
            % (n_kept, len(upstream), keep.dir if keep else "")
        )
