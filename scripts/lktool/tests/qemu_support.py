# SPDX-License-Identifier: GPL-2.0
"""Canned serial logs, a reader of the initramfs and a fake qemu, for the
tests of the QEMU harness and of the fuzz stage and the benchmark that
boot through it."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from .. import serial, verdict


TOKEN = "0123456789abcdef"
OTHER = "fedcba9876543210"


def canned(
    body,
    tests=("64/t",),
    token=TOKEN,
    end="status=0 killed=no elapsed=3.00 start=1.00 done=2.50",
    limit=300,
    guest="x86_64",
):
    """A log as boot() writes it, around a serial console body."""
    head = (
        "# lk-qemu-host {t} guest={g} kernel=/k/bzImage\n"
        "# lk-qemu-host {t} tests={tests}\n"
        "# lk-qemu-host {t} limit={limit}\n"
        "# lk-qemu-host {t} command=qemu-system-x86_64 ...\n"
    ).format(t=token, g=guest, tests=",".join(tests), limit=limit)
    body = textwrap.dedent(body).replace("TOK", token)
    tail = "\n# lk-qemu-host %s end %s\n" % (token, end) if end else ""
    return head + body + tail


BOOT = """\
[    0.000000] Linux version 4.20.0+ (root@vm) (gcc version 12.2.0)
[    0.000000] Command line: console=ttyS0 panic=-1 lkqemu.token=TOK
[    1.000000] Run /init as init process
lk-qemu TOK start abi=64 tests=1 uname=4.20.0+/x86_64
"""


def killed_at_limit(body, limit, tests=("64/t",), start="1"):
    """canned() of a log that ends when the host killed qemu at its
    wall-clock limit (seconds); start: when /init started, or "-"."""
    return canned(
        body,
        tests=tests,
        end="status=-9 killed=limit elapsed=%d start=%s done=-" % (limit, start),
        limit=limit,
    )


def one_test(name, output, result, done=True):
    text = BOOT + "lk-qemu TOK begin %s\n%s" % (name, output)
    if result is not None:
        text += "lk-qemu TOK end %s %s time=0.100\n" % (name, result)
    if done:
        text += "lk-qemu TOK done ran=1\n[    2.000000] reboot: Power down\n"
    return text


def judge(text, path="/logs/qemu-x86_64.log"):
    return verdict.judge(serial.parse_log(text, path))


def judge_one(name, output, result):
    """judge() of the log of a guest that ran one test, name, which printed
    output and ended with result (the end marker's fields)."""
    return judge(canned(one_test(name, output, result)))


def crash_report_kinds(test, out):
    """The kinds of the kernel reports judged in a log whose guest crashed
    while running test (no "done" marker) after printing out."""
    rows = judge(
        canned(
            one_test(test, out, None, done=False),
            end="status=0 killed=no elapsed=6 start=1 done=-",
        )
    )
    return [r[2].split(" during")[0] for r in rows if r[1] == "qemu x86_64: kernel log"]


def row(rows, name):
    found = [r for r in rows if r[1] == name]
    if len(found) != 1:
        raise AssertionError(
            "%d rows named %r in:\n%s" % (len(found), name, "\n".join(map(str, rows)))
        )
    return found[0]


def statuses(rows):
    return {r[1]: r[0] for r in rows}


def serial_log(runs, token=TOKEN):
    """A log of an x86_64 guest as boot.boot() writes it, each of the runs
    [(manifest name, output, the end marker's fields)] taking 60.1s."""
    out = [
        "# lk-qemu-host %s guest=x86_64 kernel=/k/bzImage" % token,
        "# lk-qemu-host %s tests=%s" % (token, ",".join(n for n, _, _ in runs)),
        "# lk-qemu-host %s limit=999" % token,
        "[    0.000000] Linux version 4.20.0 (gcc 12.2.0)",
        "[    1.000000] Run /init as init process",
        "lk-qemu %s start abi=64 tests=%d uname=4.20.0/x86_64" % (token, len(runs)),
    ]
    for name, output, end in runs:
        out.append("lk-qemu %s begin %s" % (token, name))
        out.extend(output.splitlines())
        out.append("lk-qemu %s end %s %s time=60.1" % (token, name, end))
    out += [
        "lk-qemu %s done ran=%d" % (token, len(runs)),
        "[  200.000000] reboot: Power down",
        "# lk-qemu-host %s end status=0 killed=no elapsed=201 start=1 "
        "done=200" % token,
    ]
    return "\n".join(out) + "\n"


def cpio_files(data):
    """{path: (mode, contents)} of a newc archive (this test's reader)."""
    files = {}
    off = 0
    while True:
        if data[off : off + 6] != b"070701":
            raise AssertionError("no newc header at %d" % off)
        nums = [int(data[off + 6 + 8 * k : off + 14 + 8 * k], 16) for k in range(13)]
        mode, size, namesize = nums[1], nums[6], nums[11]
        name_at = off + 110
        name = data[name_at : name_at + namesize - 1].decode()
        body = name_at + namesize
        body += -body % 4
        if name == "TRAILER!!!":
            return files
        files[name] = (mode, data[body : body + size])
        off = body + size
        off += -off % 4


def stop(pid):
    """SIGKILL pid if it is still there (a failed test's leftover)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def sleeping_qemu(d):
    """A fake qemu in directory d that writes its pid and sleeps, and the
    files a boot of it needs: (qemu, pidfile, kernel, log)."""
    fake, pidfile = os.path.join(d, "qemu"), os.path.join(d, "pid")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho $$ > %s\nexec sleep 600\n" % pidfile)
    os.chmod(fake, 0o755)
    kernel = os.path.join(d, "bzImage")
    open(kernel, "w").close()
    return fake, pidfile, kernel, os.path.join(d, "boot.log")


def sigterm_while_booting(testcase, code, pidfile):
    """Run the Python code, which boots the sleeping qemu, SIGTERM it once
    qemu runs, and check that it exits 143 and that qemu is gone."""
    p = subprocess.Popen([sys.executable, "-c", code])
    testcase.addCleanup(p.kill)  # nothing once it has been waited for
    for _ in range(200):
        if os.path.exists(pidfile) and os.path.getsize(pidfile):
            break
        time.sleep(0.05)
    with open(pidfile) as f:
        qemu_pid = int(f.read())
    testcase.addCleanup(stop, qemu_pid)
    p.terminate()
    testcase.assertEqual(p.wait(timeout=60), 128 + signal.SIGTERM)
    assert_gone(testcase, qemu_pid)


def assert_gone(testcase, qemu_pid):
    """qemu_pid no longer runs (SIGKILLed: dead at once, gone once
    reaped)."""
    for _ in range(100):
        if process_state(qemu_pid) in (None, "Z"):
            break
        time.sleep(0.05)
    testcase.assertIn(process_state(qemu_pid), (None, "Z"), "qemu still runs")


def record_when_running(pidfile, before="pass", after="pass"):
    """Code for boot_code()'s `before`: boot() records its qemu in a set
    that, once the fake qemu runs (its pidfile written), runs the
    statement `before`, records it, then runs `after`."""
    return (
        "class Recorder(set):\n"
        "    def add(self, proc):\n"
        "        while not os.path.exists(%r) or not os.path.getsize(%r):\n"
        "            time.sleep(0.01)\n"
        "        %s\n"
        "        set.add(self, proc)\n"
        "        %s\n"
        "boot.RUNNING = Recorder()\n" % (pidfile, pidfile, before, after)
    )


def boot_code(here, fake, kernel, log, before="", in_thread=False):
    """Python code that boots the i386 guest with the fake qemu (for a
    process of its own, which a test then signals); `before` runs first,
    with os, signal, sys, time and lktool's boot imported.  in_thread:
    the boot runs in a thread while the main thread sleeps, as `lk test`
    boots guests beside its builds."""
    boot = "boot.boot(g, %r, '/rd', %r, limit=300)\n" % (kernel, log)
    if in_thread:
        boot = (
            "import threading\n"
            "t = threading.Thread(target=boot.boot, args=(g, %r, '/rd', %r),\n"
            "                     kwargs={'limit': 300}, daemon=True)\n"
            "with boot.sigterm_kills_boots():\n"
            "    t.start()\n"
            "    time.sleep(300)\n" % (kernel, log)
        )
    return (
        "import os, signal, sys, time; sys.path.insert(0, %r)\n"
        "from lktool import boot, qemu_conf\n%s"
        "g = qemu_conf.load_guest('i386', overrides={'qemu': %r})\n%s"
        % (here, before, fake, boot)
    )


def process_state(pid):
    """The state letter of /proc/PID/stat (R, S, Z...), None if there is no
    such process.  A killed qemu whose parent has exited stays a zombie
    ("Z") until the process it was handed to reaps it, which a busy
    machine's init may do seconds later: it no longer runs."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0]
    except (FileNotFoundError, IndexError):
        return None
