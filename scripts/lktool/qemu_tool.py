# SPDX-License-Identifier: GPL-2.0
"""What the command lines of the stand-alone QEMU tools share: lk_qemu.py
(qemu.py), lk_fuzz.py (fuzz.py) and lk_bench.py (bench.py)."""

from __future__ import annotations

from typing import Callable, Sequence

import argparse
import sys

from . import common


def tool_parser(
    prog: str, doc: str, out_note: str = "", x86_guests: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """The command line of a QEMU stage tool: its docstring and --out; with
    x86_guests (its default guests), --guest."""
    p = argparse.ArgumentParser(
        prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--out",
        help="work directory (default: $LK_OUT or "
        "~/.cache/linux-v4.20-work)" + out_note,
    )
    if x86_guests:
        p.add_argument(
            "--guest",
            action="append",
            help="x86 guest of "
            "configs/qemu/ (repeatable; default: %s)" % " ".join(x86_guests),
        )
    return p


def run_tool(prog: str, stage: Callable[[common.Results], None]) -> int:
    """What lk_fuzz.py and lk_bench.py do once their options are read:
    stage(results), then the summary line; the exit status is 1 on a FAIL
    row, 2 when the tool cannot run at all."""
    results = common.Results()
    try:
        stage(results)
    except (common.Failure, OSError) as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return 2
    common.log(results.summary())
    return 0 if results.ok() else 1
