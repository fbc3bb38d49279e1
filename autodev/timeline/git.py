"""The git operations of rewind, fork and replay: all through `hostgit`, so no program the
repository (or a bundle someone sent) names ever runs: hooks, fsmonitor, filters, pagers and the
rest are off, the repository is pinned, `GIT_*` variables are dropped. The snapshot of uncommitted
work uses a private index file, never the repository's own. `clone` (no repository yet) runs
git with the same settings from the folder it clones into.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from autodev.errors import AutodevError
from autodev.host import hostgit, spawn

IDENTITY = {
    "GIT_AUTHOR_NAME": "autodev",
    "GIT_AUTHOR_EMAIL": "autodev@localhost",
    "GIT_COMMITTER_NAME": "autodev",
    "GIT_COMMITTER_EMAIL": "autodev@localhost",
}


class GitError(AutodevError):
    """A git command failed (exit code 1)."""


FIX = "check the repository with `git status`; nothing was changed after the failing step"


def git(repo: Path, *args: str, extra_env: dict[str, str] | None = None, check: bool = True) -> str:
    r = hostgit.run(repo, *args, env=extra_env, check=False)
    if check and r.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed in {repo}: {r.stderr.strip() or r.stdout.strip()}", FIX)
    return r.stdout.strip()


def clone(source: Path, to: Path) -> None:
    """A fresh clone of `source` (a repository or a git bundle file) at `to`, nothing checked out."""
    argv = [hostgit.git_binary()]
    for setting in hostgit.SAFE_SETTINGS:
        argv += ["-c", setting]
    argv += [
        "-c",
        "protocol.file.allow=always",
        "clone",
        "-q",
        "--no-checkout",
        "--no-local",
        str(source),
        str(to),
    ]
    r = spawn.run(
        argv, "git", cwd=to.parent, env=hostgit.git_env(), capture_output=True, text=True, stdin=spawn.DEVNULL
    )
    if r.returncode != 0:
        raise GitError(
            f"git clone of {source} failed: {r.stderr.strip()[:500]}", "check that the file is a run's bundle"
        )


def head(repo: Path) -> str | None:
    return git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False) or None


def ref(repo: Path, name: str) -> str | None:
    return git(repo, "rev-parse", "-q", "--verify", name + "^{commit}", check=False) or None


def set_ref_once(repo: Path, name: str, sha: str) -> None:
    """Create `name` at `sha` unless it exists (a retried step must not move it)."""
    if ref(repo, name) is None:
        git(repo, "update-ref", name, sha, "")


def snapshot(repo: Path, parent: str | None) -> str | None:
    """A commit of the working tree as it is (tracked changes and untracked files, ignored ones
    aside), or None when it equals `parent`. Built on a private index: the repository's index and
    files are untouched."""
    with tempfile.TemporaryDirectory(prefix="autodev-snap-") as tmp:
        idx = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **IDENTITY}
        if parent:
            git(repo, "read-tree", parent, extra_env=idx)
        git(repo, "add", "-A", extra_env=idx)
        tree = git(repo, "write-tree", extra_env=idx)
    if parent and tree == git(repo, "rev-parse", parent + "^{tree}"):
        return None
    args = ["commit-tree", tree, "-m", "autodev: uncommitted changes saved by a rewind"]
    if parent:
        args += ["-p", parent]
    return git(repo, *args, extra_env=IDENTITY)


def reset_to(repo: Path, sha: str) -> None:
    """The branch (or a detached HEAD) and the working tree at `sha`: tracked files as committed,
    untracked ones removed (they were saved by `snapshot`), ignored files and .autodev/ kept."""
    git(repo, "reset", "-q", "--hard", sha)
    git(repo, "clean", "-q", "-f", "-d", "-e", "/.autodev/")
