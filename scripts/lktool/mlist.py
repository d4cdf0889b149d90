# SPDX-License-Identifier: GPL-2.0
"""A mailing list of our own on loopback, to try the sending of the topics
before the real lists: Debian's exim4 (its daemon, in the foreground, with
a configuration, spool and logs of its own) takes the mails over SMTP and
delivers every mail for a list address to that list's public-inbox inbox
with public-inbox-mda; public-inbox-httpd serves the inboxes, and an
extindex of them all at /all/, the way lore.kernel.org does, so that b4
fetches threads from it by message-id.

Nothing leaves the machine: the daemon listens on 127.0.0.1 only and its
configuration has no transport that could reach another host.  Mail to
anyone who is not a list (the maintainers, the reviewers) goes to one
local mbox file, with the addresses it was for.  A watchdog process stops
the servers when the process that started them ends, or after a
lifetime, whichever comes first.
"""

from __future__ import annotations

import argparse

import email
import email.policy
import email.utils
import gzip
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from dataclasses import dataclass
from email.message import EmailMessage

from . import common, series

# Where the servers keep their files, under $LK_OUT.
LIST_DIR = "list"
# How long the servers live at most (minutes), however they were started.
DEFAULT_MINUTES = 60
# The user the servers run as when lk runs as root: exim4 starts its
# daemon only for root, its own user or the members of its group, and
# never delivers as root.
EXIM_USER = "Debian-exim"
# The programs the list needs, and the Debian packages that have them.
PROGRAMS = {
    "exim4": "exim4-daemon-light",
    "public-inbox-mda": "public-inbox",
    "public-inbox-httpd": "public-inbox",
    "public-inbox-init": "public-inbox",
    "public-inbox-extindex": "public-inbox",
}


def missing_programs() -> list[str]:
    """The Debian packages of PROGRAMS that are not installed."""
    return sorted({pkg for prog, pkg in PROGRAMS.items() if not shutil.which(prog)})


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def inbox_names(lists: list[str]) -> dict[str, str]:
    """{address: inbox name}: the local part of each address, with the
    first label of its domain after it where two lists share a local
    part (devel@a.org, devel@b.org: devel-a, devel-b)."""
    lists = sorted(set(a.lower() for a in lists))
    local = [a.partition("@")[0] for a in lists]
    names = {}
    for a, lp in zip(lists, local):
        name = lp
        if local.count(lp) > 1:
            name += "-" + a.partition("@")[2].split(".")[0]
        names[a] = re.sub(r"[^a-z0-9._-]", "-", name)
    return names


def exim_config(root: str, smtp_port: int, lists: list[str]) -> str:
    """exim4's run-time configuration for the list in root."""
    addrs = " : ".join(sorted(set(a.lower() for a in lists)))
    env = " : ".join(
        [
            "PI_CONFIG=%s/pi-config" % root,
            "PI_EMERGENCY=%s/emergency" % root,
            "HOME=%s" % root,
            "PATH=/usr/bin:/bin",
            "ORIGINAL_RECIPIENT=${lc:$local_part@$domain}",
        ]
    )
    return """\
# Written by scripts/lk list: a list server on 127.0.0.1 that delivers to
# public-inbox inboxes and to one local mbox, and nowhere else.
primary_hostname = lists.localhost
qualify_domain = lists.localhost
spool_directory = {root}/spool
log_file_path = {root}/log/%slog
pid_file_path = {root}/exim.pid
daemon_smtp_ports = {port}
local_interfaces = <; 127.0.0.1
keep_environment =
tls_advertise_hosts =
host_lookup =
rfc1413_hosts =
message_size_limit = 20M
acl_smtp_rcpt = acl_rcpt
log_selector = +received_recipients +subject

begin acl

acl_rcpt:
  accept hosts = 127.0.0.1
  deny message = this list server takes mail from 127.0.0.1 only

begin routers

lists:
  driver = accept
  condition = ${{if inlist{{${{lc:$local_part@$domain}}}}{{{addrs}}}}}
  transport = inbox

people:
  driver = accept
  transport = people

begin transports

inbox:
  driver = pipe
  command = public-inbox-mda
  environment = {env}
  return_fail_output
  log_output
  timeout = 5m

people:
  driver = appendfile
  file = {root}/people.mbox
  envelope_to_add

begin retry

* * F,1h,30s
""".format(
        root=root, port=smtp_port, addrs=addrs, env=env
    )


class LocalList:
    """exim4 and public-inbox on loopback, for the list addresses given:
    start() them, stop() them (or use a `with` block)."""

    def __init__(
        self,
        root: str | None,
        lists: list[str],
        smtp_port: int = 0,
        http_port: int = 0,
        minutes: float = DEFAULT_MINUTES,
    ) -> None:
        # Under /tmp by default: the servers' user must reach it, and
        # $LK_OUT is often in a home that only its owner may enter.
        self.own_root = root is None
        self.root = os.path.abspath(root or tempfile.mkdtemp(prefix="lk-list-"))
        self.lists = sorted(set(a.lower() for a in lists))
        self.names = inbox_names(self.lists)
        self.smtp_port = smtp_port or free_port()
        self.http_port = http_port or free_port()
        self.minutes = minutes
        self.procs: list[subprocess.Popen[bytes]] = []
        self.watchdog: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return "http://127.0.0.1:%d" % self.http_port

    def as_user(self) -> list[str]:
        """The prefix that runs a command as the servers' user."""
        if os.geteuid() != 0:
            return []
        return [
            "setpriv",
            "--reuid",
            EXIM_USER,
            "--regid",
            EXIM_USER,
            "--clear-groups",
            "--",
        ]

    def env(self) -> dict[str, str]:
        return dict(
            PATH="/usr/sbin:/usr/bin:/sbin:/bin",
            HOME=self.root,
            LANG="C.UTF-8",
            PI_CONFIG=os.path.join(self.root, "pi-config"),
            PI_EMERGENCY=os.path.join(self.root, "emergency"),
        )

    def run(self, cmd: list[str]) -> None:
        common.run(self.as_user() + cmd, env=self.env(), capture=True)

    def start(self) -> LocalList:
        missing = missing_programs()
        if missing:
            raise common.Failure(
                "the local list needs %s: run 'scripts/lk deps'" % " ".join(missing)
            )
        if os.geteuid() != 0:
            import grp

            try:
                group = grp.getgrnam(EXIM_USER)
            except KeyError:
                group = None
            if group is None or group.gr_gid not in os.getgroups():
                raise common.Failure(
                    "exim4 starts its daemon only for root and the members of "
                    "group %s: run lk as root, or 'sudo adduser %s %s' and log "
                    "in again" % (EXIM_USER, os.environ.get("USER", "$USER"), EXIM_USER)
                )
        if os.path.exists(self.root) and not self.own_root:
            shutil.rmtree(self.root)
        for d in ("spool", "log", "emergency", "inboxes"):
            os.makedirs(os.path.join(self.root, d))
        with open(os.path.join(self.root, "exim.conf"), "w") as f:
            f.write(exim_config(self.root, self.smtp_port, self.lists))
        if os.geteuid() == 0:
            common.run(["chown", "-R", EXIM_USER + ":", self.root])
            os.chmod(self.root, 0o755)
        for addr in self.lists:
            name = self.names[addr]
            self.run(
                [
                    "public-inbox-init",
                    "-V2",
                    "-L",
                    "basic",
                    name,
                    os.path.join(self.root, "inboxes", name),
                    "%s/%s" % (self.url, name),
                    addr,
                ]
            )
        cfg = os.path.join(self.root, "pi-config")
        for key, value in (
            ("publicinboxmda.spamcheck", "none"),
            ("extindex.all.topdir", os.path.join(self.root, "all")),
            ("publicinbox.wwwlisting", "all"),
        ):
            self.run(["git", "config", "-f", cfg, key, value])
        all_dir = os.path.join(self.root, "all")
        self.run(["public-inbox-extindex", "--no-fsync", "--all", all_dir])
        try:
            self.spawn(
                "exim",
                ["exim4", "-C", os.path.join(self.root, "exim.conf"), "-bdf", "-q30s"],
            )
            # extindex follows the inboxes, for the archive's /all/.
            self.spawn(
                "extindex",
                [
                    "public-inbox-extindex",
                    "--no-fsync",
                    "--watch",
                    "--commit-interval=1",
                    "--all",
                    all_dir,
                ],
            )
            self.spawn(
                "httpd",
                [
                    "public-inbox-httpd",
                    "-W0",
                    "-l",
                    "http://127.0.0.1:%d" % self.http_port,
                ],
            )
            self.start_watchdog()
            self.wait_listening()
        except BaseException:
            self.stop()
            raise
        return self

    def spawn(self, name: str, cmd: list[str]) -> None:
        """Start a server in the foreground of a session of its own (so
        that stop() ends it with everything it forked)."""
        log = open(os.path.join(self.root, "log", name + ".out"), "wb")
        self.procs.append(
            subprocess.Popen(
                self.as_user() + cmd,
                env=self.env(),
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        log.close()

    def start_watchdog(self) -> None:
        """A process that ends the servers when this one ends or the
        lifetime is over, whichever is first."""
        groups = " ".join("-%d" % p.pid for p in self.procs)
        script = (
            "end=$(( $(date +%%s) + %d ))\n"
            "while kill -0 %d 2>/dev/null && [ $(date +%%s) -lt $end ]; do\n"
            "\tsleep 1\n"
            "done\n"
            "kill -TERM %s 2>/dev/null\n"
            "sleep 2\n"
            "kill -KILL %s 2>/dev/null\n"
            "%s"
            "exit 0\n"
            % (
                int(self.minutes * 60),
                os.getpid(),
                groups,
                groups,
                "rm -rf %s\n" % shlex.quote(self.root) if self.own_root else "",
            )
        )
        self.watchdog = subprocess.Popen(
            ["sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def wait_listening(self, timeout: float = 30) -> None:
        end = time.monotonic() + timeout
        for port, name in ((self.smtp_port, "exim"), (self.http_port, "httpd")):
            while True:
                dead = [p for p in self.procs if p.poll() is not None]
                if dead:
                    raise common.Failure(
                        "the local list's %s exited with status %d; see %s"
                        % (name, dead[0].returncode, os.path.join(self.root, "log"))
                    )
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > end:
                        raise common.Failure(
                            "the local list's %s does not listen on 127.0.0.1:%d "
                            "after %ds; see %s"
                            % (name, port, timeout, os.path.join(self.root, "log"))
                        )
                    time.sleep(0.2)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs = []
        if self.watchdog is not None and self.watchdog.poll() is None:
            self.watchdog.kill()
            self.watchdog.wait()
        self.watchdog = None
        if self.own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalList:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def state(self) -> dict[str, object]:
        return {
            "pid": os.getpid(),
            "smtp": self.smtp_port,
            "http": self.http_port,
            "url": self.url,
            "root": self.root,
            "lists": self.names,
        }


def fetch(url: str, data: bytes | None = None) -> bytes | None:
    """The body at url (gunzipped), or None for a 404."""
    try:
        with urllib.request.urlopen(url, data=data, timeout=30) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise common.Failure("GET %s: HTTP %d" % (url, e.code))
    return gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body


def messages(mbox: bytes) -> list[EmailMessage]:
    """The mails of an mboxrd text, as public-inbox serves one."""
    out = []
    for part in re.split(rb"(?m)^From mboxrd@z [^\n]*\n", mbox):
        if not part.strip():
            continue
        part = re.sub(rb"(?m)^>(>*From )", rb"\1", part)
        msg = email.message_from_bytes(part, policy=email.policy.default)
        assert isinstance(msg, EmailMessage)
        out.append(msg)
    return out


def search(url: str, query: str) -> list[EmailMessage]:
    """The mails of the archive at url that a search finds, as b4 asks
    for them (b4.searchmask)."""
    body = fetch(
        "%s/all/?x=m&t=1&q=%s" % (url, urllib.parse.quote_plus(query)), data=b""
    )
    return messages(body) if body else []


def received(root: str) -> int:
    """How many mails the list's exim4 has taken in so far."""
    try:
        with open(os.path.join(root, "log", "mainlog"), errors="replace") as f:
            return sum(1 for l in f if " <= " in l)
    except FileNotFoundError:
        return 0


def thread(url: str, msgid: str) -> list[EmailMessage]:
    """The thread of msgid as the archive at url serves it (t.mbox.gz)."""
    body = fetch("%s/all/%s/t.mbox.gz" % (url, msgid.strip("<>")))
    return messages(body) if body else []


def wait_for(url: str, msgids: list[str], timeout: float = 120) -> None:
    """Wait until the archive at url serves every one of msgids."""
    end = time.monotonic() + timeout
    left = list(msgids)
    while left:
        left = [
            m for m in left if fetch("%s/all/%s/raw" % (url, m.strip("<>"))) is None
        ]
        if not left:
            return
        if time.monotonic() > end:
            raise common.Failure(
                "the archive at %s/all/ still lacks %d of %d mails after %ds, "
                "first <%s>" % (url, len(left), len(msgids), timeout, left[0])
            )
        time.sleep(0.5)


def topic_lists(
    tree: str, series_dir: str, sections: list[str], entries: list[series.PatchEntry]
) -> list[str]:
    """The lists the sections go to: get_maintainer.pl's for their patch
    files in tree, and those of their cover letters' To:/Cc: addresses
    that MAINTAINERS names as lists (L:)."""
    files = [
        os.path.join(series_dir, "patches", e.path)
        for e in entries
        if e.section in sections
    ]
    lists: set[str] = set()
    if files:
        r = common.run(
            [
                "perl",
                "scripts/get_maintainer.pl",
                "--no-git",
                "--no-git-fallback",
                "--no-m",
                "--no-r",
                "--l",
                "--no-rolestats",
            ]
            + files,
            cwd=tree,
            capture=True,
        )
        lists.update(l.strip().lower() for l in r.stdout.splitlines() if "@" in l)
    known: set[str] = set()
    with open(
        os.path.join(tree, "MAINTAINERS"), encoding="utf-8", errors="replace"
    ) as f:
        for line in f:
            m = re.match(r"L:\s*(\S+@\S+)", line)
            if m:
                known.add(m.group(1).lower())
    for sec in sections:
        fields, _ = series.read_cover(
            os.path.join(series_dir, "patches", sec, "cover-letter")
        )
        for key in ("to", "cc"):
            for a in re.findall(r"[\w.+-]+@[\w.-]+", fields.get(key, "")):
                if a.lower() in known:
                    lists.add(a.lower())
    return sorted(lists)


def state_path(args: argparse.Namespace) -> str:
    return os.path.join(common.out_dir(args), LIST_DIR, "state.json")


def running_list(args: argparse.Namespace) -> dict[str, object]:
    """The state of the local list `lk list` runs for this work directory;
    Failure if none runs."""
    path = state_path(args)
    hint = (
        "no local list is running for %s: start one with 'scripts/lk list' "
        "(in another terminal; it stops by itself)" % common.out_dir(args)
    )
    try:
        with open(path) as f:
            st = json.load(f)
        os.kill(int(st["pid"]), 0)
        socket.create_connection(("127.0.0.1", int(st["smtp"])), timeout=2).close()
    except (OSError, ValueError, KeyError):
        raise common.Failure(hint)
    return dict(st)


def cmd_list(args: argparse.Namespace) -> int:
    """`lk list`: run the local list for the topics' lists until the
    lifetime is over or lk is stopped (Ctrl-C, SIGTERM)."""
    series_dir = os.path.abspath(args.series_dir)
    entries = series.read_series(series_dir)
    sections = series.topic_sections(entries, args.topics)
    tree = os.path.join(common.out_dir(args), "tree")
    if not os.path.exists(os.path.join(tree, "MAINTAINERS")):
        raise common.Failure("no applied tree at %s; run 'scripts/lk apply'" % tree)
    lists = topic_lists(tree, series_dir, sections, entries) + (args.list or [])
    os.makedirs(os.path.dirname(state_path(args)), exist_ok=True)
    ll = LocalList(None, lists, args.smtp_port or 0, args.http_port or 0, args.minutes)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    with ll:
        with open(state_path(args), "w") as f:
            json.dump(ll.state(), f, indent=1)
        common.log("list: %d inboxes: %s" % (len(ll.names), " ".join(ll.lists)))
        common.log("list: files in %s (removed when it stops)" % ll.root)
        common.log(
            "list: ready: SMTP on 127.0.0.1:%d, archive at %s/all/ "
            "(for %g minutes, or until Ctrl-C)" % (ll.smtp_port, ll.url, args.minutes)
        )
        sys.stdout.flush()
        try:
            end = time.monotonic() + args.minutes * 60
            while time.monotonic() < end:
                if any(p.poll() is not None for p in ll.procs):
                    raise common.Failure(
                        "a server of the local list stopped; see %s/log" % ll.root
                    )
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        finally:
            if os.path.exists(state_path(args)):
                os.unlink(state_path(args))
    common.log("list: stopped")
    return 0


# What lk adds to `git send-email`, for the real lists and the local one
# alike: the mails as lk wrote and checked them, to the To: and Cc: of
# their headers and no one else (not the people of their trailers), with
# the threading b4 gave them.
SEND_EMAIL = [
    "git",
    "send-email",
    "--confirm=never",
    "--no-thread",
    "--suppress-cc=author",
    "--suppress-cc=sob",
    "--suppress-cc=bodycc",
    "--suppress-cc=misc-by",
    "--suppress-cc=cccmd",
]
# A trailer that a reviewer gives (b4 trailers -u collects them).
REVIEW_TRAILER_RE = re.compile(
    r"^(?!Signed-off-by:)([A-Z][A-Za-z-]*-by|Link|Closes): \S.*$", re.M
)


@dataclass
class Prepared:
    """A section whose mails lk send wrote: where, the commit they apply
    to, and the tree the series' own patches give there."""

    section: str
    mails: str
    start: str
    want: str | None

    def files(self) -> list[str]:
        return [
            os.path.join(self.mails, f)
            for f in sorted(os.listdir(self.mails))
            if f.endswith(".eml")
        ]


def quoted(argv: list[str]) -> list[str]:
    return [shlex.quote(a) for a in argv]


def send_email_argv(
    sender: str, files: list[str], smtp_port: int | None = None
) -> list[str]:
    """The git send-email command that sends files: through the sender's
    own sendemail.* settings, or with smtp_port through the local list
    (the only difference)."""
    argv = SEND_EMAIL + ["--from", sender]
    if smtp_port:
        argv += [
            "--smtp-server=127.0.0.1",
            "--smtp-server-port=%d" % smtp_port,
            "--smtp-encryption=none",
        ]
    return argv + files


def message_id(path: str) -> str:
    with open(path, "rb") as f:
        msg = email.message_from_binary_file(f, policy=email.policy.default)
    mid = str(msg.get("Message-Id", "")).strip().strip("<>")
    if not mid:
        raise common.Failure("%s has no Message-Id:" % path)
    return mid


def subject(msg: EmailMessage | str) -> str:
    """The Subject: of a mail (or of the file at a path), unfolded."""
    if isinstance(msg, str):
        with open(msg, "rb") as f:
            parsed = email.message_from_binary_file(f, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        msg = parsed
    return re.sub(r"\s+", " ", str(msg.get("Subject", ""))).strip()


def collected_trailers(ws: str, branch: str) -> dict[str, list[str]]:
    """{subject: trailers} of the commits of an existing prep branch that
    carry review trailers (Reviewed-by:, Tested-by:, Acked-by:, Link:, ...)."""
    r = common.run(
        ["git", "log", "--format=%x00%B", "v4.20.." + branch],
        cwd=ws,
        capture=True,
        check=False,
    )
    out: dict[str, list[str]] = {}
    if r.returncode:
        return out
    for msg in r.stdout.split("\0")[1:]:
        lines = msg.strip().splitlines()
        if not lines:
            continue
        got = [l for l in lines if REVIEW_TRAILER_RE.match(l)]
        if got:
            out[lines[0].strip()] = got
    return out


def with_trailers(msg: str, collected: dict[str, list[str]]) -> str:
    """msg, which ends with the sender's Signed-off-by:, with the trailers
    collected for its subject that it lacks just above that line (where
    b4 trailers -u puts them)."""
    lines = msg.rstrip("\n").split("\n")
    extra = [t for t in collected.get(lines[0].strip(), []) if t not in lines]
    return "\n".join(lines[:-1] + extra + lines[-1:]) + "\n"


def b4_config(url: str) -> dict[str, str]:
    """b4's settings for an archive at url, as lore's are for lore."""
    return {
        "b4.midmask": url + "/all/%s",
        "b4.linkmask": url + "/all/%s",
        "b4.searchmask": url + "/all/?x=m&t=1&q=%s",
    }


def by_date(msgs: list[EmailMessage]) -> list[EmailMessage]:
    """msgs in the order of their Date: (a reader's order; the archive
    keeps the order of delivery, which parallel deliveries shuffle)."""

    def when(m: EmailMessage) -> float:
        t = email.utils.parsedate_tz(str(m["Date"]))
        return float(email.utils.mktime_tz(t)) if t else 0.0

    return sorted(msgs, key=when)


def thread_problem(served: list[EmailMessage], files: list[str]) -> str | None:
    """What is wrong with the thread the archive serves for the mails in
    files (sent in that order), or None: every mail there, in the same
    order by date, every one after the first a reply to the first.  (The
    replies of others in the thread are not looked at.)"""
    want = [subject(f) for f in files]
    ids = set("<%s>" % message_id(f) for f in files)
    served = by_date([m for m in served if str(m["Message-Id"]).strip() in ids])
    if not served:
        return "serves none of the %d mails sent" % len(files)
    got = [subject(m) for m in served]
    if got != want:
        return "serves %d mails (%s), not the %d sent (%s)" % (
            len(got),
            "; ".join(got),
            len(want),
            "; ".join(want),
        )
    first = str(served[0]["Message-Id"]).strip()
    for m in served[1:]:
        if str(m.get("In-Reply-To", "")).strip() != first:
            return "%r is not a reply to %s" % (subject(m), first)
    return None


def forget_local_list(ws: str) -> None:
    """Let b4 in the workspace read lore again, not a local list."""
    for key in b4_config(""):
        common.git(["config", "--unset-all", key], cwd=ws, check=False)


def send_to_local_list(
    args: argparse.Namespace,
    ws: str,
    sender: str,
    prepared: list[Prepared],
    results: common.Results,
    env: dict[str, str],
) -> None:
    """Send the prepared sections to the local list of `lk list` with
    git send-email, then check what its archive serves: every thread
    whole and in order, and b4 am of it by the first mail's message-id
    giving the tree of the series' patches."""
    from . import topics

    if not results.ok():
        results.failed(
            "list: send",
            "nothing was sent: %d check(s) above failed" % results.count("FAIL"),
        )
        return
    st = running_list(args)
    url, port = str(st["url"]), int(str(st["smtp"]))
    for key, value in b4_config(url).items():
        common.git(["config", key, value], cwd=ws)
    for p in prepared:
        files = p.files()
        ids = [message_id(f) for f in files]
        what = "list: %s" % p.section
        r = common.run(
            send_email_argv(sender, files, port), cwd=ws, capture=True, check=False
        )
        if r.returncode:
            results.failed(
                what,
                "git send-email to 127.0.0.1:%d failed: %s"
                % (port, (r.stdout + r.stderr).strip()[-600:]),
            )
            return
        wait_for(url, ids)
        problem = thread_problem(thread(url, ids[0]), files)
        if problem:
            results.failed(what + " thread", "%s/all/%s/: %s" % (url, ids[0], problem))
            continue
        results.passed(
            what + " thread",
            "%s/all/%s/ has the %d mails, in order by date, each a reply to the "
            "first" % (url, ids[0], len(files)),
        )
        with tempfile.TemporaryDirectory() as tmp:
            r = common.run(
                ["b4", "am", "-C", "-o", tmp, ids[0]],
                cwd=ws,
                env=env,
                capture=True,
                check=False,
            )
            mbx = [f for f in os.listdir(tmp) if f.endswith(".mbx")]
            got = None
            if not r.returncode and len(mbx) == 1:
                with open(os.path.join(tmp, mbx[0]), encoding="utf-8") as f:
                    got = topics.am_tree(ws, p.start, f.read())
        if got is None or got != p.want:
            results.failed(
                what + " b4 am",
                "b4 am %s from the archive gives %s, patches/%s/ %s%s"
                % (
                    ids[0],
                    "no tree" if got is None else "tree " + got[:12],
                    p.section,
                    str(p.want)[:12],
                    ("\n" + r.stderr.strip()[-600:]) if r.returncode else "",
                ),
            )
        else:
            results.passed(
                what + " b4 am",
                "b4 am %s from the archive gives the tree of patches/%s/ (%s)"
                % (ids[0], p.section, got[:12]),
            )
    common.log("send: sent to the local list; read it at %s/all/" % url)
