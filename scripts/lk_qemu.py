#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""lk_qemu: boot built v4.20 kernels under QEMU (TCG) and run selftests.

Each stage is usable alone; `run` chains them for every guest:

  build      compile the selftests of configs/selftests.txt statically for
             a user-space ABI (64: gcc, 32: i686-linux-gnu-gcc, arm64:
             aarch64-linux-gnu-gcc, arm: arm-linux-gnueabihf-gcc), against
             the uapi headers exported from the kernel tree, plus the guest
             /init (scripts/qemu/init.c)
  initramfs  pack /init, /dev/console, the test binaries and a manifest
             into a gzipped cpio (newc) archive
  boot       boot a guest kernel with an initramfs under TCG (never KVM),
             keep the serial log, stop at a wall-clock limit, report
  parse      report on a serial log that `boot` wrote
  run        build + initramfs + boot for the guests in configs/qemu/

Output: one line per result ("PASS: qemu x86_64/64: valid-adjtimex",
"FAIL: qemu i386/32: foo - exit 1; log at PATH:LINE", "PASS: qemu
arm64/arm: futex_y2038": guest, then ABI), then
"N passed, N failed[, N skipped]"; the exit status is 1 on any failure,
2 when the tool cannot run at all (bad arguments or data files).

Data files:
  configs/qemu/<guest>.conf   per guest: target (build directory name),
                              kernel (path in the build directory), qemu,
                              qemu_args, memory, smp, console, append, abis,
                              init_abi, boot_timeout, poweroff_timeout,
                              debug_scale, kmemleak_timeout; optional:
                              tests = <name> ... (selftests of its ABIs, by
                              their selftests.txt names; default: all of
                              them; an unknown name is an error), expect and
                              expect_<x> (see Expectations)
  configs/qemu/abi/<abi>.conf  per user-space ABI (64, 32, arm64, arm):
                              cc, headers_arch, headers_inputs, cflags
  configs/selftests.txt       which tests, for which ABIs, with which flags

Markers.  The host draws a random token per boot and passes it on the
kernel command line (lkqemu.token=); /init prefixes every marker with it
("lk-qemu <token> begin <name>", "... end <name> exit=0 time=0.25", "...
done ran=N"), so test output cannot imitate one, and the parser also checks
their order.  The log starts with "# lk-qemu-host <token> ..." lines (guest,
expected tests, command) written before qemu starts, and ends with one
written after it stopped (exit status, timings, whether it was killed).

Expectations.  Each expect or expect_<x> key of a guest is a Python
regular expression that must match its serial log (re.search, MULTILINE):
one result row per key, "qemu <guest>: expect <x>", PASS or FAIL.  The
log is matched as the parser reads it: carriage returns removed (so '$'
ends a line), kernel records that cut into a line of user-space output
moved to lines of their own, the "# lk-qemu-host" lines left out; a test's
output lines are there as it printed them (kernel lines keep their
"[    1.234567] "), so "expect_paca = ^# HWCAP_PACA: present$" matches
the line that a test printed.  In these values '#' is text, not a comment;
an empty value expects nothing.  They are checked only when init finished
its tests ("done" marker); otherwise each is a FAIL (unproven).  `parse`
does not check them.

Time limits.  Each test has its own limit in the guest (init kills its
process group and goes on).  The host kills qemu at a wall-clock limit of
boot_timeout + the sum of the test limits (+ kmemleak_timeout on kmemleak
kernels; everything times debug_scale on KASAN or kmemleak kernels), or
poweroff_timeout after the "done" marker.  No "done" marker means that the
guest crashed or hung, which is a failure.

Environment: LK_OUT (default ~/.cache/linux-v4.20-work) holds the kernel
tree (tree/), the build directories (build/<target>/), the logs (logs/) and
this tool's scratch directory (qemu/).
"""

import argparse
import collections
import gzip
import hashlib
import io
import os
import re
import secrets
import selectors
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QEMU_CONF_DIR = os.path.join(TOP, "configs", "qemu")
ABI_CONF_DIR = os.path.join(QEMU_CONF_DIR, "abi")
SELFTESTS = os.path.join(TOP, "configs", "selftests.txt")
INIT_C = os.path.join(TOP, "scripts", "qemu", "init.c")

DEFAULT_TEST_TIMEOUT = 60
# init waits this long for a killed test to die (KILL_WAIT in init.c).
KILL_WAIT = 10
# Exit status of a kselftest that skipped (KSFT_SKIP).
KSFT_SKIP = 4
# Inputs of 'make headers_install' besides the per-ABI headers_inputs.
HEADERS_COMMON_INPUTS = ("include/uapi", "scripts/headers_install.sh",
                         "scripts/Makefile.headersinst", "scripts/unifdef.c",
                         "Makefile")


class Failure(Exception):
    """A stage could not run; the message names the artefact and next step."""


def log(msg):
    print(msg, flush=True)


# --------------------------------------------------------------------------
# places and data files

def out_dir(path=None):
    """$LK_OUT, as scripts/lk defines it."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.abspath(path or os.environ.get("LK_OUT") or
                           os.path.join(base, "linux-v4.20-work"))


def is_expect_key(key):
    """expect, expect_<x>: a guest's regular expressions on its serial log."""
    return key == "expect" or key.startswith("expect_")


def read_kv(path):
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


GUEST_KEYS = ("target", "kernel", "qemu", "abis", "init_abi")


def guest_names():
    return sorted(fn[:-5] for fn in os.listdir(QEMU_CONF_DIR)
                  if fn.endswith(".conf"))


def load_guest(name, conf_dir=QEMU_CONF_DIR, overrides=None):
    """configs/qemu/<name>.conf, with defaults filled in and types fixed.

    overrides: {key: value} replacing keys of the file (--set key=value).
    """
    path = os.path.join(conf_dir, name + ".conf")
    if not os.path.exists(path):
        raise Failure("unknown guest %s (no %s; guests: %s)" % (
            name, path, " ".join(guest_names())))
    g = read_kv(path)
    g.update(overrides or {})
    for key in GUEST_KEYS:
        if not g.get(key):
            raise Failure("%s: missing '%s'" % (path, key))
    g["name"] = name
    g["path"] = path
    g["abis"] = g["abis"].split()
    # None: every selftest of its ABIs (guest_tests() checks the names)
    g["tests"] = g.get("tests", "").split() or None
    g["expects"] = []
    for key in sorted(k for k in g if is_expect_key(k)):
        if not g[key]:
            continue
        try:
            g["expects"].append((key, re.compile(g[key], re.MULTILINE)))
        except re.error as e:
            raise Failure("%s: %s is not a regular expression: %s" % (
                path, key, e))
    g["qemu_args"] = shlex.split(g.get("qemu_args", ""))
    if any("kvm" in a for a in g["qemu_args"]):
        raise Failure("%s: qemu_args must not use KVM (TCG only)" % path)
    g.setdefault("console", "ttyS0")
    g.setdefault("append", "")
    g.setdefault("memory", "512")
    g.setdefault("smp", "2")
    for key, default in (("boot_timeout", 120), ("poweroff_timeout", 30),
                         ("debug_scale", 4), ("kmemleak_timeout", 300)):
        try:
            g[key] = int(g.get(key, default))
        except ValueError:
            raise Failure("%s: %s must be a number of seconds" % (path, key))
    return g


def abi_names(conf_dir=ABI_CONF_DIR):
    """The user-space ABIs of configs/qemu/abi/ (64, 32, arm64, arm)."""
    return sorted(fn[:-5] for fn in os.listdir(conf_dir)
                  if fn.endswith(".conf"))


def load_abi(name, conf_dir=ABI_CONF_DIR):
    path = os.path.join(conf_dir, "%s.conf" % name)
    if not os.path.exists(path):
        raise Failure("unknown user-space ABI %s (no %s; ABIs: %s)" % (
            name, path, " ".join(abi_names(conf_dir))))
    a = read_kv(path)
    for key in ("cc", "headers_arch"):
        if not a.get(key):
            raise Failure("%s: missing '%s'" % (path, key))
    a["name"] = str(name)
    a["cflags"] = shlex.split(a.get("cflags", ""))
    a["headers_inputs"] = a.get("headers_inputs", "").split()
    return a


TestSpec = collections.namedtuple("TestSpec", "source abis name timeout flags")


def parse_selftests(text, origin="selftests.txt"):
    """Parse configs/selftests.txt: '<source> <abis> [key=value] [-flags]'."""
    known_abis = abi_names()
    specs = []
    names = set()
    for n, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = "%s:%d" % (origin, n)
        if len(words) < 2:
            raise Failure("%s: expected '<source> <abis> ...'" % where)
        source, abis = words[0], words[1].split(",")
        if not source.endswith(".c"):
            raise Failure("%s: %s is not a C source" % (where, source))
        if not all(a in known_abis for a in abis):
            raise Failure("%s: ABIs are some of %s, comma-separated, not %r"
                          % (where, ", ".join(known_abis), words[1]))
        name = os.path.basename(source)[:-2]
        timeout, flags = DEFAULT_TEST_TIMEOUT, []
        for w in words[2:]:
            if w.startswith("-"):
                flags.append(w)
            elif w.startswith("timeout="):
                try:
                    timeout = int(w[len("timeout="):])
                except ValueError:
                    timeout = 0
                if timeout <= 0:
                    raise Failure("%s: timeout must be a positive number of "
                                  "seconds" % where)
            elif w.startswith("name="):
                name = w[len("name="):]
            else:
                raise Failure("%s: unknown word %r (keys: timeout=, name=; "
                              "flags start with '-')" % (where, w))
        if not re.match(r"^[A-Za-z0-9._+-]+$", name):
            raise Failure("%s: bad test name %r" % (where, name))
        if name in names:
            raise Failure("%s: a second test named %s (use name=)" % (
                where, name))
        names.add(name)
        specs.append(TestSpec(source, tuple(abis), name, timeout,
                              tuple(flags)))
    return specs


def read_selftests(path=SELFTESTS):
    try:
        with open(path) as f:
            return parse_selftests(f.read(), path)
    except OSError as e:
        raise Failure("cannot read %s: %s" % (path, e.strerror))


def guest_tests(guest, specs):
    """The specs a guest runs: those of its ABIs, or of its 'tests' key."""
    mine = [s for s in specs if set(s.abis) & set(guest["abis"])]
    if guest["tests"] is None:
        return mine
    unknown = set(guest["tests"]) - set(s.name for s in mine)
    if unknown:
        raise Failure("%s: tests: no selftest %s for ABI %s in the "
                      "selftest list (configs/selftests.txt)" % (
                          guest["path"], " ".join(sorted(unknown)),
                          " or ".join(guest["abis"])))
    return [s for s in mine if s.name in guest["tests"]]


def kernel_config(build_dir):
    """The set of 'CONFIG_X=y' options of a build directory (may be empty)."""
    try:
        with open(os.path.join(build_dir, ".config")) as f:
            return set(l.split("=", 1)[0] for l in f if l.endswith("=y\n"))
    except OSError:
        return set()


# --------------------------------------------------------------------------
# build

def run_logged(cmd, logfile, cwd=None, env=None):
    """Run cmd with its output appended to logfile; return its exit status."""
    if not shutil.which(cmd[0]):
        raise Failure("%s is not installed (needed for: %s); see "
                      "scripts/packages.txt" % (cmd[0], " ".join(cmd[:3])))
    with open(logfile, "a") as f:
        f.write("$ %s\n" % " ".join(shlex.quote(c) for c in cmd))
        f.flush()
        return subprocess.run(cmd, cwd=cwd, env=env, stdout=f,
                              stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL).returncode


def nice(cmd):
    """Compilers run at lower priority: the host is usually building."""
    return (["nice", "-n", "10"] + cmd) if shutil.which("nice") else cmd


def srcarch(arch):
    """kbuild's SRCARCH for ARCH=arch: the directory under arch/.

    scripts/lk uses it too (which objects a patch touches).
    """
    return {"x86_64": "x86", "i386": "x86"}.get(arch, arch)


def headers_srcarch(abi):
    """The arch/ directory that the ABI's uapi headers come from.

    'make headers_install' writes the same files for every ARCH= of one
    source directory (i386 and x86_64 both install arch/x86's headers, and
    asm/unistd.h picks a system-call table by the compiler's macros), so
    one export serves all the ABIs that share it.
    """
    return srcarch(abi["headers_arch"])


def headers_stamp(tree, abi):
    """A hash of everything 'make headers_install' reads for this ABI."""
    h = hashlib.sha256(headers_srcarch(abi).encode())
    for rel in HEADERS_COMMON_INPUTS + tuple(abi["headers_inputs"]):
        top = os.path.join(tree, rel)
        paths = [top] if os.path.isfile(top) else sorted(
            os.path.join(d, fn) for d, _, fns in os.walk(top) for fn in fns)
        for p in paths:
            h.update(os.path.relpath(p, tree).encode() + b"\0")
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def export_headers(tree, abi, scratch, logfile):
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
                    os.path.join(usr, "include", "linux")):
                return os.path.join(usr, "include")
    except OSError:
        pass
    if os.path.isdir(base):
        shutil.rmtree(base)
    os.makedirs(base)
    cmd = nice(["make", "-s", "-C", tree, "O=" + os.path.join(base, "obj"),
                "ARCH=" + abi["headers_arch"], "headers_install",
                "INSTALL_HDR_PATH=" + usr])
    if run_logged(cmd, logfile):
        raise Failure("headers_install for ARCH=%s failed in %s; log at %s"
                      % (abi["headers_arch"], tree, logfile))
    with open(stamp_file, "w") as f:
        f.write(stamp + "\n")
    return os.path.join(usr, "include")


def compile_program(abi, source, output, logfile, includes=(), flags=()):
    """Compile one C file statically for abi; raise Failure naming the log."""
    os.makedirs(os.path.dirname(output), exist_ok=True)
    cmd = nice([abi["cc"]] + abi["cflags"] +
               ["-I" + i for i in includes] +
               ["-o", output, source] + list(flags))
    if run_logged(cmd, logfile):
        raise Failure("%s did not compile for the %s user-space ABI; log "
                      "at %s" % (source, abi["name"], logfile))
    return output


def build_init(abi, scratch, logfile):
    """Build scripts/qemu/init.c for abi: <scratch>/bin/<abi>/init."""
    return compile_program(abi, INIT_C, os.path.join(
        scratch, "bin", abi["name"], "init"), logfile)


Built = collections.namedtuple("Built", "spec abi path")


def build_tests(specs, abi, scratch, logfile, tree=None, results=None,
                headers=True):
    """Build the specs that list abi; return [Built].

    Sources are relative to tree (absolute paths are taken as they are).
    With headers, they get -I to the tree's tools/testing/selftests and to
    its exported uapi headers.  A test that does not compile is reported as
    a build failure and left out; a header export failure fails them all.
    """
    results = results if results is not None else Results()
    name = abi["name"]
    wanted = [s for s in specs if name in s.abis]
    includes = []
    if wanted and headers and tree:
        try:
            includes = [os.path.join(tree, "tools", "testing", "selftests"),
                        export_headers(tree, abi, scratch, logfile)]
        except (Failure, OSError) as e:
            results.failed("qemu build/%s: headers" % name, str(e))
            return []
    built = []
    for s in wanted:
        src = s.source if os.path.isabs(s.source) or not tree else \
            os.path.join(tree, s.source)
        out = os.path.join(scratch, "bin", name, s.name)
        try:
            if not os.path.exists(src):
                raise Failure("no %s (is %s a v4.20 tree?)" % (src, tree))
            compile_program(abi, src, out, logfile, includes, s.flags)
            built.append(Built(s, name, out))
        except (Failure, OSError) as e:
            results.failed("qemu build/%s: %s" % (name, s.name), str(e))
    if wanted:
        if len(built) == len(wanted):
            results.passed("qemu build/%s" % name, "%d test%s" % (
                len(built), "" if len(built) == 1 else "s"))
    return built


# --------------------------------------------------------------------------
# initramfs

class Cpio:
    """A cpio archive in the kernel's 'newc' format, owned by root."""

    def __init__(self):
        self.buf = io.BytesIO()
        self.ino = 1000
        self.dirs = set()

    def _entry(self, name, mode, data=b"", rdev=(0, 0)):
        self.ino += 1
        namez = name.encode() + b"\0"
        fields = (self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0],
                  rdev[1], len(namez), 0)
        hdr = b"070701" + b"".join(b"%08x" % v for v in fields)
        self.buf.write(hdr + namez)
        self.buf.write(b"\0" * (-(len(hdr) + len(namez)) % 4))
        self.buf.write(data)
        self.buf.write(b"\0" * (-len(data) % 4))

    def dir(self, name):
        parts = name.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self.dirs:
                self.dirs.add(d)
                self._entry(d, stat.S_IFDIR | 0o755)

    def file(self, name, data, mode=0o644):
        name = name.strip("/")
        if "/" in name:
            self.dir(os.path.dirname(name))
        self._entry(name, stat.S_IFREG | mode, data)

    def chardev(self, name, major, minor, mode=0o600):
        self.dir(os.path.dirname(name.strip("/")))
        self._entry(name.strip("/"), stat.S_IFCHR | mode, rdev=(major, minor))

    def data(self):
        self._entry("TRAILER!!!", 0)
        return self.buf.getvalue()


def manifest_name(abi, name):
    return "%s/%s" % (abi, name)


def base_cpio(init):
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


def make_initramfs(path, init, tests, scale=1):
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


def write_initramfs(path, cpio):
    """Write a Cpio to path, gzipped, replacing what was there."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6,
                           mtime=0) as gz:
            gz.write(cpio.data())
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# boot

def host_line(token, text):
    return "# lk-qemu-host %s %s\n" % (token, text)


def qemu_command(guest, kernel, initramfs, token, append=""):
    """The qemu command line: TCG, serial console on stdio, no reboot."""
    cmdline = " ".join(x for x in (
        "console=%s" % guest["console"], "panic=-1", "printk.time=1",
        "lkqemu.token=%s" % token, "lkqemu.abi=%s" % guest["init_abi"],
        guest["append"], append) if x)
    return ([guest["qemu"], "-accel", "tcg", "-nographic", "-no-reboot",
             "-monitor", "none", "-serial", "stdio",
             "-m", str(guest["memory"]), "-smp", str(guest["smp"]),
             "-kernel", kernel, "-initrd", initramfs, "-append", cmdline] +
            guest["qemu_args"])


def wall_limit(guest, tests, scale=1, kmemleak=False):
    """The wall-clock limit of a boot running tests ([(name, seconds)])."""
    limit = guest["boot_timeout"] * scale
    limit += sum(t + KILL_WAIT + 2 for _, t in tests)
    if kmemleak:
        limit += guest["kmemleak_timeout"] * scale
    return limit


def boot(guest, kernel, initramfs, log_path, expected=(), limit=None,
         token=None, append="", echo=False):
    """Boot guest under TCG, writing the serial log to log_path.

    expected: manifest names in order (recorded in the log for the parser).
    limit: wall-clock seconds before qemu is killed (default: boot_timeout).
    Returns the token; parse the log with parse_log_file().
    """
    token = token or secrets.token_hex(8)
    limit = limit or guest["boot_timeout"]
    if not os.path.isfile(kernel):
        raise Failure("no kernel at %s; build it with 'scripts/lk build "
                      "--target %s'" % (kernel, guest["target"]))
    if not shutil.which(guest["qemu"]):
        raise Failure("%s is not installed; see scripts/packages.txt"
                      % guest["qemu"])
    cmd = qemu_command(guest, kernel, initramfs, token, append)
    os.makedirs(os.path.dirname(os.path.abspath(log_path)), exist_ok=True)
    start_mark = ("lk-qemu %s start" % token).encode()
    done_mark = ("lk-qemu %s done" % token).encode()
    with open(log_path, "wb") as logf:
        logf.write(host_line(token, "guest=%s kernel=%s" % (
            guest["name"], kernel)).encode())
        logf.write(host_line(token, "tests=%s" % ",".join(expected)).encode())
        logf.write(host_line(token, "limit=%d" % limit).encode())
        logf.write(host_line(token, "command=%s" % " ".join(
            shlex.quote(c) for c in cmd)).encode())
        logf.flush()
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                start_new_session=True)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        deadline = t0 + limit
        killed = None
        drain_until = None
        start_at = done_at = None
        tail, err = b"", b""
        finished = False
        try:
            while sel.get_map():
                now = time.monotonic()
                if killed is None and now >= deadline:
                    killed = ("poweroff" if done_at is not None else "limit")
                    proc.kill()
                    drain_until = now + 5
                if drain_until is not None and now >= drain_until:
                    break
                wait = (drain_until if drain_until is not None
                        else deadline) - now
                for key, _ in sel.select(max(0.01, min(wait, 1.0))):
                    data = os.read(key.fileobj.fileno(), 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                        continue
                    if key.fileobj is proc.stderr:
                        err += data
                        continue
                    logf.write(data)
                    logf.flush()
                    if echo:
                        sys.stdout.buffer.write(data)
                        sys.stdout.flush()
                    buf = tail + data
                    t = time.monotonic() - t0
                    if start_at is None and start_mark in buf:
                        start_at = t
                    if done_at is None and done_mark in buf:
                        done_at = t
                        deadline = min(deadline, time.monotonic() +
                                       guest["poweroff_timeout"])
                    tail = buf[-128:]
            finished = True
        finally:
            sel.close()
            if finished and killed is None:
                # Its output is closed: qemu is exiting.
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    killed = "limit"
            if proc.poll() is None:
                killed = killed or "interrupted"
                proc.kill()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            proc.stdout.close()
            proc.stderr.close()
            elapsed = time.monotonic() - t0
            logf.write(b"\n")
            for l in err.decode("utf-8", "replace").splitlines():
                logf.write(host_line(token, "qemu-stderr=%s" % l).encode())
            logf.write(host_line(token, "end status=%s killed=%s "
                                 "elapsed=%.2f start=%s done=%s" % (
                                     proc.returncode, killed or "no",
                                     elapsed, "%.2f" % start_at
                                     if start_at is not None else "-",
                                     "%.2f" % done_at
                                     if done_at is not None else "-"))
                       .encode())
    return token


# --------------------------------------------------------------------------
# parse

# A printk line (printk.time=1 is on the command line), anywhere in a
# serial line: user-space output may precede it.
KLINE_RE = re.compile(r"\[\s*\d+\.\d{6}\] (.*)$")
# Kernel reports that fail a run: (kind, regex on the message).
ISSUE_PATTERNS = [
    ("KASAN", re.compile(r"BUG: KASAN: ")),
    ("UBSAN", re.compile(r"UBSAN: ")),
    # arm's and arm64's die(): "Internal error: Oops: 817 [#1] SMP ARM",
    # or "Internal error: Oops - BUG: 0 [#1]" after "kernel BUG at"
    ("Oops", re.compile(r"^Internal error: ")),
    ("BUG", re.compile(r"(^|\s)BUG: |kernel BUG at ")),
    # x86: "Oops: 0002 [#1]" or "general protection fault: 0000 [#1]"
    ("Oops", re.compile(r"^Oops: |: [0-9a-f]{4} \[#\d+\]")),
    ("panic", re.compile(r"Kernel panic - not syncing")),
    ("kmemleak", re.compile(r"kmemleak: \d+ new suspected memory leaks")),
    ("kmemleak", re.compile(r"kmemleak: (Early log buffer exceeded|"
                            r"Kernel memory leak detector disabled)")),
    ("hung task", re.compile(r"INFO: task .* blocked for more than")),
    ("RCU stall", re.compile(r"rcu: INFO: .*detected stall|"
                             r"INFO: rcu_\w+ (self-)?detected stall")),
    ("WARNING", re.compile(r"^WARNING: ")),
]
# A WARNING counts when a call trace follows within this many lines.
WARN_TRACE_LINES = 60
# The first line of a call trace: x86 "Call Trace:", arm64 "Call trace:",
# arm's unwinder "[<c010f4a4>] (unwind_backtrace) from [<c010bb7c>] ..."
# (no heading) or its frame-pointer walk "Backtrace:".
WARN_TRACE_RE = re.compile(r"Call [Tt]race:|^Backtrace:|"
                           r"^\[<[0-9a-f]{8}>\] \(.*\) from \[<")
# An Oops line this close to a BUG/KASAN line is the same report.
SAME_REPORT_LINES = 6
TAP_RE = re.compile(r"^(not ok|ok)(?=\s|$)\s*(\d+)?\s*(?:- )?([^#]*?)\s*"
                    r"(?:#\s*(\w+)\b\s*(.*))?$")

Issue = collections.namedtuple("Issue", "kind text line during")
TapResult = collections.namedtuple("TapResult", "ok number description "
                                   "directive line")


class TestRun:
    def __init__(self, name, line):
        self.name = name
        self.line = line            # log line of the begin marker
        self.end = None             # the end marker's fields, or None
        self.output = []            # (line number, text)


class Report:
    """What a serial log says; judge() turns it into results."""

    def __init__(self):
        self.guest = "?"
        self.token = None
        self.log_path = None
        self.expected = []
        self.host = {}              # keys of the host's 'end' line
        self.qemu_stderr = []
        self.limit = None
        self.start = None           # fields of init's start marker
        self.tests = collections.OrderedDict()
        self.done = None
        self.issues = []
        self.kmemleak = {}          # section -> (leaks or None, [lines])
        self.anomalies = []         # out-of-order markers
        self.last_kernel_line = ""
        self.lines = []             # the log's lines as parsed (no \r)


def fields(text):
    """'a=1 b=2 flag' -> {'a': '1', 'b': '2', 'flag': ''}."""
    out = {}
    for w in text.split():
        k, _, v = w.partition("=")
        out[k] = v
    return out


KERNEL_RECORD_RE = re.compile(r"\[ *\d+\.\d{6}\] ")


def unsplice(lines):
    """Take the kernel console records out of user-space lines they cut.

    The kernel writes a console record whole, but it can land between any
    two bytes of what user space writes to the same serial port, e.g.
    "lk-qemu T begin 64/t[    3.047474]     1..5" and then "" (the begin
    marker's newline).  Such a record goes on a line of its own, and the
    user-space text before it is joined to the line that follows it.  A
    test's own output that holds "[ 1.000000] " in mid-line is rearranged
    the same way, which changes no marker.
    """
    out = []
    carry = ""
    for line in lines:
        if carry and line.startswith("# lk-qemu-host "):
            out.append(carry)
        elif carry:
            line = carry + line
        carry = ""
        m = KERNEL_RECORD_RE.search(line)
        if m and m.start() > 0 and not line.startswith("# lk-qemu-host "):
            out.append(line[m.start():])
            carry = line[:m.start()]
        else:
            out.append(line)
    if carry:
        out.append(carry)
    return out


def parse_log(text, log_path=None):
    """Parse a log written by boot(); return a Report."""
    r = Report()
    r.log_path = log_path
    lines = text.replace("\r", "").split("\n")
    first = lines[0] if lines else ""
    lines = lines[:1] + unsplice(lines[1:])
    r.lines = lines
    m = re.match(r"^# lk-qemu-host ([0-9a-f]{16,}) ", first)
    if not m:
        raise Failure("%s is not a log written by lk_qemu.py boot (no "
                      "'# lk-qemu-host' header)" % (log_path or "log"))
    tok = m.group(1)
    r.token = tok
    host_prefix = "# lk-qemu-host %s " % tok
    marker = "lk-qemu %s " % tok
    current = None                  # TestRun in progress
    section = None                  # kmemleak section in progress
    pending_warn = None             # (issue, line) waiting for a call trace
    for n, line in enumerate(lines, 1):
        if line.startswith(host_prefix):
            body = line[len(host_prefix):]
            key, _, val = body.partition("=")
            if body.startswith("end "):
                r.host = fields(body[4:])
            elif key == "guest":
                r.guest = val.split()[0]
            elif key == "tests":
                r.expected = [x for x in val.split(",") if x]
            elif key == "limit":
                r.limit = int(val)
            elif key == "qemu-stderr":
                r.qemu_stderr.append(val)
            continue
        i = line.find(marker)
        if i >= 0:
            words = line[i + len(marker):].split(" ", 2)
            what = words[0]
            arg = words[1] if len(words) > 1 else ""
            rest = words[2] if len(words) > 2 else ""
            if what == "start" and r.start is None:
                r.start = fields(line[i + len(marker) + 6:])
                r.start["line"] = n
            elif what == "begin" and r.start and not r.done:
                if current is not None:
                    r.anomalies.append("line %d: begin %s while %s runs"
                                       % (n, arg, current.name))
                elif arg in r.tests:
                    r.anomalies.append("line %d: %s began twice" % (n, arg))
                else:
                    current = TestRun(arg, n)
                    r.tests[arg] = current
            elif what == "end" and current is not None and \
                    arg == current.name:
                current.end = fields(rest)
                current.end["line"] = n
                current = None
            elif what in ("kmemleak", "kmemleak-baseline") and \
                    current is None:
                if arg == "begin":
                    section = what
                    r.kmemleak[what] = (None, [])
                elif arg == "end" and section == what:
                    leaks = fields(rest).get("leaks")
                    r.kmemleak[what] = (int(leaks) if leaks and
                                        leaks.isdigit() else None,
                                        r.kmemleak[what][1])
                    section = None
            elif what == "done" and r.start and current is None:
                r.done = fields(arg + " " + rest)
                r.done["line"] = n
            else:
                r.anomalies.append("line %d: unexpected marker %r" % (
                    n, line[i:]))
            continue
        if current is not None:
            current.output.append((n, line))
        if section is not None:
            r.kmemleak[section][1].append(line)
        km = KLINE_RE.search(line)
        if not km:
            continue
        msg = km.group(1).strip()
        r.last_kernel_line = msg
        if pending_warn and WARN_TRACE_RE.search(msg):
            r.issues.append(pending_warn[0])
            pending_warn = None
        elif pending_warn and n - pending_warn[1] > WARN_TRACE_LINES:
            pending_warn = None
        for kind, rx in ISSUE_PATTERNS:
            if not rx.search(msg):
                continue
            during = current.name if current else (
                "kmemleak scan" if section else
                ("boot" if r.start is None else
                 ("shutdown" if r.done else "init")))
            if kind == "kmemleak" and section is not None:
                break       # the section's own report decides
            issue = Issue(kind, msg, n, during)
            if kind == "WARNING":
                pending_warn = (issue, n)
                break
            prev = r.issues[-1] if r.issues else None
            if kind == "Oops" and prev and prev.kind in ("BUG", "KASAN") \
                    and n - prev.line <= SAME_REPORT_LINES:
                break
            r.issues.append(issue)
            break
    return r


def parse_log_file(path):
    with open(path, "rb") as f:
        return parse_log(f.read().decode("utf-8", "replace"), path)


def parse_tap(output):
    """TAP result lines of a test's output: [TapResult]; and Bail out!."""
    results, bail = [], None
    for n, line in output:
        if line.startswith("Bail out!"):
            bail = (n, line)
            continue
        m = TAP_RE.match(line)
        if not m:
            continue
        directive = (m.group(4) or "").lower()
        results.append(TapResult(m.group(1) == "ok", m.group(2),
                                 (m.group(3) or "").strip() or
                                 (m.group(5) or "").strip(),
                                 directive, n))
    return results, bail


SIGNALS = {int(s): s.name for s in signal.Signals}


def result_name(g, name):
    """'qemu x86_64', '64/foo' -> 'qemu x86_64/64: foo'."""
    abi, _, test = name.partition("/")
    return "%s/%s: %s" % (g, abi, test) if test else "%s: %s" % (g, name)


def judge(r, prefix="qemu"):
    """Turn a Report into [(status, name, detail)]."""
    rows = []
    g = "%s %s" % (prefix, r.guest)
    where = lambda line: "log at %s:%d" % (r.log_path or "log", line)
    host_end = r.host.get("killed", "no")
    if not r.host:
        host_end = "unknown"

    def stop_reason():
        if host_end == "limit":
            return "hung: qemu killed at the %ss wall-clock limit" % r.limit
        if host_end == "interrupted":
            return "interrupted: qemu killed by the host"
        if host_end == "unknown":
            return "the log has no end (host interrupted?)"
        st = r.host.get("status", "?")
        if r.qemu_stderr:
            return "qemu exited with status %s: %s" % (
                st, r.qemu_stderr[-1])
        return "crashed: qemu exited (status %s) without init's done " \
               "marker" % st

    if r.start is None:
        why = stop_reason()
        if r.last_kernel_line:
            why += "; last kernel line: %s" % r.last_kernel_line[:120]
        rows.append(("FAIL", "%s: boot" % g, "the kernel did not start "
                     "/init: %s; %s" % (why, where(1))))
        for name in r.expected:
            rows.append(("SKIP", result_name(g, name),
                         "not run: boot failed"))
    else:
        rows.append(("PASS", "%s: boot" % g, "/init started%s (%s)" % (
            " after %ss" % r.host["start"] if r.host.get("start", "-")
            != "-" else "", r.start.get("uname", "?"))))

        stopped_in = None
        for name in r.expected:
            t = r.tests.get(name)
            full = result_name(g, name)
            if t is None:
                if r.done:
                    rows.append(("FAIL", full, "not run although init "
                                 "finished (manifest mismatch?); %s"
                                 % where(r.done["line"])))
                else:
                    rows.append(("SKIP", full, "not run: the guest stopped "
                                 "during %s" % (stopped_in or "init")))
                continue
            rows.extend(judge_test(t, full, where, stop_reason))
            if t.end is None:
                stopped_in = name
        for name in r.tests:
            if name not in r.expected:
                rows.append(("FAIL", result_name(g, name), "ran but was not "
                             "expected; %s" % where(r.tests[name].line)))

    # One row per distinct report; a looping one can print thousands.
    same = collections.OrderedDict()
    for i in r.issues:
        same.setdefault((i.kind, i.text), []).append(i)
    for group in same.values():
        i = group[0]
        more = " (and %d more like it, the last during %s)" % (
            len(group) - 1, group[-1].during) if len(group) > 1 else ""
        rows.append(("FAIL", "%s: kernel log" % g, "%s during %s: %s%s; %s"
                     % (i.kind, i.during, i.text[:160], more,
                        where(i.line))))
    if r.start is not None and not r.issues:
        rows.append(("PASS", "%s: kernel log" % g, "no BUG, Oops, WARNING "
                     "(lockdep's too), panic, KASAN, UBSAN or kmemleak "
                     "report"))

    if "kmemleak" in r.kmemleak or "kmemleak-baseline" in r.kmemleak:
        base = r.kmemleak.get("kmemleak-baseline", (None, []))[0]
        leaks, text = r.kmemleak.get("kmemleak", (None, []))
        note = " (%s boot-time reports cleared before the tests)" % base \
            if base else ""
        if leaks is None:
            rows.append(("FAIL", "%s: kmemleak" % g, "no leak report after "
                         "the tests (scan failed or the guest stopped)%s"
                         % note))
        elif leaks:
            first = next((l for l in text if "unreferenced object" in l),
                         "")
            rows.append(("FAIL", "%s: kmemleak" % g, "%d new suspected "
                         "leak%s after the tests: %s%s" % (
                             leaks, "" if leaks == 1 else "s",
                             first.strip(), note)))
        else:
            rows.append(("PASS", "%s: kmemleak" % g, "no new leak after "
                         "the tests%s" % note))

    if r.start is not None:
        if r.done and host_end == "no":
            rows.append(("PASS", "%s: shutdown" % g, "init ran %s test%s and "
                         "powered off after %ss" % (
                             r.done.get("ran", "?"),
                             "" if r.done.get("ran") == "1" else "s",
                             r.host.get("elapsed", "?"))))
        elif r.done:
            rows.append(("FAIL", "%s: shutdown" % g, "init finished but the "
                         "guest did not power off (killed); %s"
                         % where(r.done["line"])))
        else:
            rows.append(("FAIL", "%s: shutdown" % g, "%s; %s" % (
                stop_reason(), where(r.start["line"]))))
    for a in r.anomalies:
        rows.append(("FAIL", "%s: markers" % g, a))
    return rows


def judge_test(t, full, where, stop_reason):
    """Results of one test: the test itself, then its TAP sub-results."""
    rows = []
    taps, bail = parse_tap(t.output)
    bad = [x for x in taps if not x.ok and x.directive != "todo"]
    for x in taps:
        sub = "%s: %s%s" % (full, x.number + " " if x.number else "",
                            x.description or "(no description)")
        if x.directive == "skip":
            rows.append(("SKIP", sub, "TAP skip"))
        elif x.directive == "todo":
            rows.append(("SKIP", sub, "TAP todo (%s)" % (
                "passed" if x.ok else "failed")))
        elif x.ok:
            rows.append(("PASS", sub, ""))
        else:
            rows.append(("FAIL", sub, "TAP not ok; %s" % where(x.line)))
    e = t.end
    if e is None:
        main = ("FAIL", "no end marker: the guest crashed or hung during "
                "this test (%s); %s" % (stop_reason(), where(t.line)))
    elif "timeout" in e:
        main = ("FAIL", "timed out after %ss; its process group was %s; %s"
                % (e["timeout"], "NOT killable (kept running)"
                   if "unkillable" in e else "killed", where(t.line)))
    elif "signal" in e:
        n = int(e["signal"]) if e["signal"].isdigit() else -1
        main = ("FAIL", "killed by signal %s (%s); %s" % (
            e["signal"], SIGNALS.get(n, "?"), where(t.line)))
    elif e.get("exit") == "0":
        if bad:
            main = ("FAIL", "exit 0 but %d TAP 'not ok'; %s" % (
                len(bad), where(bad[0].line)))
        elif bail:
            main = ("FAIL", "exit 0 but %r; %s" % (bail[1][:80],
                                                   where(bail[0])))
        else:
            main = ("PASS", "%ss" % e.get("time", "?"))
    elif e.get("exit") == str(KSFT_SKIP):
        main = ("SKIP", "kselftest skip (exit %d)" % KSFT_SKIP)
    elif e.get("exit") == "127":
        main = ("FAIL", "exit 127 (could not run it?); %s" % where(t.line))
    else:
        main = ("FAIL", "exit %s; %s" % (e.get("exit", "?"), where(t.line)))
    return [(main[0], full, main[1])] + rows


def judge_expects(guest, r, log_path):
    """The rows of the guest's expect keys on a boot's Report (or None).

    Checked only when init finished its tests: otherwise each is a FAIL,
    unproven (the crash or hang has rows of its own).
    """
    text = None
    if r is not None and r.done:
        text = "\n".join(l for l in r.lines
                         if not l.startswith("# lk-qemu-host "))
    rows = []
    for key, rx in guest["expects"]:
        name = "qemu %s: %s" % (guest["name"], key.replace("_", " ", 1))
        if text is None:
            rows.append(("FAIL", name, "not checked: the guest did not "
                         "finish its tests; /%s/ unproven; log at %s" % (
                             rx.pattern, log_path)))
        elif rx.search(text):
            rows.append(("PASS", name, "/%s/" % rx.pattern))
        else:
            rows.append(("FAIL", name, "no match for /%s/ in the serial "
                         "log; log at %s" % (rx.pattern, log_path)))
    return rows


# --------------------------------------------------------------------------
# results

class Results:
    """PASS/FAIL/SKIP lines and the closing summary (as scripts/lk prints)."""

    def __init__(self, quiet=False):
        self.rows = []
        self.quiet = quiet

    def add(self, status, name, detail=""):
        self.rows.append((status, name, detail))
        if not self.quiet:
            log("%s: %s%s" % (status, name, (" - " + detail) if detail
                              else ""))

    def passed(self, name, detail=""):
        self.add("PASS", name, detail)

    def failed(self, name, detail=""):
        self.add("FAIL", name, detail)

    def skipped(self, name, detail=""):
        self.add("SKIP", name, detail)

    def count(self, status):
        return sum(1 for r in self.rows if r[0] == status)

    def summary(self):
        line = "%d passed, %d failed" % (self.count("PASS"),
                                         self.count("FAIL"))
        if self.count("SKIP"):
            line += ", %d skipped" % self.count("SKIP")
        return line

    def ok(self):
        return self.count("FAIL") == 0


# --------------------------------------------------------------------------
# stages put together

def guest_kernel(guest, build_root=None, build_dir=None):
    """(kernel path, build directory) of a guest."""
    if build_dir is None:
        build_dir = os.path.join(build_root or os.path.join(out_dir(),
                                                            "build"),
                                 guest["target"])
    return os.path.join(build_dir, guest["kernel"]), build_dir


def debug_kernel(build_dir):
    """(scale needed, has kmemleak) from the build directory's .config."""
    cfg = kernel_config(build_dir)
    kmemleak = "CONFIG_DEBUG_KMEMLEAK" in cfg
    return ("CONFIG_KASAN" in cfg or kmemleak), kmemleak


def boot_and_report(guest, kernel, initramfs, names_timeouts, log_path,
                    results, limit=None, kmemleak=False, scale=1,
                    echo=False, append=""):
    """Boot, parse and report; return the Report (None if qemu did not run).

    names_timeouts: [(manifest name, seconds in the guest)].  The guest's
    expect keys are judged too.
    """
    if limit is None:
        limit = wall_limit(guest, names_timeouts, scale, kmemleak)
    try:
        boot(guest, kernel, initramfs, log_path,
             [n for n, _ in names_timeouts], limit, echo=echo,
             append=append)
    except (Failure, OSError) as e:
        results.failed("qemu %s: boot" % guest["name"], str(e))
        r = None
    else:
        r = parse_log_file(log_path)
        for row in judge(r):
            results.add(*row)
    for row in judge_expects(guest, r, log_path):
        results.add(*row)
    return r


def run_guest(guest, specs, tree, scratch, logs, results, build_root=None,
              build_dir=None, limit=None, echo=False, built_cache=None,
              kernel=None):
    """build + initramfs + boot + parse for one guest.

    The kernel is <build dir>/<guest kernel> unless `kernel` names one (the
    build directory still provides .config).
    """
    name = guest["name"]
    default_kernel, bdir = guest_kernel(guest, build_root, build_dir)
    kernel = kernel or default_kernel
    if not os.path.isfile(kernel):
        results.failed("qemu %s: boot" % name, "no kernel at %s; build it "
                       "with 'scripts/lk build --target %s'" % (
                           kernel, guest["target"]))
        return None
    debug, kmemleak = debug_kernel(bdir)
    scale = guest["debug_scale"] if debug else 1
    built_cache = built_cache if built_cache is not None else {}
    specs = guest_tests(guest, specs)
    tests = []
    for abi_name in guest["abis"]:
        # Guests of one ABI share its binaries if they run the same tests.
        key = (abi_name, tuple(guest["tests"] or ()))
        if key not in built_cache:
            abi = load_abi(abi_name)
            blog = os.path.join(logs, "qemu-build-%s.log" % abi_name)
            if os.path.exists(blog) and not any(k[0] == abi_name
                                                for k in built_cache):
                os.unlink(blog)
            built_cache[key] = build_tests(specs, abi, scratch, blog, tree,
                                           results)
        tests.extend(built_cache[key])
    init_key = ("init", guest["init_abi"])
    if init_key not in built_cache:
        blog = os.path.join(logs, "qemu-build-%s.log" % guest["init_abi"])
        try:
            built_cache[init_key] = build_init(load_abi(guest["init_abi"]),
                                               scratch, blog)
        except (Failure, OSError) as e:
            results.failed("qemu build/%s: init" % guest["init_abi"], str(e))
            return None
    initramfs = os.path.join(scratch, name, "initramfs.cpio.gz")
    make_initramfs(initramfs, built_cache[init_key], tests, scale)
    names = [(manifest_name(t.abi, t.spec.name), t.spec.timeout * scale)
             for t in tests]
    log_path = os.path.join(logs, "qemu-%s.log" % name)
    t0 = time.monotonic()
    r = boot_and_report(guest, kernel, initramfs, names, log_path, results,
                        limit=limit, kmemleak=kmemleak, scale=scale,
                        echo=echo)
    log("qemu %s: boot and tests took %.1fs; serial log at %s" % (
        name, time.monotonic() - t0, log_path))
    return r


# --------------------------------------------------------------------------
# command line

def tool_parser(prog, doc, out_note=""):
    """The command line of a QEMU stage tool: its docstring and --out."""
    p = argparse.ArgumentParser(
        prog=prog, description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", help="work directory (default: $LK_OUT or "
                   "~/.cache/linux-v4.20-work)" + out_note)
    return p


def main(argv=None):
    p = tool_parser("lk_qemu.py", __doc__)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(s, guests=True):
        s.add_argument("--tree", help="kernel tree (default: $LK_OUT/tree)")
        s.add_argument("--tests", default=SELFTESTS,
                       help="selftest list (default: configs/selftests.txt)")
        s.add_argument("--scratch", help="scratch directory (default: "
                       "$LK_OUT/qemu)")
        s.add_argument("--logs", help="log directory (default: "
                       "$LK_OUT/logs)")
        if guests:
            s.add_argument("--guest", action="append", help="guest of "
                           "configs/qemu/ (repeatable; default: all)")
            s.add_argument("--set", action="append", default=[],
                           metavar="KEY=VALUE", help="override a key of the "
                           "guests' .conf (e.g. smp=2; repeatable)")

    def kernels(s):
        s.add_argument("--build-root", help="directory of the build "
                       "directories (default: $LK_OUT/build)")
        s.add_argument("--build-dir", help="the build directory of the one "
                       "--guest given (e.g. a KASAN build)")
        s.add_argument("--timeout", type=int, help="wall-clock limit in "
                       "seconds (default: from the guest's .conf and the "
                       "test limits)")
        s.add_argument("--echo", action="store_true",
                       help="copy the serial console to stdout")

    s = sub.add_parser("build", help="build the selftests and /init")
    common(s, guests=False)
    s.add_argument("--abi", action="append", choices=abi_names(),
                   help="user-space ABI of configs/qemu/abi/ (repeatable; "
                   "default: all)")
    s = sub.add_parser("initramfs", help="pack an initramfs for a guest")
    common(s)
    s.add_argument("-o", "--output", help="default: "
                   "$LK_OUT/qemu/<guest>/initramfs.cpio.gz")
    s = sub.add_parser("boot", help="boot a guest with its initramfs")
    common(s)
    kernels(s)
    s.add_argument("--initramfs", help="default: what 'initramfs' wrote")
    s = sub.add_parser("parse", help="report on a serial log")
    s.add_argument("log", nargs="+")
    s = sub.add_parser("run", help="build, initramfs and boot every guest")
    common(s)
    kernels(s)
    args = p.parse_args(argv)

    out = out_dir(args.out)
    results = Results()
    try:
        if args.cmd == "parse":
            for path in args.log:
                for row in judge(parse_log_file(path)):
                    results.add(*row)
            log(results.summary())
            return 0 if results.ok() else 1
        tree = os.path.abspath(args.tree or os.path.join(out, "tree"))
        scratch = os.path.abspath(args.scratch or os.path.join(out, "qemu"))
        logs = os.path.abspath(args.logs or os.path.join(out, "logs"))
        os.makedirs(scratch, exist_ok=True)
        os.makedirs(logs, exist_ok=True)
        specs = read_selftests(args.tests)
        if args.cmd == "build":
            for name in args.abi or abi_names():
                abi = load_abi(name)
                blog = os.path.join(logs, "qemu-build-%s.log" % name)
                if os.path.exists(blog):
                    os.unlink(blog)
                build_tests(specs, abi, scratch, blog, tree, results)
                try:
                    build_init(abi, scratch, blog)
                except Failure as e:
                    results.failed("qemu build/%s: init" % name, str(e))
            log(results.summary())
            return 0 if results.ok() else 1
        overrides = {}
        for kv in args.set:
            if "=" not in kv:
                raise Failure("--set wants KEY=VALUE, not %r" % kv)
            k, v = kv.split("=", 1)
            overrides[k.strip()] = v.strip()
        guests = [load_guest(g, overrides=overrides)
                  for g in (args.guest or guest_names())]
        for g in guests:
            guest_tests(g, specs)   # a bad 'tests' key stops them all
        if getattr(args, "build_dir", None) and len(guests) != 1:
            raise Failure("--build-dir needs exactly one --guest")
        if args.cmd == "run":
            cache = {}
            for g in guests:
                run_guest(g, specs, tree, scratch, logs, results,
                          args.build_root, args.build_dir, args.timeout,
                          args.echo, cache)
            log(results.summary())
            return 0 if results.ok() else 1
        # initramfs / boot: from binaries that 'build' left in scratch
        for g in guests:
            tests = []
            for abi_name in g["abis"]:
                for s in guest_tests(g, specs):
                    path = os.path.join(scratch, "bin", abi_name, s.name)
                    if abi_name not in s.abis:
                        continue
                    if not os.path.exists(path):
                        raise Failure("no %s: run 'lk_qemu.py build' first"
                                      % path)
                    tests.append(Built(s, abi_name, path))
            init = os.path.join(scratch, "bin", g["init_abi"], "init")
            default_rd = os.path.join(scratch, g["name"], "initramfs.cpio.gz")
            if args.cmd == "initramfs":
                if not os.path.exists(init):
                    raise Failure("no %s: run 'lk_qemu.py build' first" % init)
                path = args.output or default_rd
                make_initramfs(path, init, tests)
                log("initramfs: %s" % path)
                continue
            kernel, bdir = guest_kernel(g, args.build_root, args.build_dir)
            debug, kmemleak = debug_kernel(bdir)
            scale = g["debug_scale"] if debug else 1
            rd = args.initramfs or default_rd
            if not os.path.exists(rd):
                raise Failure("no %s: run 'lk_qemu.py initramfs' first" % rd)
            if scale != 1 and not args.initramfs:
                make_initramfs(rd, init, tests, scale)
            names = [(manifest_name(t.abi, t.spec.name),
                      t.spec.timeout * scale) for t in tests]
            boot_and_report(g, kernel, rd, names,
                            os.path.join(logs, "qemu-%s.log" % g["name"]),
                            results, args.timeout, kmemleak, scale,
                            args.echo)
        if args.cmd == "boot":
            log(results.summary())
            return 0 if results.ok() else 1
        return 0
    except (Failure, OSError) as e:
        print("lk_qemu %s: %s" % (args.cmd, e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
