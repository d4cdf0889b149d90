# SPDX-License-Identifier: GPL-2.0
"""Prepare the upstream-bound topics for mailing with b4; send them only to
the local list (mlist.py)."""

from __future__ import annotations

import argparse

import json
import os
import re
import shutil
import subprocess
import tempfile

from email.header import decode_header
from email.header import make_header

from . import apply, basetree, checkpatch, common, mlist, pipeline, series, topics


def sender_identity() -> tuple[str, str]:
    """The sender's own git identity (their configuration, on purpose:
    not run()/git(), which leave the user's configuration out)."""

    def ident(key):
        r = subprocess.run(
            ["git", "config", key],
            cwd=common.TOP,
            stdout=subprocess.PIPE,
            universal_newlines=True,
        )
        return r.stdout.strip()

    name, email = ident("user.name"), ident("user.email")
    if not name or not email:
        raise common.Failure(
            "set your git user.name and user.email: patches are "
            "signed off by the person who sends them"
        )
    return name, email


def bump_version(series_dir: str, section: str, version: int) -> None:
    """Make the section's cover letter say Version: version; refuse to go
    back, and to go forward without a changelog for the new version."""
    path = os.path.join(series_dir, "patches", section, "cover-letter")
    fields, body = series.read_cover(path)
    have = int(fields["version"])
    if version < have:
        raise common.Failure(
            "patches/%s/cover-letter is at v%d already; -v %d "
            "would go back" % (section, have, version)
        )
    if version == have:
        return
    missing = [
        v
        for v in range(have + 1, version + 1)
        if not re.search(r"^Changes in v%d:" % v, body, re.M)
    ]
    if missing:
        raise common.Failure(
            "patches/%s/cover-letter: say what changed: add a "
            "'Changes in v%d:' paragraph (a list of '- ...' lines) "
            "to its text, then run lk send -v %d again" % (section, missing[0], version)
        )
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"(?mi)^Version:.*$", "Version: %d" % version, text, 1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    common.log(
        "send: patches/%s/cover-letter: Version: %d (commit it)" % (section, version)
    )


def cover_message(
    fields: dict[str, str],
    body: str,
    sender: str,
    fork_branch: str,
    needs: str | None = None,
) -> str:
    """The cover letter commit of a b4 prep branch: subject, text, the
    topic's own To:/Cc: trailers, and b4's tracking section."""
    trailers = []
    for key in ("to", "cc"):
        for addr in filter(
            None,
            (a.strip() for a in re.split(r",\s*(?=[^,]*[<@])", fields.get(key, ""))),
        ):
            trailers.append("%s: %s" % (key.title(), addr))
    tracking = {
        "series": {
            "revision": int(fields["version"]),
            "change-id": fields["change-id"],
            "base-branch": fork_branch,
            "prefixes": fields.get("prefix", "").split(),
        }
    }
    text = "%s\n\n%s" % (fields["subject"], body.rstrip())
    if needs:
        text += (
            '\n\nThis applies on top of the series\n"%s"\n(the '
            "prerequisite-patch-id lines below name its patches)." % needs
        )
    text += "\n\n%s\n" % "\n".join(trailers + ["Signed-off-by: " + sender])
    text += (
        "\n--- b4-submit-tracking ---\n# This section is used "
        "internally by b4 prep for tracking purposes.\n%s\n"
        % json.dumps(tracking, indent=2)
    )
    return text


def signed_by(msg: str, sender: str) -> str:
    """A patch's commit message signed off by the sender instead of the
    project: the sender's Signed-off-by: last in the trailer block that
    held the project's (after the trailers the patch carries: Cc:, Fixes:,
    a review's), else in a paragraph of its own after the message."""
    own = "Signed-off-by: " + series.PROJECT_IDENT
    lines = msg.rstrip().split("\n")
    blank = [i for i, l in enumerate(lines) if not l.strip()]
    last = blank[-1] + 1 if blank else len(lines)
    block = [l.strip() for l in lines[last:]]
    in_block = own in block and any(l != own for l in block)
    lines = [l for l in lines if l.strip() != own]
    while lines and not lines[-1].strip():
        lines.pop()
    return (
        "\n".join(lines + ([] if in_block else [""]) + ["Signed-off-by: " + sender])
        + "\n"
    )


def b4_env(workspace: str) -> dict[str, str]:
    """b4's environment: no user or system git configuration (the
    workspace's own holds the sender), and an SMTP setting so that
    `b4 send -o` writes mails without wanting a web endpoint."""
    env = common.clean_env()
    env["GIT_CONFIG_COUNT"] = "1"
    env["GIT_CONFIG_KEY_0"] = "sendemail.smtpserver"
    env["GIT_CONFIG_VALUE_0"] = "/bin/false"
    env["XDG_CONFIG_HOME"] = os.path.join(workspace, ".git", "b4-config")
    env["XDG_DATA_HOME"] = os.path.join(workspace, ".git", "b4-data")
    env["XDG_CACHE_HOME"] = os.path.join(workspace, ".git", "b4-cache")
    return env


def mails_as_mbox(mail_dir: str, with_cover: bool = True) -> str:
    """The .eml files b4 wrote, in order, as one mbox (text)."""
    out = []
    for fn in sorted(os.listdir(mail_dir)):
        if not fn.endswith(".eml") or (fn.startswith("0000-") and not with_cover):
            continue
        with open(os.path.join(mail_dir, fn), encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"(?m)^(>*From )", r">\1", text)
        out.append(
            "From mboxrd@z Thu Jan  1 00:00:00 1970\n" + text.rstrip("\n") + "\n\n"
        )
    return "".join(out)


def b4_am_tree(repo: str, start: str, mail_dir: str, env: dict[str, str]) -> str | None:
    """The tree of start with the thread in mail_dir applied the way a
    maintainer takes it: b4 am, then git am of what b4 made.

    Debian 12's b4 0.12 fails (Python 3.11 rejects a linefeed in a header
    value) on a folded Subject: header, which b4 send itself writes for a
    long subject; so the Subject: lines are unfolded first, which changes
    nothing that the mails say.
    """
    mbox = re.sub(r"(?m)^(Subject: .*)\n[ \t]+(\S)", r"\1 \2", mails_as_mbox(mail_dir))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "thread.mbox")
        with open(path, "w", encoding="utf-8") as f:
            f.write(mbox)
        r = common.run(
            ["b4", "am", "-m", path, "-o", tmp],
            cwd=repo,
            env=env,
            capture=True,
            check=False,
        )
        mbx = [f for f in os.listdir(tmp) if f.endswith(".mbx")]
        if r.returncode or len(mbx) != 1:
            return None
        with open(os.path.join(tmp, mbx[0]), encoding="utf-8") as f:
            return topics.am_tree(repo, start, f.read())


def workspace_of(args: argparse.Namespace) -> str:
    """lk send's clone of the applied tree, which holds the b4 prep
    branches."""
    return os.path.join(common.out_dir(args), "send")


def cmd_send(args: argparse.Namespace) -> int:
    """Prepare each topic as a b4 prep branch on plain v4.20 and write its
    mails with `b4 send -o`; with --to-local-list, send them to the local
    list of `lk list` and check what its archive serves, else send
    nothing.  See docs/design.md (Sending)."""
    name, email = sender_identity()
    sender = "%s <%s>" % (name, email)
    series_dir = os.path.abspath(args.series_dir)
    entries = series.read_series(series_dir)
    sections = series.topic_sections(entries, args.topics)
    if not sections:
        raise common.Failure("the series has no upstream-bound patch to send")
    to_list = getattr(args, "to_local_list", False)
    if to_list:
        mlist.running_list(args)
    if args.version is not None:
        if args.version < 1:
            raise common.Failure("-v %d: versions count from 1" % args.version)
        for sec in sections:
            bump_version(series_dir, sec, args.version)
    problems = []
    for sec in sections:
        problems += series.cover_problems(
            sec, os.path.join(series_dir, "patches", sec, "cover-letter")
        )
    if problems:
        raise common.Failure("; ".join(problems))
    out = common.out_dir(args)
    tree, entries, commits = apply.do_apply(args)
    results = common.Results()
    # The workspace: a clone of the applied tree that holds the b4 prep
    # branches, under the sender's identity, for `b4 send` to use later.
    ws = workspace_of(args)
    if not os.path.isdir(os.path.join(ws, ".git")):
        if os.path.exists(ws):
            shutil.rmtree(ws)
        common.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", tree, ws], capture=True
        )
    common.git(["fetch", "-q", "--tags", tree, "+series:refs/lk/series"], cwd=ws)
    common.git(["config", "user.name", name], cwd=ws)
    common.git(["config", "user.email", email], cwd=ws)
    env = b4_env(ws)
    outdir = os.path.abspath(args.output_dir or os.path.join(out, "outgoing"))
    # A base assembled from snapshots has a commit of its own for the
    # v4.20 tree: the mails name upstream's.
    real_base = common.git(["rev-parse", "v4.20^{commit}"], cwd=ws)
    if common.git(["rev-parse", "v4.20^{tree}"], cwd=ws) in basetree.V420_TREES:
        real_base = basetree.V420_COMMIT
    cenv = dict(
        common.clean_env(),
        GIT_AUTHOR_NAME=name,
        GIT_AUTHOR_EMAIL=email,
        GIT_COMMITTER_NAME=name,
        GIT_COMMITTER_EMAIL=email,
    )
    tips: dict[str, list[str]] = {}
    prepared: list[mlist.Prepared] = []
    allow = checkpatch.checkpatch_exceptions()
    for sec in sections:
        fields, body = series.read_cover(
            os.path.join(series_dir, "patches", sec, "cover-letter")
        )
        mine = [e for e in entries if e.section == sec]
        label = sec.replace("/", "-")
        branch = "b4/" + label
        fork_branch = "lk-send-base-" + label
        needs = None
        if fields.get("needs"):
            needs = series.read_cover(
                os.path.join(series_dir, "patches", fields["needs"], "cover-letter")
            )[0]["subject"]
        common.git(["checkout", "-q", "-f", "-B", fork_branch, "v4.20"], cwd=ws)
        if "/" in sec:
            # A follow-up forks from its topic's patches (not from the
            # topic's prep branch, whose cover letter commit b4 would
            # take for its own).
            if series.topic_of(sec) not in tips:
                raise common.Failure(
                    "%s follows topic %s, which is not being "
                    "prepared" % (sec, series.topic_of(sec))
                )
            for c in tips[series.topic_of(sec)]:
                common.run(["git", "cherry-pick", c], cwd=ws, env=cenv, capture=True)
        fork = common.git(["rev-parse", "HEAD"], cwd=ws)
        # Trailers that reviewers gave (b4 trailers -u in the prep branch)
        # stay with their patches.
        collected = mlist.collected_trailers(ws, branch)
        common.git(["branch", "-D", branch], cwd=ws, check=False)
        common.run(
            ["b4", "prep", "-n", label, "-f", fork], cwd=ws, env=env, capture=True
        )
        prereq_ids = []
        if "/" in sec:
            for c in common.git(
                ["rev-list", "--reverse", "v4.20.." + fork], cwd=ws
            ).split():
                diff = common.git(["show", c], cwd=ws)
                pid = common.run(
                    ["git", "patch-id", "--stable"],
                    cwd=ws,
                    capture=True,
                    input=diff + "\n",
                ).stdout.split()
                if pid:
                    prereq_ids.append(pid[0])
        common.run(
            ["git", "commit", "-q", "--amend", "--allow-empty", "-F", "-"],
            cwd=ws,
            env=cenv,
            capture=True,
            input=cover_message(fields, body, sender, fork_branch, needs),
        )
        for e in mine:
            r = common.run(
                ["git", "cherry-pick", commits[e.path]],
                cwd=ws,
                env=cenv,
                capture=True,
                check=False,
            )
            if r.returncode:
                common.run(
                    ["git", "cherry-pick", "--abort"], cwd=ws, capture=True, check=False
                )
                raise common.Failure(
                    "patches/%s does not apply to plain v4.20%s:\n%s"
                    % (
                        e.path,
                        " with topic " + series.topic_of(sec) if "/" in sec else "",
                        (r.stdout + r.stderr).strip(),
                    )
                )
            msg = signed_by(common.git(["log", "-1", "--format=%B"], cwd=ws), sender)
            msg = mlist.with_trailers(msg, collected)
            common.run(
                ["git", "commit", "-q", "--amend", "--reset-author", "-F", "-"],
                cwd=ws,
                env=cenv,
                capture=True,
                input=msg,
            )
        common.run(["b4", "prep", "--auto-to-cc"], cwd=ws, env=env, capture=True)
        tips[sec] = common.git(
            ["rev-list", "--reverse", "HEAD~%d..HEAD" % len(mine)], cwd=ws
        ).split()
        mails = os.path.join(outdir, label)
        if os.path.isdir(mails):
            shutil.rmtree(mails)
        common.run(
            ["b4", "send", "-o", mails, "--no-sign"], cwd=ws, env=env, capture=True
        )
        # b4 writes a cover letter (0000-) for two patches or more; with
        # one, the cover text goes below the patch's "---".
        written = sorted(f for f in os.listdir(mails) if f.endswith(".eml"))
        if len(written) != len(mine) + (len(mine) > 1):
            raise common.Failure(
                "b4 send wrote %d mails for %d patches in %s"
                % (len(written), len(mine), mails)
            )
        cpath = os.path.join(mails, written[0])
        with open(cpath, encoding="utf-8") as f:
            text = f.read()
        if not re.search(r"(?m)^base-commit: ", text):
            raise common.Failure("%s has no base-commit: line" % cpath)
        base = "base-commit: %s\n" % real_base
        if prereq_ids:
            base += "".join("prerequisite-patch-id: %s\n" % p for p in prereq_ids)
        text = re.sub(r"(?m)^base-commit: [0-9a-f]+\n", lambda m: base, text)
        with open(cpath, "w", encoding="utf-8") as f:
            f.write(text)
        # Round trip: the mails, applied as a maintainer would, give the
        # tree that the series' own patches give on the same base.
        start = fork
        want = topics.am_tree(ws, start, topics.series_mbox(series_dir, mine))
        got = topics.am_tree(ws, start, mails_as_mbox(mails, with_cover=False))
        got_b4 = b4_am_tree(ws, start, mails, env)
        what = "send: %s (%d patches)" % (sec, len(mine))
        if got is None or got_b4 is None:
            results.failed(
                what,
                "the mails in %s do not apply to %s with "
                "%s" % (mails, start, "git am" if got is None else "b4 am"),
            )
        elif not got == got_b4 == want:
            results.failed(
                what,
                "git am of the mails gives tree %s, b4 am "
                "%s, git am of patches/%s/ %s"
                % (got[:12], got_b4[:12], sec, str(want)[:12]),
            )
        else:
            results.passed(
                what,
                "git am and b4 am of the mails give the "
                "tree of patches/%s/ (%s)" % (sec, got[:12]),
            )
        # checkpatch on the mails as written, with the exceptions of the
        # patches they carry.
        bad = []
        for e, fn in zip(mine, written[len(written) - len(mine) :]):
            logfile = os.path.join(mails, fn[: -len(".eml")] + ".checkpatch")
            probs, unused = checkpatch.run_checkpatch(
                tree,
                os.path.join(mails, fn),
                logfile,
                allow.get(series.patch_key(e.path), ()),
            )
            bad += ["%s: %s" % (fn, p) for p in probs]
            bad += [
                "%s: scripts/checkpatch-exceptions:%d is not used" % (fn, u.lineno)
                for u in unused
            ]
        if bad:
            results.failed(
                "send: checkpatch %s" % sec,
                "%d complaint(s), first: %s" % (len(bad), bad[0]),
            )
        else:
            results.passed("send: checkpatch %s" % sec, "%d mails" % len(mine))
        prepared.append(mlist.Prepared(sec, mails, start, want))
        hdr, _ = series.patch_headers(cpath)
        for k in ("to", "cc"):
            common.log(
                "send: %s: %s: %s"
                % (
                    sec,
                    k.title(),
                    str(make_header(decode_header(hdr.get(k, "-"))))
                    if hdr.get(k)
                    else "-",
                )
            )
    common.git(["checkout", "-q", "-f", "--detach", "v4.20"], cwd=ws)
    if to_list:
        mlist.send_to_local_list(args, ws, sender, prepared, results, env)
        return pipeline.finish(results)
    mlist.forget_local_list(ws)
    common.log("send: mails in %s; nothing was sent" % outdir)
    common.log("send: to send one, check its cover letter and recipients, then:")
    for p in prepared:
        common.log(
            "  cd %s && %s"
            % (ws, " ".join(mlist.quoted(mlist.send_email_argv(sender, p.files()))))
        )
    return pipeline.finish(results)
