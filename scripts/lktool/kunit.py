# SPDX-License-Identifier: GPL-2.0
"""KUnit: Debian's 6.1 kunit.py on the applied tree, and the KTAP the guests print."""

from __future__ import annotations

import argparse

from typing import Sequence

import json
import os
import re
import shutil
import sys
import threading
import time

from . import apply, common, targetconf


KUNIT_TARBALL = "/usr/src/linux-source-6.1.tar.xz"
KUNIT_TOOL_DIR = "tools/testing/kunit"


def kunit_tarball() -> str:
    path = os.environ.get("LK_KUNIT_TARBALL") or KUNIT_TARBALL
    if not os.path.exists(path):
        raise common.Failure(
            "%s is missing: it carries the kunit.py that lk uses "
            "(package linux-source-6.1; run 'scripts/lk deps')" % path
        )
    return path


def install_kunit_tool(tree: str, out: str) -> str:
    """Put Debian's 6.1 kunit.py into the applied tree; return its path.

    v4.20 has no tools/testing/kunit.  kunit.py finds the kernel tree from
    its own location, so it has to sit inside the tree it builds; the copy
    is untracked there and replaced on every call.  Its UML config asks
    for virtio options that v4.20 does not have, so ours replaces it.
    """
    if (
        common.run(
            ["git", "ls-files", "--error-unmatch", KUNIT_TOOL_DIR],
            cwd=tree,
            capture=True,
            check=False,
        ).returncode
        == 0
    ):
        return os.path.join(tree, KUNIT_TOOL_DIR, "kunit.py")
    tarball = kunit_tarball()
    st = os.stat(tarball)
    stamp = "%s %d %d" % (tarball, st.st_size, int(st.st_mtime))
    cache = os.path.join(out, "kunit-tool")
    stamp_file = os.path.join(cache, ".stamp")
    src = os.path.join(cache, "linux-source-6.1", KUNIT_TOOL_DIR)
    have = ""
    if os.path.exists(stamp_file):
        with open(stamp_file) as f:
            have = f.read()
    if have != stamp or not os.path.exists(os.path.join(src, "kunit.py")):
        # Unpacked beside it and renamed into place: another lk (the
        # tools' tests use the run's copy) never sees half of it.
        tmp = "%s.tmp-%d" % (cache, os.getpid())
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        common.run(
            ["tar", "-xJf", tarball, "-C", tmp, "linux-source-6.1/" + KUNIT_TOOL_DIR],
            capture=True,
        )
        with open(os.path.join(tmp, ".stamp"), "w") as f:
            f.write(stamp)
        if os.path.isdir(cache):
            shutil.rmtree(cache, ignore_errors=True)
        try:
            os.rename(tmp, cache)
        except OSError:  # another lk put its copy there first
            shutil.rmtree(tmp, ignore_errors=True)
    dest = os.path.join(tree, KUNIT_TOOL_DIR)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(
        os.path.join(common.KUNIT_TOOL, "arch_uml.config"),
        os.path.join(dest, "configs", "arch_uml.config"),
    )
    return os.path.join(dest, "kunit.py")


def kunit_make_options() -> list[str]:
    """kunit.py's --make_options: what make_cmd() adds for a native build.

    A build directory that `lk build` made and `kunit.py run` then uses
    must see the same compiler commands, or kunit.py rebuilds it all."""
    if shutil.which("ccache"):
        return ["--make_options=CC=ccache gcc", "--make_options=HOSTCC=ccache gcc"]
    return []


def configure_kunit(
    t: common.Target, tree: str, build_dir: str, logfile: str, before_tip: bool
) -> None:
    """Configure a target the way kunit.py does, by `kunit.py config`.

    kunit.py writes a .config from t's .kunitconfig (and its UML options),
    runs olddefconfig and fails if an option of the .kunitconfig did not
    stick; it also keeps the .kunitconfig in the build directory, so that
    a later `kunit.py run` there with the same .kunitconfig keeps the
    .config.  With before_tip, the lines naming a symbol that the tree does
    not define yet are left out.
    """
    kunitconfig = os.path.join(common.TOP, t["kunitconfig"])
    if before_tip:
        defined = targetconf.kconfig_symbols(tree)
        kept = []
        with open(kunitconfig) as f:
            for line in f:
                symbol = targetconf.config_line_symbol(line.strip())
                if symbol and symbol not in defined:
                    continue
                kept.append(line)
        kunitconfig = build_dir.rstrip("/") + ".kunitconfig"
        with open(kunitconfig, "w") as f:
            f.writelines(kept)
    tool = install_kunit_tool(
        tree, os.path.dirname(os.path.dirname(os.path.abspath(build_dir)))
    )
    r = common.run(
        [
            sys.executable,
            tool,
            "config",
            "--arch=" + t["arch"],
            "--build_dir=" + build_dir,
            "--kunitconfig=" + kunitconfig,
        ]
        + kunit_make_options(),
        cwd=tree,
        env=kunit_tool_env(),
        logfile=logfile,
        check=False,
    )
    if r.returncode:
        raise common.Failure(
            "config %s: kunit.py config exited %d; log at %s"
            % (t["name"], r.returncode, logfile)
        )


def kunit_rows(json_path: str, label: str, results: common.Results) -> int:
    """Report every test case of a kunit.py --json file; return the count."""
    try:
        with open(json_path) as f:
            top = json.load(f)
    except (OSError, ValueError):
        return 0
    n = 0

    def walk(group, prefix):
        nonlocal n
        for case in group.get("test_cases", []):
            n += 1
            # kunit.py leaves the name empty for what a crash cut short.
            name = "kunit %s: %s%s" % (label, prefix, case["name"] or "(cut short)")
            if case["status"] == "PASS":
                results.passed(name)
            elif case["status"] == "SKIP":
                results.skipped(name)
            else:
                results.failed(name, case["status"])
        for sub in group.get("sub_groups", []):
            walk(sub, prefix + (sub["name"] or "(cut short)") + ".")

    walk(top, "")
    return n


def kunit_tool_env() -> dict[str, str]:
    env = common.make_env()
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def uml_make_cmd(build_dir: str) -> list[str]:
    """The make command of kunit.py's UML build (kunit_kernel.py, make()),
    word for word, so that either of them finds the other's build current."""
    return ["make", "ARCH=um", "O=" + build_dir, "--jobs=" + common.jobs()] + [
        o.split("=", 1)[1] for o in kunit_make_options()
    ]


def uml_steps(
    tool: str, build_dir: str, json_path: str, configs: list[str], extra: Sequence[str]
) -> list[list[str]]:
    """`kunit.py run` on UML as three steps, for a fast edit-and-test loop.

    kunit.py's run is config, build and exec, and its build starts with
    `make olddefconfig`, which rewrites .config even when nothing in it
    changes; UML compiles .config into the kernel (arch/um/kernel/config.c),
    so every run relinks vmlinux, 4 to 6 s of each cycle here.  `kunit.py
    config` alone keeps a .config that already holds the .kunitconfig (and
    otherwise makes a new one, as run would); make then builds only what
    changed; `kunit.py exec` boots and parses.  extra goes to exec (a
    filter glob such as 'futex*', --kernel_args, --timeout, --raw_output).
    """
    py = [sys.executable, tool]
    where = ["--build_dir=" + build_dir]
    return [
        py + ["config", "--arch=um"] + where + kunit_make_options() + configs,
        uml_make_cmd(build_dir),
        py + ["exec"] + where + configs + ["--json=" + json_path] + list(extra),
    ]


def do_kunit(
    args: argparse.Namespace,
    results: common.Results,
    arch: str,
    kunitconfigs: list[str],
    name: str | None = None,
    extra: Sequence[str] = (),
) -> bool:
    """kunit.py run on the applied tree; one result per test case.

    name labels the results and logs.  On UML the build directory is the
    um build target's ($LK_OUT/build/um), which `lk build` configures with
    `kunit.py config` for kunit/all.kunitconfig: after CI's build stage
    kunit.py finds that kernel current, and a run with other .kunitconfigs
    rebuilds only what they change.  Other architectures build in
    $LK_OUT/kunit/<name>.
    """
    out = common.out_dir(args)
    tree = apply.applied_tree(args, keep_edits=True)
    tool = install_kunit_tool(tree, out)
    name = name or arch
    if arch == "um":
        build_dir = os.path.join(out, "build", "um")
    else:
        build_dir = os.path.join(out, "kunit", name)
    os.makedirs(os.path.dirname(build_dir), exist_ok=True)
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    logfile = os.path.join(out, "logs", "kunit-%s.log" % name)
    json_path = os.path.join(out, "logs", "kunit-%s.json" % name)
    if os.path.exists(json_path):
        os.unlink(json_path)
    open(logfile, "w").close()
    configs = ["--kunitconfig=" + os.path.abspath(k) for k in kunitconfigs]
    if arch == "um":
        steps = uml_steps(tool, build_dir, json_path, configs, extra)
    else:
        steps = [
            [
                sys.executable,
                tool,
                "run",
                "--arch=" + arch,
                "--build_dir=" + build_dir,
                "--jobs=" + common.jobs(),
                "--json=" + json_path,
            ]
            + kunit_make_options()
            + configs
            + list(extra)
        ]
    t0 = time.time()
    for cmd in steps:
        r = common.run_watched(
            cmd,
            logfile,
            "kunit " + name,
            re.compile(r"\S"),
            "lines of kunit.py output",
            cwd=tree,
            env=kunit_tool_env(),
            timeout=3600,
        )
        if r.returncode:
            break
    secs = time.time() - t0
    n = kunit_rows(json_path, name, results)
    if r.returncode:
        if not results.has_failure("kunit %s:" % name):
            with open(logfile, errors="replace") as f:
                text = f.read()
            step = "make" if cmd[0] == "make" else "kunit.py " + cmd[2]
            results.failed(
                "kunit: " + name,
                "%s exited %d after %ds; %s; log at %s"
                % (step, r.returncode, secs, text.strip()[-300:], logfile),
            )
        else:
            common.log("kunit: %s failed after %ds; log at %s" % (name, secs, logfile))
        return False
    if not n:
        results.failed("kunit: " + name, "kunit.py ran no test; log at %s" % logfile)
        return False
    results.passed("kunit: " + name, "%d cases in %ds" % (n, secs))
    return True


def kunit_section(log_path: str) -> str:
    """The kernel part of a serial log: where KUnit prints, before /init."""
    lines = []
    with open(log_path, errors="replace") as f:
        for line in f:
            if re.search(r"Freeing unused kernel|Run /init|lk-qemu ", line):
                break
            lines.append(line)
    return "".join(lines)


# Guests that boot side by side (qemu_stages.GuestLane) parse their KUnit
# output one at a time: install_kunit_tool() replaces the copy in the
# tree that another guest's kunit.py may be running from.
GUEST_KUNIT_LOCK = threading.Lock()


def parse_guest_kunit(
    args: argparse.Namespace, results: common.Results, guest: str, log_path: str
) -> None:
    """Check the KUnit results that a QEMU guest printed while booting."""
    out = common.out_dir(args)
    with GUEST_KUNIT_LOCK:
        tool = install_kunit_tool(apply.applied_tree(args), out)
        parse_kunit_log(
            tool, log_path, "qemu-" + guest, os.path.join(out, "logs"), results
        )


def parse_kunit_log(
    tool: str, log_path: str, label: str, logdir: str, results: common.Results
) -> bool:
    """kunit.py parse the kernel part of a serial log; report each case."""
    if not os.path.exists(log_path):
        results.failed("kunit: " + label, "no serial log at %s" % log_path)
        return False
    ktap = os.path.join(logdir, "kunit-%s.log" % label)
    with open(ktap, "w") as f:
        f.write(kunit_section(log_path))
    json_path = os.path.join(logdir, "kunit-%s.json" % label)
    if os.path.exists(json_path):
        os.unlink(json_path)
    r = common.run(
        [sys.executable, tool, "parse", "--json=" + json_path, ktap],
        cwd=logdir,
        env=kunit_tool_env(),
        capture=True,
        check=False,
    )
    n = kunit_rows(json_path, label, results)
    if not n:
        results.failed(
            "kunit: " + label,
            "no KUnit results in %s (kunit.py "
            "parse exited %d)" % (log_path, r.returncode),
        )
        return False
    if r.returncode:
        if not results.has_failure("kunit %s:" % label):
            results.failed(
                "kunit: " + label,
                "kunit.py parse exited %d; see %s" % (r.returncode, ktap),
            )
        return False
    results.passed("kunit: " + label, "%d cases" % n)
    return True


def conf_has_kunit(build_dir: str) -> bool:
    try:
        with open(os.path.join(build_dir, ".config")) as f:
            return "CONFIG_KUNIT=y\n" in f.read()
    except OSError:
        return False


def kunit_runs() -> list[tuple[str, list[str]]]:
    """What `lk test` runs with kunit.py: configs/kunit-tool/runs."""
    runs = []
    for line in targetconf.list_lines(os.path.join(common.KUNIT_TOOL, "runs")):
        words = line.split()
        runs.append((words[0], [os.path.join(common.TOP, w) for w in words[1:]]))
    return runs
