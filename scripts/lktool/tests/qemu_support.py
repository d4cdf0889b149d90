# SPDX-License-Identifier: GPL-2.0
"""Canned serial logs for the tests of the QEMU harness."""

import textwrap

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


def one_test(name, output, result, done=True):
    text = BOOT + "lk-qemu TOK begin %s\n%s" % (name, output)
    if result is not None:
        text += "lk-qemu TOK end %s %s time=0.100\n" % (name, result)
    if done:
        text += "lk-qemu TOK done ran=1\n[    2.000000] reboot: Power down\n"
    return text


def judge(text, path="/logs/qemu-x86_64.log"):
    return verdict.judge(serial.parse_log(text, path))


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
