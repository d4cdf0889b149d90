# SPDX-License-Identifier: GPL-2.0
"""lk_qemu: boot built v4.20 kernels under QEMU (TCG) and run selftests.

Each stage is usable alone; `run` chains them for every guest:

  build      compile the selftests of configs/qemu/selftests.txt statically for
             a user-space ABI (64: gcc, 32: i686-linux-gnu-gcc, arm64:
             aarch64-linux-gnu-gcc, arm: arm-linux-gnueabihf-gcc), against
             the uapi headers exported from the kernel tree, plus the guest
             /init (scripts/qemu/init.c)
  initramfs  pack /init, /dev/console, the test binaries and a manifest
             into a gzipped cpio (newc) archive
  boot       boot a guest kernel with an initramfs under TCG (never KVM),
             keep the serial log, stop at a wall-clock limit, report
  parse      report on a serial log that `boot` wrote
  run        build + initramfs + boot for the guests in configs/qemu/

Output: one line per result ("PASS: qemu x86_64/64: valid-adjtimex",
"FAIL: qemu i386/32: foo - exit 1; log at PATH:LINE", "PASS: qemu
arm64/arm: futex_y2038": guest, then ABI), then
"N passed, N failed[, N skipped]"; the exit status is 1 on any failure,
2 when the tool cannot run at all (bad arguments or data files).

Data files:
  configs/qemu/<guest>.conf   per guest: target (build directory name),
                              kernel (path in the build directory), qemu,
                              qemu_args, memory, smp, console, append, abis,
                              init_abi, boot_timeout, poweroff_timeout,
                              debug_scale, kmemleak_timeout; optional:
                              accel = tcg[,options] (QEMU's -accel;
                              default tcg), console_port = N (the
                              console is QEMU's serial port N, stdio;
                              default 0: -serial null for those before),
                              tests = <name> ... (selftests of its ABIs, by
                              their selftests.txt names; default: all of
                              them; an unknown name is an error), expect and
                              expect_<x> (see Expectations)
  configs/qemu/abi/<abi>.conf  per user-space ABI (64, 32, arm64, arm):
                              cc, headers_arch, headers_inputs, cflags
  configs/qemu/selftests.txt       which tests, for which ABIs, with which flags

Markers.  The host draws a random token per boot and passes it on the
kernel command line (lkqemu.token=); /init prefixes every marker with it
("lk-qemu <token> begin <name>", "... end <name> exit=0 time=0.25", "...
done ran=N"), so test output cannot imitate one, and the parser also checks
their order.  The log starts with "# lk-qemu-host <token> ..." lines (guest,
expected tests, command) written before qemu starts, and ends with one
written after it stopped (exit status, timings, whether it was killed).

Expectations.  Each expect or expect_<x> key of a guest is a Python
regular expression that must match its serial log (re.search, MULTILINE):
one result row per key, "qemu <guest>: expect <x>", PASS or FAIL.  The
log is matched as the parser reads it: carriage returns removed (so '$'
ends a line), kernel records that cut into a line of user-space output
moved to lines of their own, the "# lk-qemu-host" lines left out; a test's
output lines are there as it printed them (kernel lines keep their
"[    1.234567] "), so "expect_paca = ^# HWCAP_PACA: present$" matches
the line that a test printed.  In these values '#' is text, not a comment;
an empty value expects nothing.  They are checked only when init finished
its tests ("done" marker); otherwise each is a FAIL (unproven).  `parse`
does not check them.

Time limits.  Each test has its own limit in the guest.  When a test ends,
or its limit is up, init kills what is left of its process group and
starts the next test once none of it is left (a test whose leftovers are
still there KILL_WAIT seconds after SIGKILL fails).  The host kills qemu
at a wall-clock limit of boot_timeout + the sum of the test limits (each
plus KILL_WAIT; + kmemleak_timeout on kmemleak kernels; everything times
debug_scale on KASAN or kmemleak kernels), or poweroff_timeout after the
"done" marker.  No "done" marker means that the guest crashed or hung,
which is a failure.  ^C or SIGTERM to the tool kills qemu too.

Environment: LK_OUT (default ~/.cache/linux-v4.20-work) holds the kernel
tree (tree/), the build directories (build/<target>/), the logs (logs/) and
this tool's scratch directory (qemu/).
"""

from __future__ import annotations

from typing import Any

import os
import sys
import threading
import time

from . import boot, common, qemu_conf, qemu_tool, serial, userspace, verdict


def guest_kernel(
    guest: common.Guest, build_root: str | None = None, build_dir: str | None = None
) -> tuple[str, str]:
    """(kernel path, build directory) of a guest."""
    if build_dir is None:
        build_dir = os.path.join(
            build_root or os.path.join(common.out_dir(), "build"), guest["target"]
        )
    return os.path.join(build_dir, guest["kernel"]), build_dir


def boot_and_report(
    guest: common.Guest,
    kernel: str,
    initramfs: str,
    names_timeouts: list[tuple[str, int]],
    log_path: str,
    results: common.Results,
    limit: int | None = None,
    kmemleak: bool = False,
    scale: int = 1,
    echo: bool = False,
    append: str = "",
) -> serial.Report | None:
    """Boot, parse and report; return the Report (None if qemu did not run).

    names_timeouts: [(manifest name, seconds in the guest)].  The guest's
    expect keys are judged too.
    """
    if limit is None:
        limit = boot.wall_limit(guest, names_timeouts, scale, kmemleak)
    try:
        boot.boot(
            guest,
            kernel,
            initramfs,
            log_path,
            [n for n, _ in names_timeouts],
            limit,
            echo=echo,
            append=append,
        )
    except (common.Failure, OSError) as e:
        results.failed("qemu %s: boot" % guest["name"], str(e))
        r = None
    else:
        r = serial.parse_log_file(log_path)
        for row in verdict.judge(r):
            results.add(*row)
    for row in verdict.judge_expects(guest, r, log_path):
        results.add(*row)
    return r


# Guests that boot side by side (qemu_stages.GuestLane) build their
# ABIs' programs one at a time: guests of one ABI share them.
PROGRAMS_LOCK = threading.Lock()


def guest_programs(
    guest: common.Guest,
    specs: list[qemu_conf.TestSpec],
    tree: str,
    scratch: str,
    logs: str,
    results: common.Results,
    built_cache: dict[Any, Any],
) -> list[Any] | None:
    """The test programs of each of guest's ABIs, built once a run
    (built_cache), and its /init: None (and a FAIL row) if /init could
    not be built."""
    tests = []
    for abi_name in guest["abis"]:
        # Guests of one ABI share its binaries if they run the same tests.
        key = (abi_name, tuple(guest["tests"] or ()))
        if key not in built_cache:
            abi = qemu_conf.load_abi(abi_name)
            blog = os.path.join(logs, "qemu-build-%s.log" % abi_name)
            if os.path.exists(blog) and not any(k[0] == abi_name for k in built_cache):
                os.unlink(blog)
            built_cache[key] = userspace.build_tests(
                specs, abi, scratch, blog, tree, results
            )
        tests.extend(built_cache[key])
    init_key = ("init", guest["init_abi"])
    if init_key not in built_cache:
        blog = os.path.join(logs, "qemu-build-%s.log" % guest["init_abi"])
        try:
            built_cache[init_key] = userspace.build_init(
                qemu_conf.load_abi(guest["init_abi"]), scratch, blog
            )
        except (common.Failure, OSError) as e:
            results.failed("qemu build/%s: init" % guest["init_abi"], str(e))
            return None
    return tests


class Prepared:
    """What a guest boots: its kernel, build directory, initramfs and tests
    ([(manifest name, seconds in the guest)]), and the time factor of its
    kernel (debug_scale) and whether it has kmemleak."""

    def __init__(
        self,
        kernel: str,
        build_dir: str,
        initramfs: str,
        names: list[tuple[str, int]],
        scale: int,
        kmemleak: bool,
    ) -> None:
        self.kernel, self.build_dir, self.initramfs = kernel, build_dir, initramfs
        self.names, self.scale, self.kmemleak = names, scale, kmemleak


def prepare_guest(
    guest: common.Guest,
    specs: list[qemu_conf.TestSpec],
    tree: str,
    scratch: str,
    logs: str,
    results: common.Results,
    build_root: str | None = None,
    build_dir: str | None = None,
    built_cache: dict[Any, Any] | None = None,
    kernel: str | None = None,
    prefix: str = "qemu",
) -> Prepared | None:
    """build + initramfs for one guest (None, with a FAIL row, when it
    cannot boot): what `lk qemu` boots, and what `lk lava` deploys.

    The kernel is <build dir>/<guest kernel> unless `kernel` names one (the
    build directory still provides .config).
    """
    name = guest["name"]
    default_kernel, bdir = guest_kernel(guest, build_root, build_dir)
    kernel = kernel or default_kernel
    why = boot.missing_kernel(guest, kernel)
    if why:
        results.failed("%s %s: boot" % (prefix, name), why)
        return None
    scale, kmemleak = qemu_conf.debug_scale(guest, bdir)
    built_cache = built_cache if built_cache is not None else {}
    specs = qemu_conf.guest_tests(guest, specs)
    with PROGRAMS_LOCK:
        tests = guest_programs(guest, specs, tree, scratch, logs, results, built_cache)
        if tests is None:
            return None
        initramfs = os.path.join(scratch, name, "initramfs.cpio.gz")
        init_key = ("init", guest["init_abi"])
        userspace.make_initramfs(initramfs, built_cache[init_key], tests, scale)
    names = [
        (userspace.manifest_name(t.abi, t.spec.name), t.spec.timeout * scale)
        for t in tests
    ]
    return Prepared(kernel, bdir, initramfs, names, scale, kmemleak)


def run_guest(
    guest: common.Guest,
    specs: list[qemu_conf.TestSpec],
    tree: str,
    scratch: str,
    logs: str,
    results: common.Results,
    build_root: str | None = None,
    build_dir: str | None = None,
    limit: int | None = None,
    echo: bool = False,
    built_cache: dict[Any, Any] | None = None,
    kernel: str | None = None,
) -> serial.Report | None:
    """build + initramfs + boot + parse for one guest (prepare_guest()).

    The kernel is <build dir>/<guest kernel> unless `kernel` names one (the
    build directory still provides .config).
    """
    name = guest["name"]
    p = prepare_guest(
        guest,
        specs,
        tree,
        scratch,
        logs,
        results,
        build_root,
        build_dir,
        built_cache,
        kernel,
    )
    if p is None:
        return None
    log_path = os.path.join(logs, "qemu-%s.log" % name)
    t0 = time.monotonic()
    r = boot_and_report(
        guest,
        p.kernel,
        p.initramfs,
        p.names,
        log_path,
        results,
        limit=limit,
        kmemleak=p.kmemleak,
        scale=p.scale,
        echo=echo,
    )
    common.log(
        "qemu %s: boot and tests took %.1fs; serial log at %s"
        % (name, time.monotonic() - t0, log_path)
    )
    return r


def places(
    out: str,
    tree: str | None = None,
    scratch: str | None = None,
    logs: str | None = None,
) -> tuple[str, str, str]:
    """(kernel tree, scratch directory, log directory) of a harness run:
    those given, else $LK_OUT/tree, $LK_OUT/qemu and $LK_OUT/logs (made)."""
    tree = os.path.abspath(tree or os.path.join(out, "tree"))
    scratch = os.path.abspath(scratch or os.path.join(out, "qemu"))
    logs = os.path.abspath(logs or os.path.join(out, "logs"))
    os.makedirs(scratch, exist_ok=True)
    os.makedirs(logs, exist_ok=True)
    return tree, scratch, logs


def key_values(pairs: list[str] | None) -> dict[str, str]:
    """{key: value} of --set KEY=VALUE options."""
    overrides = {}
    for kv in pairs or ():
        if "=" not in kv:
            raise common.Failure("--set wants KEY=VALUE, not %r" % kv)
        k, v = kv.split("=", 1)
        overrides[k.strip()] = v.strip()
    return overrides


def load_guests(
    names: list[str],
    specs: list[qemu_conf.TestSpec],
    overrides: dict[str, str] | None = None,
    build_dir: str | None = None,
) -> list[common.Guest]:
    """The guests named, checked: a bad 'tests' key stops them all."""
    guests = [qemu_conf.load_guest(g, overrides=overrides) for g in names]
    for g in guests:
        qemu_conf.guest_tests(g, specs)
    if build_dir and len(guests) != 1:
        raise common.Failure("--build-dir needs exactly one --guest")
    return guests


def run_guests(
    results: common.Results,
    out: str,
    names: list[str],
    tree: str | None = None,
    tests: str | None = None,
    scratch: str | None = None,
    logs: str | None = None,
    overrides: dict[str, str] | None = None,
    build_root: str | None = None,
    build_dir: str | None = None,
    timeout: int | None = None,
    echo: bool = False,
    cache: dict[Any, Any] | None = None,
) -> None:
    """build + initramfs + boot + parse for each guest named: `lk qemu` and
    `lk_qemu.py run`.  Rows go to results as they come; a data file that
    is wrong raises Failure.  cache keeps the programs built for an ABI
    across calls (run_guest()), so that one run builds them once."""
    tree, scratch, logs = places(out, tree, scratch, logs)
    specs = qemu_conf.read_selftests(tests or qemu_conf.SELFTESTS)
    guests = load_guests(names, specs, overrides, build_dir)
    cache = {} if cache is None else cache
    for g in guests:
        run_guest(
            g,
            specs,
            tree,
            scratch,
            logs,
            results,
            build_root,
            build_dir,
            timeout,
            echo,
            cache,
        )


def main(argv: list[str] | None = None) -> int:
    p = qemu_tool.tool_parser("lk_qemu.py", __doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common_options(s, guests=True):
        s.add_argument("--tree", help="kernel tree (default: $LK_OUT/tree)")
        s.add_argument(
            "--tests",
            default=qemu_conf.SELFTESTS,
            help="selftest list (default: configs/qemu/selftests.txt)",
        )
        s.add_argument("--scratch", help="scratch directory (default: $LK_OUT/qemu)")
        s.add_argument("--logs", help="log directory (default: $LK_OUT/logs)")
        if guests:
            s.add_argument(
                "--guest",
                action="append",
                help="guest of configs/qemu/ (repeatable; default: all)",
            )
            s.add_argument(
                "--set",
                action="append",
                default=[],
                metavar="KEY=VALUE",
                help="override a key of the guests' .conf (e.g. smp=2; repeatable)",
            )

    def kernels(s):
        s.add_argument(
            "--build-root",
            help="directory of the build directories (default: $LK_OUT/build)",
        )
        s.add_argument(
            "--build-dir",
            help="the build directory of the one --guest given (e.g. a KASAN build)",
        )
        s.add_argument(
            "--timeout",
            type=int,
            help="wall-clock limit in "
            "seconds (default: from the guest's .conf and the "
            "test limits)",
        )
        s.add_argument(
            "--echo", action="store_true", help="copy the serial console to stdout"
        )

    s = sub.add_parser("build", help="build the selftests and /init")
    common_options(s, guests=False)
    s.add_argument(
        "--abi",
        action="append",
        choices=qemu_conf.abi_names(),
        help="user-space ABI of configs/qemu/abi/ (repeatable; default: all)",
    )
    s = sub.add_parser("initramfs", help="pack an initramfs for a guest")
    common_options(s)
    s.add_argument(
        "-o", "--output", help="default: $LK_OUT/qemu/<guest>/initramfs.cpio.gz"
    )
    s = sub.add_parser("boot", help="boot a guest with its initramfs")
    common_options(s)
    kernels(s)
    s.add_argument("--initramfs", help="default: what 'initramfs' wrote")
    s = sub.add_parser("parse", help="report on a serial log")
    s.add_argument("log", nargs="+")
    s = sub.add_parser("run", help="build, initramfs and boot every guest")
    common_options(s)
    kernels(s)
    args = p.parse_args(argv)

    out = common.out_dir(args.out)
    results = common.Results()
    try:
        if args.cmd == "parse":
            for path in args.log:
                for row in verdict.judge(serial.parse_log_file(path)):
                    results.add(*row)
            common.log(results.summary())
            return 0 if results.ok() else 1
        if args.cmd == "run":
            run_guests(
                results,
                out,
                args.guest or qemu_conf.guest_names(),
                tree=args.tree,
                tests=args.tests,
                scratch=args.scratch,
                logs=args.logs,
                overrides=key_values(args.set),
                build_root=args.build_root,
                build_dir=args.build_dir,
                timeout=args.timeout,
                echo=args.echo,
            )
            common.log(results.summary())
            return 0 if results.ok() else 1
        tree, scratch, logs = places(out, args.tree, args.scratch, args.logs)
        specs = qemu_conf.read_selftests(args.tests)
        if args.cmd == "build":
            for name in args.abi or qemu_conf.abi_names():
                abi = qemu_conf.load_abi(name)
                blog = os.path.join(logs, "qemu-build-%s.log" % name)
                if os.path.exists(blog):
                    os.unlink(blog)
                userspace.build_tests(specs, abi, scratch, blog, tree, results)
                try:
                    userspace.build_init(abi, scratch, blog)
                except common.Failure as e:
                    results.failed("qemu build/%s: init" % name, str(e))
            common.log(results.summary())
            return 0 if results.ok() else 1
        guests = load_guests(
            args.guest or qemu_conf.guest_names(),
            specs,
            key_values(args.set),
            getattr(args, "build_dir", None),
        )
        # initramfs / boot: from binaries that 'build' left in scratch
        for g in guests:
            tests = []
            for abi_name in g["abis"]:
                for spec in qemu_conf.guest_tests(g, specs):
                    path = os.path.join(scratch, "bin", abi_name, spec.name)
                    if abi_name not in spec.abis:
                        continue
                    if not os.path.exists(path):
                        raise common.Failure(
                            "no %s: run 'lk_qemu.py build' first" % path
                        )
                    tests.append(userspace.Built(spec, abi_name, path))
            init = os.path.join(scratch, "bin", g["init_abi"], "init")
            default_rd = os.path.join(scratch, g["name"], "initramfs.cpio.gz")
            if args.cmd == "initramfs":
                if not os.path.exists(init):
                    raise common.Failure("no %s: run 'lk_qemu.py build' first" % init)
                path = args.output or default_rd
                userspace.make_initramfs(path, init, tests)
                common.log("initramfs: %s" % path)
                continue
            kernel, bdir = guest_kernel(g, args.build_root, args.build_dir)
            scale, kmemleak = qemu_conf.debug_scale(g, bdir)
            rd = args.initramfs or default_rd
            if not os.path.exists(rd):
                raise common.Failure("no %s: run 'lk_qemu.py initramfs' first" % rd)
            if scale != 1 and not args.initramfs:
                userspace.make_initramfs(rd, init, tests, scale)
            names = [
                (userspace.manifest_name(t.abi, t.spec.name), t.spec.timeout * scale)
                for t in tests
            ]
            boot_and_report(
                g,
                kernel,
                rd,
                names,
                os.path.join(logs, "qemu-%s.log" % g["name"]),
                results,
                args.timeout,
                kmemleak,
                scale,
                args.echo,
            )
        if args.cmd == "boot":
            common.log(results.summary())
            return 0 if results.ok() else 1
        return 0
    except (common.Failure, OSError) as e:
        print("lk_qemu %s: %s" % (args.cmd, e), file=sys.stderr)
        return 2
