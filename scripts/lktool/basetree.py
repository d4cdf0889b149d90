# SPDX-License-Identifier: GPL-2.0
"""The v4.20 base tree: find it, or download and verify it."""

from __future__ import annotations

import os
import re
import tempfile

from . import common


V420_COMMIT = "8fe28cb58bcb235034b64cbbb7550a8a43fd88be"

# Tree id of v4.20, and of v4.20 without the five amdgpu *_sh_mask.h headers
# of 4 MiB and more that the snapshot-provisioned base lacks.
V420_TREES = {
    "b1b7528a5a2c88998550d3f24d73a8032f20ea3b": "v4.20",
    "026517c5082cfdf6ba4117e1c8cba368ef63e740": "v4.20 without 5 amdgpu headers",
}
TARBALL_URL = "https://cdn.kernel.org/pub/linux/kernel/v4.x/linux-4.20.tar.xz"
PROVISION_HELP = """\
No v4.20 base tree was found and none could be downloaded.
Provide one of:
  - LINUX_SRC=/path/to/tree: a git tree with tag v4.20, or a plain source
    tree whose Makefile says 4.20.0;
  - a tree at {cache} (a git repository with tag v4.20);
  - network access to kernel.org ({url}).
On machines without kernel.org, ../shared/base/README.md explains how to
assemble the tree at {cache} from public snapshots with
../shared/base/provision-linux-v4.20.
"""


def tree_id_of_dir(path: str) -> str:
    """git tree id of a plain directory, computed in a scratch repository."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(
            os.environ,
            GIT_DIR=os.path.join(tmp, "g"),
            GIT_WORK_TREE=path,
            GIT_INDEX_FILE=os.path.join(tmp, "i"),
        )
        common.run(["git", "init", "-q"], env=env, capture=True)
        common.run(["git", "add", "-A", "-f", "."], cwd=path, env=env, capture=True)
        return common.run(
            ["git", "write-tree"], cwd=path, env=env, capture=True
        ).stdout.strip()


def makefile_version(path: str) -> str | None:
    try:
        with open(os.path.join(path, "Makefile")) as f:
            head = f.read(2048)
    except OSError:
        return None
    v = {}
    for key in ("VERSION", "PATCHLEVEL", "SUBLEVEL", "EXTRAVERSION"):
        m = re.search(r"^%s\s*=\s*(\S*)" % key, head, re.M)
        v[key] = m.group(1) if m else ""
    return "%s.%s.%s%s" % (
        v["VERSION"],
        v["PATCHLEVEL"],
        v["SUBLEVEL"],
        v["EXTRAVERSION"],
    )


def check_git_base(path: str) -> str:
    """Return a description of a git tree with tag v4.20, or raise."""
    r = common.run(
        ["git", "rev-parse", "-q", "--verify", "v4.20^{commit}"],
        cwd=path,
        capture=True,
        check=False,
    )
    if r.returncode:
        raise common.Failure("%s is a git tree without a tag v4.20" % path)
    commit = r.stdout.strip()
    tree = common.git(["rev-parse", "v4.20^{tree}"], cwd=path)
    if commit != V420_COMMIT and tree not in V420_TREES:
        raise common.Failure(
            "%s: tag v4.20 is commit %s with tree %s, which is not "
            "Linux v4.20" % (path, commit[:12], tree[:12])
        )
    return "git tree %s (v4.20 = %s)" % (path, commit[:12])


def find_base(allow_download: bool = True) -> tuple[str, str]:
    """Resolve the base tree: $LINUX_SRC, the cache, then kernel.org.

    Returns (path, kind) where kind is 'git' or 'plain'.
    """
    src = os.environ.get("LINUX_SRC")
    if src:
        src = os.path.abspath(src)
        if not os.path.isdir(src):
            raise common.Failure("LINUX_SRC=%s is not a directory" % src)
        if os.path.exists(os.path.join(src, ".git")):
            common.log("base: " + check_git_base(src))
            return src, "git"
        ver = makefile_version(src)
        if ver != "4.20.0":
            raise common.Failure(
                "LINUX_SRC=%s: its Makefile says %s, not 4.20.0" % (src, ver)
            )
        common.log("base: plain source tree %s (Makefile says 4.20.0)" % src)
        return src, "plain"
    cache = common.cache_dir()
    if os.path.isdir(os.path.join(cache, ".git")):
        common.log("base: " + check_git_base(cache))
        return cache, "git"
    if not allow_download:
        raise common.Failure(PROVISION_HELP.format(cache=cache, url=TARBALL_URL))
    download_base(cache)
    return cache, "git"


def download_base(cache: str) -> None:
    url = os.environ.get("LK_TARBALL_URL", TARBALL_URL)
    common.log("base: downloading %s" % url)
    parent = os.path.dirname(cache)
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent) as tmp:
        tarball = os.path.join(tmp, "linux-4.20.tar.xz")
        r = common.run(
            [
                "curl",
                "-fsSL",
                "--retry",
                "2",
                "--connect-timeout",
                "20",
                "--speed-limit",
                "1000",
                "--speed-time",
                "60",
                "-o",
                tarball,
                url,
            ],
            check=False,
            capture=True,
        )
        if r.returncode:
            raise common.Failure(
                "download of %s failed (%s)\n%s"
                % (url, r.stderr.strip(), PROVISION_HELP.format(cache=cache, url=url))
            )
        common.run(["tar", "-C", tmp, "-xJf", tarball])
        src = os.path.join(tmp, "linux-4.20")
        if not os.path.isdir(src):
            raise common.Failure("%s did not unpack to linux-4.20/" % url)
        tree = tree_id_of_dir(src)
        if tree not in V420_TREES:
            raise common.Failure(
                "%s unpacks to tree %s, not Linux v4.20 (%s); "
                "refusing to use it" % (url, tree, list(V420_TREES)[0])
            )
        make_git_base(src, tree)
        os.rename(src, cache)
    common.log("base: verified and stored in %s" % cache)


def make_git_base(src: str, expect_tree: str | None = None) -> None:
    """Turn a plain v4.20 source dir into a git repo with tag v4.20."""
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="Linus Torvalds",
        GIT_AUTHOR_EMAIL="torvalds@linux-foundation.org",
        GIT_AUTHOR_DATE="2018-12-23 15:55:59 -0800",
    )
    env["GIT_COMMITTER_NAME"] = env["GIT_AUTHOR_NAME"]
    env["GIT_COMMITTER_EMAIL"] = env["GIT_AUTHOR_EMAIL"]
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    common.run(["git", "init", "-q"], cwd=src, capture=True)
    common.run(["git", "add", "-A", "-f", "."], cwd=src, capture=True)
    tree = common.git(["write-tree"], cwd=src)
    if expect_tree and tree != expect_tree:
        raise common.Failure("tree of %s changed while importing it" % src)
    commit = common.run(
        ["git", "commit-tree", tree, "-m", "Linux 4.20"], cwd=src, env=env, capture=True
    ).stdout.strip()
    common.git(["update-ref", "refs/heads/master", commit], cwd=src)
    common.git(["symbolic-ref", "HEAD", "refs/heads/master"], cwd=src)
    common.git(["tag", "v4.20", commit], cwd=src)
    common.git(["reset", "-q"], cwd=src)
