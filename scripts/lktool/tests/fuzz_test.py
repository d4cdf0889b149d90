# SPDX-License-Identifier: GPL-2.0
"""Tests of the fuzz stage: phases, manifest, initramfs and the judgement of
canned serial logs."""

import gzip
import os
import stat
import tempfile
import unittest

from .. import common, fuzz, fuzz_judge, fuzz_trinity, serial, userspace
from .qemu_support import cpio_files, row, serial_log


TOKEN = "00112233445566778899aabb"

# init.c: MAX_ARGS words after the name, and its line buffer
INIT_MAX_ARGS = 32
INIT_LINE = 1024
LISTING = """\
Trinity 2023.01  Dave Jones <davej@codemonkey.org.uk>
[main] Done parsing arguments.
syscalls: 429 [32-bit]
entrypoint 88 reboot : [32-bit] Enabled
entrypoint 240 futex : [32-bit] Enabled
entrypoint 309 ppoll : [32-bit] Enabled
entrypoint 385 io_pgetevents, : [32-bit] Enabled
entrypoint 386 rseq, : [32-bit] Enabled
entrypoint 402 msgctl : [32-bit] Enabled
entrypoint 403 timer_settime : [32-bit] Enabled
entrypoint 408 ppoll : [32-bit] Enabled
entrypoint 423 sched_rr_get_interval : [32-bit] Enabled
entrypoint 424 pidfd_send_signal : [32-bit] Enabled
syscalls: 451 [64-bit]
entrypoint 158 arch_prctl : [64-bit] Enabled
entrypoint 169 reboot : [64-bit] Enabled
entrypoint 271 ppoll : [64-bit] Enabled AVOID
entrypoint 333 io_pgetevents, : [64-bit] Enabled
"""
TABLE32 = {
    88: "reboot",
    240: "futex",
    309: "ppoll",
    385: "io_pgetevents,",
    386: "rseq,",
    402: "msgctl",
    403: "timer_settime",
    408: "ppoll",
    423: "sched_rr_get_interval",
    424: "pidfd_send_signal",
}
TABLE64 = {158: "arch_prctl", 169: "reboot", 271: "ppoll", 333: "io_pgetevents,"}
ORDER = [
    "%s-%s" % (m, g)
    for m in ("root", "user")
    for g in ("time", "time64", "binderfs", "cpuset")
]


def pairs(args):
    """trinity options as [(option, value)]; fails on a lone word."""
    assert len(args) % 2 == 0, args
    return list(zip(args[::2], args[1::2]))


def by_name(plan):
    return {ph.name: ph for ph in plan}


def plan_of(phases, seed=7, abi="64"):
    return [
        (
            userspace.manifest_name(abi, ph.name),
            ph,
            fuzz.phase_seed(seed, k),
            "/lk-qemu/bin/trinity",
        )
        for k, ph in enumerate(phases)
    ]


class Phases(unittest.TestCase):
    def setUp(self):
        self.tables = fuzz_trinity.trinity_tables(LISTING)
        self.all = fuzz_trinity.phases(self.tables, "32 64")

    def test_tables(self):
        self.assertEqual(self.tables, {"32": TABLE32, "64": TABLE64})

    def test_order_and_modes(self):
        self.assertEqual([ph.name for ph in self.all], ORDER)
        for ph in self.all:
            self.assertEqual("--user" in ph.flags, ph.name.startswith("user-"), ph)
            self.assertEqual(ph.args.count("-V"), 1, ph)

    def test_time(self):
        for mode in ("root", "user"):
            ph = by_name(self.all)[mode + "-time"]
            self.assertEqual(
                pairs(ph.args),
                [("-c", c) for c in fuzz_trinity.TIME_CALLS]
                + [("-V", "/tmp/lkfuzz/files")],
            )

    def excluded(self, ph):
        p = pairs(ph.args)
        self.assertEqual(p[-1], ("-V", "/tmp/lkfuzz/files"))
        self.assertEqual({o for o, _ in p[:-1]}, {"-x"}, ph.args)
        return {v for _, v in p[:-1]}

    def test_time64(self):
        ph = by_name(self.all)["root-time64"]
        x = self.excluded(ph)
        at403 = {TABLE32[n] for n in TABLE32 if 403 <= n <= 423}
        self.assertFalse(x & set(fuzz_trinity.TIME_CALLS), x)
        self.assertFalse(x & at403, x)
        self.assertFalse([c for c in x if "," in c], x)
        self.assertEqual(x, {"reboot", "msgctl", "pidfd_send_signal", "arch_prctl"})
        self.assertEqual(self.excluded(by_name(self.all)["user-time64"]), x)

    def test_time64_32_bit_only(self):
        ph = by_name(fuzz_trinity.phases(self.tables, "32"))["root-time64"]
        self.assertEqual(self.excluded(ph), {"reboot", "msgctl", "pidfd_send_signal"})

    def test_binderfs_and_cpuset(self):
        for mode in ("root", "user"):
            b = by_name(self.all)[mode + "-binderfs"]
            self.assertIn("--binderfs", b.flags)
            self.assertIn(("-V", "/tmp/lkfuzz/binderfs"), pairs(b.args))
            self.assertIn(("-c", "ioctl"), pairs(b.args))
            c = by_name(self.all)[mode + "-cpuset"]
            self.assertIn("--cpuset", c.flags)
            self.assertIn(("-V", "/sys/fs/cgroup/lkfuzz-" + mode), pairs(c.args))

    def test_phase_seed_wraps(self):
        self.assertEqual(fuzz.phase_seed(5, 3), 8)
        self.assertEqual(fuzz.phase_seed(2**32 - 2, 3), 1)
        self.assertEqual(fuzz.phase_seed(2**32 - 1, 0), 2**32 - 1)


class Manifest(unittest.TestCase):
    def test_lines(self):
        plan = plan_of(
            fuzz_trinity.phases(fuzz_trinity.trinity_tables(LISTING), "32 64"),
            seed=2**32 - 3,
        )
        lines = fuzz.manifest_lines(plan, 45, scale=3)
        self.assertEqual(len(lines), len(plan))
        for line, (name, ph, seed, trinity) in zip(lines, plan):
            self.assertTrue(line.endswith("\n"))
            self.assertLess(len(line.encode()), INIT_LINE, line)
            w = line.split()
            self.assertEqual(w[0], str((45 + fuzz.PHASE_SLACK) * 3))
            self.assertEqual(w[1], name)
            argv = w[2:]
            self.assertLessEqual(len(argv), INIT_MAX_ARGS, line)
            dd = argv.index("--")
            self.assertEqual(
                argv[:dd],
                ["/lk-qemu/bin/lk-fuzz"]
                + list(ph.flags)
                + [
                    "--sysrq",
                    "--seconds",
                    "45",
                    "--seed",
                    str(seed),
                    "--args-file",
                    "/lk-qemu/fuzz/%s.args" % ph.name,
                ],
            )
            t = argv[dd + 1 :]
            self.assertEqual(t[0], trinity)
            self.assertEqual(t[t.index("-s") + 1], str(seed))
            self.assertEqual(t[-2:], ["-P", fuzz.DOMAIN])
            self.assertNotIn("-E", t)
        self.assertEqual(plan[3][2], 0)  # the seeds wrapped

    def test_init_limits_are_what_this_test_assumes(self):
        with open(userspace.INIT_C) as f:
            src = f.read()
        self.assertIn("#define MAX_ARGS\t%d" % INIT_MAX_ARGS, src)
        self.assertIn("char line[%d], *argv[MAX_ARGS + 1]" % INIT_LINE, src)


class Initramfs(unittest.TestCase):
    def test_contents(self):
        plan = plan_of(
            fuzz_trinity.phases(fuzz_trinity.trinity_tables(LISTING), "32"), abi="32"
        )
        lines = fuzz.manifest_lines(plan, 10)
        with tempfile.TemporaryDirectory() as d:
            paths = {
                n: os.path.join(d, n) for n in ("init", "driver", "trinity", "libc")
            }
            for n, path in paths.items():
                with open(path, "wb") as f:
                    f.write(b"\x7fELF " + n.encode())
            rd = os.path.join(d, "out", "fuzz.cpio.gz")
            fuzz.fuzz_initramfs(
                rd,
                paths["init"],
                paths["driver"],
                paths["trinity"],
                [("/lib/libc.so.6", paths["libc"])],
                lines,
                plan,
            )
            with gzip.open(rd) as f:
                files = cpio_files(f.read())
        for name, content in (
            ("init", "init"),
            ("lib/libc.so.6", "libc"),
            ("lk-qemu/bin/lk-fuzz", "driver"),
            ("lk-qemu/bin/trinity", "trinity"),
        ):
            mode, data = files[name]
            self.assertEqual(data, b"\x7fELF " + content.encode(), name)
            self.assertTrue(stat.S_ISREG(mode) and mode & 0o111, name)
        self.assertTrue(stat.S_ISCHR(files["dev/console"][0]))
        for _, ph, _, _ in plan:
            data = files["lk-qemu/fuzz/%s.args" % ph.name][1]
            self.assertEqual(data.decode(), " ".join(ph.args) + "\n")
        self.assertEqual(files["lk-qemu/manifest"][1].decode(), "".join(lines))


class Judge(unittest.TestCase):
    SECONDS = 60

    def judge(self, runs, known=()):
        plan = plan_of(
            fuzz_trinity.phases(fuzz_trinity.trinity_tables(LISTING), "32 64"),
            seed=1000,
        )
        plan = [p for p in plan if p[0] in [n for n, _, _ in runs]]
        r = serial.parse_log(serial_log(runs, TOKEN), "/logs/fuzz-x86_64.log")
        return fuzz_judge.judge_phases(r, plan, self.SECONDS, known)

    RAN = "[main] Ran 1234 syscalls. Successes: 5  Failures: 1229\n"

    def one(self, name, output, end="exit=0"):
        """(status, detail) of the only phase of a log."""
        st, _, detail = row(
            self.judge([("64/" + name, output, end)]), "fuzz x86_64/64: " + name
        )
        return st, detail

    def test_pass_with_calls_and_churn(self):
        rows = self.judge(
            [
                (
                    "64/root-time",
                    "lk-fuzz: seed 1000\n" + self.RAN + "lk-fuzz: trinity exit=0\n",
                    "exit=0",
                ),
                (
                    "64/root-binderfs",
                    "[main] Ran 10 syscalls. Successes: 1  "
                    "Failures: 9\nlk-fuzz: binderfs churn ops=77 errors=3\n",
                    "exit=0",
                ),
            ]
        )
        st, _, detail = row(rows, "fuzz x86_64/64: root-time")
        self.assertEqual(st, "PASS")
        self.assertIn("1234 calls (seed 1000) in 60s", detail)
        st, _, detail = row(rows, "fuzz x86_64/64: root-binderfs")
        self.assertEqual(st, "PASS")
        self.assertIn("10 calls (seed 1002)", detail)
        self.assertIn("binderfs churn 77 ops", detail)
        self.assertEqual(row(rows, "fuzz x86_64: kernel log")[0], "PASS")
        self.assertEqual(row(rows, "fuzz x86_64: boot")[0], "PASS")
        self.assertFalse([r for r in rows if r[0] != "PASS"], rows)

    def test_no_ran_line(self):
        st, detail = self.one("root-time", "lk-fuzz: trinity exit=0\n")
        self.assertEqual(st, "FAIL")
        self.assertIn("did not report", detail)
        self.assertIn("/logs/fuzz-x86_64.log:7", detail)

    def test_no_call(self):
        st, detail = self.one(
            "user-cpuset", "[main] Ran 0 syscalls. Successes: 0  Failures: 0\n"
        )
        self.assertEqual(st, "FAIL")
        self.assertIn("made no call", detail)

    def test_exit_1_keeps_the_calls(self):
        st, detail = self.one(
            "root-time",
            self.RAN + "lk-fuzz: trinity "
            "exit=0\nlk-fuzz: the kernel became tainted: "
            "0 -> 512\n",
            "exit=1",
        )
        self.assertEqual(st, "FAIL")
        self.assertIn("exit 1", detail)
        self.assertIn("1234 calls (seed 1000)", detail)

    def test_kasan_during_a_phase(self):
        rows = self.judge(
            [
                (
                    "64/root-time",
                    "[   50.000000] BUG: KASAN: use-after-free in "
                    "binderfs_evict_inode+0x10/0x20\n" + self.RAN,
                    "exit=0",
                )
            ]
        )
        st, _, detail = row(rows, "fuzz x86_64: kernel log")
        self.assertEqual(st, "FAIL")
        self.assertIn("KASAN during 64/root-time", detail)
        self.assertIn("binderfs_evict_inode", detail)

    # the report i386-debug's binderfs phase met (log of seed 944884573)
    HUGETLB = (
        "[  687.286590] UBSAN: Undefined behaviour in ../../tree/"
        "include/linux/hugetlb.h:409:28\n[  687.287027] shift "
        "exponent 63 is too large for 32-bit type 'long unsigned "
        "int'\n"
    )

    def test_known_report_is_a_skip_not_a_pass(self):
        rows = self.judge(
            [("64/root-binderfs", self.HUGETLB + self.RAN, "exit=0")],
            fuzz_judge.read_known(),
        )
        st, _, detail = row(rows, "fuzz x86_64: known v4.20 report")
        self.assertEqual(st, "SKIP")
        self.assertIn("UBSAN during 64/root-binderfs", detail)
        self.assertIn("hugetlb-sizelog-shift in configs/fuzz/known-reports.txt", detail)
        self.assertIn("/logs/fuzz-x86_64.log:8", detail)
        self.assertEqual(row(rows, "fuzz x86_64: kernel log")[0], "PASS")
        self.assertEqual(row(rows, "fuzz x86_64/64: root-binderfs")[0], "PASS")

    def test_unknown_reports_still_fail(self):
        known = fuzz_judge.read_known()
        for text in (
            self.HUGETLB.replace("409:28", "410:5"),
            self.HUGETLB.replace(
                "UBSAN: Undefined behaviour in", "BUG: KASAN: slab-out-of-bounds in"
            ),
        ):
            with self.subTest(text=text.split("\n")[0]):
                rows = self.judge(
                    [("64/root-binderfs", text + self.RAN, "exit=0")], known
                )
                self.assertEqual(row(rows, "fuzz x86_64: kernel log")[0], "FAIL")
                self.assertFalse([r for r in rows if "known" in r[1]])
        # without the list, the known one fails too
        rows = self.judge([("64/root-binderfs", self.HUGETLB + self.RAN, "exit=0")])
        self.assertEqual(row(rows, "fuzz x86_64: kernel log")[0], "FAIL")

    def test_known_reports_file(self):
        entries = fuzz_judge.read_known()
        self.assertTrue(entries)
        for e in entries:
            self.assertIn(e.kind, [k for k, _ in serial.ISSUE_PATTERNS])
            self.assertTrue(e.why)
        with tempfile.TemporaryDirectory() as d:
            bad = os.path.join(d, "known")
            for text in (
                "name: a\nkind: UBSAN\nmatch: x\n",
                "name: a\nkind: UBSAN\nmatch: (\nwhy: w\n",
                "just words\n",
            ):
                with self.subTest(text=text):
                    with open(bad, "w") as f:
                        f.write(text)
                    with self.assertRaises(common.Failure):
                        fuzz_judge.read_known(bad)
