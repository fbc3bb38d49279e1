"""Stale git locks (autodev/host/gitlocks.py): removed when no live git process works in the
repository, kept while one does; a killed command's lock is removed and said in its result."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from autodev.host import gitlocks
from tests.conftest import git
from tests.harness.test_tools import ws


def test_a_lock_no_git_process_holds_is_removed_and_git_writes_again(repo):
    (repo / ".git" / "index.lock").write_bytes(b"")
    (repo / ".git" / "refs" / "heads" / "main.lock").write_text("0" * 40 + "\n")
    (repo / "f.txt").write_text("x\n")
    stuck = subprocess.run(["git", "add", "f.txt"], cwd=repo, capture_output=True, text=True)
    assert stuck.returncode != 0 and "index.lock" in stuck.stderr  # what a killed git leaves behind

    removed = gitlocks.clear_stale(repo)

    assert sorted(removed) == [".git/index.lock", ".git/refs/heads/main.lock"]
    assert "no running git process holds" in gitlocks.report(removed)
    git(repo, "add", "f.txt")
    git(repo, "commit", "-qm", "f")
    assert gitlocks.clear_stale(repo) == []


def test_a_lock_is_kept_while_a_git_process_works_in_the_repository(repo, tmp_path):
    (repo / ".git" / "HEAD.lock").write_bytes(b"")
    live = subprocess.Popen(["git", "cat-file", "--batch"], cwd=repo, stdin=subprocess.PIPE)
    try:
        # until it has exec'd, the child is still a copy of this Python, not yet a git process
        comm = Path(f"/proc/{live.pid}/comm")
        deadline = time.monotonic() + 10
        while not comm.read_text().startswith("git"):
            assert time.monotonic() < deadline, "git did not start"
            time.sleep(0.01)
        assert gitlocks.clear_stale(repo) == []
        assert (repo / ".git" / "HEAD.lock").exists()
    finally:
        live.kill()
        live.wait()
    assert gitlocks.clear_stale(repo) == [".git/HEAD.lock"]


def test_git_working_elsewhere_does_not_keep_the_lock(repo, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (repo / ".git" / "HEAD.lock").write_bytes(b"")
    elsewhere = subprocess.Popen(["git", "cat-file", "--batch"], cwd=other, stdin=subprocess.PIPE)
    try:
        assert gitlocks.clear_stale(repo) == [".git/HEAD.lock"]
    finally:
        elsewhere.kill()
        elsewhere.wait()


def test_a_planted_symlink_is_left_for_the_user(repo, tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    os.symlink(target, repo / ".git" / "index.lock")
    assert gitlocks.clear_stale(repo) == []
    assert target.read_text() == "keep me\n" and (repo / ".git" / "index.lock").is_symlink()


def test_a_command_killed_mid_git_write_has_its_lock_removed_and_said(repo):
    # The command takes git's index lock as `git add` does, then hangs until the timeout kills it.
    out = ws(repo).call("run_command", {"command": "touch .git/index.lock && sleep 30", "timeout_sec": 0.5})
    assert "timed out" in out
    assert "removed .git/index.lock" in out
    (repo / "f.txt").write_text("x\n")
    git(repo, "add", "f.txt")  # raises if git still finds the lock
    git(repo, "commit", "-qm", "f")
