"""The git operations of rewind, fork and replay, run so that no repository program runs.

Every call goes through `git()`: hooks off (`core.hooksPath=/dev/null`), no fsmonitor, no pager,
no prompt, no system or global configuration, and none of the caller's `GIT_*` variables, so a
repository (or a bundle someone sent) cannot make a rewind run a program of its choosing. The
snapshot of uncommitted work uses a private index file, never the repository's own.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from autodev.errors import AutodevError

SAFE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "protocol.file.allow=always",
)
IDENTITY = {
    "GIT_AUTHOR_NAME": "autodev",
    "GIT_AUTHOR_EMAIL": "autodev@localhost",
    "GIT_COMMITTER_NAME": "autodev",
    "GIT_COMMITTER_EMAIL": "autodev@localhost",
}


class GitError(AutodevError):
    """A git command failed (exit code 1)."""


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0")
    base.update(extra or {})
    return base


def git(repo: Path, *args: str, extra_env: dict[str, str] | None = None, check: bool = True) -> str:
    r = subprocess.run(
        ["git", *SAFE, *args],
        cwd=repo,
        env=env(extra_env),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    if check and r.returncode != 0:
        raise GitError(
            f"git {' '.join(args)} failed in {repo}: {r.stderr.strip() or r.stdout.strip()}",
            "check the repository with `git status`; nothing was changed after the failing step",
        )
    return r.stdout.strip()


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
