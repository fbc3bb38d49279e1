"""Crediting work from git, not from claims.

At the start of a turn the harness takes a :class:`Baseline`: the run's branch (the branch HEAD
was on when the run started, else the one it is on now), that branch's tip, and a content hash
of every file that already differed from HEAD (modified, added, deleted or untracked,
.gitignore respected). When the participant posts ``work_done``, :func:`credit_since` compares:

- commits new on the run's branch since the turn began (``git rev-list <baseline>..<branch>``)
  that change some file's content are the credit, with the files whose content they changed: an
  empty commit, a commit that only changes a file's mode, a commit with no parent (an orphan
  history merged in) earns nothing, and commits made on another branch or a detached HEAD are
  not on the run's branch, so they earn nothing either;
- a rewritten branch (the turn's starting commit is no longer an ancestor of the branch: a
  `reset --soft HEAD~1 && commit`, an amend, a rebase) earns no commit: only the files whose
  content differs from the turn's start, and the commits the rewrite took off the branch are
  named (``removed``), so a participant cannot take another's commit as its own;
- else the files whose state changed since the turn began (only while HEAD is on the run's
  branch): newly dirty, dirty with different content, or no longer dirty;
- neither: ``None`` — the post is appended with ``credit: null``.

Every credited commit is on the branch when it is credited. Credit given earlier stays on the
thread (it is append-only and records what was true then) when a later rewrite removes the
commit; the rewriting turn's credit names the removed commits (docs/DECISIONS.md).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TypeGuard

from autodev.errors import AutodevError
from autodev.host import hostgit
from autodev.store.journal import is_object

DELETED = "<deleted>"


@dataclass(frozen=True)
class Baseline:
    """The repository's state at turn start; persisted in the harness log as JSON."""

    head: str | None  # the run's branch's tip (HEAD's commit when no branch is known)
    # path -> content hash (DELETED if deleted) of files that differ from HEAD or are untracked
    dirty: Mapping[str, str] = field(default_factory=dict[str, str])
    branch: str | None = None  # the run's branch, as a ref (refs/heads/main); None: HEAD's commit
    off_branch: bool = False  # HEAD was not on the run's branch: `dirty` says nothing about it


def current_branch(repo: Path) -> str | None:
    """The branch HEAD is on (`refs/heads/main`), or None (detached)."""
    return hostgit.run(repo, "symbolic-ref", "-q", "HEAD", check=False).stdout.strip() or None


def take_baseline(repo: Path, branch: str | None = None) -> Baseline:
    """`branch`: the run's branch (state `branch`); default: the branch HEAD is on now.

    One `git status --porcelain=v2 --branch` gives the branch HEAD is on, its commit and the
    dirty files (issue 33: it was three git processes a turn), begun by `prefetch` when the
    daemon did; the run's branch's tip is asked for apart only when HEAD is elsewhere."""
    on, oid, paths = _status(repo, _ahead.pop(repo, None))
    branch = branch or on
    head = (oid if branch == on else _tip(repo, branch)) if branch else oid
    dirty = _hashed(repo, paths)
    return Baseline(head=head, dirty=MappingProxyType(dirty), branch=branch, off_branch=on != branch)


_STATUS = ("status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all", "--no-renames")
_ahead: dict[Path, hostgit.Started] = {}  # a baseline's `git status` begun by `prefetch`, by repository


def prefetch(repo: Path) -> None:
    """Begin the next turn's baseline `git status` now: the daemon calls it before it schedules
    the turn, so git scans the work tree while the daemon picks the speaker and builds the prompt
    (2 to 3 ms a turn, issue 33), and `take_baseline` reads what git found. No participant runs
    in between, so the work tree is the turn's start. A status that cannot begin (the git folder
    refused, git missing) is left to `take_baseline`: it runs git again and raises there, where
    a turn's git errors are handled (the run pauses)."""
    discard()
    try:
        _ahead[repo] = hostgit.start(repo, *_STATUS)
    except (AutodevError, OSError):
        return


def discard() -> None:
    """End a prefetched status no turn read (a resumed turn has its baseline; a budget stop has
    no turn): killed if still going, and reaped."""
    for started in _ahead.values():
        started.discard()
    _ahead.clear()


def _status(repo: Path, begun: hostgit.Started | None = None) -> tuple[str | None, str | None, set[str]]:
    """(the branch HEAD is on as a ref, or None when detached; HEAD's commit, or None before the
    first commit; every path that differs from HEAD or is untracked, .gitignore respected).
    `begun`: the status `prefetch` started, read instead of running one now."""
    out = (begun.finish() if begun is not None else hostgit.run(repo, *_STATUS)).stdout
    on = oid = None
    paths: set[str] = set()
    entries = iter(_z(out))
    for entry in entries:
        kind = entry[:2]
        if entry.startswith("# branch.oid "):
            value = entry.removeprefix("# branch.oid ")
            oid = None if value == "(initial)" else value
        elif entry.startswith("# branch.head "):
            value = entry.removeprefix("# branch.head ")
            on = None if value == "(detached)" else f"refs/heads/{value}"
        elif kind == "1 ":
            paths.add(entry.split(" ", 8)[8])
        elif kind == "2 ":  # a rename (never with --no-renames): the new path, then the old one
            paths.add(entry.split(" ", 9)[9])
            paths.add(next(entries, ""))
        elif kind == "u ":
            paths.add(entry.split(" ", 10)[10])
        elif kind == "? ":
            paths.add(entry[2:])
    paths.discard("")
    return on, oid, paths


def credit_since(repo: Path, base: Baseline) -> dict[str, list[str]] | None:
    """``{"commits": [sha, ... newest first], "files": [...]}`` (with ``"removed": [...]``
    after a rewrite) or ``None`` when nothing was credited."""
    # One `git status` (issue 33): the branch HEAD is on, HEAD's commit and the dirty files; the
    # run's branch's tip is asked for apart only when HEAD is elsewhere.
    on, head, paths = _status(repo)
    tip = (head if base.branch == on else _tip(repo, base.branch)) if base.branch else head
    on_branch = base.branch is None or on == base.branch
    rewritten = bool(base.head and tip and tip != base.head and not _is_ancestor(repo, base.head, tip))
    if not rewritten:
        commits, files = _content_commits(repo, base.head, tip)
        if commits:
            return {"commits": commits, "files": files}
    if not on_branch or base.off_branch:
        return None  # work on another branch or a detached HEAD is not the run's
    now = _hashed(repo, paths)
    changed = {p for p in set(base.dirty) | set(now) if base.dirty.get(p) != now.get(p)}
    if head != base.head and base.head and head:
        # the branch moved without new commits (a reset, a rewrite): files whose committed
        # content moved with it changed too (a mode alone is not content)
        changed |= set(_content_changes(repo, head, base.head))
    if not changed:
        return None
    out: dict[str, list[str]] = {"commits": [], "files": sorted(changed)}
    if rewritten and base.head and tip:
        out["removed"] = hostgit.out(repo, "rev-list", f"{tip}..{base.head}").split()
    return out


def baseline_to_json(b: Baseline) -> dict[str, object]:
    out: dict[str, object] = {"head": b.head, "dirty": dict(sorted(b.dirty.items()))}
    if b.branch:
        out["branch"] = b.branch
    if b.off_branch:
        out["off_branch"] = True
    return out


def baseline_from_json(d: object) -> Baseline:
    """Rebuild a baseline written by :func:`baseline_to_json`; a damaged record is a ValueError."""
    if not is_object(d):
        raise ValueError(f"a credit baseline must be a JSON object, got {type(d).__name__}")
    head = d.get("head")
    dirty = d.get("dirty", {})
    branch = d.get("branch")
    if head is not None and not isinstance(head, str):
        raise ValueError(f"credit baseline 'head' must be a commit sha or null, got {head!r}")
    if branch is not None and not isinstance(branch, str):
        raise ValueError(f"credit baseline 'branch' must be a ref name or null, got {branch!r}")
    if not _str_map(dirty):
        raise ValueError("credit baseline 'dirty' must map file paths to content hashes")
    off = d.get("off_branch", False) is True
    return Baseline(head=head, dirty=MappingProxyType(dict(dirty)), branch=branch, off_branch=off)


def _str_map(value: object) -> TypeGuard[dict[str, str]]:
    return is_object(value) and all(isinstance(v, str) for v in value.values())  # JSON: keys are strings


# ---------------------------------------------------------------------------- git helpers
# Every git command goes through hostgit: pinned to the repository, nothing of it run.


def _z(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def _hashed(repo: Path, paths: set[str]) -> dict[str, str]:
    if not paths:  # the usual clean tree: no identity to check (a git folder's checks, issue 33)
        return {}
    top = hostgit.current(repo).work_tree
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


def _tip(repo: Path, ref: str | None) -> str | None:
    if not ref:
        return None
    return (
        hostgit.run(repo, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False).stdout.strip()
        or None
    )


def branch_tip(repo: Path, ref: str | None) -> str | None:
    """The commit `ref` names, or None (no such branch, or not a commit)."""
    return _tip(repo, ref)


def holds(repo: Path, old: str, new: str) -> bool:
    """Whether commit `new`'s history holds `old`."""
    return _is_ancestor(repo, old, new)


def dropped(repo: Path, start: str, tip: str | None, limit: int = 20) -> list[str]:
    """The commits of `start`'s history that `tip`'s lacks, newest first, as "short subject"."""
    span = [start, "--not", tip] if tip else [start, "--not", "--branches", "--tags"]
    out = hostgit.run(repo, "log", f"--max-count={limit}", "--format=%h %s", *span, check=False).stdout
    return [line[:120] for line in out.splitlines() if line.strip()]


def _is_ancestor(repo: Path, old: str, new: str) -> bool:
    """Whether `old` is in `new`'s history (a commit pruned after a rewrite is not)."""
    return hostgit.run(repo, "merge-base", "--is-ancestor", old, new, check=False).returncode == 0


def _content_commits(repo: Path, base: str | None, tip: str | None) -> tuple[list[str], list[str]]:
    """The commits in base..tip (newest first) that change some file's content, and those files.
    A root commit counts only when the branch had no commit at the turn's start."""
    if tip is None or tip == base:
        return [], []
    listing = hostgit.out(repo, "rev-list", "--parents", tip if base is None else f"{base}..{tip}")
    commits: list[str] = []
    files: set[str] = set()
    for row in listing.splitlines():
        sha, *parents = row.split()
        if not parents and base is not None:
            continue  # an unrelated history brought in: not made in this turn
        changed = _content_changes(repo, sha, parents[0] if parents else None)
        if changed:
            commits.append(sha)
            files.update(changed)
    return commits, sorted(files)


def _content_changes(repo: Path, sha: str, parent: str | None) -> list[str]:
    """Files whose content (blob) `sha` changes against its first parent (a merge: what it
    brought in); a mode-only change is not one."""
    args = ["diff-tree", "-r", "--raw", "--no-renames", "-z", "--no-commit-id"]
    args += [parent, sha] if parent else ["--root", sha]
    fields = _z(hostgit.out(repo, *args))
    changed: list[str] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        parts = meta.split()
        if len(parts) >= 4 and parts[2] != parts[3]:
            changed.append(path)
    return changed
