# SPDX-License-Identifier: GPL-2.0
"""`lk export --trailers TOPIC`: the review trailers that `b4 trailers -u`
collected in a topic's b4 prep branches (in lk send's workspace) back
into patches/, the series' source of truth.

A patch of patches/ gets the trailers its prep branch commit has and it
lacks, in its trailer block just above the project's Signed-off-by:, as
b4 places collected trailers above the keeper's own sign-off (which stays
last); the rest of its file stays as it was, byte for byte.  The prep
branch must be of the topic's series (its change-id) and version (the
cover letter's Version:), and each of its commits must be the patch as
patches/ has it now (subject, message and diff): otherwise nothing is
written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile

from . import common, series

# The line that starts b4's tracking section in a prep branch's cover
# letter commit.
TRACKING = "--- b4-submit-tracking ---"
# A review trailer (mlist.REVIEW_TRAILER_RE) as b4 compares them: its
# name in any case, any spacing after the colon (a trailer typed by hand
# into patches/).
TRAILER_RE = re.compile(r"^(?!signed-off-by:)([a-z][a-z-]*-by|link|closes):\s*\S", re.I)


def trailer_key(line: str) -> tuple[str, str]:
    """A trailer as b4 compares them: the name without case, the value
    without its spacing."""
    name, _, value = line.partition(":")
    return name.strip().lower(), " ".join(value.split())


def review_trailers(msg: str) -> list[str]:
    """The review trailers of a commit message's trailer block (its last
    paragraph)."""
    last = re.split(r"\n[ \t]*\n", msg.strip())[-1]
    return [l.strip() for l in last.splitlines() if TRAILER_RE.match(l)]


def core(msg: str) -> str:
    """A commit message without its sign-offs and review trailers, and
    without runs of blank lines: what lk send and b4 trailers -u leave as
    it was."""
    lines = [
        l.rstrip()
        for l in msg.strip().splitlines()
        if not TRAILER_RE.match(l) and not l.lower().startswith("signed-off-by:")
    ]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def patch_id(text: str, cwd: str) -> str:
    """git patch-id --stable of a patch or of `git show` output."""
    out = common.run(
        ["git", "patch-id", "--stable"], cwd=cwd, capture=True, input=text + "\n"
    ).stdout.split()
    return out[0] if out else ""


def mail_message(path: str, cwd: str) -> str:
    """The commit message that git am makes of a patch file."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        msg = os.path.join(tmp, "msg")
        r = common.run(
            ["git", "mailinfo", msg, os.path.join(tmp, "patch")],
            cwd=cwd,
            capture=True,
            input=text,
        )
        with open(msg, encoding="utf-8") as f:
            body = f.read()
    m = re.search(r"(?m)^Subject: (.*)$", r.stdout)
    return "%s\n\n%s" % (m.group(1) if m else "", body)


def prep_branch(ws: str, section: str) -> tuple[str, dict[str, object], list[str]]:
    """(branch, b4's tracking data, the patch commits) of a section's prep
    branch in lk send's workspace."""
    branch = "b4/" + section.replace("/", "-")
    if common.run(
        ["git", "rev-parse", "-q", "--verify", "refs/heads/" + branch],
        cwd=ws,
        capture=True,
        check=False,
    ).returncode:
        raise common.Failure(
            "no prep branch %s in %s: run scripts/lk send %s, then b4 trailers -u "
            "in that branch, first" % (branch, ws, series.topic_of(section))
        )
    revs = common.git(["rev-list", "--reverse", "v4.20.." + branch], cwd=ws).split()
    # the section's own cover letter: the last commit with a tracking
    # section (a follow-up's branch starts with its topic's patches)
    for i, c in reversed(list(enumerate(revs))):
        msg = common.run(
            ["git", "log", "-1", "--format=%B", c], cwd=ws, capture=True
        ).stdout
        if TRACKING in msg:
            tail = msg.split(TRACKING, 1)[1]
            try:
                data = json.loads(tail[tail.index("{") : tail.rindex("}") + 1])
                return branch, data["series"], revs[i + 1 :]
            except (ValueError, KeyError, TypeError):
                break
    raise common.Failure(
        "%s in %s has no cover letter commit with b4's tracking section: not a "
        "b4 prep branch that lk send made" % (branch, ws)
    )


def section_updates(
    ws: str, series_dir: str, section: str, entries: list[series.PatchEntry]
) -> dict[str, list[str]]:
    """{patch path: the trailers to add} for one section, after checking
    that its prep branch is of the topic's series and version and still
    holds its patches as patches/ has them."""
    fields, _ = series.read_cover(
        os.path.join(series_dir, "patches", section, "cover-letter")
    )
    branch, tracking, commits = prep_branch(ws, section)
    if tracking.get("change-id") != fields.get("change-id"):
        raise common.Failure(
            "%s is series %s, patches/%s/cover-letter says Change-Id: %s: not "
            "this topic's series; nothing was written"
            % (branch, tracking.get("change-id"), section, fields.get("change-id"))
        )
    if str(tracking.get("revision")) != fields.get("version"):
        raise common.Failure(
            "%s holds v%s of %s, patches/%s/cover-letter is at v%s: its trailers "
            "were collected for another version; run scripts/lk send %s (it keeps "
            "them) and export again; nothing was written"
            % (
                branch,
                tracking.get("revision"),
                section,
                section,
                fields.get("version"),
                series.topic_of(section),
            )
        )
    mine = [e for e in entries if e.section == section]
    if len(commits) != len(mine):
        raise common.Failure(
            "%s has %d patches, patches/%s/ %d: the topic changed since lk send "
            "made the branch; nothing was written"
            % (branch, len(commits), section, len(mine))
        )
    pdir = os.path.join(series_dir, "patches")
    updates = {}
    for n, (e, c) in enumerate(zip(mine, commits), 1):
        path = os.path.join(pdir, e.path)
        have = mail_message(path, ws)
        sent = common.run(
            ["git", "log", "-1", "--format=%B", c], cwd=ws, capture=True
        ).stdout
        with open(path, encoding="utf-8") as f:
            want_id = patch_id(f.read(), ws)
        what = None
        if have.split("\n", 1)[0].strip() != sent.split("\n", 1)[0].strip():
            what = "its subject"
        elif core(have) != core(sent):
            what = "its commit message"
        elif want_id != patch_id(common.git(["show", c], cwd=ws), ws):
            what = "its diff"
        if what:
            raise common.Failure(
                "%s no longer matches patches/%s/: %s of patch %d (patches/%s) "
                "changed since lk send made the branch; take the trailers over by "
                "hand, or send the new version and collect them again; nothing "
                "was written" % (branch, section, what, n, e.path)
            )
        present = {trailer_key(l) for l in have.splitlines()}
        add = []
        for t in review_trailers(sent):
            if trailer_key(t) not in present:
                present.add(trailer_key(t))
                add.append(t)
        if add:
            updates[e.path] = add
    return updates


def with_trailers(text: str, add: list[str]) -> str:
    """A patch file's text with the trailers add just above the project's
    Signed-off-by: of its message."""
    msg, sep, rest = text.partition("\n---\n")
    sob = "Signed-off-by: " + series.PROJECT_IDENT
    lines = msg.split("\n")
    at = max((i for i, l in enumerate(lines) if l.strip() == sob), default=None)
    if at is None:
        raise common.Failure("no %r in its message" % sob)
    return "\n".join(lines[:at] + add + lines[at:]) + sep + rest


def dropped(old_path: str, new_text: str) -> list[str]:
    """The review trailers of the patch file at old_path that new_text,
    the patch made again (lk export TREE), lacks."""
    if not os.path.exists(old_path):
        return []
    with open(old_path, encoding="utf-8", errors="replace") as f:
        old = review_trailers(f.read().split("\n---\n", 1)[0])
    have = {trailer_key(l) for l in new_text.split("\n---\n", 1)[0].splitlines()}
    return [t for t in old if trailer_key(t) not in have]


def export_trailers(
    ws: str, series_dir: str, topics: list[str]
) -> dict[str, list[str]]:
    """Bring the trailers of the topics' prep branches in ws into
    series_dir's patches/; return {patch path: trailers added}.  Every
    check runs before the first file is written."""
    entries = series.read_series(series_dir)
    sections = series.topic_sections(entries, topics)
    if not os.path.isdir(os.path.join(ws, ".git")):
        raise common.Failure(
            "no b4 prep branches: %s is not lk send's workspace; run scripts/lk "
            "send %s, then b4 trailers -u in its prep branch, first"
            % (ws, " ".join(topics))
        )
    updates: dict[str, list[str]] = {}
    for sec in sections:
        updates.update(section_updates(ws, series_dir, sec, entries))
    texts = {}
    for path, add in updates.items():
        full = os.path.join(series_dir, "patches", path)
        with open(full, encoding="utf-8", newline="") as f:
            try:
                texts[full] = with_trailers(f.read(), add)
            except common.Failure as err:
                raise common.Failure(
                    "patches/%s: %s; nothing was written" % (path, err)
                ) from None
    for full, text in texts.items():
        with open(full, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    return updates


def cmd_export_trailers(ws: str, series_dir: str, topics: list[str]) -> int:
    """`lk export --trailers`: the command's messages around
    export_trailers()."""
    updates = export_trailers(ws, series_dir, topics)
    for path, add in updates.items():
        for t in add:
            common.log("export: patches/%s: + %s" % (path, t))
    if not updates:
        common.log(
            "export: no trailers to bring: patches/ has every trailer that the "
            "prep branches of %s carry" % " ".join(topics)
        )
        return 0
    common.log(
        "export: %d trailer(s) in %d patch(es); commit patches/, and git am them "
        "into your kernel branch too (a later lk export TREE regenerates "
        "patches/ from it)" % (sum(len(a) for a in updates.values()), len(updates))
    )
    return 0
