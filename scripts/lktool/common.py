# SPDX-License-Identifier: GPL-2.0
"""Shared by every stage: running commands, results, logging, the work directory
and the small data files."""

from __future__ import annotations

import argparse
import re

from typing import Any, Callable, Concatenate, ParamSpec

import os
import shlex
import shutil
import subprocess
import threading
import time


# The checkout: scripts/lktool/common.py is three levels below it.
TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Where each kind of data file lives in configs/ (docs/design.md, "Files").
CONFIGS = os.path.join(TOP, "configs")
FRAGMENTS = os.path.join(CONFIGS, "fragments")  # config fragments
TARGETS = os.path.join(CONFIGS, "targets")  # build targets, <name>.conf
MATRICES = os.path.join(CONFIGS, "matrix")  # lists of targets: ci, full, bisect
WARNINGS = os.path.join(CONFIGS, "warnings")  # warning baselines, <target>.txt
GUESTS = os.path.join(CONFIGS, "qemu")  # QEMU guests, abi/, selftests.txt
KUNIT_TOOL = os.path.join(CONFIGS, "kunit-tool")  # what lk gives kunit.py

# A build target as targetconf.load_target() returns it, a QEMU guest as
# qemu_conf.load_guest() does, and a user-space ABI (qemu_conf.load_abi()).
Target = dict[str, Any]
Guest = dict[str, Any]
Abi = dict[str, Any]


class Failure(Exception):
    """A stage failed; the message names the artefact and the next step."""


def log(msg: str) -> None:
    print(msg, flush=True)


def trace(t0: float, cmd: list[str]) -> None:
    """With LK_TRACE=FILE, append when cmd started, how long it took, the
    thread and the command to FILE: where a stage's time goes."""
    path = os.environ.get("LK_TRACE")
    if not path:
        return
    line = "%.1f %.1f %s %s\n" % (
        t0,
        time.time() - t0,
        threading.current_thread().name,
        " ".join(cmd)[:300],
    )
    with TRACE_LOCK, open(path, "a") as f:
        f.write(line)


TRACE_LOCK = threading.Lock()

P = ParamSpec("P")


def failure_as_row(
    name: str, fn: Callable[Concatenate[argparse.Namespace, Results, P], object]
) -> Callable[Concatenate[argparse.Namespace, Results, P], None]:
    """fn(args, results, ...) with its failure (Failure, OSError, a command's
    timeout) a FAIL row `name` in results instead of an exception: for a
    check beside the builds, which must not stop the lane it shares with
    them."""

    def guarded(
        args: argparse.Namespace, results: Results, *rest: P.args, **kw: P.kwargs
    ) -> None:
        try:
            fn(args, results, *rest, **kw)
        except (Failure, OSError, subprocess.TimeoutExpired) as e:
            results.failed(name, str(e))

    return guarded


def run(
    cmd: list[str],
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    capture: bool = False,
    logfile: str | None = None,
    timeout: float | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[Any]:
    """Run cmd (a list); with logfile, send stdout+stderr there.

    With capture, return its output as text; `input` is then fed to it.
    """
    env = command_env(cmd, env)
    t0 = time.time()
    try:
        return run_checked(
            niced(cmd), cwd, env, check, capture, logfile, timeout, input
        )
    finally:
        trace(t0, cmd)


# The niceness of the commands run() and run_watched() start (0: none).
# `lk test` raises it while QEMU guests boot beside its builds: a guest's
# timers then fire on time, and the builds take what the guest leaves.
NICE = 0


def niced(cmd: list[str]) -> list[str]:
    """cmd run at NICE (through nice(1), so that cmd[0] still decides its
    environment in command_env())."""
    return ["nice", "-n", str(NICE)] + cmd if NICE else cmd


def run_checked(
    cmd: list[str],
    cwd: str | None,
    env: dict[str, str] | None,
    check: bool,
    capture: bool,
    logfile: str | None,
    timeout: float | None,
    input: str | None,
) -> subprocess.CompletedProcess[Any]:
    kw: dict[str, Any] = {"cwd": cwd, "env": env, "timeout": timeout}
    if logfile:
        with open(logfile, "a") as f:
            f.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
            f.flush()
            r = subprocess.run(
                cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw
            )
    elif capture:
        if input is None:
            kw["stdin"] = subprocess.DEVNULL
        r = subprocess.run(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            input=input,
            universal_newlines=True,
            **kw,
        )
    else:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, **kw)
    if check and r.returncode != 0:
        where = " (log: %s)" % logfile if logfile else ""
        err = (r.stderr or "").strip() if capture else ""
        raise Failure(
            "command failed in %s: %s%s%s"
            % (cwd or os.getcwd(), " ".join(cmd), where, ("\n" + err) if err else "")
        )
    return r


def command_env(cmd: list[str], env: dict[str, str] | None) -> dict[str, str] | None:
    """The environment for cmd; Failure if cmd is not installed."""
    if cmd[0] == "git":
        env = clean_env(env)
    elif cmd[0] == "make" and env is None:
        env = make_env()
    if not shutil.which(cmd[0], path=(env or os.environ).get("PATH")):
        raise Failure(
            "%s is not installed (needed for: %s); run "
            "'scripts/lk deps'" % (cmd[0], " ".join(cmd[:3]))
        )
    return env


# How often a long step says how far it got (seconds).
PROGRESS_SECS = int(os.environ.get("LK_PROGRESS_SECS") or 60)


def run_watched(
    cmd: list[str],
    logfile: str,
    label: str,
    count_re: re.Pattern[str],
    unit: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[Any]:
    """run() with its output appended to logfile, for a long step.

    Every PROGRESS_SECS it prints "progress: LABEL: N UNIT after Ms",
    N counting the log lines that match count_re, so that a person
    watching CI sees the step move.  Returns the CompletedProcess;
    raises subprocess.TimeoutExpired after timeout seconds.
    """
    env = command_env(cmd, env)
    t0 = time.time()
    seen, offset = 0, 0
    with open(logfile, "a") as f:
        f.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
        f.flush()
        offset = f.tell()
        p = subprocess.Popen(
            niced(cmd),
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
        )
    while True:
        left = None if timeout is None else timeout - (time.time() - t0)
        try:
            p.wait(
                timeout=PROGRESS_SECS
                if left is None
                else max(0.1, min(left, PROGRESS_SECS))
            )
            break
        except subprocess.TimeoutExpired:
            if left is not None and left <= PROGRESS_SECS:
                p.kill()
                p.wait()
                raise
        with open(logfile, "rb") as f:
            f.seek(offset)
            chunk = f.read()
        # Count whole lines only; the rest is read again next time.
        cut = chunk.rfind(b"\n") + 1
        offset += cut
        seen += sum(
            1
            for line in chunk[:cut].decode("utf-8", "replace").splitlines()
            if count_re.search(line)
        )
        log("progress: %s: %d %s after %ds" % (label, seen, unit, time.time() - t0))
    trace(t0, cmd)
    return subprocess.CompletedProcess(cmd, p.returncode)


def clean_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for git: no global or system configuration.

    A user's am.threeWay, apply.whitespace, format.signOff, diff.noprefix
    or core.autocrlf must not change what the series applies to or how
    patches are written.
    """
    env = dict(os.environ if env is None else env)
    for var in (
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_COMMON_DIR",
        "GIT_PREFIX",
    ):
        if env.get(var) is not None and env.get(var) == os.environ.get(var):
            del env[var]
    # `git -c` of a caller (a rebase's exec line) and GIT_CONFIG_COUNT's
    # pairs reach git from the environment, over every file.
    for var in list(env):
        if var == "GIT_CONFIG_PARAMETERS" or re.match(
            r"GIT_CONFIG_(COUNT|KEY_\d+|VALUE_\d+)$", var
        ):
            del env[var]
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    return env


def git(
    args: list[str], cwd: str | None, env: dict[str, str] | None = None, **kw: Any
) -> str:
    return run(["git"] + args, cwd=cwd, capture=True, env=env, **kw).stdout.strip()


def make_env() -> dict[str, str]:
    """The environment for make: one locale, no stray kbuild variables.

    The locale changes the compiler's messages (and so the warning keys)
    and is part of ccache's hash; KCONFIG_CONFIG would move .config.
    """
    env = dict(os.environ)
    for var in (
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "LANGUAGE",
        "KCONFIG_CONFIG",
        "KBUILD_OUTPUT",
        "CROSS_COMPILE",
        "ARCH",
        "KCFLAGS",
        "KCPPFLAGS",
        "KAFLAGS",
    ):
        env.pop(var, None)
    env["LANG"] = "C.UTF-8"
    return env


def out_dir(where: str | argparse.Namespace | None = None) -> str:
    """The work directory: applied tree, build directories, logs.

    where is an --out path, or parsed arguments whose `out` is one; the
    default is $LK_OUT.  It lives at a fixed place, not in the checkout,
    so that every checkout on a machine (and CI's fresh clone) compiles
    the same paths and ccache finds its earlier results.
    """
    path = where if isinstance(where, str) else getattr(where, "out", None)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.abspath(
        path or os.environ.get("LK_OUT") or os.path.join(base, "linux-v4.20-work")
    )


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "linux-v4.20")


def jobs() -> str:
    return str((os.cpu_count() or 1) + 1)


class Results:
    """Collects PASS/FAIL/SKIP lines and prints the closing summary."""

    def __init__(self, echo: bool = True) -> None:
        self.rows: list[tuple[str, str, str]] = []
        # A stage run for another one's sake (a baseline build) collects
        # its rows silently: only the rows of the stage itself are
        # printed and counted.
        self.echo = echo

    def add(self, status: str, name: str, detail: str = "") -> None:
        self.rows.append((status, name, detail))
        if self.echo:
            log("%s: %s%s" % (status, name, (" - " + detail) if detail else ""))

    def passed(self, name: str, detail: str = "") -> None:
        self.add("PASS", name, detail)

    def failed(self, name: str, detail: str = "") -> None:
        self.add("FAIL", name, detail)

    def skipped(self, name: str, detail: str = "") -> None:
        self.add("SKIP", name, detail)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r[0] == status)

    def summary(self) -> str:
        n_pass, n_fail, n_skip = (self.count(s) for s in ("PASS", "FAIL", "SKIP"))
        line = "%d passed, %d failed" % (n_pass, n_fail)
        if n_skip:
            line += ", %d skipped" % n_skip
        return line

    def ok(self) -> bool:
        return self.count("FAIL") == 0

    def has_failure(self, prefix: str) -> bool:
        """Whether a FAIL line already names something under prefix."""
        return any(r[0] == "FAIL" and r[1].startswith(prefix) for r in self.rows)


def is_expect_key(key: str) -> bool:
    """expect, expect_<x>: a guest's regular expressions on its serial log."""
    return key == "expect" or key.startswith("expect_")


def read_kv(path: str) -> dict[str, str]:
    """Read a small 'key = value' file; '#' starts a comment.

    In the value of an expect key (a regular expression) '#' is text.
    """
    data = {}
    try:
        f = open(path)
    except OSError as e:
        raise Failure("cannot read %s: %s" % (path, e.strerror))
    with f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "=" not in line:
                raise Failure("%s:%d: expected 'key = value'" % (path, n))
            k, v = line.split("=", 1)
            if is_expect_key(k.strip()):
                v = raw.split("=", 1)[1]
            data[k.strip()] = v.strip()
    return data


def srcarch_dirs(arch: str) -> set[str]:
    """The directories under arch/ whose files a build for ARCH=arch can
    compile or read: SRCARCH's, and for User-mode Linux also x86's, whose
    arch/x86/um/ and headers UML on x86 builds with."""
    return {srcarch(arch)} | ({"x86"} if arch == "um" else set())


def srcarch(arch: str) -> str:
    """kbuild's SRCARCH for ARCH=arch: the directory under arch/.

    scripts/lk uses it too (which objects a patch touches).
    """
    return {"x86_64": "x86", "i386": "x86"}.get(arch, arch)
