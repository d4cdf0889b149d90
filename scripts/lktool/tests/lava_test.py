# SPDX-License-Identifier: GPL-2.0
"""lk lava (lktool/lava.py): the LAVA jobs of the QEMU guests.

The generator's tests need nothing installed.  The jobs' validation needs
Debian's lava-dispatcher (without it they are skipped and say so); with
--quick every job gets LAVA's schema, without it the dispatcher's
validation too.  LavaRunI386 runs the i386 guest's job end to end with
lava-run and compares its rows with `lk qemu`'s on the same kernel: the
log and initramfs of the qemu stage when `lk test` has just booted i386
(LK_QEMU_STAGE_GUESTS), else a boot of its own."""

import collections
import datetime
import importlib
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import unittest

from .. import boot, common, lava, qemu, qemu_conf, serial, verdict
from .support import QUICK

TOKEN = "0123456789abcdef"


def build_root():
    return os.environ.get("LK_QEMU_BUILD_ROOT") or os.path.join(
        common.out_dir(), "build"
    )


def statuses(rows):
    return {name: status for status, name, _ in rows}


def row(rows, name):
    found = [r for r in rows if r[1] == name]
    if not found:
        raise AssertionError("no row %r in:\n%s" % (name, "\n".join(map(str, rows))))
    return found[0]


class Generator(unittest.TestCase):
    """The job and device of a guest, from its .conf."""

    def job(self, guest, names=(("64/t", 60),)):
        return lava.make_job(guest, "file:///k", "file:///rd", list(names), TOKEN)

    def test_a_changed_qemu_argument_shows_up_in_the_job(self):
        before = qemu_conf.load_guest("arm64")
        after = qemu_conf.load_guest(
            "arm64",
            overrides={
                "qemu_args": "-M virt -cpu cortex-a53 -nic none -rtc base=utc",
                "memory": "1024",
                "append": "audit=1",
            },
        )
        ctx0, ctx1 = self.job(before)["context"], self.job(after)["context"]
        self.assertEqual(ctx0["cpu"], "cortex-a57")
        self.assertEqual(ctx1["cpu"], "cortex-a53")
        self.assertEqual(ctx1["machine"], "virt")
        self.assertEqual(ctx1["memory"], 1024)
        self.assertIn("-rtc base=utc", ctx1["extra_options"])
        self.assertNotIn("-rtc base=utc", ctx0["extra_options"])
        opts = lava.make_device(after)["actions"]["boot"]["methods"]["qemu"][
            "parameters"
        ]["options"]
        self.assertIn("-cpu cortex-a53", opts)
        self.assertIn("-m 1024", opts)
        self.assertIn("-rtc base=utc", opts)
        kernel = self.job(after)["actions"][0]["deploy"]["images"]["kernel"]
        self.assertIn("audit=1", kernel["image_arg"])
        self.assertIn("lkqemu.token=%s" % TOKEN, kernel["image_arg"])

    def test_the_device_runs_lk_qemus_command_line(self):
        # The same QEMU command as `lk qemu`, but for LAVA's placeholders
        # of the images: TCG, and every argument of the guest's .conf.
        for name in qemu_conf.guest_names():
            g = qemu_conf.load_guest(name)
            cmd = boot.qemu_command(g, "K", "I", TOKEN)
            dev = lava.make_device(g)["actions"]["boot"]["methods"]["qemu"]
            job = self.job(g)
            images = job["actions"][0]["deploy"]["images"]
            words = [dev["parameters"]["command"]] + [
                w for o in dev["parameters"]["options"] for w in shlex.split(o)
            ]
            words += shlex.split(images["kernel"]["image_arg"].replace("{kernel}", "K"))
            words += shlex.split(images["initrd"]["image_arg"].replace("{initrd}", "I"))
            self.assertEqual(
                sorted(lava.option_groups(words[1:])),
                sorted(lava.option_groups(cmd[1:])),
                name,
            )
            self.assertEqual(words[0], cmd[0])
            self.assertIn("-accel tcg", dev["parameters"]["options"], name)
            self.assertFalse(
                any("kvm" in o for o in dev["parameters"]["options"]), name
            )
            self.assertTrue(job["context"]["no_kvm"])

    def test_a_guest_with_several_abis_gets_every_abis_tests(self):
        specs = qemu_conf.read_selftests()
        g = qemu_conf.load_guest("x86_64")
        self.assertEqual(g["abis"], ["64", "32"])
        names = lava.guest_names(g, specs)
        for abi in g["abis"]:
            mine = [s.name for s in specs if abi in s.abis]
            self.assertTrue(mine)
            for t in mine:
                self.assertIn(("%s/%s" % (abi, t), 60), [(n, 60) for n, _ in names])
        job = lava.make_job(g, "file:///k", "file:///rd", names, TOKEN)
        listed = job["metadata"]["lk.tests"].split(",")
        self.assertEqual(listed, [n for n, _ in names])
        self.assertTrue(any(n.startswith("32/") for n in listed))
        self.assertTrue(any(n.startswith("64/") for n in listed))
        # arm64 runs arm64 and arm (AArch32) programs.
        arm64 = lava.guest_names(qemu_conf.load_guest("arm64"), specs)
        self.assertEqual(set(n.split("/")[0] for n, _ in arm64), {"arm64", "arm"})

    def test_time_limits_follow_the_guest(self):
        g = qemu_conf.load_guest("i386")
        names = [("32/a", 60), ("32/b", 500)]
        job = lava.make_job(g, "file:///k", "file:///rd", names, TOKEN)
        limit = boot.wall_limit(g, names)
        test = job["actions"][2]["test"]
        self.assertEqual(test["timeout"]["seconds"], limit + g["poweroff_timeout"])
        # The monitor waits at most this long for its next line: the
        # longest test, its kill, and then some.
        self.assertGreaterEqual(job["timeouts"]["connection"]["seconds"], 500 + 20)
        self.assertGreater(job["timeouts"]["job"]["seconds"], limit)

    def test_the_monitor_reads_inits_end_markers(self):
        mon = lava.monitor(qemu_conf.load_guest("i386"), TOKEN)
        rx = re.compile(mon["pattern"], re.DOTALL)

        def result(line):
            m = rx.search(line)
            if not m:
                return None
            return m.group("test_case_id"), mon["fixupdict"][m.group("result")]

        mark = "lk-qemu %s end " % TOKEN
        self.assertEqual(result(mark + "32/a exit=0 time=0.25\r\n"), ("32/a", "pass"))
        self.assertEqual(result(mark + "32/a exit=4 time=0.25\r\n"), ("32/a", "skip"))
        for bad in (
            "exit=1 time=0.25",
            "exit=40 time=1.0",
            "signal=9 time=0.5",
            "timeout=60 time=70.0",
            "timeout=60 unkillable time=80.1",
            "exit=0 unkillable time=12.0",
        ):
            self.assertEqual(result(mark + "32/a %s\r\n" % bad), ("32/a", "fail"), bad)
        # Not before the whole line is there (pexpect matches as it reads).
        self.assertIsNone(result(mark + "32/a exit=0 ti"))
        self.assertIsNone(result(mark + "32/a exit=1 time=0.25"))
        # Another boot's token is not this one's.
        self.assertIsNone(result("lk-qemu fedcba9876543210 end 32/a exit=0 time=1\n"))
        self.assertEqual(mon["start"], "lk-qemu %s start" % TOKEN)
        self.assertTrue(re.search(mon["end"], "[   41.7] reboot: Power down\r\n"))

    def test_a_guest_qemu_that_is_not_qemu_system_is_an_error(self):
        g = qemu_conf.load_guest("i386", overrides={"qemu": "/opt/my-qemu"})
        with self.assertRaises(common.Failure) as e:
            self.job(g)
        self.assertIn("qemu-system-ARCH", str(e.exception))

    def test_yaml_reads_back(self):
        try:
            yaml = importlib.import_module("yaml")
        except ImportError:
            self.skipTest("no PyYAML (Debian: python3-yaml)")
        g = qemu_conf.load_guest("x86_64")
        for data in (self.job(g), lava.make_device(g)):
            self.assertEqual(yaml.safe_load(lava.to_yaml(data)), data)
        odd = {"a b": ["", {}, [], None, True, 3, 'q"\\\n\x1b'], "e": {"x": []}}
        self.assertEqual(yaml.safe_load(lava.to_yaml(odd)), odd)


def at(sec):
    return (datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=sec)).isoformat()


def rec(lvl, msg, sec=0.0):
    return {"dt": at(sec), "lvl": lvl, "msg": msg}


def case(name, result):
    return rec(
        "results",
        {
            "definition": "lk-qemu-i386",
            "case": re.sub(r"\W+", "_", name.lower()),
            "result": result,
            "extra": {"test_case_id": name},
        },
    )


JOB_PASS = rec("results", {"definition": "lava", "case": "job", "result": "pass"})


def booted(lines, results=(), job=JOB_PASS, errors=()):
    """A lava-run log's records: QEMU started at 10s, then a serial line a
    tenth of a second apart."""
    recs = [rec("info", "Boot command: /usr/bin/qemu-system-i386 ...", 10)]
    recs += [rec("target", l, 10 + 0.1 * i) for i, l in enumerate(lines)]
    recs += [rec("error", e, 99) for e in errors]
    return recs + list(results) + ([job] if job else [])


SERIAL = [
    "[    0.000000] Linux version 4.20.0+ (root@vm)",
    "lk-qemu TOK start abi=32 tests=2 uname=4.20.0+/i686",
    "lk-qemu TOK begin 32/a",
    "ok 1 a works",
    "lk-qemu TOK end 32/a exit=0 time=0.10",
    "lk-qemu TOK begin 32/b",
    "lk-qemu TOK end 32/b exit=1 time=0.20",
    "lk-qemu TOK done ran=2",
    "[   12.000000] reboot: Power down",
]


class Judge(unittest.TestCase):
    """A lava-run log turned into rows."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lk-lava-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        # The canned runs hold tests a and b, not the selftests whose
        # report lines the conf's expect keys look for.
        self.guest = dict(qemu_conf.load_guest("i386"), expects=[])

    def judge(self, records):
        run = lava.Run(records)
        return lava.judge_run(
            run,
            self.guest,
            TOKEN,
            "/k/bzImage",
            [("32/a", 60), ("32/b", 60)],
            300,
            "/jobs/i386.yaml",
            os.path.join(self.tmp, "lava-i386.log"),
            "/logs/lava-i386-dispatcher.log",
        )

    def lines(self, lines=SERIAL):
        return [l.replace("TOK", TOKEN) for l in lines]

    def test_a_good_run_gives_lk_qemus_rows(self):
        rows = self.judge(
            booted(self.lines(), [case("32/a", "pass"), case("32/b", "fail")])
        )
        st = statuses(rows)
        self.assertEqual(st["lava i386: job"], "PASS")
        self.assertEqual(st["lava i386: boot"], "PASS")
        self.assertEqual(st["lava i386/32: a"], "PASS")
        self.assertEqual(st["lava i386/32: a: 1 a works"], "PASS")
        self.assertEqual(st["lava i386/32: b"], "FAIL")
        self.assertEqual(st["lava i386: shutdown"], "PASS")
        self.assertEqual(st["lava i386: lava results"], "PASS", rows)
        # The same rows as lk qemu's parser gives on the log written.
        log = os.path.join(self.tmp, "lava-i386.log")
        again = verdict.judge(serial.parse_log_file(log), "lava")
        self.assertEqual(
            [
                r
                for r in rows
                if r[1] not in ("lava i386: job", "lava i386: lava results")
            ],
            again,
        )
        self.assertIn("exit 1; log at %s:" % log, row(rows, "lava i386/32: b")[2])

    def test_lavas_monitor_disagreeing_is_a_fail_row(self):
        rows = self.judge(
            booted(self.lines(), [case("32/a", "pass"), case("32/b", "pass")])
        )
        r = row(rows, "lava i386: lava results")
        self.assertEqual(r[0], "FAIL")
        self.assertIn("32/b: FAIL here, pass in LAVA", r[2])
        # A test that passed here but has no LAVA result.
        rows = self.judge(booted(self.lines(), [case("32/b", "fail")]))
        r = row(rows, "lava i386: lava results")
        self.assertEqual(r[0], "FAIL")
        self.assertIn("32/a: PASS here, no result in LAVA", r[2])

    def test_a_job_that_never_booted_is_a_fail_row(self):
        why = "Image file '/x/initramfs.cpio.gz' does not exist or is not readable"
        job = rec(
            "results",
            {
                "definition": "lava",
                "case": "job",
                "result": "fail",
                "error_type": "Job",
                "error_msg": why,
            },
        )
        rows = self.judge([rec("info", "start: 0 validate"), job])
        self.assertEqual(row(rows, "lava i386: job")[0], "FAIL")
        self.assertIn(why, row(rows, "lava i386: job")[2])
        self.assertEqual(row(rows, "lava i386: boot")[0], "FAIL")
        self.assertIn("LAVA did not start QEMU", row(rows, "lava i386: boot")[2])
        self.assertFalse([r for r in rows if r[0] == "PASS"])

    def test_a_boot_that_never_reaches_the_tests_is_a_fail_row(self):
        job = rec(
            "results",
            {
                "definition": "lava",
                "case": "job",
                "result": "fail",
                "error_type": "Test",
                "error_msg": "lava-test-monitor timed out after 120 seconds",
            },
        )
        rows = self.judge(booted(self.lines(SERIAL[:1]), job=job))
        st = statuses(rows)
        self.assertEqual(st["lava i386: job"], "FAIL")
        self.assertEqual(st["lava i386: boot"], "FAIL")
        self.assertIn("did not start /init: hung", row(rows, "lava i386: boot")[2])
        self.assertEqual(st["lava i386/32: a"], "SKIP")
        self.assertNotIn("lava i386: lava results", st)

    def test_a_guest_that_stops_mid_test(self):
        lines = self.lines(
            SERIAL[:3] + ["[    5.000000] Kernel panic - not syncing: x"]
        )
        job = rec(
            "results",
            {
                "definition": "lava",
                "case": "job",
                "result": "fail",
                "error_type": "Bug",
            },
        )
        rows = self.judge(
            booted(lines, job=job, errors=["lava test monitoring reached end of file"])
        )
        st = statuses(rows)
        self.assertEqual(st["lava i386/32: a"], "FAIL")
        self.assertIn("crashed: qemu exited", row(rows, "lava i386/32: a")[2])
        self.assertEqual(st["lava i386/32: b"], "SKIP")
        self.assertEqual(st["lava i386: shutdown"], "FAIL")
        self.assertEqual(st["lava i386: kernel log"], "FAIL")

    def test_no_power_off_after_done_is_a_fail_row(self):
        rows = self.judge(
            booted(
                self.lines(SERIAL[:-1]), [case("32/a", "pass"), case("32/b", "fail")]
            )
        )
        self.assertEqual(statuses(rows)["lava i386: shutdown"], "FAIL")

    def test_the_dispatchers_yaml_lines_are_read(self):
        text = (
            'noise\n{"dt": "%s", "lvl": "target", "msg": "\\e[0mSeaBIOS \\x41\\_\\N"}\n'
            '- {"dt": "%s", "lvl": "results", "msg": {"case": "job", '
            '"definition": "lava", "result": "pass"}}\n'
            '{"dt": broken\n' % (at(1), at(2))
        )
        recs = lava.read_records(text)
        self.assertEqual(len(recs), 2)
        self.assertEqual(recs[0]["msg"], "\x1b[0mSeaBIOS A\xa0\x85")
        self.assertEqual(lava.Run(recs).job_error(), "")
        self.assertIn("no job result", lava.Run(recs[:1]).job_error())


class Submit(unittest.TestCase):
    """--submit: lavacli jobs submit, through a stand-in lavacli."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lk-lava-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        path = os.environ["PATH"]
        self.addCleanup(os.environ.__setitem__, "PATH", path)
        os.environ["PATH"] = self.tmp + os.pathsep + path
        self.args = os.path.join(self.tmp, "args")

    def fake(self, body):
        p = os.path.join(self.tmp, "lavacli")
        with open(p, "w") as f:
            f.write('#!/bin/sh\necho "$@" > %s\n%s\n' % (self.args, body))
        os.chmod(p, 0o755)

    def test_submitted(self):
        self.fake("echo 4242")
        results = common.Results(echo=False)
        uri = "https://me:s3cret@lava.example.org/RPC2"
        lava.submit("/j/i386.yaml", uri, "i386", results)
        self.assertEqual(
            results.rows,
            [
                (
                    "PASS",
                    "lava i386: submit",
                    "job 4242 at https://lava.example.org/RPC2",
                )
            ],
        )
        with open(self.args) as f:
            self.assertEqual(
                f.read().split(), ["--uri", uri, "jobs", "submit", "/j/i386.yaml"]
            )

    def test_refused(self):
        self.fake("echo 'Unable to submit: no device type qemu' >&2; exit 1")
        results = common.Results(echo=False)
        lava.submit(
            "/j/i386.yaml", "https://me:s3cret@lava.example.org/RPC2", "i386", results
        )
        st, name, detail = results.rows[0]
        self.assertEqual((st, name), ("FAIL", "lava i386: submit"))
        self.assertIn("no device type qemu", detail)
        self.assertNotIn("s3cret", detail)


def need_lava(test):
    why = lava.have_lava()
    if why:
        test.skipTest(why)


class Validation(unittest.TestCase):
    """LAVA's own validation of the jobs (Debian's lava-dispatcher)."""

    def setUp(self):
        need_lava(self)
        self.tmp = tempfile.mkdtemp(prefix="lk-lava-test-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.stand_in = os.path.join(self.tmp, "in", "Image")
        self.rd = os.path.join(self.tmp, "in", "initramfs.cpio.gz")
        os.makedirs(os.path.dirname(self.rd))
        for p in (self.stand_in, self.rd):
            with open(p, "wb") as f:
                f.write(b"\0" * 512)
        self.specs = qemu_conf.read_selftests()

    def write(self, guest):
        kernel, _ = qemu.guest_kernel(guest, build_root())
        if not os.path.isfile(kernel):
            kernel = self.stand_in
        names = lava.guest_names(guest, self.specs)
        return lava.write_job(guest, kernel, self.rd, names, self.tmp)

    def test_every_generated_job_validates(self):
        gens = [self.write(qemu_conf.load_guest(g)) for g in qemu_conf.guest_names()]
        results = common.Results(echo=False)
        t0 = time.monotonic()
        good = lava.validate(gens, self.tmp, results, dispatcher=not QUICK)
        sys.stderr.write(
            "[%d jobs validated in %.1fs] " % (len(gens), time.monotonic() - t0)
        )
        self.assertEqual(
            [r for r in results.rows if r[0] != "PASS"],
            [],
            "\n".join(map(str, results.rows)),
        )
        self.assertEqual(len(good), len(qemu_conf.guest_names()))

    def test_a_job_lavas_schema_rejects_is_a_fail_row(self):
        g = qemu_conf.load_guest("i386", overrides={"boot_timeout": "0"})
        results = common.Results(echo=False)
        self.assertEqual(lava.validate([self.write(g)], self.tmp, results), [])
        st, name, detail = results.rows[0]
        self.assertEqual((st, name), ("FAIL", "lava i386: job validates"))
        self.assertIn("LAVA's job schema rejects", detail)
        self.assertIn("boot", detail)

    def test_a_missing_artifact_is_a_fail_row(self):
        gen = self.write(qemu_conf.load_guest("i386"))
        os.unlink(os.path.join(self.tmp, "artifacts", "i386", "initramfs.cpio.gz"))
        results = common.Results(echo=False)
        self.assertEqual(lava.validate([gen], self.tmp, results), [])
        st, name, detail = results.rows[0]
        self.assertEqual((st, name), ("FAIL", "lava i386: job validates"))
        self.assertIn("initramfs.cpio.gz' does not exist", detail)

    def test_submit_checks_the_served_artifacts_first(self):
        # The jobs name the artifacts at a URL; --submit validates them
        # there (the dispatcher asks the server for each) before lavacli.
        import functools
        import http.server
        import threading

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

        handler = functools.partial(
            Quiet, directory=os.path.join(self.tmp, "artifacts")
        )
        os.makedirs(os.path.join(self.tmp, "artifacts"))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        url = "http://127.0.0.1:%d" % server.server_address[1]
        g = qemu_conf.load_guest("i386")
        gen = lava.write_job(g, self.stand_in, self.rd, [("32/t", 10)], self.tmp, url)
        with open(gen.job) as f:
            self.assertIn('"%s/i386/initramfs.cpio.gz"' % url, f.read())
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "lavacli"), "w") as f:
            f.write("#!/bin/sh\necho 77\n")
        os.chmod(os.path.join(bindir, "lavacli"), 0o755)
        path = os.environ["PATH"]
        self.addCleanup(os.environ.__setitem__, "PATH", path)
        os.environ["PATH"] = bindir + os.pathsep + path
        args = collections.namedtuple("Args", "out output guest submit")(
            self.tmp, self.tmp, None, "https://lava.example.org/RPC2"
        )
        results = common.Results(echo=False)
        lava.do_lava(args, results)
        self.assertEqual(
            [r[:2] for r in results.rows],
            [("PASS", "lava i386: job validates"), ("PASS", "lava i386: submit")],
            results.rows,
        )
        self.assertIn("job 77", results.rows[1][2])
        # Not published (yet): a FAIL row, and nothing submitted.
        os.unlink(os.path.join(self.tmp, "artifacts", "i386", "initramfs.cpio.gz"))
        results = common.Results(echo=False)
        lava.do_lava(args, results)
        self.assertEqual(
            [r[:2] for r in results.rows], [("FAIL", "lava i386: job validates")]
        )
        self.assertIn("initramfs.cpio.gz", results.rows[0][2])

    def test_a_kernel_that_does_not_boot_is_a_fail_row(self):
        if QUICK:
            self.skipTest("--quick: no qemu boots")
        g = qemu_conf.load_guest("i386", overrides={"boot_timeout": "20"})
        gen = lava.write_job(g, self.stand_in, self.rd, [("32/t", 10)], self.tmp)
        results = common.Results(echo=False)
        logs = os.path.join(self.tmp, "logs")
        os.makedirs(logs)
        t0 = time.monotonic()
        lava.run_job(gen, self.tmp, logs, results)
        took = time.monotonic() - t0
        st = statuses(results.rows)
        msg = "\n".join(map(str, results.rows))
        self.assertEqual(st["lava i386: job"], "FAIL", msg)
        self.assertEqual(st["lava i386: boot"], "FAIL", msg)
        self.assertEqual(st["lava i386/32: t"], "SKIP", msg)
        self.assertFalse([r for r in results.rows if r[0] == "PASS"], msg)
        self.assertLess(took, 120)


class LavaRunI386(unittest.TestCase):
    """The i386 guest through lava-run: `lk qemu`'s tests and verdicts."""

    GUEST = "i386"

    def test_same_rows_as_lk_qemu(self):
        if QUICK:
            self.skipTest("--quick: no qemu boots")
        need_lava(self)
        guest = qemu_conf.load_guest(self.GUEST)
        kernel, bdir = qemu.guest_kernel(guest, build_root())
        if not os.path.isfile(kernel):
            self.skipTest(
                "no %s kernel at %s: build it with 'scripts/lk build --target %s'"
                % (self.GUEST, kernel, guest["target"])
            )
        tmp = tempfile.mkdtemp(prefix="lk-lava-test-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        out = common.out_dir()
        stage_log = os.path.join(out, "logs", "qemu-%s.log" % self.GUEST)
        stage_rd = os.path.join(out, "qemu", self.GUEST, "initramfs.cpio.gz")
        t0 = time.monotonic()
        if self.GUEST in os.environ.get("LK_QEMU_STAGE_GUESTS", "").split() and all(
            os.path.exists(p) for p in (stage_log, stage_rd)
        ):
            # `lk test`'s qemu stage booted it minutes ago: its rows, on
            # that kernel and initramfs.
            r = serial.parse_log_file(stage_log)
            mine = verdict.judge(r) + verdict.judge_expects(guest, r, stage_log)
            rd = stage_rd
        else:
            tree = os.path.join(out, "tree")
            if not os.path.isfile(os.path.join(tree, "Makefile")):
                self.skipTest("no kernel tree at %s (scripts/lk apply)" % tree)
            results = common.Results(echo=False)
            scratch, logs = os.path.join(tmp, "qemu"), os.path.join(tmp, "logs")
            os.makedirs(logs)
            r = qemu.run_guest(
                guest,
                qemu_conf.read_selftests(),
                tree,
                scratch,
                logs,
                results,
                build_root=build_root(),
            )
            mine = [x for x in results.rows if not x[1].startswith("qemu build/")]
            rd = os.path.join(scratch, self.GUEST, "initramfs.cpio.gz")
        t1 = time.monotonic()
        scale, kmemleak = qemu_conf.debug_scale(guest, bdir)
        self.assertIsNotNone(r, "lk qemu did not boot %s" % self.GUEST)
        # The tests its initramfs holds (a test that did not build is not
        # there), with their limits.
        limits = dict(lava.guest_names(guest, qemu_conf.read_selftests(), scale))
        names = [(n, limits[n]) for n in r.expected]
        gen = lava.write_job(
            guest,
            kernel,
            rd,
            names,
            os.path.join(tmp, "lava"),
            scale=scale,
            kmemleak=kmemleak,
        )
        results = common.Results(echo=False)
        logs = os.path.join(tmp, "lava-logs")
        os.makedirs(logs)
        self.assertEqual(lava.validate([gen], tmp, results), [gen], results.rows)
        lava.run_job(gen, tmp, logs, results)
        t2 = time.monotonic()
        sys.stderr.write(
            "[%s: lk qemu %.1fs, lava-run %.1fs] " % (self.GUEST, t1 - t0, t2 - t1)
        )
        theirs = results.rows
        msg = "\n".join(map(str, theirs))
        for what in ("job validates", "job", "lava results"):
            self.assertEqual(
                row(theirs, "lava %s: %s" % (self.GUEST, what))[0], "PASS", msg
            )
        strip = lambda rows, p: sorted(
            (name[len(p) :], status) for status, name, _ in rows if name.startswith(p)
        )
        lk_qemu = strip(mine, "qemu %s" % self.GUEST)
        extra = ("job validates", "job", "lava results")
        by_lava = [
            x for x in strip(theirs, "lava %s" % self.GUEST) if x[0][2:] not in extra
        ]
        self.assertGreater(len(lk_qemu), len(names), mine)
        # (name, verdict) pairs that only one runner gave
        self.assertEqual(sorted(set(by_lava) ^ set(lk_qemu)), [])
        self.assertEqual(len(by_lava), len(lk_qemu))
