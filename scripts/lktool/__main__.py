# SPDX-License-Identifier: GPL-2.0
"""python3 -m lktool (from scripts/): the same as scripts/lk."""
import sys

from lktool.cli import main

sys.exit(main())
