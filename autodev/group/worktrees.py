"""The group's worktrees and refs: one `git worktree` per run, made from the group's base commit
on a branch of its own; at its end, the run's work (commits, and what it left uncommitted, as a
commit on top) kept on `refs/autodev/best-of/<group>/<k>`; removed only by `autodev runs prune`.

Every step is idempotent against what an interrupted one left (a folder without its worktree, a
branch without its folder), so a driver killed mid-step redoes it on resume. Git runs through
`timeline.git` (hostgit: pinned, hooks off)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from autodev.group.record import Group, append
from autodev.guard.secrets import SECRET_FILES
from autodev.store.paths import RunPaths
from autodev.timeline import git
from autodev.timeline.safe import install_config


def variant(g: Group, k: int) -> Path | None:
    """The team file run `k` uses instead of the repository's (`--vary team=a.toml,b.toml`)."""
    files = sorted(g.config.glob("team-variant-*.toml"))
    return files[(k - 1) % len(files)] if files else None


def make(g: Group, k: int) -> None:
    """Worktree `k`: intent, then the worktree, then `made:K`."""
    path, branch = g.worktree_of(k), g.branch_of(k)
    append(g.folder, {"id": f"worktree:{k}", "type": "worktree", "k": k, "path": str(path), "branch": branch})
    if not (path / ".git").is_file():
        if path.exists():
            shutil.rmtree(path)  # a `worktree add` killed before it finished
        git.git(g.repo, "worktree", "prune")
        if git.ref(g.repo, f"refs/heads/{branch}"):
            git.git(g.repo, "worktree", "add", "-q", str(path), branch)
        else:
            git.git(g.repo, "worktree", "add", "-q", "-b", branch, str(path), g.base)
    # the run's config is the one the group began with, never what the base commit holds
    # (timeline/safe.py)
    install_config(g.config, path / ".autodev")
    team = variant(g, k)
    if team is not None:
        (path / ".autodev" / "team.toml").write_text(team.read_text())
    append(g.folder, {"id": f"made:{k}", "type": "made", "k": k})


def keep(g: Group, k: int) -> str:
    """The run's work on `refs/autodev/best-of/<group>/<k>`: its head, with what it left
    uncommitted (.autodev/ aside) committed on top. Returns the commit."""
    tree = g.worktree_of(k)
    head = git.head(tree) or g.base
    sha = _snapshot(tree, head, f"autodev: what run {k} of best-of group {g.id} left uncommitted") or head
    git.git(g.repo, "update-ref", g.ref_of(k), sha)
    return sha


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
    """The worktrees, their branches and run folders removed (the refs stay); what was removed."""
    gone: list[str] = []
    for k in range(1, g.n + 1):
        path = g.worktree_of(k)
        run_dir = RunPaths(path).run_dir
        if path.exists():
            git.git(g.repo, "worktree", "remove", "--force", str(path), check=False)
            if path.exists():
                shutil.rmtree(path)
            gone.append(str(path))
        if git.ref(g.repo, f"refs/heads/{g.branch_of(k)}"):
            git.git(g.repo, "branch", "-q", "-D", g.branch_of(k), check=False)
        if run_dir.exists():
            shutil.rmtree(run_dir)
            gone.append(str(run_dir))
    git.git(g.repo, "worktree", "prune", check=False)
    append(g.folder, {"id": "pruned", "type": "pruned"})
    return gone
