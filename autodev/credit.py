"""Crediting work from git, not from claims.

At the start of a turn the harness takes a :class:`Baseline`: HEAD and a content hash of every
file that already differed from HEAD (modified, added, deleted or untracked, .gitignore
respected). When the participant posts ``work_done``, :func:`credit_since` compares:

- commits made since the turn began (``git rev-list <baseline head>..HEAD``) are the credit, with
  the files those commits touched;
- else the files whose state changed since the turn began: newly dirty, dirty with different
  content, or no longer dirty (a revert is a change too);
- neither: ``None`` — the post is appended with ``credit: null``.

A file that was already dirty before the turn and was not touched again earns nothing.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from autodev import hostgit
from autodev.errors import AutodevError

DELETED = "<deleted>"


@dataclass(frozen=True)
class Baseline:
    """The repository's state at turn start; persisted in the harness log as JSON."""

    head: str | None
    # path -> content hash (DELETED if deleted) of files that differ from HEAD or are untracked
    dirty: Mapping[str, str] = field(default_factory=dict)


def take_baseline(repo: Path) -> Baseline:
    return Baseline(head=_head(repo), dirty=MappingProxyType(_dirty(repo)))


def credit_since(repo: Path, base: Baseline) -> dict | None:
    """``{"commits": [sha, ... newest first], "files": [...]}`` or ``None`` when nothing changed."""
    head = _head(repo)
    commits = _new_commits(repo, base.head, head)
    if commits:
        return {"commits": commits, "files": _files_of(repo, commits)}
    now = _dirty(repo)
    changed = {p for p in set(base.dirty) | set(now) if base.dirty.get(p) != now.get(p)}
    if head != base.head and base.head and head:
        # HEAD moved without new commits (a reset or a checkout): files whose committed
        # content moved with it changed in the working tree too.
        changed |= set(_z(hostgit.out(repo, "diff", "--name-only", "--no-renames", "-z", base.head, head)))
    if not changed:
        return None
    return {"commits": [], "files": sorted(changed)}


def baseline_to_json(b: Baseline) -> dict:
    return {"head": b.head, "dirty": dict(sorted(b.dirty.items()))}


def baseline_from_json(d: dict) -> Baseline:
    """Rebuild a baseline written by :func:`baseline_to_json`; a damaged record is a ValueError."""
    if not isinstance(d, dict):
        raise ValueError(f"a credit baseline must be a JSON object, got {type(d).__name__}")
    head = d.get("head")
    dirty = d.get("dirty", {})
    if head is not None and not isinstance(head, str):
        raise ValueError(f"credit baseline 'head' must be a commit sha or null, got {head!r}")
    if not isinstance(dirty, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in dirty.items()
    ):
        raise ValueError("credit baseline 'dirty' must map file paths to content hashes")
    return Baseline(head=head, dirty=MappingProxyType(dict(dirty)))


# ---------------------------------------------------------------------------- git helpers
# Every git command goes through hostgit: pinned to the repository, nothing of it run.


def _head(repo: Path) -> str | None:
    """HEAD's sha, or None in a repository with no commit yet (an unborn branch)."""
    return (
        hostgit.run(repo, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).stdout.strip() or None
    )


def _z(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def _dirty(repo: Path) -> dict[str, str]:
    """Every path that differs from HEAD or is untracked (not ignored) -> its content hash."""
    out = hostgit.out(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    top = hostgit.current(repo).work_tree
    paths = {entry[3:] for entry in _z(out) if len(entry) > 3}
    return {p: _content_hash(top / p) for p in sorted(paths)}


def _content_hash(path: Path) -> str:
    # A symlink is its target text (as git stores it); never follow it out of the repository.
    if path.is_symlink():
        return "link:" + hashlib.sha256(os.readlink(path).encode()).hexdigest()
    if not path.exists():
        return DELETED
    if path.is_dir():  # an untracked nested repository shows up as a folder
        return "<folder>"
    if not path.is_file():  # a FIFO or a device: never opened (a read would block)
        return "<special>"
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _new_commits(repo: Path, base_head: str | None, head: str | None) -> list[str]:
    if head is None or head == base_head:
        return []
    if base_head is None:
        return hostgit.out(repo, "rev-list", head).split()
    try:
        return hostgit.out(repo, "rev-list", f"{base_head}..{head}").split()
    except hostgit.GitRefused:
        raise
    except AutodevError:
        # The baseline commit is gone (pruned after a rewrite): credit HEAD alone.
        return [head]


def _files_of(repo: Path, commits: list[str]) -> list[str]:
    files: set[str] = set()
    for sha in commits:
        parents = hostgit.out(repo, "rev-list", "--parents", "-n", "1", sha).split()[1:]
        if parents:
            # Against the first parent, so a merge credits what it brought in.
            out = hostgit.out(repo, "diff-tree", "-r", "--name-only", "--no-renames", "-z", parents[0], sha)
        else:
            out = hostgit.out(
                repo, "diff-tree", "-r", "--name-only", "--no-renames", "-z", "--root", "--no-commit-id", sha
            )
        files.update(_z(out))
    return sorted(files)
