# SPDX-License-Identifier: GPL-2.0
"""The benchmark's table, CSV and chart."""

from __future__ import annotations

from typing import Any, Sequence

import collections
import csv
import os
import subprocess
import sys

from . import bench_judge, common


CSV_COLUMNS = ("guest", "abi", "case", "base", "tip", "ratio")


def write_csv(path: str, rows: list[bench_judge.Row]) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow(
                (
                    r.guest,
                    r.abi,
                    r.case,
                    r.base,
                    r.tip,
                    "%.4f" % r.ratio if r.ratio is not None else "",
                )
            )
    os.replace(tmp, path)


def table(rows: list[bench_judge.Row]) -> list[str]:
    """The rows as a text table (lines)."""
    head = ("guest/abi", "case", "base", "tip", "ratio", "status")
    body = [
        (
            "%s/%s" % (r.guest, r.abi),
            r.case,
            r.base or "-",
            r.tip or "-",
            "%.2f" % r.ratio if r.ratio is not None else "-",
            r.status,
        )
        for r in rows
    ]
    widths = [max(len(x[i]) for x in [head] + body) for i in range(6)]
    lines = []
    for x in [head] + body:
        lines.append(
            "  ".join(
                x[i].ljust(widths[i]) if i < 2 or i == 5 else x[i].rjust(widths[i])
                for i in range(6)
            ).rstrip()
        )
    return lines


# Debian's python3-matplotlib is for Debian's interpreter; a tool run by
# another python3 (a pyenv one first on PATH, say) draws with this one.
DEBIAN_PYTHON = "/usr/bin/python3"
ChartRow = collections.namedtuple("ChartRow", "guest abi case ratio")


def read_csv_ratios(path: str) -> list[ChartRow]:
    """The rows of write_csv() that have a ratio, for chart()."""
    with open(path, newline="") as f:
        return [
            ChartRow(r["guest"], r["abi"], r["case"], float(r["ratio"]))
            for r in csv.DictReader(f)
            if r["ratio"]
        ]


def chart(path: str, rows: Sequence[Any], csv_path: str | None = None) -> bool:
    """A bar chart of the ratios; False when matplotlib is missing.

    Without matplotlib in this interpreter, and with csv_path, Debian's
    interpreter draws it from the CSV (--chart).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        if (
            csv_path
            and os.path.exists(DEBIAN_PYTHON)
            and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON)
        ):
            drawn = subprocess.run(
                [
                    DEBIAN_PYTHON,
                    os.path.join(common.TOP, "scripts", "lk_bench.py"),
                    "--chart",
                    csv_path,
                    path,
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            return drawn.returncode == 0
        return False
    bars = [r for r in rows if r.ratio is not None]
    groups = []
    for r in bars:
        g = "%s/%s" % (r.guest, r.abi)
        if g not in groups:
            groups.append(g)
    colors = ["C%d" % (groups.index("%s/%s" % (r.guest, r.abi)) % 10) for r in bars]
    fig, ax = plt.subplots(figsize=(max(6, 0.32 * len(bars) + 2), 5.5))
    ax.bar(range(len(bars)), [r.ratio for r in bars], color=colors)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels(
        ["%s/%s %s" % (r.guest, r.abi, r.case) for r in bars], rotation=90, fontsize=7
    )
    ax.set_ylabel("tip / base, instructions per call")
    ax.set_title("System call cost with the series (QEMU -icount, median of batches)")
    if bars:
        lo = min(r.ratio for r in bars)
        hi = max(r.ratio for r in bars)
        ax.set_ylim(min(0.9, lo - 0.05), max(1.1, hi + 0.05))
    if groups:
        ax.legend(
            handles=[
                Patch(color="C%d" % (i % 10), label=g) for i, g in enumerate(groups)
            ],
            fontsize=8,
        )
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
