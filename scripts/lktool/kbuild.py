# SPDX-License-Identifier: GPL-2.0
"""Which kbuild goals build what a patch touches: Makefile object lists and
directories."""

from __future__ import annotations

from typing import Callable, Sequence

import collections
import os
import re

from . import common, targetconf


OBJ_LIST_RE = re.compile(r"^\s*([\w-]+)-(y|\$\((CONFIG_\w+)\))\s*[:+]?=(.*)$")
MAKE_COND_RE = re.compile(r"^\s*(ifeq|ifneq|ifdef|ifndef|else|endif)\b")
MAKE_TEST_RE = re.compile(
    r"^\s*(ifeq|ifneq)\s*\(\s*\$\((CONFIG_\w+)\)\s*,"
    r"\s*(y?)\s*\)\s*$|^\s*(ifdef|ifndef)\s+(CONFIG_\w+)"
    r"\s*$"
)

# A Makefile test on one option: (symbol, value wanted, negated); and the
# condition of an object: 'y', a CONFIG_ symbol, or one with the tests of
# the ifeq/ifdef blocks around its list.
Guard = tuple[str, str, bool]
Condition = str | tuple[str, tuple[Guard, ...]]


def make_guard(line: str) -> Guard | None:
    """(symbol, wanted, negated) of a Makefile conditional on one option:
    'ifeq ($(CONFIG_X),y)' is ('CONFIG_X', 'y', False), 'ifdef CONFIG_X'
    and 'ifneq ($(CONFIG_X),)' are ('CONFIG_X', '', True), i.e. the value
    is not empty.  Any other test is None: it may hold or not."""
    m = MAKE_TEST_RE.match(line)
    if not m:
        return None
    if m.group(4):
        return (m.group(5), "", m.group(4) == "ifdef")
    return (m.group(2), m.group(3), m.group(1) == "ifneq")


def guard_holds(guard: Guard, config: dict[str, str]) -> bool:
    """Whether a make_guard() test holds for a .config ({CONFIG_X: value});
    an unset option is empty, as it is to make."""
    symbol, wanted, negated = guard
    return (config.get(symbol, "") == wanted) != negated


def makefile_objects(text: str) -> dict[str, list[Condition]]:
    """{object: [condition, ...]} from the kbuild lists of a Makefile
    (obj-y, obj-$(CONFIG_FOO), lib-y, and helper or composite lists such
    as tmp-$(CONFIG_COMPAT) or foo-y); a condition is 'y' or a CONFIG_
    symbol, or, for a list inside ifeq/ifdef blocks on options, a tuple
    of that and the make_guard() tests that must hold (an else block
    negates its test).  Flag variables and host programs are no object
    lists."""
    objs = collections.defaultdict(list)
    guards = []
    for line in text.replace("\\\n", " ").splitlines():
        cond = MAKE_COND_RE.match(line)
        if cond:
            word = cond.group(1)
            if word.startswith("if"):
                guards.append(make_guard(line))
            elif word == "else" and guards and guards[-1]:
                symbol, wanted, negated = guards[-1]
                guards[-1] = (symbol, wanted, not negated)
            elif word == "else" and guards:
                guards[-1] = None
            elif word == "endif" and guards:
                guards.pop()
            continue
        m = OBJ_LIST_RE.match(line)
        if not m or re.search(r"flags|host|always|targets|clean", m.group(1)):
            continue
        known = tuple(g for g in guards if g)
        for word in m.group(4).split("#", 1)[0].split():
            if word.endswith(".o"):
                objs[word].append(
                    (m.group(3) or "y", known) if known else m.group(3) or "y"
                )
    return objs


def object_built(
    conditions: list[Condition], config: dict[str, str], wanted: set[str]
) -> bool:
    """Whether one of an object's makefile_objects() conditions makes
    the target with this .config build it, as built-in ('y') or a module
    ('m') where those are wanted."""
    for cond in conditions:
        guards: tuple[Guard, ...] = ()
        if isinstance(cond, tuple):
            cond, guards = cond
        if (cond == "y" or config.get(cond) in wanted) and all(
            guard_holds(g, config) for g in guards
        ):
            return True
    return False


def list_only_change(diff: str) -> str | None:
    """The lines a Makefile diff adds, if it changes object lists only.

    A change that adds or removes kbuild object lists (and comments,
    blank lines, or balanced conditionals around them) changes which
    objects are built, not how: the objects it names are then the goals.
    Anything else (flags, rules, a list continued over lines) returns
    None: only the directory goal proves such a change.
    """
    added: list[str] = []
    opened: collections.Counter[str] = collections.Counter()
    for line in diff.splitlines():
        if line.startswith(("+++", "---")) or line[:1] not in ("+", "-"):
            continue
        sign, body = line[0], line[1:]
        if not body.strip() or body.lstrip().startswith("#"):
            continue
        cond = MAKE_COND_RE.match(body)
        if cond:
            word = cond.group(1)
            if word.startswith("if"):
                opened[sign] += 1
            elif word == "endif":
                opened[sign] -= 1
            continue
        m = OBJ_LIST_RE.match(body)
        if (
            not m
            or body.rstrip().endswith("\\")
            or re.search(r"flags|host|always|targets|clean", m.group(1))
        ):
            return None
        if sign == "+":
            added.append(body)
    if any(opened.values()):
        return None
    return "\n".join(added)


def object_goals(
    tree: str,
    config: dict[str, str],
    d: str,
    touched: Sequence[str],
    makefile_diff: Callable[[str], str] | None = None,
    builtin_only: bool = False,
) -> list[str] | None:
    """The objects of directory d (e.g. 'net/') that compile what a change
    touches there, for a target with this .config; None when only the
    directory goal will do.

    The objects are those of the touched sources and, where d's Makefile
    or Kbuild changes its object lists only (list_only_change() of
    makefile_diff(path), a function giving the diff of that file), the
    objects the change adds.  The directory goal is needed when d's
    Makefile or Kbuild changes otherwise, or when a touched source is
    neither named by the Makefile nor #included by another touched
    source of d.  A Kconfig change alone needs no object: the
    configuration step reads it, and the sources using its symbols are
    touched themselves.  An object whose options the target does not
    set is left out, as the directory goal would leave it out; with
    builtin_only, so is one built as a module.
    """
    mine = [f for f in touched if os.path.dirname(f) + "/" == d]
    added = ""
    for f in mine:
        if os.path.basename(f) in ("Makefile", "Kbuild"):
            change = list_only_change(makefile_diff(f)) if makefile_diff else None
            if change is None:
                return None
            added += change + "\n"
    sources = [f for f in mine if f.endswith((".c", ".S"))]
    rules = makefile_objects(
        read_text(os.path.join(tree, d, "Makefile"))
        + "\n"
        + read_text(os.path.join(tree, d, "Kbuild"))
    )
    if sources and not rules:
        return None
    wanted = set(("y", "m") if not builtin_only else ("y",))
    objs = [os.path.basename(f)[:-2] + ".o" for f in sources]
    for f, obj in zip(sources, objs):
        if obj not in rules:
            includes = '#include "%s"' % os.path.basename(f)
            if any(
                includes in read_text(os.path.join(tree, g)) for g in sources if g != f
            ):
                continue
            return None
    objs += [o for o in makefile_objects(added) if o not in objs]
    goals = []
    for obj in objs:
        if obj in rules and object_built(rules[obj], config, wanted):
            if is_head_object(tree, d + obj):
                return None
            goals.append(d + obj)
    return goals


def is_head_object(tree: str, obj: str) -> bool:
    """Whether obj is one of its architecture's head-y objects (head.o,
    head_64.o, ...).  The top Makefile makes those depend on every
    directory of vmlinux, so that `make arch/arm64/kernel/head.o` builds
    all of them: such an object is built with its directory instead."""
    parts = obj.split("/")
    if len(parts) < 3 or parts[0] != "arch":
        return False
    text = read_text(os.path.join(tree, "arch", parts[1], "Makefile"))
    for m in re.finditer(r"(?m)^head-y\s*[:+]?=\s*(.*)$", text):
        for word in m.group(1).split():
            pattern = ".*".join(re.escape(p) for p in re.split(r"\$\([^)]*\)", word))
            if re.fullmatch(pattern, obj):
                return True
    return False


def read_text(path: str) -> str:
    """The text of a file, or "" if it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def ci_goals_for(
    t: common.Target,
    touched: Sequence[str],
    deleted: Sequence[str] = (),
    tree: str | None = None,
    config: dict[str, str] | None = None,
    makefile_diff: Callable[[str], str] | None = None,
) -> list[str]:
    """The reduced goals of a target in CI.

    A target may name `ci_goals` (configs/targets/*.conf) to keep CI within
    its time on a machine whose ccache is cold.  What the upstream-bound
    patches touch is always added, so CI still compiles all of the
    series' code for that architecture; where a patch needs a full build
    (a header change without a source change), CI builds everything.
    Given the applied tree and the target's .config, a touched directory
    becomes the built-in objects that hold the touched sources
    (object_goals()), so that a patch to net/socket.c does not compile
    all of net/.  Such a build compiles no module, so its warnings can be
    compared with the committed baseline of the target's full goals.
    """
    extra = build_dirs_for(touched, common.srcarch(t["arch"]), deleted)
    if "vmlinux" in extra:
        return t["goals"]
    goals = list(t["ci_goals"])
    for d in extra:
        if d in goals:
            continue
        objs = None
        if tree is not None and config is not None:
            objs = object_goals(
                tree, config, d, touched, makefile_diff, builtin_only=True
            )
        goals += [d] if objs is None else [o for o in objs if o not in goals]
    return goals


def outside_image(f: str, arch: str) -> bool:
    """True for files that no kernel build of `arch` reads.

    scripts/ and the parts of tools/ that objtool is made from take part in
    every build, so they are not outside; tools/testing/ and the rest are.
    """
    parts = f.split("/")
    if parts[0] in ("Documentation", "samples", "LICENSES"):
        return True
    if parts[0] == "tools" and not f.startswith(
        (
            "tools/objtool/",
            "tools/lib/",
            "tools/include/",
            "tools/arch/",
            "tools/build/",
            "tools/scripts/",
        )
    ):
        return True
    if parts[0] == "arch" and len(parts) > 1 and parts[1] != arch:
        return True
    return f in ("MAINTAINERS", "CREDITS", "README", ".gitignore", ".mailmap")


# The directory whose objects include the headers generated from a system
# call table: building it proves the table's entry points are declared.
SYSCALL_TABLE_USERS = {
    "arch/x86/entry/syscalls/": "arch/x86/entry/",
    "arch/arm/tools/": "arch/arm/kernel/",
    # arm64's AArch32 table is a header, which sys32.c includes
    "arch/arm64/include/asm/unistd32.h": "arch/arm64/kernel/",
}


def table_user(f: str) -> str | None:
    """The directory that includes what a system call table f generates
    (or f itself), or None if f is no system call table."""
    for t, u in SYSCALL_TABLE_USERS.items():
        if f == t or (f.startswith(t) and f.endswith(".tbl")):
            return u
    return None


def build_dirs_for(
    files: Sequence[str], arch: str = "x86", deleted: Sequence[str] = ()
) -> list[str]:
    """Make goals that rebuild what a patch touches, for one SRCARCH.

    The directories of touched C and assembly files and of touched Makefiles
    and Kconfig files.  Anything else the image depends on -- a header
    changed without any source beside it, a top-level file, a linker
    script, a build script or objtool, a deleted file -- gets a
    full vmlinux.  A deleted C or assembly file whose directory's Makefile
    or Kbuild changes with it (the rule that built it goes) gets that
    directory instead: a kbuild rule names only files of its own
    directory, and the full builds at the tip link the rest.  A header
    changed together with sources gets their directories only: the full
    builds at the tip, and `--bisect=full`, cover its other users.  A
    system call table gets the directory that includes what is generated
    from it (SYSCALL_TABLE_USERS), scripts/checksyscalls.sh, which every
    build's prepare step runs, the Kconfig files of arch/ and of the
    architecture, which change the whole configuration, and the
    architecture's top Makefile, which sets the flags of every object (and
    is no kbuild Makefile: "make arch/arm64/" stops in it), count as
    headers.
    Files of other architectures and outside the image need nothing.  (The
    check stage narrows a patch of headers alone to the objects of the
    series' own sources that include them: header_users().)
    """
    dirs = set()
    whole = headers = False
    for f in files:
        if outside_image(f, arch):
            continue
        base = os.path.basename(f)
        d = os.path.dirname(f)
        user = table_user(f)
        if user:
            dirs.add(user)
        elif (
            f == "scripts/checksyscalls.sh"
            or (base.startswith("Kconfig") and d in ("arch", "arch/" + arch))
            or f == "arch/%s/Makefile" % arch
        ):
            headers = True
        elif f.startswith(("scripts/", "tools/")) or f.endswith((".lds.S", ".lds")):
            whole = True
        elif (
            f.endswith((".c", ".S"))
            or base in ("Makefile", "Kbuild")
            or base.startswith("Kconfig")
        ):
            if d:
                dirs.add(d + "/")
            else:
                whole = True
        elif f.endswith(".h"):
            headers = True
        else:
            whole = True
    for f in deleted:
        if outside_image(f, arch):
            continue
        d = os.path.dirname(f)
        if (
            d
            and f.endswith((".c", ".S"))
            and (
                os.path.join(d, "Makefile") in files
                or os.path.join(d, "Kbuild") in files
            )
        ):
            dirs.add(d + "/")
        else:
            whole = True
    if whole or (headers and not dirs):
        return ["vmlinux"]
    return sorted(dirs)


# Header names one git grep of header_users() looks for at most.
GREP_ALTERNATIVES = 200


def header_users(
    tree: str, headers: Sequence[str], arch: str, depth: int = 2
) -> list[str]:
    """The C files of arch's image that include one of headers, directly
    or through headers that do (depth levels of #include in all).

    A header is matched as C files spell it: <linux/x.h> for
    include/linux/x.h (and include/uapi/linux/x.h), <asm/x.h> for
    arch/ARCH/include/asm/x.h, anywhere in the tree; any other header as
    "x.h", in its own directory.
    """

    def where(h):
        """(spelling, pathspecs to search) of header h."""
        for pre in (
            "include/uapi/",
            "include/",
            "arch/%s/include/uapi/" % arch,
            "arch/%s/include/" % arch,
        ):
            if h.startswith(pre):
                return h[len(pre) :], ("*.c", "*.h")
        d = os.path.dirname(h)
        return os.path.basename(h), (d + "/*.c", d + "/*.h")

    sources, seen, level = set(), set(headers), list(headers)
    for _ in range(depth):
        # One git grep per set of paths, for all the spellings searched
        # there: each grep reads the whole tree, whatever it looks for.
        spellings: dict[tuple[str, ...], list[str]] = {}
        for spelling, paths in sorted({where(h) for h in level}):
            spellings.setdefault(paths, []).append(re.escape(spelling))
        found = []
        for paths, names in sorted(spellings.items()):
            for i in range(0, len(names), GREP_ALTERNATIVES):
                r = common.run(
                    [
                        "git",
                        "grep",
                        "-l",
                        "-E",
                        r'^\s*#\s*include\s*[<"](%s)[>"]'
                        % "|".join(names[i : i + GREP_ALTERNATIVES]),
                        "--",
                    ]
                    + list(paths),
                    cwd=tree,
                    capture=True,
                    check=False,
                )
                found += r.stdout.split()
        level = []
        for f in found:
            if outside_image(f, arch):
                continue
            if f.endswith(".c"):
                sources.add(f)
            elif f not in seen:
                seen.add(f)
                level.append(f)
        if not level:
            break
    return sorted(sources)


def patch_goals(
    tree: str,
    bdir: str,
    dirs: list[str],
    files: Sequence[str],
    makefile_diff: Callable[[str], str] | None,
    objects_only: bool = False,
) -> list[str]:
    """The goals that build one patch in the configuration of bdir.

    dirs comes from build_dirs_for(): ["vmlinux"] stays; a directory
    becomes the objects of what the patch touches there (object_goals()),
    or stays a directory goal where only that proves the change.  Every
    object a patch does not touch was built at the tip, where CI builds
    each configuration in full; `--bisect=full` builds all of vmlinux at
    every patch.  With objects_only (the users of a patch of headers
    alone), a directory whose objects cannot be told is left out rather
    than built whole.
    """
    if dirs == ["vmlinux"]:
        return dirs
    config = targetconf.read_config(os.path.join(bdir, ".config"))
    goals = []
    tables = {table_user(f) for f in files} - {None}
    for d in dirs:
        if d in tables:
            # It includes what is generated from a changed system call
            # table (build_dirs_for()): built whole, as no object of it
            # need be touched.
            goals.append(d)
            continue
        objs = object_goals(tree, config, d, files, makefile_diff)
        if objs is None and not objects_only:
            objs = [d]
        goals += objs or []
    return goals
