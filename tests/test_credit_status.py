"""The turn's credit baseline from one `git status --porcelain=v2 --branch` (issue 33) is the
baseline the three git calls it replaced gave: the branch HEAD is on, the tip, the dirty files."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import MappingProxyType

import pytest

from autodev.harness import credit
from autodev.host import hostgit


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def three_calls(repo: Path, branch: str | None = None) -> credit.Baseline:
    """The baseline as it was taken before: symbolic-ref, rev-parse and a v1 status."""
    on = hostgit.run(repo, "symbolic-ref", "-q", "HEAD", check=False).stdout.strip() or None
    branch = branch or on
    unborn = hostgit.run(repo, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).stdout.strip()
    head = credit._tip(repo, branch) if branch else unborn or None
    out = hostgit.out(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    paths = {e[3:] for e in out.split("\0") if len(e) > 3}
    top = hostgit.current(repo).work_tree
    dirty = {p: credit._content_hash(top / p) for p in sorted(paths)}
    return credit.Baseline(head=head, dirty=MappingProxyType(dirty), branch=branch, off_branch=on != branch)


def _build(r: Path) -> None:
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.name", "Test")
    git(r, "config", "user.email", "test@example.com")


@pytest.fixture
def repo(tmp_path: Path, repo_templates) -> Path:
    return repo_templates(tmp_path / "repo", _build)


def _same(repo: Path, branch: str | None = None) -> None:
    got, want = credit.take_baseline(repo, branch), three_calls(repo, branch)
    assert (got.head, dict(got.dirty), got.branch, got.off_branch) == (
        want.head,
        dict(want.dirty),
        want.branch,
        want.off_branch,
    )


def test_unborn_clean_dirty_deleted_untracked_and_odd_names(repo):
    (repo / "a.txt").write_text("a\n")
    _same(repo)  # no commit yet
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    _same(repo)  # clean
    (repo / "a.txt").write_text("changed\n")
    (repo / "with space é.txt").write_text("x\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "new.py").write_text("y\n")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "skip.log").write_text("z\n")
    _same(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    (repo / "a.txt").unlink()
    git(repo, "mv", "sub/new.py", "sub/moved.py")  # a rename, reported as delete and add
    _same(repo)
    assert "sub/moved.py" in credit.take_baseline(repo).dirty


def test_detached_and_off_the_runs_branch(repo):
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    _same(repo, "refs/heads/main")  # HEAD on another branch than the run's
    assert credit.take_baseline(repo, "refs/heads/main").off_branch
    git(repo, "checkout", "-q", "--detach", "HEAD")
    _same(repo)
    _same(repo, "refs/heads/side")


def test_an_unmerged_file_is_dirty(repo):
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "-q", "other"], cwd=repo, capture_output=True)  # a conflict
    _same(repo)
    assert "a.txt" in credit.take_baseline(repo).dirty
