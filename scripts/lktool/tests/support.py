# SPDX-License-Identifier: GPL-2.0
"""Helpers of the tests of lktool."""

import os
import shutil
import subprocess
import tempfile

from .. import basetree, common, qemu_conf, series

# The checkout, its scripts/ and the command line.
TOP = common.TOP
HERE = os.path.join(TOP, "scripts")
LK = os.path.join(HERE, "lk")
# --quick (the runner sets LK_TEST_QUICK): only the tests that need no
# base tree, compiler or QEMU boot; the others are skipped, and say so.
QUICK = os.environ.get("LK_TEST_QUICK") == "1"
IDENT = series.PROJECT_IDENT


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def snapshot(top):
    """{path under top: bytes} of every file under top."""
    out = {}
    for root, _, files in os.walk(top):
        for fn in files:
            path = os.path.join(root, fn)
            with open(path, "rb") as f:
                out[os.path.relpath(path, top)] = f.read()
    return out


def repo_git(repo, *args, **kw):
    """git in a test repository, committing as the project identity;
    returns its output."""
    return subprocess.run(
        [
            "git",
            "-C",
            repo,
            "-c",
            "user.name=y2038 Series Team",
            "-c",
            "user.email=y2038-series@example.org",
        ]
        + list(args),
        env=common.clean_env(),
        check=True,
        universal_newlines=True,
        stdout=subprocess.PIPE,
        **kw
    ).stdout


def mail(
    subject,
    body="Explain the problem.\nExplain the effect.\n"
    "Explain the change.\nNot for upstream: a test.\n",
    sob=IDENT,
    author=IDENT,
):
    text = "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    text += "From: %s\nDate: Thu, 3 Dec 2026 00:00:00 +0000\n" % author
    text += "Subject: [PATCH] %s\n\n%s" % (subject, body)
    if sob:
        text += "\nSigned-off-by: %s\n" % sob
    text += "---\n a | 1 +\n"
    return text


def have_base():
    """A git base tree (the broken-patch tests clone it)."""
    try:
        return basetree.find_base(allow_download=False)[1] == "git"
    except common.Failure:
        return False


def applied_tree():
    """$LK_OUT/tree when it holds the series (as `lk test` leaves it)."""
    tree = os.path.join(common.out_dir(None), "tree")
    r = subprocess.run(
        ["git", "-C", tree, "symbolic-ref", "-q", "HEAD"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        universal_newlines=True,
    )
    return tree if r.stdout.strip() == "refs/heads/series" else None


def applied_selftests(testcase):
    """The applied tree and the selftests configs/qemu/selftests.txt lists;
    skips the test case when `lk apply` has not run."""
    tree = applied_tree()
    if tree is None:
        testcase.skipTest("no applied series in $LK_OUT/tree (lk apply)")
    specs = qemu_conf.read_selftests()
    testcase.assertTrue(specs)
    return tree, specs


def exec_problem(argv):
    """Why the host will not run argv to a clean exit, or None.

    The host's kernel decides which ELF files it starts: a 64-bit x86
    kernel built without IA32 emulation refuses every i386 program,
    static or not, with ENOEXEC ("Exec format error")."""
    try:
        r = subprocess.run(
            argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60
        )
    except OSError as e:
        return "%s: %s" % (os.path.basename(argv[0]), e.strerror or e)
    except subprocess.TimeoutExpired:
        return "%s: still running after 60s" % os.path.basename(argv[0])
    if r.returncode:
        return "%s: exit status %d" % (os.path.basename(argv[0]), r.returncode)
    return None


_HOST_ABIS = {}


def host_abi_problem(abi_name):
    """Why this host cannot run programs of the user-space ABI abi_name
    (configs/qemu/abi/NAME.conf), or None: an empty program built with
    the ABI's compiler and flags, run once per process."""
    if abi_name not in _HOST_ABIS:
        abi = qemu_conf.load_abi(abi_name)
        if not shutil.which(abi["cc"]):
            _HOST_ABIS[abi_name] = "%s is not installed" % abi["cc"]
            return _HOST_ABIS[abi_name]
        with tempfile.TemporaryDirectory(prefix="lk-abi.") as d:
            src, prog = os.path.join(d, "empty.c"), os.path.join(d, "empty")
            write(src, "int main(void)\n{\n\treturn 0;\n}\n")
            r = subprocess.run(
                [abi["cc"]] + abi["cflags"] + ["-o", prog, src],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                universal_newlines=True,
            )
            if r.returncode:
                why = "%s cannot build a program: %s" % (abi["cc"], r.stdout.strip())
            else:
                why = exec_problem([prog])
        _HOST_ABIS[abi_name] = (
            None
            if why is None
            else "this host cannot run ABI %s programs (%s)" % (abi_name, why)
        )
    return _HOST_ABIS[abi_name]


def skip_unless_host_runs(testcase, abi_name):
    """Skip testcase, naming the reason, on a host that cannot run
    programs of abi_name: such a test needs a guest, not this host."""
    why = host_abi_problem(abi_name)
    if why is not None:
        testcase.skipTest(why)
