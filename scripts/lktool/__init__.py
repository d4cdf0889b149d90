# SPDX-License-Identifier: GPL-2.0
"""lktool: apply, build, check, boot, fuzz, benchmark and mail the series.

scripts/lk is its command line (cli.py); one module per stage, and
common.py for what they share.  docs/design.md describes the design.
"""
