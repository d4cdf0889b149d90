# SPDX-License-Identifier: GPL-2.0
"""lk: set up, apply, build, check and test the v4.20 y2038 patch series.

One entry point, one subcommand per stage; `setup` and `test` chain them.
Every stage prints PASS/FAIL/SKIP lines and `test` ends with a summary line
"N passed, N failed, N skipped".  Nothing here prompts.

Stages:
  deps      install the Debian packages in scripts/packages.txt
            (--full: and scripts/packages-full.txt)
  base      find (or download and verify) the v4.20 base tree
  series    check the series file and the patch headers
  apply     git am the series onto a fresh branch in a separate work tree
  build     build the configurations in configs/targets/ and count warnings
  check     per-patch checkpatch --strict, coccicheck, sparse and
            touched-object builds
  cocci     coccicheck (report mode) before and after each upstream-bound
            patch on the C files it touches: no new report
  baseline  record the warnings of the prerequisite-only tree
  selftest  test this tool on canned inputs and deliberately broken patches,
            and check it with mypy, flake8 and black (scripts/check)
  kunit     kunit.py (Debian's 6.1 tool) on the applied tree, edits kept
  qemu      boot the built x86 and arm kernels under QEMU: selftests, KUnit
            results
  fuzz      trinity against what the series touches, in the x86 guests,
            under KASAN, UBSAN, lockdep and kmemleak (debug guests)
  bench     instructions per system call, prerequisite-only kernels
            against the tip, under QEMU -icount
  lava      the QEMU guests as LAVA jobs: write and validate them, run
            one here with Debian's lava-run, or submit them with lavacli
  setup     deps + base + apply + build (full matrix)
  test      series + apply + check + build (CI matrix) + qemu + fuzz
            (short, fixed seed) + kunit +
            selftest
  send      prepare the upstream-bound patches for mailing under your identity
            (--to-local-list: and send them to the list of `lk list`)
  list      a mailing list of our own on 127.0.0.1 (exim4, public-inbox) for
            the topics' lists, to try sending before the real lists
  export    regenerate patches/ from a kernel branch (v4.20..prereq..HEAD);
            --trailers TOPIC: add a review's trailers from the b4 prep branches
"""

from __future__ import annotations

import argparse
import os
import sys

from typing import Callable, MutableMapping

from . import (
    apply,
    basetree,
    bench,
    build,
    cocci,
    common,
    fuzz,
    kunit,
    lava,
    mlist,
    percheck,
    pipeline,
    qemu_stages,
    selftest,
    send,
    series,
    trailers,
    warns,
)


# One line each in `lk --help`.
STAGE_HELP = {
    "build": "build the targets of a matrix and compare their warnings",
    "test": "what CI runs: series, apply, check, build, qemu, fuzz, kunit, selftest",
    "setup": "deps + base + apply + build (the full matrix)",
    "check": "per patch: checkpatch, coccicheck, sparse and a build",
}


def do_cocci(args: argparse.Namespace, results: common.Results) -> None:
    """`lk cocci`: on the applied tree and the series of --series-dir."""
    cocci.do_cocci(
        args,
        results,
        apply.applied_tree(args),
        series.read_series(os.path.abspath(args.series_dir)),
    )


def do_kunit(args: argparse.Namespace, results: common.Results) -> None:
    """`lk kunit`: the --kunitconfig files (default kunit/all.kunitconfig),
    and kunit/ia32.kunitconfig with them on x86_64."""
    configs = args.kunitconfig or [os.path.join(common.TOP, "kunit", "all.kunitconfig")]
    if args.arch == "x86_64":
        configs.append(os.path.join(common.TOP, "kunit", "ia32.kunitconfig"))
    kunit.do_kunit(args, results, args.arch, configs, extra=args.kunit_args)


# The commands whose result rows end with the summary line ("N passed, N
# failed[, N skipped]"; exit status 1 on a FAIL row): what each runs.
STAGES: dict[str, Callable[[argparse.Namespace, common.Results], object]] = {
    "series": series.do_series,
    "build": build.do_build,
    "check": percheck.do_check,
    "cocci": do_cocci,
    "selftest": selftest.do_selftest,
    "kunit": do_kunit,
    "qemu": lambda args, r: qemu_stages.do_qemu(args, r, args.guest),
    "bench": qemu_stages.do_bench,
    "fuzz": lambda args, r: qemu_stages.do_fuzz(args, r, args.guest, args.ci),
    "lava": lava.do_lava,
}


def do_deps(args: argparse.Namespace) -> int:
    pipeline.do_deps(args)
    return 0


def do_base(args: argparse.Namespace) -> int:
    path, kind = basetree.find_base(allow_download=not args.no_download)
    print(path)
    return 0


def do_apply(args: argparse.Namespace) -> int:
    apply.do_apply(args)
    return 0


def do_export(args: argparse.Namespace) -> int:
    """lk export TREE, or lk export --trailers TOPIC."""
    if bool(args.tree) == bool(args.trailers):
        raise common.Failure(
            "name a kernel tree (lk export TREE) or, for the trailers of a "
            "review, topics (lk export --trailers TOPIC), not both or neither"
        )
    if args.trailers:
        return trailers.cmd_export_trailers(
            send.workspace_of(args), os.path.abspath(args.series_dir), args.trailers
        )
    return apply.cmd_export(args)


# The other commands: what each runs, which returns the exit status.
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "deps": do_deps,
    "base": do_base,
    "apply": do_apply,
    "baseline": lambda args: 0 if warns.do_baseline(args) else 1,
    "setup": pipeline.cmd_setup,
    "test": pipeline.cmd_test,
    "send": send.cmd_send,
    "list": mlist.cmd_list,
    "export": do_export,
}

# The commands that hold the work directory's lock while they run.
LOCKED = (
    "apply",
    "build",
    "check",
    "baseline",
    "test",
    "setup",
    "send",
    "kunit",
    "qemu",
    "cocci",
    "fuzz",
    "bench",
    "lava",
)


def ccache_env(env: MutableMapping[str, str]) -> None:
    """How lk's builds use ccache.

    Depend mode: on a miss, the headers to hash come from the dependency
    file the compiler writes anyway (kbuild's -Wp,-MD), not from a run of
    the preprocessor before the compile; a cold build takes about a
    quarter less time (i386 allnoconfig from an empty cache on two
    cores, twice in either order: 105 and 120 s in the default mode, 74
    and 88 s in depend mode).  It compiles with the paths as kbuild gives them
    (absolute source paths in an O= build) and replays a hit's warnings
    with the paths of the build that stored it: so no base_dir (set
    empty, over any ccache.conf), which would let one tree hit another
    tree's results and print the other tree's paths.  The build
    directory's name stays out of the hash (NOHASHDIR; hashed where -g is
    on, as for arm64 and um): the per-patch, tip and KUnit builds of the
    one applied tree share results, as they compile the same absolute
    source paths."""
    env.setdefault("CCACHE_DEPEND", "1")
    env["CCACHE_BASEDIR"] = ""
    env.setdefault("CCACHE_NOHASHDIR", "1")


def parser() -> argparse.ArgumentParser:
    """lk's command line: its options and subcommands."""
    p = argparse.ArgumentParser(
        prog="lk",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--out", help="work directory (default: $LK_OUT or ~/.cache/linux-v4.20-work)"
    )
    p.add_argument(
        "--series-dir",
        default=common.TOP,
        help="directory holding 'series' and 'patches/'",
    )
    p.add_argument(
        "--no-download",
        action="store_true",
        help="never download the base tree from kernel.org",
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser(
        "deps", help="install the Debian packages of scripts/packages.txt"
    )
    s.add_argument(
        "--full",
        action="store_true",
        help="also those of scripts/packages-full.txt (the guests that "
        "only `lk test --full` boots)",
    )
    sub.add_parser("base", help="find (or download and verify) the v4.20 base tree")
    sub.add_parser("series", help="check the series file and the patch headers")
    sub.add_parser("apply", help="git am the series onto v4.20 in $LK_OUT/tree")
    for name in ("build", "test", "setup"):
        s = sub.add_parser(name, help=STAGE_HELP[name])
        s.add_argument(
            "--matrix",
            default="full" if name == "setup" else ("ci" if name == "test" else "full"),
            help="configs/matrix/NAME lists the targets",
        )
        s.add_argument(
            "--target", action="append", help="build only this target (repeatable)"
        )
        s.add_argument(
            "--goal",
            action="append",
            help="make this goal instead of the target's goals "
            "(repeatable; objects such as net/socket.o: a "
            "directory goal would also build modules, which "
            "the warning baselines do not have)",
        )
        if name != "test":
            s.add_argument(
                "--fresh",
                action="store_true",
                help="remove the build directories first",
            )
    s = sub.choices["setup"]
    s.add_argument("--no-deps", action="store_true")
    s.add_argument(
        "--no-build",
        action="store_true",
        help="only install packages and find the base tree",
    )
    for name in ("check", "test"):
        s = (
            sub.choices[name]
            if name in sub.choices
            else sub.add_parser(name, help=STAGE_HELP[name])
        )
        s.add_argument(
            "--bisect",
            choices=("touched", "full"),
            default="touched",
            help="per patch, build the objects of what it "
            "touches (default) or all of vmlinux",
        )
        s.add_argument("--bisect-target", action="append")
        s.add_argument(
            "--rebuild",
            action="store_true",
            help="build every patch again, even where an earlier run "
            "with the same inputs kept its rows ($LK_OUT/cache/percheck)",
        )
    t = sub.choices["test"]
    t.add_argument(
        "--full",
        action="store_true",
        help="what CI leaves out for its time too: the full "
        "matrix (the x86 defconfigs, x86_64-nocompat, arm and "
        "arm64 in full) and --bisect=full; run it before "
        "mailing a series",
    )
    t.add_argument("--no-check", action="store_true")
    t.add_argument(
        "--no-build",
        action="store_true",
        help="build nothing at the tip (and so boot nothing)",
    )
    t.add_argument("--no-selftest", action="store_true")
    t.add_argument(
        "--no-qemu", action="store_true", help="do not boot the built kernels"
    )
    t.add_argument(
        "--no-fuzz",
        action="store_true",
        help="no short fuzz run (lk_fuzz.py --ci) after the boots",
    )
    t.add_argument(
        "--no-kunit",
        action="store_true",
        help="do not run kunit.py (configs/kunit-tool/runs)",
    )
    t.add_argument(
        "--quick",
        action="store_true",
        help="selftest without the tests that build kernels",
    )
    s = sub.add_parser(
        "selftest",
        help="the tool's unit tests and static checks (mypy, flake8, black; "
        "scripts/check runs this)",
    )
    s.add_argument(
        "--quick",
        action="store_true",
        help="without the tests that need a base tree, a compiler or a boot",
    )
    s = sub.add_parser(
        "cocci",
        help="coccicheck before and after each upstream-bound patch (part of check)",
    )
    s.add_argument(
        "--record-baseline",
        action="store_true",
        help="check the v4.20 versions of the touched files "
        "again and record the reports of every version of them (v4.20's "
        "and the patches') in configs/cocci/reports.json (after a patch "
        "changes a C file or header, or with another spatch)",
    )
    s = sub.add_parser(
        "kunit",
        help="kunit.py run on the applied tree, edits in it included",
        description="Run the KUnit suites with Debian's 6.1 kunit.py on "
        "the applied tree ($LK_OUT/tree), keeping any change made there: "
        "edit a file, run again, and only what changed is rebuilt. On UML "
        "the run is kunit.py config, make and kunit.py exec (no "
        "olddefconfig, so no relink when nothing changed); elsewhere "
        "kunit.py run.",
    )
    s.add_argument(
        "--arch",
        default="um",
        help="um (default), x86_64 (with IA32 emulation) or i386",
    )
    s.add_argument(
        "--kunitconfig",
        action="append",
        help="a .kunitconfig (repeatable; default kunit/all.kunitconfig)",
    )
    s.add_argument(
        "kunit_args",
        nargs="*",
        help="after '--': a filter glob ('futex*', 'futex*.robust*') or "
        "more options of kunit.py exec (UML: --kernel_args, --timeout, "
        "--raw_output) or of kunit.py run (other --arch)",
    )
    s = sub.add_parser("qemu", help="boot the built kernels, run selftests")
    s.add_argument(
        "--guest",
        action="append",
        help="a guest of configs/qemu/ (repeatable; default all)",
    )
    s = sub.add_parser(
        "fuzz", help="trinity under the sanitizers in the x86 guests (lktool/fuzz.py)"
    )
    s.add_argument(
        "--guest",
        action="append",
        help="x86 guest of "
        "configs/qemu/ (repeatable; default x86_64-debug and "
        "i386-debug; build their targets first)",
    )
    s.add_argument("--minutes", type=float, help="fuzzing time per guest (default 30)")
    s.add_argument(
        "--seed",
        type=int,
        help="run seed (default: random, printed; the same seed replays a run)",
    )
    s.add_argument(
        "--phase",
        action="append",
        choices=fuzz.PHASE_NAMES,
        help="only this phase, e.g. root-time (repeatable)",
    )
    s.add_argument(
        "--ci", action="store_true", help="the short fixed-seed run of 'lk test'"
    )
    s = sub.add_parser(
        "bench",
        help="system call cost, prerequisite-only "
        "kernels against the tip, in QEMU instruction counts "
        "(lktool/bench.py)",
    )
    s.add_argument(
        "--guest", action="append", help="x86_64 or i386 (repeatable; default both)"
    )
    s.add_argument(
        "--repeat",
        type=bench.positive(10),
        help="tip boots whose counts must agree (default 2)",
    )
    s.add_argument(
        "--batches",
        type=bench.positive(bench.MAX_BATCHES),
        help="timed batches per case",
    )
    s.add_argument(
        "--calls", type=bench.positive(bench.MAX_CALLS), help="calls per batch"
    )
    s = sub.add_parser(
        "lava",
        help="the QEMU guests as LAVA jobs: write and validate them, run "
        "them here (lava-run) or submit them (lavacli; lktool/lava.py)",
    )
    s.add_argument(
        "--guest",
        action="append",
        help="a guest of configs/qemu/ (repeatable; default: those whose "
        "kernel is built, or with --submit the jobs written before)",
    )
    s.add_argument(
        "--run",
        action="append",
        metavar="GUEST",
        help="also run this guest's job here with lava-run (repeatable)",
    )
    s.add_argument(
        "--artifacts-url",
        metavar="URL",
        help="where a lab downloads the artifacts: the jobs name "
        "URL/GUEST/<kernel> and URL/GUEST/initramfs.cpio.gz (publish "
        "$LK_OUT/lava/artifacts/ there); default: file:// URLs",
    )
    s.add_argument(
        "--submit",
        metavar="URI",
        help="submit the jobs written before to this LAVA server "
        "(lavacli --uri, e.g. https://USER:TOKEN@lava.example.org/RPC2)",
    )
    s.add_argument("--output", help="where the jobs go (default: $LK_OUT/lava)")
    s = sub.add_parser(
        "baseline", help="record the warnings of the prerequisite-only tree"
    )
    s.add_argument("--target", action="append")
    s = sub.add_parser("send", help="b4 prep branches and mails per topic")
    s.add_argument(
        "topics",
        nargs="*",
        metavar="TOPIC",
        help="topics to prepare (default: all); a topic's KUnit "
        "follow-up comes with it",
    )
    s.add_argument(
        "-v",
        "--version",
        type=int,
        help="make this the version of the topics' cover letters "
        "(each needs a 'Changes in vN:' paragraph)",
    )
    s.add_argument(
        "-o",
        "--output-dir",
        help="where to write the mails (default: "
        "$LK_OUT/outgoing), one folder per section",
    )
    s.add_argument(
        "--to-local-list",
        action="store_true",
        help="send the mails to the local list that `lk list` runs (and "
        "nowhere else), then check what its archive serves",
    )
    s = sub.add_parser(
        "list", help="run a local mailing list (exim4, public-inbox) on 127.0.0.1"
    )
    s.add_argument(
        "topics", nargs="*", metavar="TOPIC", help="topics whose lists to serve"
    )
    s.add_argument(
        "--minutes",
        type=float,
        default=mlist.DEFAULT_MINUTES,
        help="stop after this long (default: %(default)s)",
    )
    s.add_argument("--smtp-port", type=int, help="default: a free port")
    s.add_argument("--http-port", type=int, help="default: a free port")
    s.add_argument(
        "--list",
        action="append",
        metavar="ADDRESS",
        help="serve this list address too (repeatable)",
    )
    s = sub.add_parser(
        "export", help="regenerate patches/ from a kernel branch (v4.20..prereq..HEAD)"
    )
    s.add_argument("tree", nargs="?", help="kernel git tree with v4.20, prereq, HEAD")
    s.add_argument(
        "--trailers",
        action="append",
        metavar="TOPIC",
        help="instead of a tree: add the review trailers that b4 trailers -u "
        "collected in the topic's b4 prep branches (lk send's) to patches/ "
        "(repeatable)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    ccache_env(os.environ)
    try:
        if args.cmd in LOCKED:
            args.lock = pipeline.lock_out(args)
        if args.cmd in STAGES:
            r = common.Results()
            STAGES[args.cmd](args, r)
            return pipeline.finish(r)
        return COMMANDS[args.cmd](args)
    except (common.Failure, OSError) as e:
        print("lk %s: %s" % (args.cmd, e), file=sys.stderr)
        return 1
