# SPDX-License-Identifier: GPL-2.0
"""The tool's static checks: mypy, flake8 and black on scripts/lktool/.

One result per checker, "lint: mypy" and so on, as part of `lk selftest`
(and so of `lk test` and scripts/check).  Their settings are in
scripts/setup.cfg, black's (which reads no setup.cfg) in BLACK below.
Each is Debian's package (scripts/packages.txt); one that is missing
fails, as CI installs them all.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from . import common

# What the checkers read: the package, its launchers.
SOURCES = ["lktool", "lk", "lk_qemu.py", "lk_fuzz.py", "lk_bench.py"]
BLACK = ["black", "--check", "-l", "88", "--skip-magic-trailing-comma"]
LINTERS = (
    ("mypy", ["mypy"]),
    ("flake8", ["flake8"] + SOURCES),
    ("black", BLACK + SOURCES),
)


def do_lint(args: argparse.Namespace, results: common.Results) -> None:
    """Run each checker in scripts/ (where setup.cfg is); a FAIL row quotes
    the first lines it printed, and the whole output is in the log."""
    scripts = os.path.join(common.TOP, "scripts")
    logdir = os.path.join(common.out_dir(args), "logs")
    os.makedirs(logdir, exist_ok=True)
    env = dict(os.environ, MYPY_CACHE_DIR=os.path.join(logdir, "mypy-cache"))
    for name, cmd in LINTERS:
        what = "lint: " + name
        if not shutil.which(cmd[0]):
            results.failed(what, "%s is not installed; run 'scripts/lk deps'" % cmd[0])
            continue
        logfile = os.path.join(logdir, "lint-%s.log" % name)
        t0 = time.time()
        r = common.run(cmd, cwd=scripts, env=env, capture=True, check=False)
        with open(logfile, "w") as f:
            f.write(r.stdout + r.stderr)
        said = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
        if r.returncode:
            results.failed(
                what,
                "exit %d: %s; log at %s"
                % (r.returncode, " | ".join(said[:3]) or "no output", logfile),
            )
        else:
            results.passed(what, "clean in %.1fs" % (time.time() - t0))
