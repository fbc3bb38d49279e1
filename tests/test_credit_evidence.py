"""Credit is evidence (issue 20): only commits new on the run's branch that change content are
credited; each attack of the issue on real repositories, and a write = false participant's room
that cannot change the branch or the working tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from autodev.config import RunConfig
from autodev.daemon.turnsetup import READ_ONLY_GATED
from autodev.guard import sandbox
from autodev.guard.gates import guard
from autodev.harness.credit import credit_since, current_branch, take_baseline
from autodev.harness.tools import Workspace

BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def commit(repo: Path, message: str, *extra: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, *extra)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path, repo_templates) -> Path:
    return repo_templates(tmp_path / "repo", _build)


def _build(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    (root / "run.sh").write_text("echo hi\n")
    commit(root, "start")
    (root / "b.txt").write_text("b by alice\n")
    commit(root, "alice's work")


def test_a_commit_that_changes_content_is_credited(repo):
    base = take_baseline(repo)
    assert base.branch == "refs/heads/main" == current_branch(repo)
    (repo / "c.txt").write_text("c\n")
    sha = commit(repo, "bob's work")
    assert credit_since(repo, base) == {"commits": [sha], "files": ["c.txt"]}


def test_an_empty_commit_and_a_mode_change_are_not_credited(repo):
    base = take_baseline(repo)
    commit(repo, "nothing", "--allow-empty")
    (repo / "run.sh").chmod(0o755)
    commit(repo, "chmod only")
    assert credit_since(repo, base) is None
    (repo / "a.txt").write_text("a, changed\n")
    (repo / "run.sh").chmod(0o644)
    sha = commit(repo, "content and a mode")
    assert credit_since(repo, base) == {"commits": [sha], "files": ["a.txt"]}


def test_reset_soft_and_commit_does_not_take_anothers_commit(repo):
    alices = git(repo, "rev-parse", "HEAD")
    base = take_baseline(repo)  # bob's turn begins on alice's commit
    git(repo, "reset", "--soft", "HEAD~1")
    commit(repo, "bob's work (really alice's)")
    credit = credit_since(repo, base)
    assert credit is None  # the same content: nothing of bob's
    (repo / "b.txt").write_text("b by alice, one word changed by bob\n")
    git(repo, "commit", "-q", "-a", "--amend", "-m", "bob again")
    credit = credit_since(repo, base)
    assert credit == {"commits": [], "files": ["b.txt"], "removed": [alices]}


def test_an_orphan_branch_and_back_credits_nothing(repo):
    base = take_baseline(repo)
    git(repo, "checkout", "-q", "--orphan", "fresh")
    commit(repo, "the whole tree as new")
    git(repo, "checkout", "-q", "-f", "main")
    assert credit_since(repo, base) is None
    # merged back in: the unrelated root brings nothing new, so nothing is credited
    git(repo, "merge", "-q", "--allow-unrelated-histories", "-m", "merge", "fresh")
    assert credit_since(repo, base) is None


def test_a_later_turn_on_an_orphan_branch_counts_only_the_runs_branch(repo):
    git(repo, "checkout", "-q", "--orphan", "fresh")  # left there by an earlier turn
    base = take_baseline(repo, "refs/heads/main")  # the run's branch, from state
    assert base.head == git(repo, "rev-parse", "main")
    git(repo, "checkout", "-q", "-f", "main")
    assert credit_since(repo, base) is None  # the earlier history is not new


def test_commits_on_another_branch_or_detached_are_not_credited(repo):
    base = take_baseline(repo)
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "c.txt").write_text("c\n")
    commit(repo, "on a side branch")
    assert credit_since(repo, base) is None
    git(repo, "checkout", "-q", "--detach", "main")
    (repo / "d.txt").write_text("d\n")
    commit(repo, "detached")
    assert credit_since(repo, base) is None


def test_a_commit_taken_off_the_branch_before_posting_is_not_credited(repo):
    base = take_baseline(repo)
    (repo / "c.txt").write_text("c\n")
    sha = commit(repo, "soon gone")
    git(repo, "branch", "-q", "keep", sha)
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert credit_since(repo, base) is None  # checked when credited: it is not on the branch


def test_history_rewrites_and_branch_switches_need_a_gate_by_default():
    patterns = RunConfig().gate_required
    for command in (
        "git reset --soft HEAD~1 && git commit -m mine",
        "git commit --amend --no-edit",
        "git checkout --orphan fresh",
        "git switch -c side",
        "git checkout -b side",
        "git rebase -i HEAD~2",
        "git branch -f main HEAD~1",
        "git update-ref refs/heads/main HEAD~1",
    ):
        message, _ = guard(command, patterns, [], opaque="gated", written=lambda p: False)
        assert message is not None, command
    for command in ("git commit -m 'amend the docs'", "git checkout main", "git status"):
        assert guard(command, patterns, [], opaque="gated", written=lambda p: False) == (None, [])


def test_unsandboxed_a_read_only_participant_needs_a_gate_to_change_the_tree():
    for command in ("git reset --keep HEAD~1", "git checkout .", "git restore a.txt", "git stash"):
        message, _ = guard(command, READ_ONLY_GATED, [], opaque="gated", written=lambda p: False)
        assert message is not None, command
    assert guard("git log --oneline", READ_ONLY_GATED, [], opaque="gated") == (None, [])


@needs_bwrap
def test_a_read_only_participants_commands_cannot_change_the_branch_or_the_tree(repo):
    head = git(repo, "rev-parse", "HEAD")
    (repo / "b.txt").write_text("uncommitted work of alice\n")
    room = BOX.room(repo, writable=False)
    ws = Workspace(repo, write=False, command_timeout=30, room=room)
    for command in (
        "git reset --keep HEAD~1",
        "git checkout .",
        "git restore b.txt",
        "echo overwritten > a.txt",
        "git commit -qam stolen",
        "mv .git .gitreal",
    ):
        out = ws.call("run_command", {"command": command})
        assert not out.startswith("exit code: 0"), (command, out)
    assert git(repo, "rev-parse", "HEAD") == head
    assert (repo / "b.txt").read_text() == "uncommitted work of alice\n"
    assert (repo / "a.txt").read_text() == "a\n"
    assert ws.call("run_command", {"command": "git log --oneline | wc -l"}).startswith("exit code: 0")
    writer = Workspace(repo, write=True, command_timeout=30, room=BOX.room(repo))
    assert writer.call("run_command", {"command": "echo more >> a.txt"}).startswith("exit code: 0")
