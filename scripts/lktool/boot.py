# SPDX-License-Identifier: GPL-2.0
"""Boot a guest under TCG and keep its serial log."""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import contextlib
import os
import secrets
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

from . import common


# init waits this long for a killed test to die (KILL_WAIT in init.c).
KILL_WAIT = 10


def host_line(token: str, text: str) -> str:
    return "# lk-qemu-host %s %s\n" % (token, text)


def qemu_command(
    guest: common.Guest, kernel: str, initramfs: str, token: str, append: str = ""
) -> list[str]:
    """The qemu command line: TCG, serial console on stdio, no reboot.
    The guest's console_port-th serial port is stdio, those before it
    are connected to nothing."""
    cmdline = " ".join(
        x
        for x in (
            "console=%s" % guest["console"],
            "panic=-1",
            "printk.time=1",
            "lkqemu.token=%s" % token,
            "lkqemu.abi=%s" % guest["init_abi"],
            guest["append"],
            append,
        )
        if x
    )
    before = ["-serial", "null"] * guest.get("console_port", 0)
    return (
        [guest["qemu"], "-accel", guest["accel"], "-nographic", "-no-reboot"]
        + ["-monitor", "none"]
        + before
        + ["-serial", "stdio", "-m", str(guest["memory"])]
        + ["-smp", str(guest["smp"]), "-kernel", kernel, "-initrd", initramfs]
        + ["-append", cmdline]
        + guest["qemu_args"]
    )


def wall_limit(
    guest: common.Guest,
    tests: Sequence[tuple[str, int]],
    scale: int = 1,
    kmemleak: bool = False,
) -> int:
    """The wall-clock limit of a boot running tests ([(name, seconds)])."""
    limit = guest["boot_timeout"] * scale
    limit += sum(t + KILL_WAIT + 2 for _, t in tests)
    if kmemleak:
        limit += guest["kmemleak_timeout"] * scale
    return limit


class BootProgress:
    """How far a boot got, said every common.PROGRESS_SECS: a guest and its
    tests take minutes, and init's end markers count the tests done."""

    def __init__(self, name: str, token: str, tests: int, t0: float) -> None:
        self.name, self.tests, self.t0 = name, tests, t0
        self.mark = ("lk-qemu %s end " % token).encode()
        self.done = 0
        self.said = t0

    def feed(self, old: int, buf: bytes) -> None:
        """Count the markers of buf that do not lie wholly in its first
        `old` bytes (the tail counted before)."""
        self.done += buf.count(self.mark, max(0, old - len(self.mark) + 1))

    def tick(self, now: float) -> None:
        if now - self.said >= common.PROGRESS_SECS:
            self.said = now
            common.log(
                "progress: boot %s: %d of %d tests done after %ds"
                % (self.name, self.done, self.tests, now - self.t0)
            )


def missing_kernel(
    guest: common.Guest, kernel: str, step: str | None = None
) -> str | None:
    """Why the guest cannot boot kernel, when it is not there: "no kernel
    at ...; build it with 'scripts/lk STEP'", STEP by default the build of
    the guest's target; else None."""
    if os.path.isfile(kernel):
        return None
    return "no kernel at %s; build it with 'scripts/lk %s'" % (
        kernel,
        step or "build --target %s" % guest["target"],
    )


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """While a boot runs, SIGTERM (timeout(1), a CI job's limit) kills
    the qemu processes boot() has recorded (kill_running()), then exits
    through the finally blocks, like ^C: qemu runs in a session of its
    own and does not get the signal.  Signal handlers belong to the main
    thread: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with on_sigterm(kill_running):
        yield


@contextlib.contextmanager
def on_sigterm(first: Callable[[], None]) -> Iterator[None]:
    """Within it, SIGTERM calls first(), then raises SystemExit(143) in
    the main thread, which must be the caller."""

    def handler(sig: int, frame: object) -> None:
        first()
        raise SystemExit(128 + sig)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


# The qemu processes that boot() runs now, in whichever thread.
RUNNING: set[subprocess.Popen[bytes]] = set()
# Held while boot() starts a qemu and records it in RUNNING:
# kill_running() waits for a start under way in another thread, which
# would otherwise leave that qemu out.
STARTING = threading.RLock()


@contextlib.contextmanager
def sigterm_kills_boots() -> Iterator[None]:
    """For the main thread while other threads boot guests (`lk test`
    boots each guest as soon as its kernel is built, beside the next
    build): SIGTERM kills every qemu that boot() runs, then exits as
    sigterm_unwinds() does.  Without it, the default action would end
    the tool and leave those qemu processes, which run in sessions of
    their own, running."""
    with on_sigterm(kill_running):
        yield


def kill_running() -> None:
    """SIGKILL every qemu that boot() runs now."""
    with STARTING:
        procs = list(RUNNING)
    for proc in procs:
        try:
            proc.kill()
        except OSError:
            pass


def boot(
    guest: common.Guest,
    kernel: str,
    initramfs: str,
    log_path: str,
    expected: Sequence[str] = (),
    limit: int | None = None,
    token: str | None = None,
    append: str = "",
    echo: bool = False,
) -> str:
    """Boot guest under TCG, writing the serial log to log_path.

    expected: manifest names in order (recorded in the log for the parser).
    limit: wall-clock seconds before qemu is killed (default: boot_timeout).
    Returns the token; parse the log with parse_log_file().
    """
    token = token or secrets.token_hex(8)
    limit = limit or guest["boot_timeout"]
    why = missing_kernel(guest, kernel)
    if why:
        raise common.Failure(why)
    if not shutil.which(guest["qemu"]):
        raise common.Failure(
            "%s is not installed; see scripts/packages.txt (for the guests "
            "outside CI scripts/packages-full.txt: scripts/lk deps --full)"
            % guest["qemu"]
        )
    cmd = qemu_command(guest, kernel, initramfs, token, append)
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    start_mark = ("lk-qemu %s start" % token).encode()
    done_mark = ("lk-qemu %s done" % token).encode()
    with open(log_path, "wb") as logf, sigterm_unwinds():
        logf.write(
            host_line(token, "guest=%s kernel=%s" % (guest["name"], kernel)).encode()
        )
        logf.write(host_line(token, "tests=%s" % ",".join(expected)).encode())
        logf.write(host_line(token, "limit=%d" % limit).encode())
        logf.write(
            host_line(
                token, "command=%s" % " ".join(shlex.quote(c) for c in cmd)
            ).encode()
        )
        logf.flush()
        t0 = time.monotonic()
        deadline = t0 + limit
        progress = BootProgress(guest["name"], token, len(expected), t0)
        killed = None
        drain_until = None
        start_at = done_at = None
        tail, err = b"", b""
        finished = False
        sel = selectors.DefaultSelector()
        # A SIGTERM once qemu runs kills it: the handler (kill_running())
        # finds it in RUNNING, waiting for STARTING if another thread is
        # starting it, and the finally below kills it too.
        with STARTING:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            RUNNING.add(proc)
        try:
            assert proc.stdout is not None and proc.stderr is not None
            sel.register(proc.stdout, selectors.EVENT_READ)
            sel.register(proc.stderr, selectors.EVENT_READ)
            while sel.get_map():
                now = time.monotonic()
                progress.tick(now)
                if killed is None and now >= deadline:
                    killed = "poweroff" if done_at is not None else "limit"
                    proc.kill()
                    drain_until = now + 5
                if drain_until is not None and now >= drain_until:
                    break
                wait = (drain_until if drain_until is not None else deadline) - now
                for key, _ in sel.select(max(0.01, min(wait, 1.0))):
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                        continue
                    if key.fileobj is proc.stderr:
                        err += data
                        continue
                    logf.write(data)
                    logf.flush()
                    if echo:
                        sys.stdout.buffer.write(data)
                        sys.stdout.flush()
                    buf = tail + data
                    progress.feed(len(tail), buf)
                    t = time.monotonic() - t0
                    if start_at is None and start_mark in buf:
                        start_at = t
                    if done_at is None and done_mark in buf:
                        done_at = t
                        deadline = min(
                            deadline, time.monotonic() + guest["poweroff_timeout"]
                        )
                    tail = buf[-128:]
            finished = True
        finally:
            sel.close()
            if finished and killed is None:
                # Its output is closed: qemu is exiting.
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    killed = "limit"
            # Not finished: an exception (SIGTERM, ^C) stopped the boot;
            # its handler may have killed qemu already (kill_running()).
            if proc.poll() is None or not finished:
                killed = killed or "interrupted"
                proc.kill()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            RUNNING.discard(proc)
            for pipe in (proc.stdout, proc.stderr):
                if pipe:
                    pipe.close()
            elapsed = time.monotonic() - t0
            logf.write(b"\n")
            for l in err.decode("utf-8", "replace").splitlines():
                logf.write(host_line(token, "qemu-stderr=%s" % l).encode())
            logf.write(
                host_line(
                    token,
                    "end status=%s killed=%s "
                    "elapsed=%.2f start=%s done=%s"
                    % (
                        proc.returncode,
                        killed or "no",
                        elapsed,
                        "%.2f" % start_at if start_at is not None else "-",
                        "%.2f" % done_at if done_at is not None else "-",
                    ),
                ).encode()
            )
    return token
