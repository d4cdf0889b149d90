# SPDX-License-Identifier: GPL-2.0
"""Tests of the read-back of the built system call tables (systable.py),
on canned readelf output."""

import os
import tempfile
import textwrap
import unittest

from unittest import mock

from .. import common, systable, targetconf


def right_entries(t: systable.Table, n: int = 424) -> dict[int, str]:
    """A table of n entries as SPEC Part 11 wants it: 393-423 right, the
    old numbers on _time32 entries, filler elsewhere."""
    entries = {i: "%ssys_call%d" % (t.prefix, i) for i in range(n)}
    for idx, names in systable.expected(t).items():
        entries[idx] = names[0]
    entries[systable.UNUSED] = "sys_ni_syscall"
    entries[265] = t.prefix + "sys_clock_gettime32"
    entries[13] = t.prefix + "sys_time32"
    return {i: e for i, e in entries.items() if i < n}


def readelf_text(
    entries: dict[int, str],
    elf64: bool = False,
    rela: bool = True,
    start: int = 0,
    size: int | None = None,
    symbol: str = "sys_call_table",
    stride: int | None = None,
    at: int = 0,
    extra: dict[int, str] | None = None,
) -> str:
    """What `readelf -W -h -S -r -s` prints for an object whose section 4
    (.rodata) holds the table symbol at start, entry i at
    start + i*stride + at naming entries[i] (and extra: {offset: name})."""
    stride = stride or (8 if elf64 else 4)
    width = 16 if elf64 else 8
    relocs = {start + i * stride + at: name for i, name in entries.items()}
    relocs.update(extra or {})
    secsize = max(relocs) + stride if relocs else 0
    lines = [
        "ELF Header:",
        "  Magic:   7f 45 4c 46 01 02 01 00 00 00 00 00 00 00 00 00 ",
        "  Class:                             %s" % ("ELF64" if elf64 else "ELF32"),
        "",
        "Section Headers:",
        "  [Nr] Name              Type            Addr     Off    Size   ES Flg Lk Inf Al",
        "  [ 0]                   NULL            00000000 000000 000000 00      0   0  0",
        "  [ 1] .text             PROGBITS        00000000 000040 000960 00  AX  0   0 32",
        "  [ 4] .rodata           PROGBITS        00000000 0009a0 %06x 00   A  0   0  4"
        % secsize,
        "Key to Flags:",
        "  W (write), A (alloc), X (execute), M (merge), S (strings), I (info),",
        "",
        "Relocation section '.rel.text' at offset 0x3904 contains 1 entry:",
        " Offset     Info    Type            Sym.Value  Sym. Name",
        "00000010  00010602 R_ARM_ABS32            00000000   sys_call_table",
        "",
        "Relocation section '.%s.rodata' at offset 0x3458 contains %d entries:"
        % ("rela" if rela else "rel", len(relocs)),
        " Offset     Info    Type                Sym. Value  Symbol's Name + Addend",
    ]
    for off, name in sorted(relocs.items()):
        lines.append(
            "%0*x  %0*x R_XX_ADDR%d           %0*x   %s%s"
            % (
                width,
                off,
                width,
                0x601,
                width * 4,
                width,
                0,
                name,
                " + 0" if rela else "",
            )
        )
    lines += [
        "",
        "Symbol table '.symtab' contains 3 entries:",
        "   Num:    Value  Size Type    Bind   Vis      Ndx Name",
        "     0: %0*x     0 NOTYPE  LOCAL  DEFAULT  UND " % (width, 0),
        "     5: %0*x %5d OBJECT  GLOBAL DEFAULT    4 %s"
        % (width, start, size if size is not None else len(entries) * stride, symbol),
        "     6: %0*x     0 NOTYPE  GLOBAL DEFAULT  UND sys_ni_syscall" % (width, 0),
    ]
    return "\n".join(lines) + "\n"


def problems(t: systable.Table, text: str) -> list[str]:
    return systable.check(t, systable.parse_readelf(text))


class ReadBack(unittest.TestCase):
    NATIVE = systable.parse_tables("a.o:sys_call_table:native:ipc")[0]
    COMPAT = systable.parse_tables("a.o:sys_call_table:compat:prefix=__ia32_:ipc")[0]

    def changed(self, t, changes, **kw):
        """The problems of a right table of t with the entries changes."""
        entries = right_entries(t)
        entries.update(changes)
        return problems(t, readelf_text(entries, elf64=t is self.COMPAT, **kw))

    def test_a_right_native_table_passes(self):
        t = self.NATIVE
        self.assertEqual(problems(t, readelf_text(right_entries(t))), [])
        self.assertEqual(problems(t, readelf_text(right_entries(t), rela=False)), [])

    def test_a_right_compat_table_passes(self):
        t = self.COMPAT
        entries = right_entries(t)
        self.assertEqual(entries[413], "__ia32_compat_sys_pselect6_time64")
        self.assertEqual(entries[403], "__ia32_sys_clock_gettime")
        self.assertEqual(entries[394], "__ia32_compat_sys_semctl")
        self.assertEqual(problems(t, readelf_text(entries, elf64=True)), [])

    def test_a_missing_entry_fails(self):
        t = self.NATIVE
        entries = right_entries(t)
        del entries[410]
        self.assertEqual(
            problems(t, readelf_text(entries, size=424 * 4)),
            ["410 is no entry, want sys_timerfd_gettime"],
        )

    def test_a_short_table_fails(self):
        t = self.NATIVE
        found = problems(t, readelf_text(right_entries(t, 418)))
        self.assertEqual(
            found[0], "418 missing: the table has 418 entries", "\n".join(found)
        )
        self.assertEqual(len(found), 6)  # 418-423

    def test_a_shifted_table_fails(self):
        t = self.NATIVE
        right = right_entries(t)
        shifted = {i + 1: right[i] for i in range(393, 423)}
        shifted.update({i: right[i] for i in range(0, 393)})
        shifted[424] = right[423]
        found = problems(t, readelf_text(shifted, size=425 * 4))
        self.assertIn("393 is no entry, want sys_semget", found)
        self.assertIn("403 is sys_msgctl, want sys_clock_gettime", found)
        self.assertIn(
            "sys_sched_rr_get_interval also at 424 "
            "(an old number takes the _time32 entry)",
            found,
        )

    def test_a_wrong_entry_fails(self):
        for table, changes, want in (
            (  # a compat entry in a native table
                self.NATIVE,
                {421: "compat_sys_rt_sigtimedwait_time64"},
                "421 is compat_sys_rt_sigtimedwait_time64, want sys_rt_sigtimedwait",
            ),
            (  # a 64-bit entry where compat needs its own
                self.COMPAT,
                {417: "__ia32_sys_recvmmsg"},
                "417 is __ia32_sys_recvmmsg, want __ia32_compat_sys_recvmmsg_time64",
            ),
            (  # an old number left on the 64-bit entry
                self.NATIVE,
                {265: "sys_clock_gettime"},
                "sys_clock_gettime also at 265 (an old number takes the _time32 entry)",
            ),
            (  # a name 5.1 gave up
                self.COMPAT,
                {13: "__ia32_compat_sys_time"},
                "13 is __ia32_compat_sys_time (5.1 name: _time32)",
            ),
        ):
            with self.subTest(want):
                self.assertEqual(self.changed(table, changes), [want])

    def test_the_unused_number_stays_unused(self):
        found = self.changed(self.NATIVE, {415: "sys_io_pgetevents"})
        self.assertIn("415 (unused) is sys_io_pgetevents", found)

    def test_ipc_numbers_only_where_the_option_says(self):
        t = systable.parse_tables("a.o:sys_call_table:native")[0]
        entries = right_entries(t)
        entries[394] = "sys_something_else"
        self.assertEqual(min(systable.expected(t)), 403)
        self.assertEqual(problems(t, readelf_text(entries)), [])

    def test_mips_numbers_and_a_table_inside_code(self):
        # mips: the o32 table starts at 4000, inside .text, its symbol
        # without a size; the next symbol ends it
        t = systable.parse_tables("a.o:sys_call_table:native:base=4000:ipc")[0]
        entries = right_entries(t)
        entries[410] = "sys_timerfd_gettime32"
        text = readelf_text(
            entries, start=0x2BC, size=0, rela=False, extra={0x10: "sys_futex"}
        )
        self.assertEqual(
            problems(t, text),
            ["4410 is sys_timerfd_gettime32, want sys_timerfd_gettime"],
        )

    def test_interleaved_ppc64_columns(self):
        t = systable.parse_tables(
            "a.o:sys_call_table:compat:stride=16:at=8:prefix=.:ipc"
        )[0]
        compat = right_entries(t)
        native = {i * 16: ".sys_native%d" % i for i in compat}

        def text():
            return readelf_text(
                compat, elf64=True, stride=16, at=8, size=0, extra=native
            )

        self.assertEqual(problems(t, text()), [])
        compat[403] = ".sys_clock_gettime32"
        self.assertEqual(
            problems(t, text()),
            ["403 is .sys_clock_gettime32, want .sys_clock_gettime"],
        )

    def test_s390_wrappers_of_the_64_bit_entries(self):
        t = systable.parse_tables(
            "a.o:sys_call_table_emu:compat:size=4:wrap=compat_:ipc"
        )[0]
        entries = right_entries(t)
        entries[403] = "compat_sys_clock_gettime"
        entries[422] = "compat_sys_futex"
        text = readelf_text(entries, elf64=True, stride=4, symbol="sys_call_table_emu")
        self.assertEqual(problems(t, text), [])
        entries[265] = "compat_sys_clock_gettime"
        text = readelf_text(entries, elf64=True, stride=4, symbol="sys_call_table_emu")
        self.assertEqual(
            problems(t, text),
            [
                "compat_sys_clock_gettime also at 265 "
                "(an old number takes the _time32 entry)"
            ],
        )

    def test_no_table_symbol(self):
        t = systable.parse_tables("a.o:sys_call_table32:compat")[0]
        self.assertEqual(
            problems(t, readelf_text(right_entries(t))), ["no symbol sys_call_table32"]
        )

    def test_readelf_lines_as_binutils_prints_them(self):
        text = textwrap.dedent(
            """\
            Relocation section '.rel.entry.text' at offset 0x3b30 contains 2 entries:
             Offset     Info    Type            Sym.Value  Sym. Name
            00000620  00010602 R_ARM_ABS32            00000000   sys_clock_gettime32
            00000850  00018c02 R_ARM_ABS32            00000000   sys_clock_gettime

            Relocation section '.rela.rodata' at offset 0x56c8 contains 2 entries:
                Offset             Info             Type               Symbol's Value  Symbol's Name + Addend
            0000000000000c98  0000017800000001 R_X86_64_64            0000000000000000 __ia32_sys_clock_gettime + 0
            0000000000000ca0  0000000200000001 R_X86_64_64            0000000000000000 .text + 1c
            """
        )
        elf = systable.parse_readelf(text)
        self.assertEqual(
            elf.relocs,
            {
                ".entry.text": {
                    0x620: "sys_clock_gettime32",
                    0x850: "sys_clock_gettime",
                },
                ".rodata": {0xC98: "__ia32_sys_clock_gettime", 0xCA0: ".text+0x1c"},
            },
        )

    def test_malformed_tables(self):
        for bad in ("a.o:t", "a.o:t:both", "a.o:t:native:base=x", "a.o:t:native:ipv"):
            with self.assertRaises(common.Failure, msg=bad):
                systable.parse_tables(bad)


class Report(unittest.TestCase):
    def test_rows(self):
        t = systable.parse_tables("a.o:sys_call_table:native:ipc")[0]
        good = readelf_text(right_entries(t))
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, "a.o"), "w").close()
            target = {
                "name": "x",
                "syscall_tables": "a.o:sys_call_table:native:ipc "
                "b.o:sys_call_table:native",
            }
            results = common.Results(echo=False)
            with mock.patch.object(systable, "readelf", return_value=good):
                systable.report(target, d, results)
        self.assertEqual(
            [r[:2] for r in results.rows],
            [
                ("PASS", "syscall table: x sys_call_table"),
                ("SKIP", "syscall table: x sys_call_table"),
            ],
        )
        self.assertIn("393-423", results.rows[0][2])


class Targets(unittest.TestCase):
    def test_every_wired_32_bit_abi_has_its_table_read_back(self):
        # SPEC Part 11's tables, each in the targets that build it
        for name in targetconf.matrix("full"):
            t = targetconf.load_target(name)
            if name in ("x86_64-nocompat", "um"):
                self.assertEqual(t["syscall_tables"], "", name)
                continue
            tables = systable.parse_tables(t["syscall_tables"])
            self.assertTrue(tables, name)
            if t["arch"] == "mips" and t["cross_compile"].startswith("mips64"):
                self.assertEqual(
                    [(x.symbol, x.base) for x in tables],
                    [("sys32_call_table", 4000), ("sysn32_call_table", 6000)],
                )
