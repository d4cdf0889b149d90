# SPDX-License-Identifier: GPL-2.0
"""lk lava: every QEMU guest of configs/qemu/ as a LAVA job.

A job is made from the guest's .conf by the code that makes `lk qemu`'s
QEMU command line (boot.qemu_command()) and initramfs
(qemu.prepare_guest()): one configuration, two runners.

  deploy  to: tmpfs, the guest's kernel and initramfs as the images
          `kernel` and `initrd`; the kernel's image_arg carries the guest's
          kernel command line (console, panic=-1, the marker token, its
          append key)
  boot    method: qemu, on LAVA's `qemu` device type; the job context
          gives that device type the guest's machine, CPU, memory and the
          rest of its QEMU arguments (extra_options), no KVM
  test    a `monitors` test: the guest's /init needs no shell, and prints
          one line per test that the monitor's pattern reads as it is
          ("lk-qemu TOKEN end 64/foo exit=0 time=0.25": exit 0 passes,
          exit 4, kselftest's skip, skips, anything else fails: a signal,
          a timeout, a non-zero exit, a process group that outlived
          SIGKILL).  A LAVA test shell would need a shell and LAVA's
          overlay in the initramfs, and would run the tests otherwise than
          `lk qemu` does.  The monitor starts at init's start marker and
          ends at the kernel's "reboot: Power down".

`lk lava --run GUEST` runs a job here with Debian's lava-run, on a device
configuration written from the same QEMU command line (TCG, never KVM),
and turns what the dispatcher logged into `lk qemu`'s rows, named "lava
GUEST...": the guest's serial output is the log that lk_qemu.py's parser
and verdicts read (written to $LK_OUT/logs/lava-GUEST.log in its format),
so the rows are those `lk qemu` gives for the same kernel, plus "lava
GUEST: job" (LAVA's own job result) and "lava GUEST: lava results" (each
result LAVA's monitor recorded agrees with the verdict on the test).
The power-off is the kernel's "reboot: Power down" line, within the
guest's poweroff_timeout after init's done marker.

Jobs are checked by LAVA itself: the job schema that lava-server applies
on submission (Debian's lava-schema.py) and the dispatcher's validation
(lava-run --validate: device, artifacts, pipeline).  A job that fails
either, or whose artifact is missing, is a FAIL row.
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import argparse
import datetime
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess

from . import boot, common, qemu, qemu_conf, serial, userspace, verdict


# Debian's lava-dispatcher and lava-common (Debian's python3 runs them).
LAVA_RUN = "lava-run"
LAVA_SCHEMA = "/usr/share/lava-common/lava-schema.py"
DEBIAN_PYTHON = "/usr/bin/python3"
LAVACLI = "lavacli"
# Where lava-run works, in a directory named by the job id.
DISPATCHER_TMP = "/var/lib/lava/dispatcher/tmp"
DEVICE_TYPE = "qemu"
# What v4.20 prints when init powers the guest off (kernel/reboot.c).
POWER_DOWN = "reboot: Power down"
# Seconds for LAVA to fetch the artifacts (a lab downloads them).
DEPLOY_SECS = 300
# What the qemu device type's template puts on every command line
# itself (-m from the context's memory).
TEMPLATE_OPTIONS = ("-nographic", "-monitor", "-m", "-M", "-machine", "-cpu")
# The qemu device type gives an i386 job "-cpu core2duo" unless its context
# names a CPU; QEMU's own default is what `lk qemu` boots.
QEMU_DEFAULT_CPU = {"i386": "qemu32"}
# The device configuration's constants that the dispatcher reads for a
# qemu boot with a monitors test (lava-server's base.jinja2 names them).
DEVICE_CONSTANTS = {
    "kernel-start-message": "Linux version [0-9]",
    "shutdown-message": "The system is going down for reboot NOW",
    "default-shell-prompt": "lava-test: # ",
    "spawn_maxread": "4092",
    "failure_retry": 1,
    "boot_retry": None,
}


def option_groups(args: Sequence[str]) -> list[list[str]]:
    """QEMU arguments as [option, value...] groups: a word that does not
    start with '-' is a value of the option before it."""
    groups: list[list[str]] = []
    for a in args:
        if a.startswith("-") or not groups:
            groups.append([a])
        else:
            groups[-1].append(a)
    return groups


def quote(words: Sequence[str]) -> str:
    """words for a LAVA command line (split as a shell would); LAVA's
    "{label}" placeholders stay as they are."""
    return " ".join(w if re.match(r"^\{\w+\}$", w) else shlex.quote(w) for w in words)


def guest_arch(guest: common.Guest) -> str:
    """The job context's arch: the qemu-system-ARCH of the guest."""
    binary = os.path.basename(guest["qemu"])
    if not binary.startswith("qemu-system-"):
        raise common.Failure(
            "%s: qemu = %s is not a qemu-system-ARCH binary, which LAVA's "
            "qemu device type needs" % (guest["path"], guest["qemu"])
        )
    return binary[len("qemu-system-") :]


def qemu_parts(
    guest: common.Guest, token: str
) -> tuple[str, dict[str, list[str]], list[list[str]]]:
    """`lk qemu`'s command line for guest, with LAVA's placeholders for the
    images: (binary, {"-kernel"/"-initrd"/"-append": group}, the other
    option groups in order)."""
    cmd = boot.qemu_command(guest, "{kernel}", "{initrd}", token)
    images, options = {}, []
    for g in option_groups(cmd[1:]):
        if g[0] in ("-kernel", "-initrd", "-append"):
            images[g[0]] = g
        else:
            options.append(g)
    return cmd[0], images, options


def job_context(guest: common.Guest, options: list[list[str]]) -> dict[str, Any]:
    """The context that makes the qemu device type's template give the
    guest's QEMU command line (without KVM)."""
    arch = guest_arch(guest)
    ctx: dict[str, Any] = {"arch": arch, "no_kvm": True}
    extra = []
    for g in options:
        value = " ".join(g[1:])
        if g[0] in ("-M", "-machine"):
            ctx["machine"] = value
        elif g[0] == "-cpu":
            ctx["cpu"] = value
        elif g[0] == "-m":
            ctx["memory"] = int(value) if value.isdigit() else value
        elif g[0] not in TEMPLATE_OPTIONS:
            extra.append(quote(g))
    if "cpu" not in ctx and arch in QEMU_DEFAULT_CPU:
        ctx["cpu"] = QEMU_DEFAULT_CPU[arch]
    ctx["extra_options"] = extra
    return ctx


def monitor(guest: common.Guest, token: str) -> dict[str, Any]:
    """The monitors test of a guest: one result per end marker of init.

    The pattern ends at the end of the line, so that the whole marker has
    arrived when it matches; the result group is "exit=0 " or "exit=4 "
    when the time follows at once, else empty (a failure)."""
    mark = "lk-qemu %s" % token
    return {
        "name": "lk-qemu-%s" % guest["name"],
        "start": "%s start" % mark,
        "end": POWER_DOWN,  # no character special in a regular expression
        "pattern": r"%s end (?P<test_case_id>\S+) "
        r"(?P<result>exit=0 (?=time=)|exit=%d (?=time=)|)[^\n]*\n"
        % (mark, userspace.KSFT_SKIP),
        "fixupdict": {
            "exit=0 ": "pass",
            "exit=%d " % userspace.KSFT_SKIP: "skip",
            "": "fail",
        },
    }


def monitor_gap(
    guest: common.Guest, names: Sequence[tuple[str, int]], scale: int, kmemleak: bool
) -> int:
    """The longest the monitor may wait for its next line: the boot, a
    test's limit and its kill, a kmemleak scan, the power-off."""
    gap = max(
        guest["boot_timeout"] * scale,
        max((t for _, t in names), default=0) + 2 * boot.KILL_WAIT + 30,
        guest["poweroff_timeout"],
    )
    if kmemleak:
        gap = max(gap, guest["kmemleak_timeout"] * scale)
    return gap


def make_job(
    guest: common.Guest,
    kernel_url: str,
    initrd_url: str,
    names: Sequence[tuple[str, int]],
    token: str,
    scale: int = 1,
    kmemleak: bool = False,
) -> dict[str, Any]:
    """The LAVA job of a guest: its kernel and initramfs at those URLs,
    names [(manifest name, seconds)] the tests its initramfs runs."""
    _, images, options = qemu_parts(guest, token)
    limit = boot.wall_limit(guest, names, scale, kmemleak)
    test_secs = limit + guest["poweroff_timeout"]
    boot_secs = guest["boot_timeout"] * scale
    return {
        "device_type": DEVICE_TYPE,
        "job_name": "lk-qemu %s: v4.20 y2038 series selftests" % guest["name"],
        "timeouts": {
            "job": {"seconds": DEPLOY_SECS + boot_secs + test_secs + 60},
            "action": {"seconds": DEPLOY_SECS},
            "connection": {"seconds": monitor_gap(guest, names, scale, kmemleak)},
        },
        "priority": "medium",
        "visibility": "public",
        "context": job_context(guest, options),
        "metadata": {
            "lk.guest": guest["name"],
            "lk.conf": os.path.relpath(guest["path"], common.TOP),
            "lk.token": token,
            "lk.tests": ",".join(n for n, _ in names),
            "lk.limit": str(limit),
        },
        "actions": [
            {
                "deploy": {
                    "to": "tmpfs",
                    "timeout": {"seconds": DEPLOY_SECS},
                    "images": {
                        "kernel": {
                            "url": kernel_url,
                            "image_arg": quote(images["-kernel"] + images["-append"]),
                        },
                        "initrd": {
                            "url": initrd_url,
                            "image_arg": quote(images["-initrd"]),
                        },
                    },
                }
            },
            {
                "boot": {
                    "method": "qemu",
                    "media": "tmpfs",
                    "timeout": {"seconds": boot_secs},
                }
            },
            {
                "test": {
                    "timeout": {"seconds": test_secs},
                    "monitors": [monitor(guest, token)],
                }
            },
        ],
    }


def make_device(guest: common.Guest) -> dict[str, Any]:
    """The device configuration lava-run boots the guest's job on: LAVA's
    qemu device type, its command line `lk qemu`'s (TCG, never KVM)."""
    binary, _, options = qemu_parts(guest, "TOKEN")
    return {
        "available_architectures": [guest_arch(guest)],
        "actions": {
            "deploy": {
                "connections": {"serial": None},
                "methods": {"image": {"parameters": {}}},
            },
            "boot": {
                "connections": {"serial": None},
                "methods": {
                    "qemu": {
                        "parameters": {
                            "command": binary,
                            "options": [quote(g) for g in options],
                        }
                    }
                },
            },
        },
        "timeouts": {"actions": {}, "connections": {}},
        "constants": dict(DEVICE_CONSTANTS),
    }


def guest_names(
    guest: common.Guest, specs: list[qemu_conf.TestSpec], scale: int = 1
) -> list[tuple[str, int]]:
    """[(manifest name, seconds)] of every test the guest runs, for each of
    its ABIs in order, as prepare_guest() lists what it built."""
    mine = qemu_conf.guest_tests(guest, specs)
    return [
        (userspace.manifest_name(abi, s.name), s.timeout * scale)
        for abi in guest["abis"]
        for s in mine
        if abi in s.abis
    ]


# YAML: block mappings and lists, every string double-quoted (JSON's
# escapes are YAML's too).
PLAIN_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def scalar(v: Any) -> str:
    if v is None:
        return "null"
    return json.dumps(v)


def to_yaml(obj: Any, indent: int = 0) -> str:
    """obj (dicts, lists, strings, numbers, booleans, None) as YAML."""
    return "".join(yaml_lines(obj, indent))


def yaml_lines(obj: Any, indent: int) -> Iterator[str]:
    pad = " " * indent
    if isinstance(obj, dict):
        if not obj:
            yield pad + "{}\n"
        for k, v in obj.items():
            key = k if PLAIN_KEY_RE.match(k) else json.dumps(k)
            if isinstance(v, (dict, list)) and v:
                yield "%s%s:\n" % (pad, key)
                yield from yaml_lines(v, indent + 2)
            else:
                yield "%s%s: %s\n" % (pad, key, yaml_inline(v))
    elif isinstance(obj, list):
        for v in obj:
            if isinstance(v, (dict, list)) and v:
                first, *rest = list(yaml_lines(v, indent + 2))
                yield pad + "- " + first[indent + 2 :]
                yield from rest
            else:
                yield "%s- %s\n" % (pad, yaml_inline(v))
    else:
        yield pad + yaml_inline(obj) + "\n"


def yaml_inline(v: Any) -> str:
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return scalar(v)


# The dispatcher logs one YAML flow mapping a line, its strings
# double-quoted: JSON but for YAML's own escapes.
YAML_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "v": "\v",
    "e": "\x1b",
    " ": " ",
    "\t": "\t",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
YAML_ESCAPE_RE = re.compile(r"\\(x[0-9A-Fa-f]{2}|U[0-9A-Fa-f]{8}|.)", re.S)


def json_escape(m: re.Match[str]) -> str:
    e = m.group(1)
    if e[0] in "xU" and len(e) > 1:
        return json.dumps(chr(int(e[1:], 16)))[1:-1]
    if e in YAML_ESCAPES:
        return json.dumps(YAML_ESCAPES[e])[1:-1]
    return m.group(0)


def read_records(text: str) -> list[dict[str, Any]]:
    """The records of a lava-run log: [{"dt", "lvl", "msg"}]; a line that
    is not one is left out."""
    records = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("- "):
            line = line[2:]
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(YAML_ESCAPE_RE.sub(json_escape, line))
        except ValueError:
            continue
        if isinstance(rec, dict) and "lvl" in rec and "msg" in rec:
            records.append(rec)
    return records


def when(rec: dict[str, Any]) -> float:
    try:
        return datetime.datetime.fromisoformat(str(rec.get("dt"))).timestamp()
    except ValueError:
        return 0.0


class Run:
    """What a lava-run log says about a job."""

    def __init__(self, records: list[dict[str, Any]]) -> None:
        self.records = records
        self.results = [r["msg"] for r in records if r["lvl"] == "results"]
        self.job = next(
            (
                m
                for m in self.results
                if isinstance(m, dict)
                and m.get("definition") == "lava"
                and m.get("case") == "job"
            ),
            None,
        )
        self.errors = [str(r["msg"]) for r in records if r["lvl"] == "error"]
        started = [
            i
            for i, r in enumerate(records)
            if r["lvl"] == "info" and str(r["msg"]).startswith("Boot command:")
        ]
        self.booted = bool(started)
        first = started[0] if started else len(records)
        self.t0 = when(records[first]) if started else 0.0
        self.serial = [
            (when(r), str(r["msg"])) for r in records[first:] if r["lvl"] == "target"
        ]

    def job_error(self) -> str:
        """LAVA's reason for a failed job (or "" when it passed)."""
        if self.job is None:
            return "lava-run logged no job result (killed?)"
        if self.job.get("result") == "pass":
            return ""
        why = "%s: %s" % (
            self.job.get("error_type", "?"),
            self.job.get("error_msg", "no message"),
        )
        return why

    def cases(self, suite: str) -> dict[str, str]:
        """{test name: pass/fail/skip} that the monitor `suite` recorded."""
        out = {}
        for m in self.results:
            if isinstance(m, dict) and m.get("definition") == suite:
                name = (m.get("extra") or {}).get("test_case_id") or m.get("case")
                out[str(name)] = str(m.get("result"))
        return out


def serial_log(
    run: Run,
    guest: common.Guest,
    token: str,
    kernel: str,
    names: Sequence[tuple[str, int]],
    limit: int,
    job_path: str,
) -> str:
    """The guest's serial output in a LAVA run as a log of lk_qemu.py's
    boot(): its "# lk-qemu-host" lines, then the lines, then its end."""
    mark = "lk-qemu %s " % token
    start_at = done_at = power_at = None
    for t, line in run.serial:
        if start_at is None and line.startswith(mark + "start"):
            start_at = t
        elif done_at is None and line.startswith(mark + "done"):
            done_at = t
        elif done_at is not None and power_at is None and POWER_DOWN in line:
            power_at = t
    last = run.serial[-1][0] if run.serial else run.t0
    if done_at is not None and power_at is not None:
        killed = "no" if power_at - done_at <= guest["poweroff_timeout"] else "limit"
        last = power_at
    elif any(
        "reached end of file" in e or "Connection closed" in e for e in run.errors
    ):
        killed = "no"  # qemu exited by itself (a panic, a reboot)
    elif run.job and run.job.get("error_type") == "Canceled":
        killed = "interrupted"
    elif done_at is not None:
        killed = "poweroff"
    else:
        killed = "limit"
    rel = lambda t: "%.2f" % (t - run.t0) if t is not None else "-"
    head = [
        boot.host_line(token, "guest=%s kernel=%s" % (guest["name"], kernel)),
        boot.host_line(token, "tests=%s" % ",".join(n for n, _ in names)),
        boot.host_line(token, "limit=%d" % limit),
        boot.host_line(token, "command=%s (LAVA job)" % quote([LAVA_RUN, job_path])),
    ]
    body = [line + "\n" for _, line in run.serial]
    end = boot.host_line(
        token,
        "end status=unknown killed=%s elapsed=%.2f start=%s done=%s"
        % (killed, last - run.t0, rel(start_at), rel(done_at)),
    )
    return "".join(head + body + ["\n", end])


def judge_run(
    run: Run,
    guest: common.Guest,
    token: str,
    kernel: str,
    names: Sequence[tuple[str, int]],
    limit: int,
    job_path: str,
    log_path: str,
    dispatcher_log: str,
) -> list[tuple[str, str, str]]:
    """The rows of a LAVA run: LAVA's job result, then `lk qemu`'s rows on
    the serial log (written to log_path), then whether the results LAVA's
    monitor recorded agree with them."""
    g = "lava %s" % guest["name"]
    rows = []
    why = run.job_error()
    if why:
        rows.append(("FAIL", "%s: job" % g, "%s; log at %s" % (why, dispatcher_log)))
    else:
        rows.append(("PASS", "%s: job" % g, "LAVA job complete (lava-run)"))
    if not run.booted:
        rows.append(
            (
                "FAIL",
                "%s: boot" % g,
                "LAVA did not start QEMU: %s; log at %s"
                % (why or "no boot command", dispatcher_log),
            )
        )
        rows.extend(verdict.judge_expects(guest, None, dispatcher_log, "lava"))
        return rows
    with open(log_path, "w") as f:
        f.write(serial_log(run, guest, token, kernel, names, limit, job_path))
    r = serial.parse_log_file(log_path)
    judged = verdict.judge(r, "lava")
    rows.extend(judged)
    rows.extend(verdict.judge_expects(guest, r, log_path, "lava"))
    if r.start is None:
        return rows  # no test ran: nothing for LAVA's results to agree with
    mine = {name: status for status, name, _ in judged}
    lava_cases = run.cases(monitor(guest, token)["name"])
    wrong = []
    for name, _ in names:
        status = mine.get(verdict.result_name(g, name))
        said = lava_cases.get(name)
        if said is None:
            if status == "PASS":
                wrong.append("%s: PASS here, no result in LAVA" % name)
        elif said.upper() != status:
            wrong.append("%s: %s here, %s in LAVA" % (name, status, said))
    for name in sorted(set(lava_cases) - set(n for n, _ in names)):
        wrong.append("%s: a LAVA result of no listed test" % name)
    if wrong:
        rows.append(
            (
                "FAIL",
                "%s: lava results" % g,
                "LAVA's monitor disagrees: %s; log at %s"
                % ("; ".join(wrong), dispatcher_log),
            )
        )
    else:
        rows.append(
            (
                "PASS",
                "%s: lava results" % g,
                "LAVA's monitor recorded %d results, as judged here" % len(lava_cases),
            )
        )
    return rows


def root_prefix() -> list[str]:
    """lava-run must run as root: sudo -n when this is not root."""
    return [] if os.geteuid() == 0 else ["sudo", "-n"]


def have_lava() -> str | None:
    """Why LAVA's tools cannot run here (None when they can)."""
    for path in (shutil.which(LAVA_RUN), LAVA_SCHEMA, DEBIAN_PYTHON):
        if not path or not os.path.exists(path):
            return (
                "Debian's lava-dispatcher is not installed (no %s; "
                "scripts/lk deps installs it)" % (path or LAVA_RUN)
            )
    return None


def check_schema(job_paths: Sequence[str]) -> dict[str, str]:
    """{job path: why} for the jobs that LAVA's job schema (lava-server's,
    strict) rejects."""
    if not job_paths:
        return {}
    r = subprocess.run(
        [DEBIAN_PYTHON, LAVA_SCHEMA, "job", "--strict"] + list(job_paths),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    bad: dict[str, str] = {}
    current = None
    for line in r.stdout.splitlines():
        if line.startswith("* "):
            current = line[2:].split(" [", 1)[0].strip()
        elif current and line.strip():
            bad[current] = (bad.get(current, "") + " " + line.strip()).strip()
    if r.returncode and not bad:
        bad = {p: r.stdout.strip()[-300:] or "lava-schema.py failed" for p in job_paths}
    return bad


def job_id(guest: common.Guest) -> str:
    """A job id of its own: lava-run works in /var/lib/lava/dispatcher/tmp/ID."""
    return "lk-%s-%d-%s" % (guest["name"], os.getpid(), secrets.token_hex(3))


def check_dispatcher(
    job_path: str, device_path: str, work: str, log_path: str, guest: common.Guest
) -> str:
    """lava-run --validate: "" when the dispatcher accepts the job on the
    device, else its reason."""
    jid = job_id(guest)
    cmd = root_prefix() + [
        LAVA_RUN,
        "--validate",
        "--job-id",
        jid,
        "--output-dir",
        work,
        "--device",
        device_path,
        job_path,
    ]
    with open(log_path, "w") as f:
        r = subprocess.run(
            cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    # A run removes its directory there; a validation leaves it (empty).
    subprocess.run(
        root_prefix() + ["rm", "-rf", os.path.join(DISPATCHER_TMP, jid)],
        stdin=subprocess.DEVNULL,
    )
    with open(log_path, errors="replace") as f:
        text = f.read()
    why = Run(read_records(text)).job_error()
    if not why and r.returncode:
        why = "lava-run exited %d: %s" % (r.returncode, text.strip()[-200:])
    return why


def run_dispatcher(
    job_path: str,
    device_path: str,
    work: str,
    log_path: str,
    guest: common.Guest,
    timeout: int,
) -> Run:
    """lava-run the job on the device; its log to log_path.  It is killed
    (with its QEMU) after timeout seconds."""
    jid = job_id(guest)
    cmd = root_prefix() + [
        LAVA_RUN,
        "--job-id",
        jid,
        "--output-dir",
        work,
        "--device",
        device_path,
        job_path,
    ]
    with open(log_path, "w") as f, boot.sigterm_unwinds():
        proc = subprocess.Popen(
            cmd,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
                # What a killed lava-run did not clean up (the images).
                subprocess.run(
                    root_prefix() + ["rm", "-rf", os.path.join(DISPATCHER_TMP, jid)],
                    stdin=subprocess.DEVNULL,
                )
    with open(log_path, errors="replace") as f:
        return Run(read_records(f.read()))


class Generated:
    """A guest's job as written: its files and what its rows need."""

    def __init__(
        self,
        guest: common.Guest,
        job: str,
        device: str,
        token: str,
        kernel: str,
        names: list[tuple[str, int]],
        limit: int,
        timeout: int,
    ) -> None:
        self.guest, self.job, self.device, self.token = guest, job, device, token
        self.kernel, self.names, self.limit = kernel, names, limit
        self.timeout = timeout


def write_job(
    guest: common.Guest,
    kernel: str,
    initramfs: str,
    names: list[tuple[str, int]],
    lava_dir: str,
    artifacts_url: str | None = None,
    scale: int = 1,
    kmemleak: bool = False,
) -> Generated:
    """Copy the kernel and initramfs to <lava_dir>/artifacts/GUEST/, and
    write the job (jobs/GUEST.yaml; its artifacts at artifacts_url/GUEST/,
    or the copies' file:// URLs) and the device (devices/GUEST.yaml)."""
    name = guest["name"]
    art = os.path.join(lava_dir, "artifacts", name)
    os.makedirs(art, exist_ok=True)
    urls = []
    for src in (kernel, initramfs):
        dest = os.path.join(art, os.path.basename(src))
        shutil.copyfile(src, dest)
        if artifacts_url:
            urls.append(
                "%s/%s/%s" % (artifacts_url.rstrip("/"), name, os.path.basename(src))
            )
        else:
            urls.append("file://" + os.path.abspath(dest))
    token = secrets.token_hex(8)
    job = make_job(guest, urls[0], urls[1], names, token, scale, kmemleak)
    paths = []
    for sub, data in (("jobs", job), ("devices", make_device(guest))):
        path = os.path.join(lava_dir, sub, name + ".yaml")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(
                "# LAVA %s of the guest %s, written by scripts/lk lava from "
                "%s\n" % (sub[:-1], name, os.path.relpath(guest["path"], common.TOP))
            )
            f.write(to_yaml(data))
        paths.append(path)
    return Generated(
        guest,
        paths[0],
        paths[1],
        token,
        os.path.join(art, os.path.basename(kernel)),
        names,
        int(job["metadata"]["lk.limit"]),
        job["timeouts"]["job"]["seconds"],
    )


def validate(
    gens: Sequence[Generated],
    work: str,
    results: common.Results,
    dispatcher: bool = True,
) -> list[Generated]:
    """A row per job: LAVA's schema, then (with dispatcher) lava-run
    --validate; returns the jobs that passed."""
    missing = have_lava()
    if missing:
        for gen in gens:
            results.failed("lava %s: job validates" % gen.guest["name"], missing)
        return []
    schema = check_schema([gen.job for gen in gens])
    good = []
    for gen in gens:
        name = "lava %s: job validates" % gen.guest["name"]
        if gen.job in schema:
            results.failed(
                name, "LAVA's job schema rejects %s: %s" % (gen.job, schema[gen.job])
            )
            continue
        if dispatcher:
            d = os.path.join(work, "validate-%s" % gen.guest["name"])
            why = check_dispatcher(gen.job, gen.device, d, d + ".log", gen.guest)
            if why:
                results.failed(
                    name, "lava-run --validate: %s; log at %s.log" % (why, d)
                )
                continue
        results.passed(
            name, "%s: schema%s" % (gen.job, " and dispatcher" if dispatcher else "")
        )
        good.append(gen)
    return good


def run_job(gen: Generated, work: str, logs: str, results: common.Results) -> None:
    """lava-run a validated job here; its rows to results."""
    name = gen.guest["name"]
    dlog = os.path.join(logs, "lava-%s-dispatcher.log" % name)
    common.log("lava %s: lava-run %s (up to %ds)" % (name, gen.job, gen.timeout))
    run = run_dispatcher(
        gen.job,
        gen.device,
        os.path.join(work, "run-%s" % name),
        dlog,
        gen.guest,
        gen.timeout + 60,
    )
    for row in judge_run(
        run,
        gen.guest,
        gen.token,
        gen.kernel,
        gen.names,
        gen.limit,
        gen.job,
        os.path.join(logs, "lava-%s.log" % name),
        dlog,
    ):
        results.add(*row)


def submit(job_path: str, uri: str, name: str, results: common.Results) -> None:
    """lavacli jobs submit: a row with the job id, or with lavacli's
    error."""
    if not shutil.which(LAVACLI):
        results.failed("lava %s: submit" % name, "no lavacli (scripts/lk deps)")
        return
    r = subprocess.run(
        [LAVACLI, "--uri", uri, "jobs", "submit", job_path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    ids = r.stdout.split()
    where = re.sub(r"//[^/@]*@", "//", uri)  # no token in the rows
    if r.returncode or not ids:
        results.failed(
            "lava %s: submit" % name,
            "lavacli jobs submit to %s: %s"
            % (
                where,
                (r.stderr or r.stdout).strip()[-300:] or "exit %d" % r.returncode,
            ),
        )
    else:
        results.passed(
            "lava %s: submit" % name, "job %s at %s" % (", ".join(ids), where)
        )


def submitted_jobs(lava_dir: str, names: Sequence[str] | None) -> list[Generated]:
    """The jobs that an earlier `lk lava` wrote to lava_dir, to submit."""
    jobs = os.path.join(lava_dir, "jobs")
    if not names:
        names = (
            sorted(fn[:-5] for fn in os.listdir(jobs) if fn.endswith(".yaml"))
            if os.path.isdir(jobs)
            else []
        )
    if not names:
        raise common.Failure(
            "no jobs in %s: write them with 'scripts/lk lava --artifacts-url "
            "URL' first" % jobs
        )
    gens = []
    for n in names:
        job = os.path.join(jobs, n + ".yaml")
        if not os.path.exists(job):
            raise common.Failure(
                "no %s: write it with 'scripts/lk lava --guest %s "
                "--artifacts-url URL' first" % (job, n)
            )
        device = os.path.join(lava_dir, "devices", n + ".yaml")
        gens.append(Generated(qemu_conf.load_guest(n), job, device, "", "", [], 0, 0))
    return gens


def do_lava(args: argparse.Namespace, results: common.Results) -> None:
    """`lk lava`: write (and validate) the jobs of the guests with a built
    kernel, or of --guest; run --run GUEST here; or submit the jobs
    written before (--submit URI)."""
    out = common.out_dir(args)
    lava_dir = os.path.abspath(args.output or os.path.join(out, "lava"))
    work = os.path.join(lava_dir, "work")
    os.makedirs(work, exist_ok=True)
    if args.submit:
        gens = submitted_jobs(lava_dir, args.guest)
        for gen in validate(gens, work, results):
            submit(gen.job, args.submit, gen.guest["name"], results)
        return
    tree, scratch, logs = qemu.places(out)
    specs = qemu_conf.read_selftests()
    names = list(args.guest or [])
    for g in args.run or ():
        if g not in names:
            names.append(g)
    if not names:
        # Those whose kernel has been built, as `lk qemu` boots them.
        for g in qemu_conf.guest_names():
            guest = qemu_conf.load_guest(g)
            if os.path.isfile(qemu.guest_kernel(guest)[0]):
                names.append(g)
        if not names:
            raise common.Failure(
                "no guest kernel has been built; run 'scripts/lk build "
                "--target i386' (or name --guest) first"
            )
    guests = qemu.load_guests(names, specs)
    cache: dict[Any, Any] = {}
    gens = []
    for guest in guests:
        p = qemu.prepare_guest(
            guest, specs, tree, scratch, logs, results, built_cache=cache, prefix="lava"
        )
        if p is None:
            continue
        gens.append(
            write_job(
                guest,
                p.kernel,
                p.initramfs,
                p.names,
                lava_dir,
                args.artifacts_url,
                p.scale,
                p.kmemleak,
            )
        )
    for gen in validate(gens, work, results):
        if gen.guest["name"] in (args.run or ()):
            run_job(gen, work, logs, results)
