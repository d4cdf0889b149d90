# SPDX-License-Identifier: GPL-2.0
"""What a kept result depends on besides the kernel tree: the tool's code,
the build targets' configuration files and the toolchain's versions.

lk keeps what a build found (percheck.KeptResults, a patch's rows;
build.KeptBuild, a guest kernel) under a key of all its inputs, and a
later run with the same key uses it instead of building again.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import os

from . import common

# The targets' configuration (relative to common.TOP): how a build is
# made and judged.  The tool's code that makes and judges it is the
# entry module's import closure (code_closure()).
INPUTS = ("configs/targets/*.conf", "configs/fragments/*.config", "configs/matrix/*")
LKTOOL = os.path.join("scripts", "lktool")


def code_closure(entry: str) -> list[str]:
    """The files of the lktool modules that module `entry` imports,
    directly or through others, itself included (relative to common.TOP,
    sorted).  lk imports its own modules only as `from . import m` and
    `from .m import x`, so this is all of its code a kept result's
    maker ran: a change to another module (the QEMU harness, the mailing
    tools) does not make every patch build again."""
    seen: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = os.path.join(common.TOP, LKTOOL, name + ".py")
        if not os.path.isfile(path):
            continue
        seen.add(name)
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    todo.append(node.module.split(".")[0])
                else:
                    todo.extend(a.name for a in node.names)
    return sorted(os.path.join(LKTOOL, n + ".py") for n in seen)


def inputs_digest(entry: str) -> str:
    """sha256 over the names and contents of the files of INPUTS and of
    code_closure(entry)."""
    h = hashlib.sha256()
    paths = code_closure(entry)
    for pattern in INPUTS:
        paths += sorted(
            os.path.relpath(p, common.TOP)
            for p in glob.glob(os.path.join(common.TOP, pattern))
        )
    for rel in paths:
        with open(os.path.join(common.TOP, rel), "rb") as f:
            data = f.read()
        h.update(rel.encode() + b"\0")
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
