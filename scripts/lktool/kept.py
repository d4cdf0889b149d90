# SPDX-License-Identifier: GPL-2.0
"""What a kept result depends on besides the kernel tree: the tool's code,
the build targets' configuration files and the toolchain's versions.

lk keeps what a build found (percheck.KeptResults, a patch's rows;
build.KeptBuild, a guest kernel) under a key of all its inputs, and a
later run with the same key uses it instead of building again.
"""

from __future__ import annotations

import glob
import hashlib
import os

from . import common

# The tool's code and the targets' configuration (relative to common.TOP):
# how a build is made and judged.
INPUTS = (
    "scripts/lktool/*.py",
    "configs/targets/*.conf",
    "configs/fragments/*.config",
    "configs/matrix/*",
)


def inputs_digest() -> str:
    """sha256 over the names and contents of the files of INPUTS."""
    h = hashlib.sha256()
    for pattern in INPUTS:
        for path in sorted(glob.glob(os.path.join(common.TOP, pattern))):
            with open(path, "rb") as f:
                data = f.read()
            h.update(os.path.relpath(path, common.TOP).encode() + b"\0")
            h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def toolchain_id(targets: list[common.Target]) -> str:
    """The versions of what builds and checks the targets: each compiler's
    first --version line, sparse's and make's."""
    lines = []
    cmds = sorted({t["cross_compile"] + "gcc" for t in targets}) + ["sparse", "make"]
    for cmd in cmds:
        try:
            r = common.run([cmd, "--version"], capture=True, check=False)
        except OSError as e:
            lines.append("%s: %s" % (cmd, e.strerror))
            continue
        out = (r.stdout or r.stderr).splitlines()
        lines.append("%s: %s" % (cmd, out[0] if out else "exit %d" % r.returncode))
    return "\n".join(lines)
