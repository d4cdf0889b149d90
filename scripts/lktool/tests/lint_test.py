# SPDX-License-Identifier: GPL-2.0
"""Tests of the tool's static checks, and that its public functions have
type hints."""

import argparse
import ast
import importlib
import os
import subprocess
import tempfile
import unittest
from unittest import mock

from .. import common, lint

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def unannotated(path):
    """'function: what' for each public function or method of a module
    that lacks a parameter's or the return's type hint."""
    tree = ast.parse(open(path).read())
    found = []
    for node in tree.body:
        funcs = [node] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            funcs = [n for n in node.body if isinstance(n, ast.FunctionDef)]
        for fn in funcs:
            if fn.name.startswith("_") and fn.name != "__init__":
                continue
            a = fn.args
            params = a.posonlyargs + a.args + a.kwonlyargs
            params += [x for x in (a.vararg, a.kwarg) if x]
            for p in params:
                if p.annotation is None and p.arg not in ("self", "cls"):
                    found.append("%s: parameter %s" % (fn.name, p.arg))
            if fn.returns is None:
                found.append("%s: return" % fn.name)
    return found


class TypeHints(unittest.TestCase):
    def test_public_functions_have_type_hints(self):
        missing = []
        for fn in sorted(os.listdir(PACKAGE)):
            if fn.endswith(".py"):
                missing += [
                    "%s: %s" % (fn, m) for m in unannotated(os.path.join(PACKAGE, fn))
                ]
        self.assertEqual(missing, [])

    def test_the_check_sees_a_missing_hint(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py") as f:
            f.write(
                "def f(a: int, b) -> None:\n    pass\n\n\n"
                "class C:\n    def g(self, x: int):\n        pass\n"
            )
            f.flush()
            self.assertEqual(unannotated(f.name), ["f: parameter b", "g: return"])


class TestGroups(unittest.TestCase):
    def test_every_test_module_is_in_a_group(self):
        # a module that no group names never runs, in `lk test` or here
        from . import __main__ as runner

        here = os.path.join(PACKAGE, "tests")
        modules = sorted(f[:-3] for f in os.listdir(here) if f.endswith("_test.py"))
        listed = [m for group in runner.GROUPS.values() for m in group]
        self.assertEqual(modules, sorted(set(m.split(".")[0] for m in listed)))
        # a module split into classes lists each of its classes once
        for name in set(m.split(".")[0] for m in listed if "." in m):
            module = importlib.import_module("lktool.tests." + name)
            classes = unittest.defaultTestLoader.loadTestsFromModule(module)
            tested = {type(t).__name__ for suite in classes for t in suite}
            self.assertEqual(
                sorted(m.split(".")[1] for m in listed if m.startswith(name + ".")),
                sorted(tested),
            )
            self.assertNotIn(name, listed)


class Lint(unittest.TestCase):
    def rows(self, which, returncode, output=""):
        results = common.Results(echo=False)
        done = subprocess.CompletedProcess([], returncode, output, "")
        with tempfile.TemporaryDirectory() as out, mock.patch.object(
            lint.shutil, "which", lambda c: which
        ), mock.patch.object(common, "run", return_value=done):
            lint.do_lint(argparse.Namespace(out=out), results)
        return [(r[0], r[1], r[2].split(";")[0]) for r in results.rows]

    def test_each_checker_is_one_row(self):
        self.assertEqual(
            [r[:2] for r in self.rows("/usr/bin/x", 0)],
            [("PASS", "lint: mypy"), ("PASS", "lint: flake8"), ("PASS", "lint: black")],
        )

    def test_a_complaint_fails_with_its_first_lines(self):
        rows = self.rows("/usr/bin/x", 1, "lktool/a.py:1: error: no\n\nmore\n")
        self.assertEqual(
            rows[0], ("FAIL", "lint: mypy", "exit 1: lktool/a.py:1: error: no | more")
        )

    def test_a_checker_that_is_not_installed_fails(self):
        self.assertEqual(
            self.rows(None, 0)[1], ("FAIL", "lint: flake8", "flake8 is not installed")
        )
