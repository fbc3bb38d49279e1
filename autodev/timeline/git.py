"""The git operations of rewind, fork and replay: all through `hostgit`, so no program the
repository (or a bundle someone sent) names ever runs: hooks, fsmonitor, filters, pagers and the
rest are off, the repository is pinned, `GIT_*` variables are dropped. The snapshot of uncommitted
work uses a private index file, never the repository's own. `clone` (no repository yet) runs
git with the same settings from the folder it clones into.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

from autodev.errors import AutodevError
from autodev.guard.secrets import SECRET_FILES, is_secret_file
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


def secret_files_in(repo: Path, patterns: Iterable[str], env: dict[str, str] | None = None) -> list[str]:
    """Repository-relative paths git sees (tracked, or untracked and not ignored) that match
    `secretFiles` (guard/secrets.py decides)."""
    patterns = tuple(patterns)
    if not patterns:
        return []
    listed = hostgit.run(repo, "ls-files", "-z", "-c", "-o", "--exclude-standard", env=env, check=False)
    if listed.returncode != 0:
        raise GitError(f"git ls-files failed in {repo}: {listed.stderr.strip()}", FIX)
    return _secret(listed.stdout, patterns)


def _secret(listing: str, patterns: Iterable[str]) -> list[str]:
    return sorted({p for p in listing.split("\0") if p and is_secret_file(p, patterns)})


def stage_worktree(repo: Path, index_env: dict[str, str], secret_files: Iterable[str] = SECRET_FILES) -> None:
    """The working tree (HEAD's files, tracked changes, untracked files; ignored ones aside)
    staged into the private index `index_env` names, for the done's evidence and the audit's
    diff. Files matching `secret_files` are left out (a tracked one keeps HEAD's version):
    `git add` writes what it stages into the repository's objects, where any later command in
    the sandbox can print it (`git cat-file --batch-all-objects`), and the diff goes to a model.
    A git failure is hostgit's GitFailed: the run pauses naming it."""
    if hostgit.run(repo, "rev-parse", "-q", "--verify", "HEAD^{tree}", check=False).returncode == 0:
        hostgit.run(repo, "read-tree", "HEAD", env=index_env)
    patterns = tuple(secret_files)
    listing = hostgit.run(repo, "ls-files", "-z", "-c", "-o", "--exclude-standard", env=index_env).stdout
    left_out = [f":(exclude,literal){p}" for p in (_secret(listing, patterns) if patterns else [])]
    hostgit.run(repo, "add", "-A", "--", ".", *left_out, env=index_env)


def snapshot(repo: Path, parent: str | None, secret_files: Iterable[str] = SECRET_FILES) -> str | None:
    """A commit of the working tree as it is (tracked changes and untracked files, ignored ones
    aside), or None when it equals `parent`. Built on a private index: the repository's index and
    files are untouched. Files matching `secret_files` are left out (a tracked one keeps the
    version `parent` has): a snapshot ref must never carry a key the user kept in such a file."""
    with tempfile.TemporaryDirectory(prefix="autodev-snap-") as tmp:
        idx = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **IDENTITY}
        if parent:
            git(repo, "read-tree", parent, extra_env=idx)
        left_out = [f":(exclude,literal){p}" for p in secret_files_in(repo, secret_files, idx)]
        git(repo, "add", "-A", "--", ".", *left_out, extra_env=idx)
        tree = git(repo, "write-tree", extra_env=idx)
    if parent and tree == git(repo, "rev-parse", parent + "^{tree}"):
        return None
    args = ["commit-tree", tree, "-m", "autodev: uncommitted changes saved by a rewind"]
    if parent:
        args += ["-p", parent]
    return git(repo, *args, extra_env=IDENTITY)


# `.autodev/` is never written from a commit: a participant can commit one with git plumbing
# (the working tree's is read-only in the sandbox, the index and objects are not), and `reset
# --hard` would make it the run's config (`sandbox = "off"`, hooks) for the next turn.
NOT_CONFIG = ":(exclude,top).autodev"


def reset_to(repo: Path, sha: str, secret_files: Iterable[str] = SECRET_FILES) -> None:
    """The branch (or a detached HEAD) and the working tree at `sha`: tracked files as committed,
    untracked ones removed (they were saved by `snapshot`), ignored files, .autodev/ and untracked
    secret files kept as they are, whatever `sha` holds there (`snapshot` does not save secret
    files, so removing them would lose them; unlike `reset --hard`, a file tracked before and
    ignored now stays)."""
    keep = ["-e", "/.autodev/"]
    tracked = set(git(repo, "ls-files", "-z").split("\0"))
    for p in secret_files_in(repo, secret_files):
        if p not in tracked:
            keep += ["-e", "/" + _IGNORE_SPECIAL.sub(r"\\\g<0>", p)]
    git(repo, "reset", "-q", "--mixed", sha)
    checkout(repo)
    git(repo, "clean", "-q", "-f", "-d", *keep)


# characters a gitignore pattern (`git clean -e`) treats specially: escaped to mean themselves
_IGNORE_SPECIAL = re.compile(r"[\\*?\[\]!# ]")


def checkout(repo: Path, source: str | None = None) -> None:
    """Every file of the index (or of commit `source`) but .autodev/ written to the working tree."""
    listed = git(repo, "ls-tree", "-r", "--name-only", source) if source else git(repo, "ls-files")
    if any(f != ".autodev" and not f.startswith(".autodev/") for f in listed.splitlines()):
        # (checkout refuses a pathspec that matches nothing)
        git(repo, "checkout", "-q", "-f", *([source] if source else []), "--", ":/", NOT_CONFIG)
