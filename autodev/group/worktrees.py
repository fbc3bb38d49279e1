"""The group's work trees and refs: one clone per run, checked out from the group's base commit
on a branch of its own; at its end, the run's work (commits, and what it left uncommitted, as a
commit on top) kept on `refs/autodev/best-of/<group>/<k>` in the user's repository; the clones
removed only by `autodev runs prune`.

Every step is idempotent against what an interrupted one left (a folder without its clone, a
clone without its branch), so a driver killed mid-step redoes it on resume. Git runs through
`timeline.git` (hostgit: pinned, hooks off)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from autodev.group.record import Group, append
from autodev.guard.secrets import SECRET_FILES
from autodev.records.group import Made, MadeAt, Pruned
from autodev.store.paths import RunPaths
from autodev.timeline import git
from autodev.timeline.safe import install_config


def variant(g: Group, k: int) -> Path | None:
    """The team file run `k` uses instead of the repository's (`--vary team=a.toml,b.toml`)."""
    files = sorted(g.config.glob("team-variant-*.toml"))
    return files[(k - 1) % len(files)] if files else None


def make(g: Group, k: int) -> None:
    """Run `k`'s work tree: intent, then a clone of the repository checked out on the run's
    branch at the base commit, then `made:K`.

    A clone, not a `git worktree`: a worktree's git folder is the repository's own `.git`, which
    the sandbox must leave writable for commits, so a run could move the user's branch or another
    run's. A clone's objects and refs are its own (`--no-local`: not even hard links); the
    user's repository is not in the run's sandbox at all, and nothing of the run reaches it but
    the commit `keep` fetches once the run has ended."""
    path, branch = g.worktree_of(k), g.branch_of(k)
    append(g.folder, MadeAt(id=f"worktree:{k}", type="worktree", k=k, path=str(path), branch=branch))
    if not (path / ".git" / "HEAD").is_file():
        if path.exists():
            shutil.rmtree(path)  # a clone killed before it finished
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            git.clone(g.repo, path)
        except git.GitError as e:
            raise git.GitError(f"could not clone {g.repo} for run {k}: {e.message}", git.FIX) from None
        git.git(path, "remote", "remove", "origin", check=False)  # no way back but `keep`'s fetch
        with open(path / ".git" / "info" / "exclude", "a") as f:
            f.write(".autodev/\n")  # the group's config, never the run's work
    if not git.ref(path, f"refs/heads/{branch}"):
        git.git(path, "checkout", "-q", "-b", branch, g.base)
    # the run's config is the one the group began with, never what the base commit holds
    # (timeline/safe.py)
    install_config(g.config, path / ".autodev")
    team = variant(g, k)
    if team is not None:
        (path / ".autodev" / "team.toml").write_text(team.read_text())
    append(g.folder, Made(id=f"made:{k}", type="made", k=k))


def keep(g: Group, k: int) -> str:
    """The run's work on `refs/autodev/best-of/<group>/<k>` in the user's repository: its head,
    with what it left uncommitted (.autodev/ and secret files aside) committed on top, fetched
    from its clone once its daemon is gone. Returns the commit."""
    tree = g.worktree_of(k)
    head = git.head(tree) or g.base
    sha = _snapshot(tree, head, f"autodev: what run {k} of best-of group {g.id} left uncommitted") or head
    git.git(tree, "update-ref", KEPT, sha)
    git.git(g.repo, "fetch", "-q", "--no-tags", "--no-write-fetch-head", str(tree), f"+{KEPT}:{g.ref_of(k)}")
    got = git.ref(g.repo, g.ref_of(k))
    if got != sha:
        raise git.GitError(f"run {k}'s work did not arrive on {g.ref_of(k)} ({got} is not {sha})", git.FIX)
    return sha


KEPT = "refs/autodev/kept"


def _snapshot(repo: Path, parent: str, msg: str) -> str | None:
    """A commit of the working tree on a private index, or None when it equals `parent`."""
    with tempfile.TemporaryDirectory(prefix="autodev-best-of-") as tmp:
        idx = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **git.IDENTITY}
        git.git(repo, "read-tree", parent, extra_env=idx)
        # secret files stay out, as a rewind's snapshot leaves them (timeline/git.py)
        left_out = [f":(exclude,literal){p}" for p in git.secret_files_in(repo, SECRET_FILES, idx)]
        git.git(repo, "add", "-A", "--", ".", *left_out, extra_env=idx)
        # .autodev/ is the group's config, never the run's work
        git.git(repo, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", ".autodev", extra_env=idx)
        tree = git.git(repo, "write-tree", extra_env=idx)
    if tree == git.git(repo, "rev-parse", parent + "^{tree}"):
        return None
    return git.git(repo, "commit-tree", tree, "-p", parent, "-m", msg, extra_env=git.IDENTITY)


def changed_lines(repo: Path, base: str, sha: str) -> int:
    """Lines added plus removed from `base` to `sha` (a binary file counts as one)."""
    out = git.git(repo, "diff", "--numstat", base, sha, "--", ".", git.NOT_CONFIG)
    total = 0
    for line in out.splitlines():
        added, removed, _ = line.split("\t", 2)
        total += 1 if added == "-" else int(added) + int(removed)
    return total


def remove(g: Group) -> list[str]:
    """The runs' clones and run folders removed (the refs in the user's repository stay); what
    was removed."""
    gone: list[str] = []
    for k in range(1, g.n + 1):
        path = g.worktree_of(k)
        run_dir = RunPaths(path).run_dir
        if path.exists():
            shutil.rmtree(path)
            gone.append(str(path))
        if run_dir.exists():
            shutil.rmtree(run_dir)
            gone.append(str(run_dir))
    append(g.folder, Pruned(id="pruned", type="pruned"))
    return gone
