# SPDX-License-Identifier: GPL-2.0
"""Build targets and matrices of configs/, and the stamp of a target's warning
baseline."""

from __future__ import annotations

import hashlib
import os
import re

from . import common, series, systable


def targets_dir() -> str:
    return common.TARGETS


def load_target(name: str) -> common.Target:
    path = os.path.join(targets_dir(), name + ".conf")
    if not os.path.exists(path):
        raise common.Failure("unknown build target %s (no %s)" % (name, path))
    t: common.Target = common.read_kv(path)
    for key in ("arch", "goals"):
        if key not in t:
            raise common.Failure("%s: missing '%s'" % (path, key))
    if ("defconfig" in t) == ("kunitconfig" in t):
        raise common.Failure("%s: want either 'defconfig' or 'kunitconfig'" % path)
    t["name"] = name
    t.setdefault("defconfig", "")
    t.setdefault("kunitconfig", "")
    t.setdefault("cross_compile", "")
    t.setdefault("subarch", "")
    t["fragments"] = t.get("fragments", "").split()
    t["goals"] = t["goals"].split()
    t["ci_goals"] = t["ci_goals"].split() if "ci_goals" in t else None
    t["bisect"] = t.get("bisect", "no") == "yes"
    t["baseline_fails"] = t.get("baseline_fails", "").split()
    t.setdefault("syscall_tables", "")
    systable.parse_tables(t["syscall_tables"])  # a malformed one fails here
    return t


def matrix(name: str) -> list[str]:
    """The targets of configs/matrix/<name>."""
    path = os.path.join(common.MATRICES, name)
    if not os.path.exists(path):
        raise common.Failure("unknown matrix %s (no %s)" % (name, path))
    return list_lines(path)


def list_lines(path: str) -> list[str]:
    """The lines of a list file, without comments and blank lines."""
    with open(path) as f:
        return [l.split("#", 1)[0].strip() for l in f if l.split("#", 1)[0].strip()]


def affects_arch(patch: str, srcarch_dirs: set[str]) -> bool:
    """Whether a patch can change a build for an architecture whose
    directories under arch/ are srcarch_dirs: False only if every file it
    changes is under arch/ of other architectures."""
    files = re.findall(r"(?m)^diff --git a/(\S+) b/(\S+)$", patch)
    if not files:
        return True
    for a, b in files:
        for f in (a, b):
            parts = f.split("/")
            if len(parts) < 3 or parts[0] != "arch" or parts[1] in srcarch_dirs:
                return True
    return False


def baseline_stamp(series_dir: str, t: common.Target) -> str:
    """What a target's warnings depend on besides the upstream patches.

    The prerequisite patches (but those that change only another
    architecture's files under arch/, which this target's build never
    reads: a toolchain fix for sparc64 leaves the baselines of x86 and
    arm as they are), what the target's .conf says about a full
    build (architecture, compiler, defconfig, fragments and goals; not its
    comments nor its CI goals) and its fragments, and the compiler's
    version: a baseline made with any of them different is stale.
    """
    h = hashlib.sha256()
    frag_bytes = []
    for frag in t["fragments"]:
        with open(os.path.join(common.FRAGMENTS, frag), "rb") as f:
            frag_bytes.append(f.read())
    own = common.srcarch_dirs(t["arch"])
    for e in series.read_series(series_dir):
        if not e.upstream:
            with open(os.path.join(series_dir, "patches", e.path), "rb") as f:
                text = f.read()
            if not affects_arch(text.decode("utf-8", "replace"), own):
                continue
            h.update(text)
    h.update(
        (
            "arch=%s%s cross_compile=%s defconfig=%s fragments=%s goals=%s\n"
            % (
                t["arch"],
                "/" + t["subarch"] if t["subarch"] else "",
                t["cross_compile"],
                t["defconfig"],
                " ".join(t["fragments"]),
                " ".join(t["goals"]),
            )
        ).encode()
    )
    if t.get("baseline_fails"):
        h.update(("baseline_fails=%s\n" % " ".join(t["baseline_fails"])).encode())
    for data in frag_bytes:
        h.update(data)
    if t["kunitconfig"]:
        h.update(("kunitconfig=%s\n" % t["kunitconfig"]).encode())
        for path in (
            os.path.join(common.TOP, t["kunitconfig"]),
            os.path.join(common.KUNIT_TOOL, "arch_uml.config"),
        ):
            with open(path, "rb") as f:
                h.update(f.read())
    cc = common.run([t["cross_compile"] + "gcc", "--version"], capture=True)
    h.update(cc.stdout.splitlines()[0].encode())
    return h.hexdigest()[:16]


# kbuild's configuration targets that read KCONFIG_ALLCONFIG: a target
# naming one as its defconfig gets its fragments through it (configure()).
ALLCONFIG_TARGETS = ("allnoconfig", "allyesconfig", "allmodconfig", "alldefconfig")
CONFIG_LINE_RE = re.compile(r"^(?:CONFIG_(\w+)=|# CONFIG_(\w+) is not set)")


def config_line_symbol(line: str) -> str | None:
    """The symbol that a .config-style line sets or unsets, or None."""
    m = CONFIG_LINE_RE.match(line)
    return (m.group(1) or m.group(2)) if m else None


def fragment_lines(t: common.Target) -> list[tuple[str, str, str]]:
    """(fragment path, line, symbol) of each setting in t's fragments."""
    found = []
    for frag in t["fragments"]:
        path = os.path.join(common.FRAGMENTS, frag)
        with open(path) as f:
            for line in f:
                line = line.strip()
                symbol = config_line_symbol(line)
                if symbol:
                    found.append((path, line, symbol))
    return found


def read_config(path: str) -> dict[str, str]:
    """{CONFIG_FOO: value} of a .config."""
    config = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
            if m:
                config[m.group(1)] = m.group(2)
    return config


def kconfig_symbols(tree: str) -> set[str]:
    """The names of the config symbols that the tree's Kconfig files define."""
    out = common.run(
        [
            "git",
            "grep",
            "-h",
            "-I",
            "-E",
            r"^[[:space:]]*(menu)?config[[:space:]]+[A-Za-z0-9_]+"
            r"[[:space:]]*(#.*)?$",
            "--",
            "*Kconfig*",
        ],
        cwd=tree,
        capture=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise common.Failure(
            "cannot list the Kconfig symbols of %s: %s" % (tree, out.stderr.strip())
        )
    return set(l.split()[1] for l in out.stdout.splitlines())
