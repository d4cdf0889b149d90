#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Stand-alone command line of lktool/qemu.py (see its docstring)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from lktool.qemu import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
