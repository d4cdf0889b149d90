# SPDX-License-Identifier: GPL-2.0
"""The guests of configs/qemu/, their user-space ABIs and the selftest list."""

from __future__ import annotations

import collections
import os
import re
import shlex

from . import common


QEMU_CONF_DIR = common.GUESTS
ABI_CONF_DIR = os.path.join(QEMU_CONF_DIR, "abi")
SELFTESTS = os.path.join(common.GUESTS, "selftests.txt")
DEFAULT_TEST_TIMEOUT = 60
GUEST_KEYS = ("target", "kernel", "qemu", "abis", "init_abi")
# The x86 guests (their targets have their names): the short fuzz run of
# `lk test` and the benchmark boot them.
X86_GUESTS = ("x86_64", "i386")


def guest_names() -> list[str]:
    return sorted(fn[:-5] for fn in os.listdir(QEMU_CONF_DIR) if fn.endswith(".conf"))


def load_guest(
    name: str, conf_dir: str = QEMU_CONF_DIR, overrides: dict[str, str] | None = None
) -> common.Guest:
    """configs/qemu/<name>.conf, with defaults filled in and types fixed.

    overrides: {key: value} replacing keys of the file (--set key=value).
    """
    path = os.path.join(conf_dir, name + ".conf")
    if not os.path.exists(path):
        raise common.Failure(
            "unknown guest %s (no %s; guests: %s)"
            % (name, path, " ".join(guest_names()))
        )
    g: common.Guest = common.read_kv(path)
    g.update(overrides or {})
    for key in GUEST_KEYS:
        if not g.get(key):
            raise common.Failure("%s: missing '%s'" % (path, key))
    g["name"] = name
    g["path"] = path
    g["abis"] = g["abis"].split()
    # None: every selftest of its ABIs (guest_tests() checks the names)
    g["tests"] = g.get("tests", "").split() or None
    g["expects"] = []
    for key in sorted(k for k in g if common.is_expect_key(k)):
        if not g[key]:
            continue
        try:
            g["expects"].append((key, re.compile(g[key], re.MULTILINE)))
        except re.error as e:
            raise common.Failure(
                "%s: %s is not a regular expression: %s" % (path, key, e)
            )
    g["qemu_args"] = shlex.split(g.get("qemu_args", ""))
    if any("kvm" in a for a in g["qemu_args"]):
        raise common.Failure("%s: qemu_args must not use KVM (TCG only)" % path)
    # QEMU's -accel: TCG (one host thread per vCPU), or with options.
    g.setdefault("accel", "tcg")
    if g["accel"].split(",")[0] != "tcg":
        raise common.Failure("%s: accel must be tcg[,options] (TCG only)" % path)
    g.setdefault("console", "ttyS0")
    # QEMU's serial port (0, 1, ...) that the console is on: some boards
    # wire their first port to a UART that the kernel does not use.
    try:
        g["console_port"] = int(g.get("console_port", 0))
    except ValueError:
        g["console_port"] = -1
    if g["console_port"] < 0:
        raise common.Failure(
            "%s: console_port must be a serial port number (0, 1, ...)" % path
        )
    g.setdefault("append", "")
    g.setdefault("memory", "512")
    g.setdefault("smp", "2")
    for key, default in (
        ("boot_timeout", 120),
        ("poweroff_timeout", 30),
        ("debug_scale", 4),
        ("kmemleak_timeout", 300),
    ):
        try:
            g[key] = int(g.get(key, default))
        except ValueError:
            raise common.Failure("%s: %s must be a number of seconds" % (path, key))
    return g


def abi_names(conf_dir: str = ABI_CONF_DIR) -> list[str]:
    """The user-space ABIs of configs/qemu/abi/ (64, 32, arm64, arm)."""
    return sorted(fn[:-5] for fn in os.listdir(conf_dir) if fn.endswith(".conf"))


def load_abi(name: str, conf_dir: str = ABI_CONF_DIR) -> common.Abi:
    path = os.path.join(conf_dir, "%s.conf" % name)
    if not os.path.exists(path):
        raise common.Failure(
            "unknown user-space ABI %s (no %s; ABIs: %s)"
            % (name, path, " ".join(abi_names(conf_dir)))
        )
    a: common.Abi = common.read_kv(path)
    for key in ("cc", "headers_arch"):
        if not a.get(key):
            raise common.Failure("%s: missing '%s'" % (path, key))
    a["name"] = str(name)
    a["cflags"] = shlex.split(a.get("cflags", ""))
    a["headers_inputs"] = a.get("headers_inputs", "").split()
    return a


TestSpec = collections.namedtuple("TestSpec", "source abis name timeout flags")


def parse_selftests(text: str, origin: str = "selftests.txt") -> list[TestSpec]:
    """Parse configs/qemu/selftests.txt: '<source> <abis> [key=value] [-flags]'."""
    known_abis = abi_names()
    specs = []
    names = set()
    for n, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = "%s:%d" % (origin, n)
        if len(words) < 2:
            raise common.Failure("%s: expected '<source> <abis> ...'" % where)
        source, abis = words[0], words[1].split(",")
        if not source.endswith(".c"):
            raise common.Failure("%s: %s is not a C source" % (where, source))
        if not all(a in known_abis for a in abis):
            raise common.Failure(
                "%s: ABIs are some of %s, comma-separated, not %r"
                % (where, ", ".join(known_abis), words[1])
            )
        name = os.path.basename(source)[:-2]
        timeout, flags = DEFAULT_TEST_TIMEOUT, []
        for w in words[2:]:
            if w.startswith("-"):
                flags.append(w)
            elif w.startswith("timeout="):
                try:
                    timeout = int(w[len("timeout=") :])
                except ValueError:
                    timeout = 0
                if timeout <= 0:
                    raise common.Failure(
                        "%s: timeout must be a positive number of seconds" % where
                    )
            elif w.startswith("name="):
                name = w[len("name=") :]
            else:
                raise common.Failure(
                    "%s: unknown word %r (keys: timeout=, name=; "
                    "flags start with '-')" % (where, w)
                )
        if not re.match(r"^[A-Za-z0-9._+-]+$", name):
            raise common.Failure("%s: bad test name %r" % (where, name))
        if name in names:
            raise common.Failure(
                "%s: a second test named %s (use name=)" % (where, name)
            )
        names.add(name)
        specs.append(TestSpec(source, tuple(abis), name, timeout, tuple(flags)))
    return specs


def read_selftests(path: str = SELFTESTS) -> list[TestSpec]:
    try:
        with open(path) as f:
            return parse_selftests(f.read(), path)
    except OSError as e:
        raise common.Failure("cannot read %s: %s" % (path, e.strerror))


def guest_tests(guest: common.Guest, specs: list[TestSpec]) -> list[TestSpec]:
    """The specs a guest runs: those of its ABIs, or of its 'tests' key."""
    mine = [s for s in specs if set(s.abis) & set(guest["abis"])]
    if guest["tests"] is None:
        return mine
    unknown = set(guest["tests"]) - set(s.name for s in mine)
    if unknown:
        raise common.Failure(
            "%s: tests: no selftest %s for ABI %s in the "
            "selftest list (configs/qemu/selftests.txt)"
            % (guest["path"], " ".join(sorted(unknown)), " or ".join(guest["abis"]))
        )
    return [s for s in mine if s.name in guest["tests"]]


def kernel_config(build_dir: str) -> set[str]:
    """The set of 'CONFIG_X=y' options of a build directory (may be empty)."""
    try:
        with open(os.path.join(build_dir, ".config")) as f:
            return set(l.split("=", 1)[0] for l in f if l.endswith("=y\n"))
    except OSError:
        return set()


def debug_scale(guest: common.Guest, build_dir: str) -> tuple[int, bool]:
    """(the factor of the guest's time limits, has kmemleak) from the build
    directory's .config: debug_scale for a KASAN or kmemleak kernel, else
    1."""
    cfg = kernel_config(build_dir)
    kmemleak = "CONFIG_DEBUG_KMEMLEAK" in cfg
    return (guest["debug_scale"] if "CONFIG_KASAN" in cfg or kmemleak else 1), kmemleak
