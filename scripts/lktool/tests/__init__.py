# SPDX-License-Identifier: GPL-2.0
"""The tests of lktool, one module per part of the tool; __main__.py runs
them in the groups that `scripts/lk selftest` reports."""
