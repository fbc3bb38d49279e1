"""Crediting work from git, on real repositories."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from autodev.harness.credit import Baseline, baseline_from_json, baseline_to_json, credit_since, take_baseline


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def _empty(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "config", "user.name", "Test")
    git(root, "config", "user.email", "test@example.com")


def _started(root: Path) -> None:
    _empty(root)
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    (root / ".gitignore").write_text("*.log\n")
    commit_all(root, "start")


@pytest.fixture
def empty_repo(tmp_path: Path, repo_templates) -> Path:
    return repo_templates(tmp_path / "repo", _empty)


@pytest.fixture
def repo(tmp_path: Path, repo_templates) -> Path:
    return repo_templates(tmp_path / "repo", _started)


def test_nothing_changed_is_not_credited(repo):
    base = take_baseline(repo)
    assert base.head == git(repo, "rev-parse", "HEAD")
    assert dict(base.dirty) == {}
    assert credit_since(repo, base) is None


def test_commits_are_credited_newest_first(repo):
    base = take_baseline(repo)
    (repo / "a.txt").write_text("a2\n")
    first = commit_all(repo, "one")
    (repo / "new").mkdir()
    (repo / "new" / "c.txt").write_text("c\n")
    second = commit_all(repo, "two")
    assert credit_since(repo, base) == {"commits": [second, first], "files": ["a.txt", "new/c.txt"]}


def test_commits_win_over_uncommitted_files(repo):
    base = take_baseline(repo)
    (repo / "a.txt").write_text("a2\n")
    sha = commit_all(repo, "one")
    (repo / "b.txt").write_text("b2\n")  # left uncommitted
    assert credit_since(repo, base) == {"commits": [sha], "files": ["a.txt"]}


def test_uncommitted_edit_is_credited_as_files(repo):
    base = take_baseline(repo)
    (repo / "a.txt").write_text("changed\n")
    assert credit_since(repo, base) == {"commits": [], "files": ["a.txt"]}


def test_untracked_and_deleted_files_are_credited(repo):
    base = take_baseline(repo)
    (repo / "sub").mkdir()
    (repo / "sub" / "fresh.py").write_text("x = 1\n")
    (repo / "b.txt").unlink()
    assert credit_since(repo, base) == {"commits": [], "files": ["b.txt", "sub/fresh.py"]}


def test_ignored_files_are_not_credited(repo):
    base = take_baseline(repo)
    (repo / "debug.log").write_text("noise\n")
    assert credit_since(repo, base) is None


def test_pre_existing_dirty_file_left_alone_is_not_credited(repo):
    (repo / "a.txt").write_text("dirty before the turn\n")
    (repo / "scratch.txt").write_text("untracked before the turn\n")
    base = take_baseline(repo)
    assert set(base.dirty) == {"a.txt", "scratch.txt"}
    assert credit_since(repo, base) is None


def test_pre_existing_dirty_file_edited_further_is_credited(repo):
    (repo / "a.txt").write_text("dirty before the turn\n")
    (repo / "scratch.txt").write_text("untracked before the turn\n")
    base = take_baseline(repo)
    (repo / "a.txt").write_text("dirty before the turn\nand edited during it\n")
    assert credit_since(repo, base) == {"commits": [], "files": ["a.txt"]}


def test_reverting_a_dirty_file_is_a_change(repo):
    (repo / "a.txt").write_text("dirty before the turn\n")
    (repo / "gone.txt").write_text("untracked before the turn\n")
    base = take_baseline(repo)
    git(repo, "checkout", "--", "a.txt")
    (repo / "gone.txt").unlink()
    assert credit_since(repo, base) == {"commits": [], "files": ["a.txt", "gone.txt"]}


def test_reset_to_an_older_commit_credits_the_files_it_moved(repo):
    (repo / "a.txt").write_text("second version\n")
    second = commit_all(repo, "second")
    base = take_baseline(repo)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    # a rewrite: the files it moved, and the commit it took off the branch, named
    assert credit_since(repo, base) == {"commits": [], "files": ["a.txt"], "removed": [second]}


def test_empty_repository(empty_repo):
    base = take_baseline(empty_repo)
    assert base.head is None and dict(base.dirty) == {}
    assert credit_since(empty_repo, base) is None

    (empty_repo / "first.txt").write_text("hello\n")
    assert credit_since(empty_repo, base) == {"commits": [], "files": ["first.txt"]}

    one = commit_all(empty_repo, "first")
    (empty_repo / "second.txt").write_text("again\n")
    two = commit_all(empty_repo, "second")
    assert credit_since(empty_repo, base) == {"commits": [two, one], "files": ["first.txt", "second.txt"]}


def test_empty_repository_with_dirty_baseline(empty_repo):
    (empty_repo / "pre.txt").write_text("there before\n")
    base = take_baseline(empty_repo)
    assert base.head is None and set(base.dirty) == {"pre.txt"}
    assert credit_since(empty_repo, base) is None
    (empty_repo / "pre.txt").write_text("changed\n")
    assert credit_since(empty_repo, base) == {"commits": [], "files": ["pre.txt"]}


def test_baseline_round_trips_through_json(repo):
    (repo / "a.txt").write_text("dirty\n")
    (repo / "b.txt").unlink()
    base = take_baseline(repo)
    assert base.dirty["b.txt"] == "<deleted>"
    stored = json.loads(json.dumps(baseline_to_json(base)))
    again = baseline_from_json(stored)
    assert again == base
    assert credit_since(repo, again) is None
    (repo / "a.txt").write_text("dirtier\n")
    assert credit_since(repo, again) == {"commits": [], "files": ["a.txt"]}


@pytest.mark.parametrize(
    "bad", [[], {"head": 5, "dirty": {}}, {"head": None, "dirty": {"a": 1}}, {"head": None, "dirty": ["a"]}]
)
def test_damaged_baseline_record_is_refused(bad):
    with pytest.raises(ValueError, match="credit baseline"):
        baseline_from_json(bad)


def test_baseline_is_immutable(repo):
    base = take_baseline(repo)
    assert isinstance(base, Baseline)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.head = "x"  # type: ignore[misc]


def test_a_prefetched_status_is_the_baseline_of_the_moment_it_began(repo: Path) -> None:
    """The daemon begins the baseline's `git status` before it schedules the turn (issue 33):
    `take_baseline` reads what git saw then, and runs git itself when nothing was begun."""
    from autodev.harness import credit

    (repo / "a.txt").write_text("changed\n")
    credit.prefetch(repo)
    [begun] = credit._ahead.values()
    begun.proc.wait(timeout=30)  # git has scanned: what comes next is after the turn's start
    (repo / "late.txt").write_text("written after the status began\n")
    early = take_baseline(repo)
    assert set(early.dirty) == {"a.txt"} and not credit._ahead
    assert set(take_baseline(repo).dirty) == {"a.txt", "late.txt"}  # nothing begun: git runs now


def test_a_prefetch_that_cannot_begin_is_refused_where_the_turn_takes_its_baseline(repo: Path) -> None:
    from autodev.harness import credit
    from autodev.host.hostgit import GitRefused

    (repo / ".git" / "commondir").write_text("/elsewhere\n")
    credit.prefetch(repo)  # refused: nothing begun, nothing raised here
    assert not credit._ahead
    with pytest.raises(GitRefused, match="commondir"):
        take_baseline(repo)


def test_a_prefetch_no_turn_reads_is_ended_and_reaped(repo: Path) -> None:
    from autodev.harness import credit

    credit.prefetch(repo)
    [begun] = credit._ahead.values()
    credit.discard()
    assert begun.proc.returncode is not None and not credit._ahead
    credit.prefetch(repo)
    [again] = credit._ahead.values()
    credit.prefetch(repo)  # a second begins only once the first is ended
    assert again.proc.returncode is not None
    credit.discard()
