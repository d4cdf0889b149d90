# SPDX-License-Identifier: GPL-2.0
"""The local mailing list (mlist.py) and `lk send --to-local-list`: the
list's pieces on canned input, the servers themselves, and the round trip
of a real topic through them, asserted from what the archive serves."""

import email.policy
import email.utils
import glob
import json
import os
import re
import shutil
import signal
import smtplib
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from email.message import EmailMessage

from .. import basetree, common, mlist, series, topics
from .support import IDENT, LK, QUICK, TOP, have_base, snapshot, write

# The topic of the round trip: the smallest, with its KUnit follow-up.
TOPIC = "binderfs"
SENDER = ("Åse Sender", "ase@example.org")
REVIEWER = "Rita Reviewer <rita@example.org>"
# Addresses the round trip's cover letter adds to its Cc: line.
MANY = ["reviewer%02d@example.org" % n for n in range(1, 61)]


def list_problem():
    """Why the local list cannot run here, or None."""
    missing = mlist.missing_programs()
    if missing:
        return "not installed: %s (scripts/lk deps)" % " ".join(missing)
    r = subprocess.run(
        ["git", "send-email", "--help"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if r.returncode:
        return "git send-email is not installed (git-email; scripts/lk deps)"
    if not shutil.which("b4"):
        return "b4 is not installed (scripts/lk deps)"
    return None


def canned(subject, msgid, reply_to=None, date="Mon, 07 Dec 2026 10:00:00 +0000"):
    m = EmailMessage()
    m["From"] = "Jane <jane@example.org>"
    m["To"] = "list@example.org"
    m["Subject"] = subject
    m["Date"] = date
    m["Message-Id"] = "<%s>" % msgid
    if reply_to:
        m["In-Reply-To"] = "<%s>" % reply_to
    m.set_content("text\n")
    return m


class Pieces(unittest.TestCase):
    """What needs no server: the configuration, the command, trailers,
    the thread check."""

    def test_exim_config_delivers_only_here(self):
        conf = mlist.exim_config("/x", 2525, ["A@lists.example.org", "b@example.org"])
        self.assertIn("local_interfaces = <; 127.0.0.1\n", conf)
        self.assertIn("daemon_smtp_ports = 2525\n", conf)
        self.assertIn("{a@lists.example.org : b@example.org}", conf)
        # no transport and no router that could reach another host
        drivers = re.findall(r"(?m)^\s*driver = (\w+)", conf)
        self.assertEqual(sorted(drivers), ["accept", "accept", "appendfile", "pipe"])
        self.assertNotIn("dnslookup", conf)
        self.assertNotIn("manualroute", conf)
        self.assertIn("accept hosts = 127.0.0.1\n  deny", conf)

    def test_inbox_names(self):
        self.assertEqual(
            mlist.inbox_names(
                ["devel@driverdev.osuosl.org", "linux-api@vger.kernel.org"]
            ),
            {
                "devel@driverdev.osuosl.org": "devel",
                "linux-api@vger.kernel.org": "linux-api",
            },
        )
        self.assertEqual(
            sorted(mlist.inbox_names(["devel@a.org", "devel@b.org"]).values()),
            ["devel-a", "devel-b"],
        )

    def test_local_and_real_sending_differ_only_in_the_server(self):
        real = mlist.send_email_argv("J <j@x.org>", ["a.eml", "b.eml"])
        local = mlist.send_email_argv("J <j@x.org>", ["a.eml", "b.eml"], 2525)
        self.assertEqual(real[:2], ["git", "send-email"])
        self.assertEqual(
            [a for a in local if a not in real],
            [
                "--smtp-server=127.0.0.1",
                "--smtp-server-port=2525",
                "--smtp-encryption=none",
            ],
        )
        self.assertEqual([a for a in real if a not in local], [])
        self.assertEqual(local[-2:], ["a.eml", "b.eml"])
        self.assertIn("--no-thread", real)  # b4 threaded them already

    def test_trailers_go_above_the_senders_signoff(self):
        msg = 'x: do y\n\nBody.\n\nFixes: 123456789abc ("z")\nSigned-off-by: J <j@x.org>\n'
        got = mlist.with_trailers(
            msg,
            {
                "x: do y": ["Reviewed-by: R <r@x.org>", 'Fixes: 123456789abc ("z")'],
                "other": ["Tested-by: T <t@x.org>"],
            },
        )
        self.assertEqual(
            got,
            'x: do y\n\nBody.\n\nFixes: 123456789abc ("z")\n'
            "Reviewed-by: R <r@x.org>\nSigned-off-by: J <j@x.org>\n",
        )
        self.assertEqual(mlist.with_trailers(msg, {}), msg)

    def test_thread_problems(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        sent = [
            canned("[PATCH 0/2] t", "c@x"),
            canned("[PATCH 1/2] t: one", "p1@x", "c@x"),
            canned("[PATCH 2/2] t: two", "p2@x", "c@x"),
        ]
        files = []
        for n, m in enumerate(sent):
            files.append(os.path.join(tmp, "%04d.eml" % n))
            write(files[-1], m.as_string())

        def dated(m, hh):
            m.replace_header("Date", "Mon, 07 Dec 2026 %02d:00:00 +0000" % hh)
            return m

        ok = [
            dated(
                canned(
                    m["Subject"],
                    m["Message-Id"].strip("<>"),
                    (m["In-Reply-To"] or "").strip("<>") or None,
                ),
                10 + n,
            )
            for n, m in enumerate(sent)
        ]
        # delivered out of order, with a reviewer's reply: fine by date
        reply = dated(canned("Re: [PATCH 1/2] t: one", "r@y", "p1@x"), 9)
        self.assertIsNone(mlist.thread_problem([ok[1], reply, ok[0], ok[2]], files))
        self.assertIn("not the 3 sent", mlist.thread_problem(ok[:2], files))
        self.assertIn("none of the 3", mlist.thread_problem([reply], files))
        late = dated(canned("[PATCH 1/2] t: one", "p1@x", "c@x"), 23)
        self.assertIn(
            "not the 3 sent", mlist.thread_problem([ok[0], late, ok[2]], files)
        )
        stray = dated(canned("[PATCH 2/2] t: two", "p2@x", "p1@x"), 12)
        self.assertIn(
            "is not a reply to <c@x>",
            mlist.thread_problem([ok[0], ok[1], stray], files),
        )


def smtp_send(port, msg, rcpts):
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as s:
        return s.send_message(msg, to_addrs=rcpts)


@unittest.skipIf(list_problem(), str(list_problem()))
class Server(unittest.TestCase):
    """The servers: delivery to the inboxes and to the people's mbox, the
    archive, and their end (by stop() and by themselves)."""

    def test_delivery_and_archive(self):
        lists = ["alpha@lists.example.org", "beta@vger.example.org"]
        with mlist.LocalList(None, lists, minutes=5) as ll:
            root = ll.root
            self.assertTrue(os.path.isdir(root))
            m = canned("[PATCH] lib: a test", "t1@example.org")
            m.replace_header("To", "alpha@lists.example.org")
            m["Cc"] = "Beta List <beta@vger.example.org>, Bob <bob@example.com>"
            self.assertEqual(
                smtp_send(ll.smtp_port, m, lists + ["bob@example.com"]), {}
            )
            mlist.wait_for(ll.url, ["t1@example.org"], timeout=60)
            for name in ("alpha", "beta"):
                raw = mlist.fetch("%s/%s/t1@example.org/raw" % (ll.url, name))
                self.assertIsNotNone(raw, name)
                self.assertIn(b"Subject: [PATCH] lib: a test", raw)
                self.assertIn(b"List-Id: <%s." % name.encode(), raw)
            self.assertEqual(
                [mlist.subject(x) for x in mlist.thread(ll.url, "t1@example.org")],
                ["[PATCH] lib: a test"],
            )
            self.assertEqual(mlist.received(root), 1)
            for _ in range(50):
                people = os.path.join(root, "people.mbox")
                if os.path.exists(people):
                    break
                time.sleep(0.2)
            with open(people) as f:
                text = f.read()
            self.assertEqual(
                re.findall(r"(?m)^Envelope-to: (.*)$", text), ["bob@example.com"]
            )
            # the searches b4 makes
            self.assertEqual(len(mlist.search(ll.url, 's:"a test"')), 1)
            self.assertEqual(mlist.search(ll.url, 's:"nothing like it"'), [])
            ports = (ll.smtp_port, ll.http_port)
        self.assertFalse(os.path.exists(root))
        for port in ports:
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()

    def test_servers_end_with_the_process_that_started_them(self):
        code = (
            "import sys, time; sys.path.insert(0, %r)\n"
            "from lktool import mlist\n"
            "ll = mlist.LocalList(None, ['a@example.org'], minutes=5).start()\n"
            "print(ll.smtp_port, ll.http_port, ll.root, flush=True)\n"
            "time.sleep(600)\n" % os.path.join(TOP, "scripts")
        )
        p = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            universal_newlines=True,
        )
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        smtp, http, root = p.stdout.readline().split()
        socket.create_connection(("127.0.0.1", int(smtp)), timeout=5).close()
        p.send_signal(signal.SIGKILL)
        p.wait()

        def open_ports():
            found = []
            for port in (smtp, http):
                try:
                    socket.create_connection(
                        ("127.0.0.1", int(port)), timeout=1
                    ).close()
                    found.append(port)
                except OSError:
                    pass
            return found

        end = time.monotonic() + 20
        while open_ports() and time.monotonic() < end:
            time.sleep(0.5)
        self.assertEqual(open_ports(), [])
        time.sleep(3)
        self.assertFalse(os.path.exists(root))

    def test_send_wants_a_running_list(self):
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out)
        r = subprocess.run(
            [
                sys.executable,
                LK,
                "--no-download",
                "--out",
                out,
                "send",
                "--to-local-list",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            env=sender_env(out),
        )
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("no local list is running for %s" % out, r.stdout)
        self.assertIn("scripts/lk list", r.stdout)


def sender_env(work, name=SENDER[0], email_=SENDER[1]):
    """The environment of a person who sends: their identity in their
    global git configuration and over any the checkout has."""
    cfg = os.path.join(work, "sender.gitconfig")
    write(cfg, "[user]\n\tname = %s\n\temail = %s\n" % (name, email_))
    return dict(
        os.environ,
        GIT_CONFIG_GLOBAL=cfg,
        GIT_CONFIG_COUNT="2",
        GIT_CONFIG_KEY_0="user.name",
        GIT_CONFIG_VALUE_0=name,
        GIT_CONFIG_KEY_1="user.email",
        GIT_CONFIG_VALUE_1=email_,
    )


def addresses(msg, *keys):
    return [
        a.lower()
        for _, a in email.utils.getaddresses([str(msg.get(k, "")) for k in keys])
        if a
    ]


@unittest.skipIf(QUICK, "--quick: no tests that need the base tree")
@unittest.skipUnless(have_base(), "no v4.20 git base tree (see README.md)")
@unittest.skipIf(list_problem(), str(list_problem()))
class RoundTrip(unittest.TestCase):
    """Topic binderfs and its KUnit follow-up through `lk list` and
    `lk send --to-local-list`, v1, a review, v2; every step checked from
    what the archive serves.  The tests run in the order of their names,
    each on what the one before left."""

    @classmethod
    def setUpClass(cls):
        # The work directory's out/ (the applied tree, lk send's clone)
        # stays for the next run, as build directories do: making and
        # removing two checked-out kernel trees took minutes of CI's time.
        # What the tests change is made anew.
        cls.work = os.path.join(common.out_dir(None), "selftest", "MailingList")
        cls.out = os.path.join(cls.work, "out")
        cls.clean()
        os.makedirs(cls.work, exist_ok=True)
        ws = os.path.join(cls.out, "send")
        if os.path.isdir(os.path.join(ws, ".git")):
            # no trailers of an earlier run's review
            for b in ("b4/" + TOPIC, "b4/%s-kunit" % TOPIC):
                subprocess.run(
                    ["git", "-C", ws, "branch", "-q", "-D", b],
                    stderr=subprocess.DEVNULL,
                    env=common.clean_env(),
                )
        # The series: the prerequisite stack and the topic, as they are.
        cls.series = d = os.path.join(cls.work, "series")
        with open(os.path.join(TOP, "series")) as f:
            parts = re.split(r"(?m)^(?=# section: )", f.read())
        keep = [
            p
            for p in parts
            if not p.startswith("# section: ")
            or "(prerequisite)" in p.split("\n", 1)[0]
            or re.match(r"# section: %s(/kunit)? " % TOPIC, p)
        ]
        write(os.path.join(d, "series"), "".join(keep))
        for sub in ("prereq", TOPIC):
            shutil.copytree(
                os.path.join(TOP, "patches", sub), os.path.join(d, "patches", sub)
            )
        # A Cc: line of many addresses.
        cover = os.path.join(d, "patches", TOPIC, "cover-letter")
        with open(cover) as f:
            text = f.read()
        text = re.sub(
            r"(?m)^(Cc: .*)$", lambda m: m.group(1) + ", " + ", ".join(MANY), text, 1
        )
        write(cover, text)
        cls.env = sender_env(cls.work)
        code, out = cls.lk("apply")
        if code:
            raise AssertionError(out)
        cls.tree = os.path.join(cls.out, "tree")
        cls.list_proc = subprocess.Popen(
            [sys.executable, LK, "--no-download", "--out", cls.out, "--series-dir", d]
            + ["list", "--minutes", "30", TOPIC],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        lines = []
        for line in cls.list_proc.stdout:
            lines.append(line)
            if line.startswith("list: ready"):
                break
        else:
            raise AssertionError("lk list did not start:\n" + "".join(lines))
        cls.list_log = "".join(lines)
        with open(os.path.join(cls.out, mlist.LIST_DIR, "state.json")) as f:
            cls.state = json.load(f)
        cls.url = cls.state["url"]
        cls.root = cls.state["root"]
        # The maintainer: plain v4.20, b4 reading the local archive.
        cls.maint = os.path.join(cls.work, "maintainer")
        base, _ = basetree.find_base(allow_download=False)
        subprocess.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", base, cls.maint],
            check=True,
            env=common.clean_env(),
        )
        cfg = os.path.join(cls.work, "maintainer.gitconfig")
        write(
            cfg,
            "[user]\n\tname = Mae Maintainer\n\temail = mae@example.org\n[b4]\n"
            + "".join(
                "\t%s = %s\n" % (k[3:], v) for k, v in mlist.b4_config(cls.url).items()
            ),
        )
        cls.maint_env = dict(
            common.clean_env(),
            GIT_CONFIG_GLOBAL=cfg,
            XDG_CONFIG_HOME=os.path.join(cls.work, "m-config"),
            XDG_CACHE_HOME=os.path.join(cls.work, "m-cache"),
            XDG_DATA_HOME=os.path.join(cls.work, "m-data"),
        )

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "list_proc", None):
            cls.list_proc.terminate()
            out, _ = cls.list_proc.communicate(timeout=30)
            assert "list: stopped" in out, out
        cls.clean()

    @classmethod
    def clean(cls):
        """Remove all but out/ from the work directory."""
        for sub in os.listdir(cls.work) if os.path.isdir(cls.work) else ():
            path = os.path.join(cls.work, sub)
            if sub == "out":
                continue
            if os.path.isdir(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)

    @classmethod
    def lk(cls, *args, env=None):
        r = subprocess.run(
            [sys.executable, LK, "--no-download", "--out", cls.out, "--series-dir"]
            + [cls.series]
            + list(args),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
            env=env or cls.env,
        )
        return r.returncode, r.stdout

    def assertRefused(self, why, *args, env=None):
        """lk with args fails, says why, and sends nothing."""
        before = mlist.received(self.root)
        code, out = self.lk(*args, env=env)
        self.assertNotEqual(code, 0, out)
        self.assertIn(why, out)
        self.assertNotIn("PASS: list:", out)
        self.assertEqual(mlist.received(self.root), before, out)

    def cover_field(self, sec, key):
        fields, _ = series.read_cover(
            os.path.join(self.series, "patches", sec, "cover-letter")
        )
        return fields[key]

    def found(self, sec, version):
        """The mails of a section's version as the archive's search finds
        them by its change-id (as b4 looks them up), by date."""
        got = mlist.search(
            self.url, '"change-id: %s"' % self.cover_field(sec, "change-id")
        )
        tag = re.compile(
            r"\[PATCH%s%s(?: \d+/\d+)?\] "
            % (
                " RFC" if sec.endswith("/kunit") else "",
                " v%d" % version if version > 1 else "",
            )
        )
        return mlist.by_date([m for m in got if tag.match(mlist.subject(m))])

    def b4_am_tree(self, msgid, start="v4.20"):
        """The tree of start with what b4 am makes of msgid's thread in the
        archive, in the maintainer's repository."""
        out = tempfile.mkdtemp(dir=self.work)
        r = subprocess.run(
            ["b4", "am", "-C", "-o", out, msgid],
            cwd=self.maint,
            env=self.maint_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        self.assertEqual(r.returncode, 0, r.stdout)
        mbx = glob.glob(os.path.join(out, "*.mbx"))
        self.assertEqual(len(mbx), 1, r.stdout)
        with open(mbx[0]) as f:
            return topics.am_tree(self.maint, start, f.read()), r.stdout

    def series_tree(self, *sections):
        entries = [e for e in series.read_series(self.series) if e.section in sections]
        return topics.am_tree(
            self.maint, "v4.20", topics.series_mbox(self.series, entries)
        )

    def test_1_bad_input_is_refused_and_nothing_sent(self):
        self.assertIn("inboxes: devel@driverdev.osuosl.org ", self.list_log)
        nobody = sender_env(self.work, "", "")
        self.assertRefused(
            "set your git user.name and user.email",
            "send",
            "--to-local-list",
            TOPIC,
            env=nobody,
        )
        self.assertRefused(
            "no topic nosuchtopic in series", "send", "--to-local-list", "nosuchtopic"
        )
        self.assertRefused(
            "add a 'Changes in v2:' paragraph",
            "send",
            "--to-local-list",
            "-v",
            "2",
            TOPIC,
        )
        self.assertRefused(
            "versions count from 1", "send", "--to-local-list", "-v", "0", TOPIC
        )
        # nothing was written either
        self.assertEqual(self.cover_field(TOPIC, "version"), "1")

    def test_2_v1_round_trip(self):
        code, out = self.lk("send", "--to-local-list", TOPIC)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"(?m)^PASS: list: %s b4 am - " % TOPIC)
        # The thread in the archive: the cover letter, then every patch,
        # each a reply to the cover letter.
        mails = self.found(TOPIC, 1)
        self.assertEqual(
            [mlist.subject(m) for m in mails],
            [
                "[PATCH 0/3] binder: add binderfs, a filesystem of binder devices",
                "[PATCH 1/3] binder: move binder_context and binder_device into "
                "binder_internal.h",
                "[PATCH 2/3] binder: add binderfs, a filesystem of binder devices",
                "[PATCH 3/3] selftests: binderfs: test binderfs from user space",
            ],
        )
        cover = mails[0]
        cid = cover["Message-Id"].strip().strip("<>")
        for m in mails[1:]:
            self.assertEqual(m["In-Reply-To"].strip(), "<%s>" % cid)
        body = cover.get_body().get_content()
        self.assertIn("\nbase-commit: %s\n" % basetree.V420_COMMIT, body)
        # From, and To/Cc as get_maintainer.pl says plus the cover
        # letter's: UTF-8 names, encoded and folded, come back whole.
        self.assertEqual(str(cover["From"]), "%s <%s>" % SENDER)
        self.assertIn("Arve Hjønnevåg <arve@android.com>", str(cover["To"]))
        files = [
            os.path.join(self.series, "patches", e.path)
            for e in series.read_series(self.series)
            if e.section == TOPIC
        ]
        gm = subprocess.run(
            [
                "perl",
                "scripts/get_maintainer.pl",
                "--no-rolestats",
                "--no-git",
                "--no-git-fallback",
            ]
            + files,
            cwd=self.tree,
            stdout=subprocess.PIPE,
            check=True,
            universal_newlines=True,
        ).stdout.split("\n")
        want = set(a for _, a in email.utils.getaddresses(gm) if a)
        want |= set(
            a
            for _, a in email.utils.getaddresses(
                [self.cover_field(TOPIC, "to"), self.cover_field(TOPIC, "cc")]
            )
        )
        want.add(SENDER[1])
        for m in mails:
            self.assertEqual(set(addresses(m, "To", "Cc")), {a.lower() for a in want})
        # the long Cc: line reached everyone on it
        self.assertTrue(set(MANY) <= set(addresses(cover, "Cc")))
        with open(os.path.join(self.root, "people.mbox")) as f:
            delivered = set(
                a.strip()
                for line in re.findall(r"(?m)^Envelope-to: (.*)$", f.read())
                for a in line.split(",")
            )
        self.assertTrue(set(MANY) <= delivered, set(MANY) - delivered)
        # every list has the thread in its own inbox
        lists = mlist.topic_lists(
            self.tree, self.series, [TOPIC], series.read_series(self.series)
        )
        self.assertIn("devel@driverdev.osuosl.org", lists)
        names = self.state["lists"]
        for addr in lists:
            self.assertIn(addr, addresses(cover, "To", "Cc"))
            raw = mlist.fetch("%s/%s/%s/raw" % (self.url, names[addr], cid))
            self.assertIsNotNone(raw, addr)
        # The maintainer: b4 am by the cover letter's message-id onto
        # plain v4.20 gives the tree of the series' patches.
        got, log = self.b4_am_tree(cid)
        self.assertIn("Total patches: 3", log)
        self.assertEqual(got, self.series_tree(TOPIC))
        # The KUnit follow-up: its own thread, marked RFC, saying what it
        # needs, and applying on top of the topic.
        follow = self.found(TOPIC + "/kunit", 1)
        self.assertEqual(
            [mlist.subject(m) for m in follow],
            ["[PATCH RFC] binder: add KUnit tests for binderfs"],
        )
        text = follow[0].get_body().get_content()
        self.assertIn("needs the KUnit framework", text)
        self.assertRegex(
            text,
            r"\nbase-commit: %s\nprerequisite-patch-id: [0-9a-f]{40}\n"
            % basetree.V420_COMMIT,
        )
        fid = follow[0]["Message-Id"].strip().strip("<>")
        both = topics.am_tree(
            self.maint, "v4.20", self.thread_mbox(cid) + self.thread_mbox(fid)
        )
        self.assertEqual(both, self.series_tree(TOPIC, TOPIC + "/kunit"))

    def thread_mbox(self, msgid):
        r = subprocess.run(
            ["b4", "am", "-C", "-o", "-", msgid],
            cwd=self.maint,
            env=self.maint_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
        )
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_3_review_and_v2(self):
        v1 = self.found(TOPIC, 1)
        self.assertEqual(len(v1), 4, "test_2 sends v1 first")
        patch = v1[2]
        # A reviewer answers patch 2/3, to all, through the list.
        reply = EmailMessage()
        reply["From"] = REVIEWER
        reply["To"] = str(patch["From"])
        reply["Cc"] = ", ".join(
            "%s" % a for a in addresses(patch, "To", "Cc") if a not in MANY
        )
        reply["Subject"] = "Re: " + mlist.subject(patch)
        reply["Date"] = email.utils.formatdate(localtime=True)
        reply["Message-Id"] = email.utils.make_msgid(domain="example.org")
        reply["In-Reply-To"] = patch["Message-Id"]
        reply["References"] = "%s %s" % (v1[0]["Message-Id"], patch["Message-Id"])
        reply.set_content(
            "On the patch:\n> binderfs gives every mount its own instance\n\n"
            "Looks right to me, and it passes its selftest here.\n\n"
            "Reviewed-by: %s\nTested-by: %s\n" % (REVIEWER, REVIEWER)
        )
        rcpts = addresses(reply, "To", "Cc")
        self.assertEqual(smtp_send(self.state["smtp"], reply, rcpts), {})
        mlist.wait_for(self.url, [reply["Message-Id"].strip("<>")])
        # The sender collects the trailers into the prep branch.
        ws = os.path.join(self.out, "send")
        env = dict(
            common.clean_env(),
            XDG_CONFIG_HOME=os.path.join(ws, ".git", "b4-config"),
            XDG_DATA_HOME=os.path.join(ws, ".git", "b4-data"),
            XDG_CACHE_HOME=os.path.join(ws, ".git", "b4-cache"),
        )
        subprocess.run(
            ["git", "checkout", "-q", "b4/" + TOPIC], cwd=ws, env=env, check=True
        )
        r = subprocess.run(
            ["b4", "trailers", "-u"],
            cwd=ws,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("+ Reviewed-by: " + REVIEWER, r.stdout)
        # v2 with a changelog
        for sec in (TOPIC, TOPIC + "/kunit"):
            with open(
                os.path.join(self.series, "patches", sec, "cover-letter"), "a"
            ) as f:
                f.write(
                    "\nChanges in v2:\n- Reviewed-by and Tested-by of Rita Reviewer\n"
                )
        code, out = self.lk("send", "--to-local-list", "-v", "2", TOPIC)
        self.assertEqual(code, 0, out)
        v2 = self.found(TOPIC, 2)
        self.assertEqual(
            [mlist.subject(m)[:16] for m in v2],
            [
                "[PATCH v2 0/3] b",
                "[PATCH v2 1/3] b",
                "[PATCH v2 2/3] b",
                "[PATCH v2 3/3] s",
            ],
        )
        self.assertIn(
            "Changes in v2:\n- Reviewed-by and Tested-by",
            v2[0].get_body().get_content(),
        )
        # the archive has v1 still, without the trailers, and v2 with them
        self.assertEqual(len(self.found(TOPIC, 1)), 4)
        for old, new in zip(v1[1:], v2[1:]):
            old_text = old.get_body().get_content()
            new_text = new.get_body().get_content()
            self.assertNotIn("Reviewed-by:", old_text)
            self.assertEqual(
                "Reviewed-by: %s" % REVIEWER in new_text,
                new is v2[2],
                mlist.subject(new),
            )
        self.assertRegex(
            v2[2].get_body().get_content(),
            r"\nReviewed-by: %s\nTested-by: %s\nSigned-off-by: %s <%s>\n"
            % (REVIEWER, REVIEWER, SENDER[0], SENDER[1]),
        )
        got, _ = self.b4_am_tree(v2[0]["Message-Id"].strip().strip("<>"))
        self.assertEqual(got, self.series_tree(TOPIC))
        self.assertEqual(len(self.found(TOPIC + "/kunit", 2)), 1)
        # and there is no going back
        self.assertRefused(
            "is at v2 already; -v 1 would go back",
            "send",
            "--to-local-list",
            "-v",
            "1",
            TOPIC,
        )

    def test_3b_export_brings_the_trailers_into_patches(self):
        entries = [e for e in series.read_series(self.series) if e.section == TOPIC]
        reviewed = os.path.join("patches", entries[1].path)
        before = snapshot(self.series)
        self.assertNotIn(b"Reviewed-by:", before[reviewed], "test_3 reviews v1")
        old_tree = self.series_tree(TOPIC, TOPIC + "/kunit")
        # bad input: nothing written
        code, out = self.lk("export", "--trailers", "nosuchtopic")
        self.assertNotEqual(code, 0, out)
        self.assertIn("lk export: no topic nosuchtopic in series", out)
        self.assertEqual(snapshot(self.series), before)
        # a patch that changed since v2 was sent: refused, nothing written
        first = os.path.join(self.series, "patches", entries[0].path)
        changed = before[os.path.join("patches", entries[0].path)].replace(
            b"\n\n", b"\n\nReworded. ", 1
        )
        with open(first, "wb") as f:
            f.write(changed)
        code, out = self.lk("export", "--trailers", TOPIC)
        self.assertNotEqual(code, 0, out)
        self.assertIn(
            "b4/%s no longer matches patches/%s/: its commit message of patch 1 "
            "(patches/%s) changed since lk send made the branch"
            % (TOPIC, TOPIC, entries[0].path),
            out,
        )
        self.assertEqual(
            snapshot(self.series),
            dict(before, **{os.path.join("patches", entries[0].path): changed}),
        )
        with open(first, "wb") as f:
            f.write(before[os.path.join("patches", entries[0].path)])
        # The export: patch 2/3 gets the review's trailers above the
        # project's sign-off; every other file stays as it was.
        code, out = self.lk("export", "--trailers", TOPIC)
        self.assertEqual(code, 0, out)
        self.assertIn("export: %s: + Reviewed-by: %s\n" % (reviewed, REVIEWER), out)
        after = snapshot(self.series)
        sob = ("\nSigned-off-by: %s\n---\n" % IDENT).encode()
        self.assertEqual(before[reviewed].count(sob), 1)
        self.assertEqual(
            after,
            dict(
                before,
                **{
                    reviewed: before[reviewed].replace(
                        sob,
                        (
                            "\nReviewed-by: %s\nTested-by: %s" % (REVIEWER, REVIEWER)
                        ).encode("utf-8")
                        + sob,
                    )
                },
            ),
        )
        # again: nothing to add, nothing added twice
        code, out = self.lk("export", "--trailers", TOPIC)
        self.assertEqual(code, 0, out)
        self.assertIn("export: no trailers to bring", out)
        self.assertEqual(snapshot(self.series), after)
        # lk series passes, the patches give the same tree, and lk send
        # makes v2 from them with the trailers once, above the sender's
        # sign-off (its checks: git am and b4 am of the mails, checkpatch)
        code, out = self.lk("series")
        self.assertEqual(code, 0, out)
        self.assertEqual(self.series_tree(TOPIC, TOPIC + "/kunit"), old_tree)
        code, out = self.lk("send", TOPIC)
        self.assertEqual(code, 0, out)
        mails = sorted(glob.glob(os.path.join(self.out, "outgoing", TOPIC, "*.eml")))
        self.assertEqual(len(mails), 4, mails)
        for i, path in enumerate(mails[1:], 1):
            self.assertEqual(
                self.mail_text(path).count("Reviewed-by:"), int(i == 2), path
            )
        self.assertIn(
            "\nReviewed-by: %s\nTested-by: %s\nSigned-off-by: %s <%s>\n---\n"
            % (REVIEWER, REVIEWER, SENDER[0], SENDER[1]),
            self.mail_text(mails[2]),
        )

    def mail_text(self, path):
        with open(path, "rb") as f:
            msg = email.message_from_binary_file(f, policy=email.policy.default)
        return msg.get_body().get_content()

    def test_4_trailing_whitespace_stops_the_sending(self):
        path = glob.glob(os.path.join(self.series, "patches", TOPIC, "0003-*.patch"))[0]
        with open(path) as f:
            text = f.read()
        # an added line of the selftest's C file, with a space after it
        text, n = re.subn(r"(?m)^(\+\s*return 0;)$", r"\1 ", text, 1)
        self.assertEqual(n, 1)
        write(path, text)
        before = mlist.received(self.root)
        code, out = self.lk("send", "--to-local-list", TOPIC)
        self.assertNotEqual(code, 0, out)
        self.assertRegex(
            out, r"FAIL: send: checkpatch %s - .*TRAILING_WHITESPACE" % TOPIC
        )
        self.assertRegex(out, r"FAIL: list: send - nothing was sent: \d+ check")
        self.assertEqual(mlist.received(self.root), before)
