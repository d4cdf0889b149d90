# SPDX-License-Identifier: GPL-2.0
"""Turn a parsed serial log into PASS/FAIL/SKIP rows."""

from __future__ import annotations

from typing import Callable

import collections
import signal

from . import boot, common, serial, userspace


SIGNALS = {int(s): s.name for s in signal.Signals}


def result_name(g: str, name: str) -> str:
    """'qemu x86_64', '64/foo' -> 'qemu x86_64/64: foo'."""
    abi, _, test = name.partition("/")
    return "%s/%s: %s" % (g, abi, test) if test else "%s: %s" % (g, name)


def judge(r: serial.Report, prefix: str = "qemu") -> list[tuple[str, str, str]]:
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
            return "qemu exited with status %s: %s" % (st, r.qemu_stderr[-1])
        return "crashed: qemu exited (status %s) without init's done marker" % st

    if r.start is None:
        why = stop_reason()
        if r.last_kernel_line:
            why += "; last kernel line: %s" % r.last_kernel_line[:120]
        rows.append(
            (
                "FAIL",
                "%s: boot" % g,
                "the kernel did not start /init: %s; %s" % (why, where(1)),
            )
        )
        for name in r.expected:
            rows.append(("SKIP", result_name(g, name), "not run: boot failed"))
    else:
        rows.append(
            (
                "PASS",
                "%s: boot" % g,
                "/init started%s (%s)"
                % (
                    " after %ss" % r.host["start"]
                    if r.host.get("start", "-") != "-"
                    else "",
                    r.start.get("uname", "?"),
                ),
            )
        )

        stopped_in = None
        for name in r.expected:
            t = r.tests.get(name)
            full = result_name(g, name)
            if t is None:
                if r.done:
                    rows.append(
                        (
                            "FAIL",
                            full,
                            "not run although init "
                            "finished (manifest mismatch?); %s" % where(r.done["line"]),
                        )
                    )
                else:
                    rows.append(
                        (
                            "SKIP",
                            full,
                            "not run: the guest stopped "
                            "during %s" % (stopped_in or "init"),
                        )
                    )
                continue
            rows.extend(judge_test(t, full, where, stop_reason))
            if t.end is None:
                stopped_in = name
        for name in r.tests:
            if name not in r.expected:
                rows.append(
                    (
                        "FAIL",
                        result_name(g, name),
                        "ran but was not expected; %s" % where(r.tests[name].line),
                    )
                )

    # One row per distinct report; a looping one can print thousands.
    same: collections.OrderedDict[
        tuple[str, str], list[serial.Issue]
    ] = collections.OrderedDict()
    for i in r.issues:
        same.setdefault((i.kind, i.text), []).append(i)
    for group in same.values():
        i = group[0]
        more = (
            " (and %d more like it, the last during %s)"
            % (len(group) - 1, group[-1].during)
            if len(group) > 1
            else ""
        )
        rows.append(
            (
                "FAIL",
                "%s: kernel log" % g,
                "%s during %s: %s%s; %s"
                % (i.kind, i.during, i.text[:160], more, where(i.line)),
            )
        )
    if r.start is not None and not r.issues:
        rows.append(
            (
                "PASS",
                "%s: kernel log" % g,
                "no BUG, Oops, WARNING "
                "(lockdep's too), panic, KASAN, UBSAN or kmemleak "
                "report",
            )
        )

    if "kmemleak" in r.kmemleak or "kmemleak-baseline" in r.kmemleak:
        base = r.kmemleak.get("kmemleak-baseline", (None, []))[0]
        leaks, text = r.kmemleak.get("kmemleak", (None, []))
        note = " (%s boot-time reports cleared before the tests)" % base if base else ""
        if leaks is None:
            rows.append(
                (
                    "FAIL",
                    "%s: kmemleak" % g,
                    "no leak report after "
                    "the tests (scan failed or the guest stopped)%s" % note,
                )
            )
        elif leaks:
            first = next((l for l in text if "unreferenced object" in l), "")
            rows.append(
                (
                    "FAIL",
                    "%s: kmemleak" % g,
                    "%d new suspected "
                    "leak%s after the tests: %s%s"
                    % (leaks, "" if leaks == 1 else "s", first.strip(), note),
                )
            )
        else:
            rows.append(
                ("PASS", "%s: kmemleak" % g, "no new leak after the tests%s" % note)
            )

    if r.start is not None:
        if r.done and host_end == "no":
            rows.append(
                (
                    "PASS",
                    "%s: shutdown" % g,
                    "init ran %s test%s and "
                    "powered off after %ss"
                    % (
                        r.done.get("ran", "?"),
                        "" if r.done.get("ran") == "1" else "s",
                        r.host.get("elapsed", "?"),
                    ),
                )
            )
        elif r.done:
            rows.append(
                (
                    "FAIL",
                    "%s: shutdown" % g,
                    "init finished but the "
                    "guest did not power off (killed); %s" % where(r.done["line"]),
                )
            )
        else:
            rows.append(
                (
                    "FAIL",
                    "%s: shutdown" % g,
                    "%s; %s" % (stop_reason(), where(r.start["line"])),
                )
            )
    for a in r.anomalies:
        rows.append(("FAIL", "%s: markers" % g, a))
    return rows


def judge_test(
    t: serial.TestRun,
    full: str,
    where: Callable[[int], str],
    stop_reason: Callable[[], str],
) -> list[tuple[str, str, str]]:
    """Results of one test: the test itself, then its TAP sub-results."""
    rows = []
    taps, bail = serial.parse_tap(t.output)
    bad = [x for x in taps if not x.ok and x.directive != "todo"]
    for x in taps:
        sub = "%s: %s%s" % (
            full,
            x.number + " " if x.number else "",
            x.description or "(no description)",
        )
        if x.directive == "skip":
            rows.append(("SKIP", sub, "TAP skip"))
        elif x.directive == "todo":
            rows.append(
                ("SKIP", sub, "TAP todo (%s)" % ("passed" if x.ok else "failed"))
            )
        elif x.ok:
            rows.append(("PASS", sub, ""))
        else:
            rows.append(("FAIL", sub, "TAP not ok; %s" % where(x.line)))
    e = t.end
    if e is None:
        main = (
            "FAIL",
            "no end marker: the guest crashed or hung during "
            "this test (%s); %s" % (stop_reason(), where(t.line)),
        )
    elif "timeout" in e:
        main = (
            "FAIL",
            "timed out after %ss; its process group was %s; %s"
            % (
                e["timeout"],
                "NOT killable (kept running)" if "unkillable" in e else "killed",
                where(t.line),
            ),
        )
    elif "unkillable" in e:
        how = "exit %s" % e["exit"] if "exit" in e else "signal %s" % e.get("signal")
        main = (
            "FAIL",
            "%s, but some of its process group was still there %ds after "
            "SIGKILL; %s" % (how, boot.KILL_WAIT, where(t.line)),
        )
    elif "signal" in e:
        n = int(e["signal"]) if e["signal"].isdigit() else -1
        main = (
            "FAIL",
            "killed by signal %s (%s); %s"
            % (e["signal"], SIGNALS.get(n, "?"), where(t.line)),
        )
    elif e.get("exit") == "0":
        if bad:
            main = (
                "FAIL",
                "exit 0 but %d TAP 'not ok'; %s" % (len(bad), where(bad[0].line)),
            )
        elif bail:
            main = ("FAIL", "exit 0 but %r; %s" % (bail[1][:80], where(bail[0])))
        else:
            main = ("PASS", "%ss" % e.get("time", "?"))
    elif e.get("exit") == str(userspace.KSFT_SKIP):
        main = ("SKIP", "kselftest skip (exit %d)" % userspace.KSFT_SKIP)
    elif e.get("exit") == "127":
        main = ("FAIL", "exit 127 (could not run it?); %s" % where(t.line))
    else:
        main = ("FAIL", "exit %s; %s" % (e.get("exit", "?"), where(t.line)))
    return [(main[0], full, main[1])] + rows


def judge_expects(
    guest: common.Guest, r: serial.Report | None, log_path: str, prefix: str = "qemu"
) -> list[tuple[str, str, str]]:
    """The rows of the guest's expect keys on a boot's Report (or None).

    Checked only when init finished its tests: otherwise each is a FAIL,
    unproven (the crash or hang has rows of its own).
    """
    text = None
    if r is not None and r.done:
        text = "\n".join(l for l in r.lines if not l.startswith("# lk-qemu-host "))
    rows = []
    for key, rx in guest["expects"]:
        name = "%s %s: %s" % (prefix, guest["name"], key.replace("_", " ", 1))
        if text is None:
            rows.append(
                (
                    "FAIL",
                    name,
                    "not checked: the guest did not "
                    "finish its tests; /%s/ unproven; log at %s"
                    % (rx.pattern, log_path),
                )
            )
        elif rx.search(text):
            rows.append(("PASS", name, "/%s/" % rx.pattern))
        else:
            rows.append(
                (
                    "FAIL",
                    name,
                    "no match for /%s/ in the serial "
                    "log; log at %s" % (rx.pattern, log_path),
                )
            )
    return rows
