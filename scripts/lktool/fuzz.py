# SPDX-License-Identifier: GPL-2.0
"""lk_fuzz: fuzz what the series adds or changes, in the QEMU guests.

The fuzzer is Debian's trinity, unchanged: the x86_64 package installed
on the host (scripts/packages.txt) in the x86_64 guests, where it also
makes 32-bit calls through the ia32 entry (int 0x80), and the i386 build
of the same version in the i386 guests (downloaded with a private apt
state under $LK_OUT/fuzz/, so the host's dpkg gets no foreign
architecture).  Each guest boots once and runs the phases below one
after the other, each as a manifest entry of the guest /init, through
lk-fuzz (scripts/qemu/fuzz.c and its fuzz_*.c), which prepares binderfs
and cgroup v2, starts trinity with the phase's system calls and its
seed, stops it on time, and drives binderfs and the cpuset files beside
it (trinity has no model of them).

Phases (each as root, and as uid 65534 that unshared a user namespace):

  time      ppoll, pselect6, epoll_pwait, rt_sigtimedwait, futex,
            recvmmsg, set/get_robust_list, socketcall (32-bit), by name
  time64    the same less pselect6, plus io_pgetevents and the 32-bit
            numbers 403-423 (the _time64 calls), by leaving every other
            call out (see TIME_CALLS for why)
  binderfs  file calls on the devices of a binderfs mount (trinity's
            victim path), with lk-fuzz's binderfs churn beside it
  cpuset    file calls on a cgroup v2 subtree with the cpuset controller
            on, with lk-fuzz's cpuset churn beside it

Every kernel report (KASAN, UBSAN, lockdep, kmemleak, WARNING, BUG, Oops,
hung task, RCU stall) fails the run, as it does for `lk_qemu.py run`; the
serial log is kept in $LK_OUT/logs/fuzz-<guest>-<seed>-<date-time>.log
(no later run, a replay included, overwrites it).  A phase fails when
trinity did not run for its time, made no call, could not be stopped, or
the kernel became tainted; a trinity child that QEMU's IRET let into vm86
mode, and what the kernel then reports, are told apart from a kernel bug
by fuzz_emulator.py (fuzz_judge.py judges the log).  Results: "PASS:
fuzz x86_64/64: root-time - 12345 calls (seed N) in 60s"; last line "N
passed, N failed[, N skipped]".

One seed per run (--seed, or a random one, printed first): phase k gets
trinity seed (seed + k) mod 2^32 and churn seed the same, so a run is
replayed with `scripts/lk fuzz --seed N` and the same guests and minutes.
Trinity's children run concurrently, so a replay repeats the calls and
their arguments, not their interleaving.
"""

from __future__ import annotations

from typing import Sequence

import os
import secrets
import time

from . import (
    boot,
    common,
    fuzz_judge,
    fuzz_trinity,
    qemu,
    qemu_conf,
    qemu_tool,
    serial,
    userspace,
)


FUZZ_SOURCES = userspace.program_sources("fuzz")

# The long runs boot these; CI runs a short fixed-seed run on x86_64 and
# i386 (the kernels it builds anyway).
DEFAULT_GUESTS = ("x86_64-debug", "i386-debug")
CI_GUESTS = qemu_conf.X86_GUESTS
CI_SEED = 20380119
CI_MINUTES = 1

# The guests fuzz with all their vCPUs on one host thread.  Under QEMU
# 7.2's multi-threaded TCG, trinity wedged the x86_64 guest in 3 of 9 runs
# of seed CI_SEED (none in 10 single-threaded): a vCPU kept running a
# translation of finish_task_switch() that still had the int3 of a
# jump-label patch in it after the bytes in memory were the new ones, and
# kprobes, finding no int3 there, restarted the instruction: the same
# int3, forever, with interrupts off, on every CPU that switched tasks
# (docs/design.md, "QEMU's stale int3").  As many calls get made.
FUZZ_CONF = {"accel": "tcg,thread=single"}

# trinity's processes doing calls; few, so that a one-CPU TCG guest keeps up
CHILDREN = 4

# The socket family of trinity's socket cache.  Trinity 2023.01 dies
# while it builds the cache of all families, of SIGBUS or of a segfault in
# its own protocol tables: as root (seen with seeds 1 and 4), and as uid
# 65534 too (phase user-binderfs of seed 20380119 run alone, 10 times of
# 10, when the user phases still took every family but PACKET, KEY and
# LLC).  So every phase uses AF_INET only (TCP and UDP: enough for
# recvmmsg).
DOMAIN = "INET"

# seconds a phase gets in the guest beyond its fuzzing time: lk-fuzz's
# set-up, trinity's start (its socket cache) and its stop (STOP_WAIT in
# fuzz.c is 30), before /init kills the phase as timed out
PHASE_SLACK = 90

# What --phase accepts: root-time, ..., user-cpuset.
PHASE_NAMES = [
    "%s-%s" % (m, g[0]) for m in ("root", "user") for g in fuzz_trinity.GROUPS
]

PlanEntry = fuzz_judge.PlanEntry


def phase_seed(seed: int, k: int) -> int:
    return (seed + k) % (1 << 32)


def args_file(phase: fuzz_trinity.Phase) -> str:
    """Where a phase's trinity options go in the guest."""
    return "/lk-qemu/fuzz/%s.args" % phase.name


def manifest_lines(plan: list[PlanEntry], seconds: int, scale: int = 1) -> list[str]:
    """Manifest lines for /init: one per phase.

    plan: [(manifest name, Phase, seed, trinity path in the guest)]
    """
    lines = []
    for name, ph, seed, trinity in plan:
        argv = (
            ["/lk-qemu/bin/lk-fuzz"]
            + list(ph.flags)
            + [
                "--sysrq",
                "--seconds",
                str(seconds),
                "--seed",
                str(seed),
                "--args-file",
                args_file(ph),
                "--",
                trinity,
                "-q",
                "-l",
                "off",
                "--dangerous",
                "--clowntown",
                "-s",
                str(seed),
                "-C",
                str(CHILDREN),
            ]
            + ["-P", DOMAIN]
        )
        lines.append(
            "%d %s %s\n" % ((seconds + PHASE_SLACK) * scale, name, " ".join(argv))
        )
    return lines


def fuzz_initramfs(
    path: str,
    init: str,
    driver: str,
    trinity: str,
    libs: list[tuple[str, str]],
    lines: list[str],
    plan: list[PlanEntry],
) -> None:
    c = userspace.base_cpio(init)
    for guest_path, src in [
        ("lk-qemu/bin/lk-fuzz", driver),
        ("lk-qemu/bin/trinity", trinity),
    ] + libs:
        with open(src, "rb") as f:
            c.file(guest_path, f.read(), 0o755)
    for _, ph, _, _ in plan:
        c.file(args_file(ph), (" ".join(ph.args) + "\n").encode())
    c.file("lk-qemu/manifest", "".join(lines).encode())
    userspace.write_initramfs(path, c)


def fuzz_guest(
    guest: common.Guest,
    seed: int,
    minutes: float,
    tree: str,
    scratch: str,
    logs: str,
    results: common.Results,
    build_root: str | None = None,
    echo: bool = False,
    only: list[str] | None = None,
) -> serial.Report | None:
    name = guest["name"]
    kernel, bdir = qemu.guest_kernel(guest, build_root)
    why = boot.missing_kernel(guest, kernel)
    if why:
        results.failed("fuzz %s: boot" % name, why)
        return None
    scale, kmemleak = qemu_conf.debug_scale(guest, bdir)
    abi_name = guest["init_abi"]
    abi = qemu_conf.load_abi(abi_name)
    blog = os.path.join(logs, "fuzz-build-%s.log" % abi_name)
    cache = os.path.join(os.path.dirname(scratch), "fuzz")
    try:
        # One guest at a time writes an ABI's programs (a boot of another
        # guest may be building them beside this one: qemu_stages.GuestLane).
        with qemu.PROGRAMS_LOCK:
            trinity, libs = fuzz_trinity.trinity_for(abi_name, cache)
            init = userspace.build_init(abi, scratch, blog)
            driver = userspace.build_program(
                abi, FUZZ_SOURCES, "lk-fuzz", tree, scratch, blog
            )
    except (common.Failure, OSError) as e:
        results.failed("fuzz %s: build" % name, str(e))
        return None
    results.passed(
        "fuzz %s: build" % name,
        "lk-fuzz, trinity %s and %d "
        "librar%s"
        % (
            os.path.relpath(trinity, cache) if trinity.startswith(cache) else trinity,
            len(libs),
            "y" if len(libs) == 1 else "ies",
        ),
    )
    all_phases = fuzz_trinity.phases(
        fuzz_trinity.trinity_tables(fuzz_trinity.trinity_listing()),
        "32" if abi_name == "32" else "32 64",
    )
    # a phase keeps its number (and so its seed) when others are left out
    numbered = [
        (k, ph) for k, ph in enumerate(all_phases) if not only or ph.name in only
    ]
    seconds = max(5, int(minutes * 60 / len(numbered)))
    plan = [
        (
            userspace.manifest_name(abi_name, ph.name),
            ph,
            phase_seed(seed, k),
            "/lk-qemu/bin/trinity",
        )
        for k, ph in numbered
    ]
    lines = manifest_lines(plan, seconds, scale)
    initramfs = os.path.join(scratch, name, "fuzz.cpio.gz")
    fuzz_initramfs(initramfs, init, driver, trinity, libs, lines, plan)
    names = [(n, (seconds + PHASE_SLACK) * scale) for n, _, _, _ in plan]
    log_path = os.path.join(
        logs, "fuzz-%s-%d-%s.log" % (name, seed, time.strftime("%Y%m%d-%H%M%S"))
    )
    limit = boot.wall_limit(guest, names, scale, kmemleak)
    common.log(
        "fuzz %s: seed %d, %d phases of %ds; serial log at %s"
        % (name, seed, len(plan), seconds, log_path)
    )
    t0 = time.monotonic()
    try:
        boot.boot(
            guest, kernel, initramfs, log_path, [n for n, _ in names], limit, echo=echo
        )
    except (common.Failure, OSError) as e:
        results.failed("fuzz %s: boot" % name, str(e))
        return None
    r = serial.parse_log_file(log_path)
    for row in fuzz_judge.judge_phases(r, plan, seconds, fuzz_judge.read_known()):
        results.add(*row)
    common.log(
        "fuzz %s: took %.0fs; replay with: scripts/lk fuzz --guest %s "
        "--seed %d --minutes %g%s"
        % (
            name,
            time.monotonic() - t0,
            name,
            seed,
            minutes,
            "".join(" --phase " + ph.name for _, ph in numbered) if only else "",
        )
    )
    return r


def fuzz_guests(
    results: common.Results,
    out: str,
    guests: Sequence[str] | None = None,
    ci: bool = False,
    minutes: float | None = None,
    seed: int | None = None,
    only: list[str] | None = None,
    tree: str | None = None,
    build_root: str | None = None,
    echo: bool = False,
) -> None:
    """Fuzz each guest (default: DEFAULT_GUESTS, or CI_GUESTS with ci) for
    `minutes`, its phases seeded from `seed` (default: random, printed;
    CI_SEED with ci), or only the phases named in `only`.  Rows go to
    results as they come: `lk fuzz`, `lk test` and `lk_fuzz.py`."""
    guests = guests or list(CI_GUESTS if ci else DEFAULT_GUESTS)
    minutes = minutes or (CI_MINUTES if ci else 30)
    if seed is None:
        seed = CI_SEED if ci else secrets.randbelow(1 << 31)
    tree, scratch, logs = qemu.places(out, tree)
    loaded = [qemu_conf.load_guest(g, overrides=FUZZ_CONF) for g in guests]
    common.log("fuzz: seed %d" % seed)
    for g in loaded:
        fuzz_guest(
            g, seed, minutes, tree, scratch, logs, results, build_root, echo, only
        )


def main(argv: list[str] | None = None) -> int:
    p = qemu_tool.tool_parser("lk_fuzz.py", __doc__, x86_guests=DEFAULT_GUESTS)
    p.add_argument(
        "--ci",
        action="store_true",
        help="the CI run: guests "
        "%s, seed %d, %g minutes each (options given override)"
        % (" ".join(CI_GUESTS), CI_SEED, CI_MINUTES),
    )
    p.add_argument(
        "--minutes",
        type=float,
        help="fuzzing time per guest, shared by its phases (default: 30)",
    )
    p.add_argument("--seed", type=int, help="run seed (default: random, printed)")
    p.add_argument(
        "--phase",
        action="append",
        choices=PHASE_NAMES,
        help="run only this phase (repeatable; default: all)",
    )
    p.add_argument("--tree", help="kernel tree (default: $LK_OUT/tree)")
    p.add_argument(
        "--build-root",
        help="directory of the build directories (default: $LK_OUT/build)",
    )
    p.add_argument(
        "--echo", action="store_true", help="copy the serial console to stdout"
    )
    args = p.parse_args(argv)
    return qemu_tool.run_tool(
        "lk_fuzz",
        lambda results: fuzz_guests(
            results,
            common.out_dir(args.out),
            args.guest,
            args.ci,
            args.minutes,
            args.seed,
            args.phase,
            args.tree,
            args.build_root,
            args.echo,
        ),
    )
