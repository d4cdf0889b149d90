# SPDX-License-Identifier: GPL-2.0
"""What runs in a guest: selftests and /init built statically against the
tree's uapi headers, packed into an initramfs."""

from __future__ import annotations

from typing import Any, Sequence

import collections
import glob
import gzip
import hashlib
import io
import os
import shlex
import shutil
import stat
import subprocess

from . import common, qemu_conf


# The programs of the guests: /init (init.c), lk-fuzz (fuzz.c) and bench
# (bench.c), the latter two with their parts (program_sources()).
PROGRAMS = os.path.join(common.TOP, "scripts", "qemu")
INIT_C = os.path.join(PROGRAMS, "init.c")

# Exit status of a kselftest that skipped (KSFT_SKIP).
KSFT_SKIP = 4

# Inputs of 'make headers_install' besides the per-ABI headers_inputs.
HEADERS_COMMON_INPUTS = (
    "include/uapi",
    "scripts/headers_install.sh",
    "scripts/Makefile.headersinst",
    "scripts/unifdef.c",
    "Makefile",
)


def run_logged(
    cmd: list[str],
    logfile: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> int:
    """Run cmd with its output appended to logfile; return its exit status."""
    if not shutil.which(cmd[0]):
        raise common.Failure(
            "%s is not installed (needed for: %s); see "
            "scripts/packages.txt" % (cmd[0], " ".join(cmd[:3]))
        )
    with open(logfile, "a") as f:
        f.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
        f.flush()
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        ).returncode


def nice(cmd: list[str]) -> list[str]:
    """Compilers run at lower priority: the host is usually building."""
    return (["nice", "-n", "10"] + cmd) if shutil.which("nice") else cmd


def headers_srcarch(abi: common.Abi) -> str:
    """The arch/ directory that the ABI's uapi headers come from.

    'make headers_install' writes the same files for every ARCH= of one
    source directory (i386 and x86_64 both install arch/x86's headers, and
    asm/unistd.h picks a system-call table by the compiler's macros), so
    one export serves all the ABIs that share it.
    """
    return common.srcarch(abi["headers_arch"])


def headers_stamp(tree: str, abi: common.Abi) -> str:
    """A hash of everything 'make headers_install' reads for this ABI."""
    h = hashlib.sha256(headers_srcarch(abi).encode())
    for rel in HEADERS_COMMON_INPUTS + tuple(abi["headers_inputs"]):
        top = os.path.join(tree, rel)
        paths = (
            [top]
            if os.path.isfile(top)
            else sorted(os.path.join(d, fn) for d, _, fns in os.walk(top) for fn in fns)
        )
        for p in paths:
            h.update(os.path.relpath(p, tree).encode() + b"\0")
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def export_headers(tree: str, abi: common.Abi, scratch: str, logfile: str) -> str:
    """Export the tree's uapi headers for abi; return their include dir.

    Runs 'make -C tree O=<scratch>/headers/<srcarch>/obj
    ARCH=<headers_arch> headers_install
    INSTALL_HDR_PATH=<scratch>/headers/<srcarch>/usr', never writing to
    the tree.  The result is reused while the inputs (hashed) are
    unchanged, by every ABI of the same source directory (see
    headers_srcarch()): headers_install takes 40 s to a minute here.
    """
    base = os.path.join(scratch, "headers", headers_srcarch(abi))
    usr = os.path.join(base, "usr")
    stamp_file = os.path.join(base, "stamp")
    stamp = headers_stamp(tree, abi)
    try:
        with open(stamp_file) as f:
            if f.read().strip() == stamp and os.path.isdir(
                os.path.join(usr, "include", "linux")
            ):
                return os.path.join(usr, "include")
    except OSError:
        pass
    if os.path.isdir(base):
        shutil.rmtree(base)
    os.makedirs(base)
    cmd = nice(
        [
            "make",
            "-s",
            "-C",
            tree,
            "O=" + os.path.join(base, "obj"),
            "ARCH=" + abi["headers_arch"],
            "headers_install",
            "INSTALL_HDR_PATH=" + usr,
        ]
    )
    if run_logged(cmd, logfile):
        raise common.Failure(
            "headers_install for ARCH=%s failed in %s; log at %s"
            % (abi["headers_arch"], tree, logfile)
        )
    with open(stamp_file, "w") as f:
        f.write(stamp + "\n")
    return os.path.join(usr, "include")


def program_sources(name: str) -> list[str]:
    """The C files of the program <name> of scripts/qemu/: <name>.c (its
    main()) and then its parts <name>_*.c, which share <name>.h."""
    parts = glob.glob(os.path.join(PROGRAMS, glob.escape(name) + "_*.c"))
    return [os.path.join(PROGRAMS, name + ".c")] + sorted(parts)


def compile_program(
    abi: common.Abi,
    sources: Sequence[str],
    output: str,
    logfile: str,
    includes: Sequence[str] = (),
    flags: Sequence[str] = (),
) -> str:
    """Compile C files into one static program for abi; raise Failure
    naming the log."""
    os.makedirs(os.path.dirname(output), exist_ok=True)
    cmd = nice(
        [abi["cc"]]
        + abi["cflags"]
        + ["-I" + i for i in includes]
        + ["-o", output]
        + list(sources)
        + list(flags)
    )
    if run_logged(cmd, logfile):
        what = sources[0]
        if len(sources) > 1:
            what += " (with %s)" % ", ".join(os.path.basename(s) for s in sources[1:])
        raise common.Failure(
            "%s did not compile for the %s user-space ABI; log "
            "at %s" % (what, abi["name"], logfile)
        )
    return output


def build_init(abi: common.Abi, scratch: str, logfile: str) -> str:
    """Build scripts/qemu/init.c for abi: <scratch>/bin/<abi>/init."""
    return compile_program(
        abi, [INIT_C], os.path.join(scratch, "bin", abi["name"], "init"), logfile
    )


def build_program(
    abi: common.Abi,
    sources: Sequence[str],
    name: str,
    tree: str,
    scratch: str,
    logfile: str,
) -> str:
    """Build a program of scripts/qemu/ (its sources: program_sources())
    for abi, with -Wextra, against the tree's exported uapi headers:
    <scratch>/bin/<abi>/<name>."""
    return compile_program(
        abi,
        sources,
        os.path.join(scratch, "bin", abi["name"], name),
        logfile,
        [export_headers(tree, abi, scratch, logfile)],
        ["-Wextra"],
    )


Built = collections.namedtuple("Built", "spec abi path")


def build_tests(
    specs: list[qemu_conf.TestSpec],
    abi: common.Abi,
    scratch: str,
    logfile: str,
    tree: str | None = None,
    results: common.Results | None = None,
    headers: bool = True,
) -> list[Built]:
    """Build the specs that list abi; return [Built].

    Sources are relative to tree (absolute paths are taken as they are).
    With headers, they get -I to the tree's tools/testing/selftests and to
    its exported uapi headers.  A test that does not compile is reported as
    a build failure and left out; a header export failure fails them all.
    """
    results = results if results is not None else common.Results()
    name = abi["name"]
    wanted = [s for s in specs if name in s.abis]
    includes = []
    if wanted and headers and tree:
        try:
            includes = [
                os.path.join(tree, "tools", "testing", "selftests"),
                export_headers(tree, abi, scratch, logfile),
            ]
        except (common.Failure, OSError) as e:
            results.failed("qemu build/%s: headers" % name, str(e))
            return []
    built = []
    for s in wanted:
        src = (
            s.source
            if os.path.isabs(s.source) or not tree
            else os.path.join(tree, s.source)
        )
        out = os.path.join(scratch, "bin", name, s.name)
        try:
            if not os.path.exists(src):
                raise common.Failure("no %s (is %s a v4.20 tree?)" % (src, tree))
            compile_program(abi, [src], out, logfile, includes, s.flags)
            built.append(Built(s, name, out))
        except (common.Failure, OSError) as e:
            results.failed("qemu build/%s: %s" % (name, s.name), str(e))
    if wanted:
        if len(built) == len(wanted):
            results.passed(
                "qemu build/%s" % name,
                "%d test%s" % (len(built), "" if len(built) == 1 else "s"),
            )
    return built


class Cpio:
    """A cpio archive in the kernel's 'newc' format, owned by root."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.ino = 1000
        self.dirs: set[str] = set()

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        self.ino += 1
        namez = name.encode() + b"\0"
        fields = (
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            len(data),
            0,
            0,
            rdev[0],
            rdev[1],
            len(namez),
            0,
        )
        hdr = b"070701" + b"".join(b"%08x" % v for v in fields)
        self.buf.write(hdr + namez)
        self.buf.write(b"\0" * (-(len(hdr) + len(namez)) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * (-len(data) % 4))

    def dir(self, name: str) -> None:
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self.dirs:
                self.dirs.add(d)
                self._entry(d, stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        name = name.strip("/")
        if "/" in name:
            self.dir(os.path.dirname(name))
        self._entry(name, stat.S_IFREG | mode, data)

    def chardev(self, name: str, major: int, minor: int, mode: int = 0o600) -> None:
        self.dir(os.path.dirname(name.strip("/")))
        self._entry(name.strip("/"), stat.S_IFCHR | mode, rdev=(major, minor))

    def data(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        return self.buf.getvalue()


def manifest_name(abi: str, name: str) -> str:
    return "%s/%s" % (abi, name)


def base_cpio(init: str) -> Cpio:
    """A Cpio with what every guest initramfs has: /init (the host path
    of a built scripts/qemu/init.c), /dev/console, /dev/null and the
    directories init mounts on."""
    c = Cpio()
    for d in ("dev", "proc", "sys", "tmp", "root", "lk-qemu/bin"):
        c.dir(d)
    c.chardev("dev/console", 5, 1)
    c.chardev("dev/null", 1, 3, 0o666)
    with open(init, "rb") as f:
        c.file("init", f.read(), 0o755)
    return c


def make_initramfs(
    path: str, init: str, tests: Sequence[Any], scale: int = 1
) -> list[str]:
    """Write a gzipped cpio with /init and the tests; return the test names.

    tests: [Built] (or objects with spec.name, spec.timeout, abi, path).
    Binaries go to /lk-qemu/<abi>/<name>; /lk-qemu/manifest lists
    '<seconds> <abi>/<name> <path>' in order, limits times scale.
    """
    c = base_cpio(init)
    lines, names = [], []
    for t in tests:
        name = manifest_name(t.abi, t.spec.name)
        dest = "/lk-qemu/%s" % name
        with open(t.path, "rb") as f:
            c.file(dest, f.read(), 0o755)
        lines.append("%d %s %s\n" % (t.spec.timeout * scale, name, dest))
        names.append(name)
    c.file("lk-qemu/manifest", "".join(lines).encode())
    write_initramfs(path, c)
    return names


def write_initramfs(path: str, cpio: Cpio) -> None:
    """Write a Cpio to path, gzipped, replacing what was there."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz:
            gz.write(cpio.data())
    os.replace(tmp, path)
