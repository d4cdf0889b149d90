# SPDX-License-Identifier: GPL-2.0
"""What QEMU's TCG does that an x86 CPU does not, as a fuzz run meets it.

IRET at CPL 3 with EFLAGS.VM set.  An x86 CPU returns to virtual-8086
mode on an IRET only at CPL 0; at CPL 3 the VM bit of the popped EFLAGS
is ignored (Intel SDM, IRET).  QEMU's TCG (7.2 in Debian 12,
helper_ret_protected() in target/i386/tcg/seg_helper.c) enters vm86 mode
on every 32-bit IRET whose popped EFLAGS has VM, whatever the CPL, and
takes IOPL and IF from it as well.

A trinity child in the i386 guest gets there when it runs over its own
text after a random mmap() or mremap() replaced it ("segfault at ... in
zero (deleted)"): sooner or later an IRET pops whatever its stack holds.
i386_defconfig has no CONFIG_VM86, and without it user_mode() reads the
privilege level from CS alone, so a fault taken in vm86 mode with a CS
value whose low bits are 0 is handled as a kernel-mode fault on a user
address: SIGSEGV is queued, and the kernel-mode exit path, which
delivers no signal, returns to the same instruction.  The task spins in
the kernel for good: state R, system time only, SIGKILL pending, and
lk-fuzz finds that trinity does not stop.  If the popped EFLAGS had IF
clear, each fault also says "BUG: sleeping function called from invalid
context" (seen on i386-debug).  Neither is the kernel's doing, nor the
series': on a CPU the IRET does not enter vm86 mode.

So that this emulator bug neither fails a run nor hides a kernel one,
lk-fuzz probes the CPU when it starts (scripts/qemu/fuzz.c: a child
IRETs at CPL 3 with VM set) and prints "lk-fuzz: cpu: iret at cpl 3
enters vm86 mode: yes" (or no).  Only in a boot where it said yes:

  - a phase that failed because trinity did not stop passes when every
    process lk-fuzz found stuck is trinity's main process asleep, or a
    child that the kernel's own backtrace (SysRq l, lk-fuzz --sysrq)
    shows in a fault taken in vm86 mode (EFLAGS.VM in the register dump
    of the exception frame), and nothing else went wrong in it;
  - a "sleeping function called from invalid context" report from the
    page-fault handler whose register dump shows EFLAGS.VM is a SKIP row,
    as the known v4.20 reports are.

Anything else stays a failure.
"""

from __future__ import annotations

from typing import Sequence

import re

from . import serial

X86_EFLAGS_VM = 0x00020000

PROBE_RE = re.compile(r"^lk-fuzz: cpu: iret at cpl 3 enters vm86 mode: (yes|no)\b")
STUCK_RE = re.compile(r"^lk-fuzz: stuck pid (\d+) stat: \d+ \((.*)\) (\S) ")
NMI_RE = re.compile(r"^NMI backtrace for cpu \d+")
NMI_TASK_RE = re.compile(r"^CPU: \d+ PID: (\d+) Comm: ")
EFLAGS_RE = re.compile(r"\bEFLAGS: ([0-9a-f]{8})\b")
# what lk-fuzz says when a phase fails for another reason than trinity's
# stop (fuzz.c)
OTHER_FAILURE_RE = re.compile(
    r"^lk-fuzz: (a churn did not stop|the kernel became tainted|"
    r"trinity not ready|trinity exit=[1-9])"
)
SLEEP_BUG_RE = re.compile(
    r"^BUG: sleeping function called from invalid context at "
    r"\S*arch/x86/mm/fault\.c:"
)
# how far below a report its register dump may be, in log lines
DUMP_LINES = 40


def kernel_text(line: str) -> str | None:
    m = serial.KLINE_RE.search(line)
    return m.group(1) if m else None


def probe_says_yes(lines: Sequence[str]) -> bool:
    """Whether lk-fuzz found, in this boot, that IRET at CPL 3 enters vm86."""
    return any(m.group(1) == "yes" for m in map(PROBE_RE.match, lines) if m)


def vm86_eflags(texts: Sequence[str]) -> bool:
    """Whether a register dump in these kernel lines shows EFLAGS.VM."""
    for t in texts:
        m = EFLAGS_RE.search(t)
        if m and int(m.group(1), 16) & X86_EFLAGS_VM:
            return True
    return False


def vm86_pids(lines: Sequence[str]) -> set[int]:
    """PIDs whose NMI backtrace (SysRq l) runs through a fault taken in
    vm86 mode: an EFLAGS with VM after the task's 'CPU: N PID: P' line,
    before the next backtrace or the first line that is not the kernel's."""
    pids: set[int] = set()
    pid = None
    block: list[str] = []
    for line in list(lines) + [""]:
        text = kernel_text(line)
        if text is not None and not NMI_RE.match(text) and pid is not None:
            block.append(text)
            continue
        if pid is not None and vm86_eflags(block):
            pids.add(pid)
        pid, block = None, []
        m = NMI_TASK_RE.match(text or "")
        if m:
            pid = int(m.group(1))
    return pids


def stuck_in_vm86(lines: Sequence[str]) -> str | None:
    """Why a phase that failed is the emulator's and not the kernel's, or
    None.  lines: the phase's output (user space and kernel lines)."""
    if not probe_says_yes(lines):
        return None
    if not any(l.startswith("lk-fuzz: trinity did not stop") for l in lines):
        return None
    if any(OTHER_FAILURE_RE.match(l) for l in lines):
        return None
    stuck = {}
    for m in filter(None, map(STUCK_RE.match, lines)):
        stuck[int(m.group(1))] = (m.group(2), m.group(3))
    in_vm86 = vm86_pids(lines)
    spinning = sorted(p for p in stuck if p in in_vm86)
    others = [
        p
        for p, (comm, state) in stuck.items()
        if p not in in_vm86 and not (comm == "trinity-main" and state == "S")
    ]
    if not spinning or others:
        return None
    return (
        "%s spun in vm86 mode, which QEMU's IRET let %s enter from user mode "
        "(an emulator bug: lktool/fuzz_emulator.py)"
        % (
            ", ".join("%s (pid %d)" % (stuck[p][0], p) for p in spinning),
            "it" if len(spinning) == 1 else "them",
        )
    )


def vm86_sleep_report(issue: serial.Issue, log_lines: Sequence[str]) -> bool:
    """Whether a kernel report is the page-fault handler's complaint about
    a fault taken in vm86 mode with interrupts off: its kind and text, and
    an EFLAGS with VM in the register dump within DUMP_LINES lines below
    it, up to the next report's first line.  log_lines: the whole log
    (serial.Report.lines); issue.line counts from 1."""
    if issue.kind != "BUG" or not SLEEP_BUG_RE.match(issue.text):
        return False
    texts = []
    for line in log_lines[issue.line : issue.line + DUMP_LINES]:
        text = kernel_text(line)
        if text is None:
            continue
        if text.startswith(("BUG:", "WARNING:", "=====")):
            break
        texts.append(text)
    return vm86_eflags(texts)
