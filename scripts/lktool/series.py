# SPDX-License-Identifier: GPL-2.0
"""The series file, the patch headers and the topics' cover letters."""

from __future__ import annotations

import argparse

import collections
import os
import re

from . import common


# From: and Signed-off-by: of every patch in the project (see README.md).
PROJECT_IDENT = "y2038 Series Team <y2038-series@example.org>"
PatchEntry = collections.namedtuple("PatchEntry", "path section upstream line")

# An upstream-bound section is a topic (patches/TOPIC/, mailed as one
# thread) or a topic's KUnit follow-up (patches/TOPIC/kunit/, mailed after
# it, marked RFC, as it needs the KUnit core that v4.20 lacks).
TOPIC_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
FOLLOWUP = "kunit"


def upstream_sections(entries: list[PatchEntry]) -> list[str]:
    """The names of the upstream-bound sections, in series order."""
    sections = []
    for e in entries:
        if e.upstream and e.section not in sections:
            sections.append(e.section)
    return sections


def section_dir(e: PatchEntry) -> str:
    """The folder under patches/ that holds an entry's file."""
    return e.section if e.upstream else "prereq"


def topic_of(section: str) -> str:
    return section.split("/")[0]


def patch_key(path: str) -> str:
    """A patch's name without its number: what scripts/checkpatch-exceptions
    names, so that inserting a patch does not rename every exception."""
    d, b = os.path.split(path)
    return os.path.join(d, re.sub(r"^\d{4}-", "", b))


def numbered(index: int, subject: str) -> str:
    return "%04d-%s.patch" % (index, slug(subject))


COVER_FIELDS = ("subject", "version", "change-id", "prefix", "to", "cc", "needs")


def read_cover(path: str) -> tuple[dict[str, str], str]:
    """(fields, body) of a topic's cover letter: 'Key: value' lines, a
    blank line, then the text of the mail."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, _, body = text.partition("\n\n")
    fields = {}
    for n, line in enumerate(head.splitlines(), 1):
        k, sep, v = line.partition(":")
        k = k.strip().lower()
        if not sep or k not in COVER_FIELDS:
            raise common.Failure(
                "%s:%d: want 'Key: value' with Key one of %s"
                % (path, n, ", ".join(f.title() for f in COVER_FIELDS))
            )
        fields[k] = v.strip()
    return fields, body.strip() + "\n"


def cover_problems(section: str, path: str) -> list[str]:
    """What is wrong with a section's cover letter, as a list."""
    if not os.path.exists(path):
        return [
            "patches/%s/cover-letter is missing: every upstream-bound "
            "section is mailed with one" % section
        ]
    try:
        f, body = read_cover(path)
    except (common.Failure, UnicodeDecodeError) as e:
        return [str(e)]
    probs = []
    for k in ("subject", "version", "change-id"):
        if not f.get(k):
            probs.append("patches/%s/cover-letter: no %s:" % (section, k.title()))
    if not re.match(r"^[1-9]\d*$", f.get("version", "1") or "1"):
        probs.append(
            "patches/%s/cover-letter: Version: %r is not a number"
            % (section, f["version"])
        )
    elif "version" in f:
        for v in range(2, int(f["version"]) + 1):
            if not re.search(r"^Changes in v%d:" % v, body, re.M):
                probs.append(
                    "patches/%s/cover-letter: Version: %s, but no "
                    "'Changes in v%d:' in the text" % (section, f["version"], v)
                )
    if f.get("change-id") and not re.match(
        r"^\d{8}-[a-z0-9-]+-[0-9a-f]{12}$", f["change-id"]
    ):
        probs.append(
            "patches/%s/cover-letter: Change-Id: %r is not b4's "
            "form (YYYYMMDD-name-<12 hex digits>)" % (section, f["change-id"])
        )
    if "/" in section and "RFC" not in f.get("prefix", "").split():
        probs.append(
            "patches/%s/cover-letter: a KUnit follow-up is marked "
            "'Prefix: RFC'" % section
        )
    if len([l for l in body.splitlines() if l.strip()]) < 3:
        probs.append(
            "patches/%s/cover-letter: the text does not explain the topic" % section
        )
    return probs


def parse_series(text: str, origin: str = "series") -> list[PatchEntry]:
    """Parse a quilt-style series file.

    Lines are patch paths relative to patches/; '#' lines are comments.
    A comment '# section: NAME (upstream|prerequisite)' opens a section.
    Returns a list of PatchEntry.
    """
    entries: list[PatchEntry] = []
    section, upstream = None, None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(
                r"#\s*section:\s*(\S+)\s*\((upstream|prerequisite)\)" r"\s*$", line
            )
            if m:
                section, upstream = m.group(1), m.group(2) == "upstream"
                parts = section.split("/")
                if upstream and not (
                    all(TOPIC_RE.match(x) for x in parts)
                    and (len(parts) == 1 or parts[1:] == [FOLLOWUP])
                ):
                    raise common.Failure(
                        "%s:%d: an upstream-bound section is a "
                        "topic (lower-case letters, digits, '-') or "
                        "TOPIC/%s, its KUnit follow-up: %r"
                        % (origin, n, FOLLOWUP, section)
                    )
                if (
                    upstream
                    and len(parts) == 2
                    and not any(e.section == parts[0] for e in entries)
                ):
                    raise common.Failure(
                        "%s:%d: %s comes before its topic %s"
                        % (origin, n, section, parts[0])
                    )
                if any(e.section == section for e in entries):
                    raise common.Failure(
                        "%s:%d: section %s opened twice" % (origin, n, section)
                    )
            elif re.match(r"#\s*section\b", line):
                raise common.Failure(
                    "%s:%d: want '# section: NAME (prerequisite)' "
                    "or '# section: NAME (upstream)': %r" % (origin, n, line)
                )
            continue
        if " " in line or "\t" in line:
            raise common.Failure(
                "%s:%d: one patch file per line, no options: %r" % (origin, n, line)
            )
        if section is None:
            raise common.Failure(
                "%s:%d: %s comes before any '# section:' line" % (origin, n, line)
            )
        if not upstream and any(e.upstream for e in entries):
            raise common.Failure(
                "%s:%d: prerequisite patch %s comes after an "
                "upstream-bound one; the prerequisite stack must "
                "come first" % (origin, n, line)
            )
        entries.append(PatchEntry(line, section, upstream, n))
    return entries


def read_series(series_dir: str) -> list[PatchEntry]:
    path = os.path.join(series_dir, "series")
    with open(path) as f:
        return parse_series(f.read(), path)


def patch_headers(path: str) -> tuple[dict[str, str], str]:
    """Return (headers dict, body) of a format-patch mail."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    head, _, body = text.partition("\n\n")
    headers = {}
    last = None
    for line in head.splitlines():
        if line[:1] in (" ", "\t") and last:
            headers[last] += " " + line.strip()
        elif ":" in line:
            k, v = line.split(":", 1)
            last = k.strip().lower()
            headers[last] = v.strip()
    return headers, body


def slug(subject: str) -> str:
    s = re.sub(r"^\[[^]]*\]\s*", "", subject).lower()
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")
    return s


def check_series(series_dir: str) -> list[str]:
    """Return a list of problems with the series file and the patches."""
    problems = []
    try:
        entries = read_series(series_dir)
    except (OSError, common.Failure) as err:
        return [str(err)]
    pdir = os.path.join(series_dir, "patches")
    listed = collections.Counter(e.path for e in entries)
    for p, c in listed.items():
        if c > 1:
            problems.append("series lists %s %d times" % (p, c))
    on_disk = set()
    for root, _, files in os.walk(pdir):
        for fn in files:
            on_disk.add(os.path.relpath(os.path.join(root, fn), pdir))
    sections = upstream_sections(entries)
    covers = {os.path.join(sec, "cover-letter") for sec in sections}
    for p in sorted(on_disk - set(listed) - covers):
        problems.append("patches/%s is not listed in series" % p)
    for i, sec in enumerate(sections):
        cover = os.path.join(pdir, sec, "cover-letter")
        cp = cover_problems(sec, cover)
        problems += cp
        if cp:
            continue
        needs = read_cover(cover)[0].get("needs")
        if "/" in sec and needs != topic_of(sec):
            problems.append(
                "patches/%s/cover-letter: a follow-up says "
                "'Needs: %s'" % (sec, topic_of(sec))
            )
        elif needs and needs not in sections[:i]:
            problems.append(
                "patches/%s/cover-letter: Needs: %s, which is "
                "not a section before it" % (sec, needs)
            )
    index: collections.Counter[str] = collections.Counter()
    for e in entries:
        full = os.path.join(pdir, e.path)
        want_dir = section_dir(e)
        index[want_dir] += 1
        if e.path not in on_disk:
            problems.append(
                "series line %d: patches/%s does not exist" % (e.line, e.path)
            )
            continue
        if os.path.dirname(e.path) != want_dir:
            problems.append(
                "patches/%s: a patch of section %s belongs in "
                "patches/%s/" % (e.path, e.section, want_dir)
            )
        h, body = patch_headers(full)
        name = "patches/" + e.path
        if "from" not in h or "subject" not in h:
            problems.append(
                "%s: no From: or Subject: header (not a "
                "git format-patch mail)" % name
            )
            continue
        subj = re.sub(r"^\[[^]]*\]\s*", "", h["subject"])
        if len(subj) > 72:
            problems.append("%s: subject longer than 72 characters" % name)
        base = os.path.basename(e.path)
        if base != numbered(index[want_dir], subj):
            problems.append(
                "%s: file name should be %s (its place in "
                "patches/%s/ and its Subject)"
                % (name, numbered(index[want_dir], subj), want_dir)
            )
        if h["from"] != PROJECT_IDENT:
            problems.append(
                "%s: From: %s, not the project identity %s"
                % (name, h["from"], PROJECT_IDENT)
            )
        sob = re.findall(r"^Signed-off-by:\s*(.+)$", body, re.M)
        if not sob:
            problems.append("%s: no Signed-off-by" % name)
        elif h["from"] not in sob:
            problems.append(
                "%s: no Signed-off-by from the author (%s)" % (name, h["from"])
            )
        msg = body.split("\n---\n", 1)[0]
        if not e.upstream and "Not for upstream" not in msg:
            problems.append(
                '%s: a prerequisite patch must say "Not for '
                'upstream" and why it exists' % name
            )
        text_lines = [
            l for l in msg.splitlines() if l.strip() and not re.match(r"^[\w-]+: ", l)
        ]
        if len(text_lines) < 3:
            problems.append("%s: the commit message does not explain the change" % name)
    return problems


def do_series(args: argparse.Namespace, results: common.Results) -> bool:
    probs = check_series(os.path.abspath(args.series_dir))
    if probs:
        for p in probs:
            common.log("series: " + p)
        results.failed("series", "%d problem(s), first: %s" % (len(probs), probs[0]))
        return False
    n = len(read_series(os.path.abspath(args.series_dir)))
    results.passed("series", "%d patches listed, headers and names in order" % n)
    return True


def topic_sections(entries: list[PatchEntry], topics: list[str]) -> list[str]:
    """The upstream-bound sections of the chosen topics (all when none is
    named), each topic followed by its KUnit follow-up, in series order:
    what `lk send` and `lk list` work on."""
    sections = upstream_sections(entries)
    known = sorted({topic_of(x) for x in sections})
    for t in topics:
        if t not in known:
            raise common.Failure(
                "no topic %s in series; the topics are: %s" % (t, " ".join(known))
            )
    return [x for x in sections if not topics or topic_of(x) in topics]
