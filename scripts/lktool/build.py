# SPDX-License-Identifier: GPL-2.0
"""Configure and build the targets, in two lanes."""

from __future__ import annotations

import argparse
import collections
import hashlib
import json

from typing import Any, Callable, Sequence

import os
import re
import shutil
import threading
import time

from . import apply, common, kbuild, kept, kunit, systable, targetconf, warns


# A line of make's output for one compiled, assembled or linked file.
BUILD_STEP_RE = re.compile(r"^\s+(CC|CC \[M\]|AS|LD|AR|HOSTCC|HOSTLD)\s")


def make_cmd(t: common.Target, build_dir: str, tree: str) -> list[str]:
    cross = t["cross_compile"]
    cmd = [
        "make",
        "-j" + common.jobs(),
        "-C",
        tree,
        "O=" + build_dir,
        "ARCH=" + t["arch"],
        "CROSS_COMPILE=" + cross,
    ]
    if t.get("subarch"):
        cmd.append("SUBARCH=" + t["subarch"])
    if shutil.which("ccache"):
        cmd += ["CC=ccache %sgcc" % cross, "HOSTCC=ccache gcc"]
    return cmd


def configure(
    t: common.Target, tree: str, build_dir: str, logfile: str, before_tip: bool = False
) -> None:
    """Make the .config of target t and check that every fragment stuck.

    A fragment may name a symbol that an upstream-bound patch adds (the
    binderfs option, say).  With before_tip (lk check at the commits of
    the series, lk baseline on the prerequisite-only tree) a line whose
    symbol the tree does not define yet is not checked; at the tip such a
    line is an error, as a misspelt one is.
    Every other line must be in the .config that olddefconfig writes.

    A target whose defconfig is one of kbuild's allnoconfig-like targets
    (ALLCONFIG_TARGETS) gets its fragments as KCONFIG_ALLCONFIG instead,
    the way kbuild's tinyconfig gets tiny.config: merged afterwards, they
    would make options visible that allnoconfig never saw (on arm, all
    that needs the MMU, which allnoconfig turns off), and olddefconfig
    would give those their defaults, most of a kernel.
    """
    os.makedirs(build_dir, exist_ok=True)
    if t.get("kunitconfig"):
        kunit.configure_kunit(t, tree, build_dir, logfile, before_tip)
        return
    cmd = make_cmd(t, build_dir, tree)
    frags = [os.path.join(common.FRAGMENTS, f) for f in t["fragments"]]
    step = "olddefconfig"
    if t["defconfig"] in targetconf.ALLCONFIG_TARGETS and frags:
        step = t["defconfig"]
        allconfig = os.path.join(build_dir, "lk-allconfig.config")
        with open(allconfig, "w") as out:
            for frag in frags:
                with open(frag) as f:
                    out.write(f.read())
        common.run(
            cmd + ["KCONFIG_ALLCONFIG=" + allconfig, t["defconfig"]], logfile=logfile
        )
    else:
        common.run(cmd + [t["defconfig"]], logfile=logfile)
        if frags:
            common.run(
                [
                    os.path.join(tree, "scripts", "kconfig", "merge_config.sh"),
                    "-m",
                    "-O",
                    build_dir,
                    os.path.join(build_dir, ".config"),
                ]
                + frags,
                cwd=tree,
                logfile=logfile,
                env=dict(
                    common.make_env(),
                    ARCH=t["arch"],
                    CROSS_COMPILE=t["cross_compile"],
                    **({"SUBARCH": t["subarch"]} if t.get("subarch") else {}),
                ),
            )
            common.run(cmd + ["olddefconfig"], logfile=logfile)
    with open(os.path.join(build_dir, ".config")) as f:
        have = set(l.strip() for l in f)
    missing = []
    defined = targetconf.kconfig_symbols(tree) if frags else set()
    for frag, line, symbol in targetconf.fragment_lines(t):
        if symbol not in defined:
            if not before_tip:
                missing.append(
                    "%s (from %s: no Kconfig file of the tree "
                    "defines it)" % (line, os.path.relpath(frag, common.TOP))
                )
        elif line not in have:
            missing.append("%s (from %s)" % (line, os.path.relpath(frag, common.TOP)))
    if missing:
        raise common.Failure(
            "config %s: these settings did not survive %s: %s; "
            "log at %s" % (t["name"], step, "; ".join(missing), logfile)
        )


# The row of a kept build says so.
KEPT_BUILD_NOTE = (
    " (kept: the build directory holds the build of the same tree, "
    "configuration, tool and compilers)"
)


class KeptBuild:
    """A full build that a later `lk test` may use instead of building
    again: the build directory's .lk-kept.json records the key of the
    build's inputs (the tree, the target, its goals, kept.inputs_digest("build")
    and the compilers' versions), the sha256 of its .config, the size and
    mtime of each product of the goals (vmlinux, bzImage, linux ...) and
    the warnings the build printed.  It holds while every one of those
    is unchanged: anything that builds in the directory again (kunit.py
    in um's, `lk build`) relinks a product or rewrites .config, and every
    build_target() removes the record before it starts.  Only a build
    whose goals are all files (not objects or directories) is kept."""

    NAME = ".lk-kept.json"

    def __init__(
        self, t: common.Target, tree: str, build_dir: str, goals: list[str]
    ) -> None:
        self.t, self.build_dir, self.goals = t, build_dir, goals
        self.path = os.path.join(build_dir, self.NAME)
        h = hashlib.sha256()
        h.update(kept.inputs_digest("build").encode() + b"\0")
        h.update(kept.toolchain_id([t]).encode() + b"\0")
        h.update(common.git(["rev-parse", "HEAD^{tree}"], cwd=tree).encode())
        h.update(("\0%s\0%s" % (t["name"], " ".join(goals))).encode())
        self.key = h.hexdigest()

    def products(self) -> list[str] | None:
        """The files the goals make, relative to the build directory, or
        None if a goal is not a file that exists there."""
        paths = []
        boot = os.path.join("arch", common.srcarch(self.t["arch"]), "boot")
        for g in self.goals:
            if "/" in g or g.endswith(".o"):
                return None
            for p in (g, os.path.join(boot, g)):
                if os.path.isfile(os.path.join(self.build_dir, p)):
                    paths.append(p)
                    break
            else:
                return None
        return paths

    def state(self) -> dict[str, Any] | None:
        products = self.products()
        if products is None:
            return None
        try:
            with open(os.path.join(self.build_dir, ".config"), "rb") as f:
                config = hashlib.sha256(f.read()).hexdigest()
            stats = {p: os.stat(os.path.join(self.build_dir, p)) for p in products}
        except OSError:
            return None
        return {
            "config": config,
            "products": {p: [st.st_size, st.st_mtime_ns] for p, st in stats.items()},
        }

    def get(self) -> collections.Counter[str] | None:
        """The warnings of the kept build, if it holds."""
        try:
            with open(self.path) as f:
                record = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("key") != self.key:
            return None
        state = self.state()
        if state is None or any(record.get(k) != v for k, v in state.items()):
            return None
        return collections.Counter(record.get("warnings") or {})

    def put(self, warnings: collections.Counter[str]) -> None:
        state = self.state()
        if state is None:
            return
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(state, key=self.key, warnings=dict(warnings)), f)
        os.replace(tmp, self.path)


def drop_kept(build_dir: str) -> None:
    try:
        os.unlink(os.path.join(build_dir, KeptBuild.NAME))
    except FileNotFoundError:
        pass


def build_target(
    t: common.Target,
    tree: str,
    out: str,
    goals: list[str],
    results: common.Results,
    baseline_dir: str | None = None,
    fresh: bool = False,
    stamp: str | None = None,
    before_tip: bool = False,
    keep: bool = False,
) -> collections.Counter[str] | None:
    """Configure and build one target; report config, build and warnings.

    before_tip: the tree is a commit before the series' tip (the
    prerequisite-only tree of a baseline); see configure().
    keep (with fresh): where the build directory holds a KeptBuild of
    the same inputs, report it instead of building again.  Every fresh
    build that succeeds is recorded as one.
    """
    name = t["name"]
    build_dir = os.path.join(out, "build", name)
    logfile = os.path.join(out, "logs", "build-%s.log" % name)
    os.makedirs(os.path.dirname(logfile), exist_ok=True)
    open(logfile, "w").close()
    held = KeptBuild(t, tree, build_dir, goals) if fresh else None
    warnings = held.get() if held and keep else None
    if held and warnings is not None:
        results.passed("config: " + name)
        results.passed(
            "build: " + name, "make %s%s" % (" ".join(goals), KEPT_BUILD_NOTE)
        )
        return report_warnings(
            t, tree, out, goals, results, baseline_dir, stamp, False, warnings
        )
    drop_kept(build_dir)  # whatever happens now, it no longer holds
    if fresh and os.path.isdir(build_dir):
        shutil.rmtree(build_dir)
    incremental = os.path.isdir(build_dir)
    t0 = time.time()
    try:
        configure(t, tree, build_dir, logfile, before_tip=before_tip)
    except common.Failure as e:
        results.failed("config: " + name, str(e))
        results.skipped("build: " + name, "configuration failed")
        results.skipped("warnings: " + name, "configuration failed")
        return None
    results.passed("config: " + name)
    # A target whose configuration v4.20 itself cannot compile in full
    # names the objects that fail (baseline_fails): its baseline is made
    # with make -k, and must fail in exactly those.
    keep_going = before_tip and bool(t["baseline_fails"])
    r = common.run_watched(
        make_cmd(t, build_dir, tree) + (["-k"] if keep_going else []) + goals,
        logfile,
        "build " + name,
        BUILD_STEP_RE,
        "files built",
    )
    secs = time.time() - t0
    with open(logfile, errors="replace") as f:
        text = f.read()
    if keep_going:
        failed = sorted(
            set(re.findall(r"\*\*\* \[(?:\S+:\d+: )?(\S+\.o)\] Error", text))
        )
        want = sorted(t["baseline_fails"])
        if failed != want:
            results.failed(
                "build: " + name,
                "make -k %s: %s fail to "
                "compile, the target's baseline_fails says %s; "
                "log at %s"
                % (
                    " ".join(goals),
                    " ".join(failed) or "no objects",
                    " ".join(want),
                    logfile,
                ),
            )
            results.skipped("warnings: " + name, "build failed")
            return None
        results.passed(
            "build: " + name,
            "make -k %s in %ds: only %s fail "
            "to compile, as expected" % (" ".join(goals), secs, " ".join(want)),
        )
    elif r.returncode:
        results.failed(
            "build: " + name,
            "make %s failed after %ds; first "
            "error: %s; log at %s"
            % (" ".join(goals), secs, warns.first_error(text), logfile),
        )
        results.skipped("warnings: " + name, "build failed")
        return None
    warnings = warns.parse_warnings(text, roots=warns.build_roots(build_dir, tree))
    if not keep_going:
        results.passed(
            "build: " + name,
            "make %s in %ds%s"
            % (" ".join(goals), secs, " (incremental)" if incremental else ""),
        )
        if held and not incremental:
            held.put(warnings)
    return report_warnings(
        t, tree, out, goals, results, baseline_dir, stamp, incremental, warnings
    )


def report_warnings(
    t: common.Target,
    tree: str,
    out: str,
    goals: list[str],
    results: common.Results,
    baseline_dir: str | None,
    stamp: str | None,
    incremental: bool,
    warnings: collections.Counter[str],
) -> collections.Counter[str]:
    """Write a build's warnings to logs/warnings-TARGET.txt and judge them
    against the target's baseline (unless baseline_dir is None)."""
    name = t["name"]
    head = common.git(["rev-parse", "HEAD"], cwd=tree)
    with open(os.path.join(out, "logs", "warnings-%s.txt" % name), "w") as f:
        f.write(
            "# tree: %s\n# complete: %s\n# goals: %s\n# stamp: %s\n"
            % (head, "no" if incremental else "yes", " ".join(goals), stamp)
        )
        for k, n in sorted(warnings.items()):
            f.write("%d %s\n" % (n, k))
    if baseline_dir is None:
        return warnings
    status, detail = warns.judge_warnings(
        warnings,
        os.path.join(baseline_dir, name + ".txt"),
        stamp,
        incremental,
        os.path.join(out, "logs", "warnings-%s.txt" % name),
    )
    results.add(status, "warnings: " + name, detail)
    return warnings


def do_build(
    args: argparse.Namespace,
    results: common.Results,
    side_tasks: Sequence[Callable[[common.Results], object]] = (),
    on_built: Callable[[str], object] | None = None,
) -> None:
    """Build the targets of args.matrix (or args.target) and compare their
    warnings with the committed baselines.

    The targets that CI builds in full (the guests' kernels) build one
    after the other; those it builds in part (ci_goals) and side_tasks
    (callables, for instance `lk test`'s checkpatch pass) run beside them
    in a second lane.  A full build leaves a core idle while it configures,
    links and compresses, and a partial one spends most of its time in
    make's single-threaded walk of the tree; the second lane uses what the
    first leaves idle.  A cold compile keeps both cores busy, and there
    the lanes gain nothing.  Each lane prints its rows as they come; they
    join the results, first lane first, once both lanes are done.
    on_built(name) is called after each full build whose build row
    passed (`lk test` boots its guests then, qemu_stages.GuestLane).
    After a build that passed, the system call tables the target's
    syscall_tables names are read back from their objects
    (systable.report(): a row each).
    """
    tree = apply.applied_tree(args)
    names = args.target or targetconf.matrix(args.matrix)
    baseline_dir = common.WARNINGS
    touched = common.git(
        ["diff", "--name-only", "--diff-filter=d", "prereq", "series"], cwd=tree
    ).split()
    deleted = common.git(
        ["diff", "--name-only", "--diff-filter=D", "prereq", "series"], cwd=tree
    ).split()

    def makefile_diff(path):
        return common.git(["diff", "prereq", "series", "--", path], cwd=tree)

    def plan(name):
        t = targetconf.load_target(name)
        goals = t["goals"]
        if getattr(args, "goal", None):
            goals = args.goal
        elif args.matrix == "ci" and not args.target and t["ci_goals"]:
            config = target_config(t, tree, common.out_dir(args))
            goals = kbuild.ci_goals_for(
                t, touched, deleted, tree, config, makefile_diff
            )
        return t, goals

    def build(name, lane_results):
        t, goals = plan(name)
        stamp = targetconf.baseline_stamp(os.path.abspath(args.series_dir), t)
        n0 = len(lane_results.rows)
        build_target(
            t,
            tree,
            common.out_dir(args),
            goals,
            lane_results,
            baseline_dir,
            fresh=args.fresh,
            stamp=stamp,
            keep=getattr(args, "keep_builds", False),
        )
        built = ("PASS", "build: " + name) in (r[:2] for r in lane_results.rows[n0:])
        if built:
            systable.report(
                t, os.path.join(common.out_dir(args), "build", name), lane_results
            )
        if on_built and built:
            on_built(name)

    partial = [
        n
        for n in names
        if args.matrix == "ci"
        and not args.target
        and not getattr(args, "goal", None)
        and targetconf.load_target(n)["ci_goals"]
    ]
    full = [n for n in names if n not in partial]
    if not (full and (partial or side_tasks)):
        for task in side_tasks:
            task(results)
        for name in names:
            build(name, results)
        return
    lanes = [common.Results(), common.Results()]

    def side():
        for task in side_tasks:
            task(lanes[1])
        for name in partial:
            build(name, lanes[1])

    errors = []

    def guarded(fn, lane):
        try:
            fn()
        except (common.Failure, OSError) as e:
            lanes[lane].failed("build", str(e))
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    th = threading.Thread(target=guarded, args=(side, 1), name="side-lane")
    th.start()
    guarded(lambda: [build(n, lanes[0]) for n in full], 0)
    th.join()
    for lane in lanes:
        results.rows.extend(lane.rows)
    if errors:
        raise errors[0]


def target_config(t: common.Target, tree: str, out: str) -> dict[str, str] | None:
    """The .config of target t on the applied tree, or None if configuring
    fails (build_target() then reports the failure).  It is made in a
    directory of its own: a build directory that exists counts as an
    incremental build."""
    build_dir = os.path.join(out, "config", t["name"])
    logfile = os.path.join(out, "logs", "config-%s.log" % t["name"])
    os.makedirs(os.path.dirname(logfile), exist_ok=True)
    try:
        configure(t, tree, build_dir, logfile)
        return targetconf.read_config(os.path.join(build_dir, ".config"))
    except (common.Failure, OSError):
        return None
