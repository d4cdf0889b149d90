# SPDX-License-Identifier: GPL-2.0
"""Helpers of the tests of lktool."""

import os
import subprocess

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
