"""autodev's git on the host runs nothing from the repository (issue 20, attacks 1–3): each
attack's payload would leave a mark outside the repository; plain git is shown to leave it,
autodev's git leaves none and refuses the redirected or replaced `.git`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from autodev.harness import audit, credit
from autodev.host import hostgit
from tests.conftest import git


@pytest.fixture(autouse=True)
def _no_pins():
    yield
    hostgit._run_pins.clear()


def payload(tmp_path: Path) -> tuple[Path, Path]:
    """(a program that touches a mark outside the repository, the mark)."""
    mark = tmp_path / "MARK"
    prog = tmp_path / "evil.sh"
    prog.write_text(f"#!/bin/sh\ntouch {mark}\ncat\n")
    prog.chmod(0o755)
    return prog, mark


def plain_git(repo: Path, *args: str) -> None:
    """What the user's own git (or autodev's before) does in the repository."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", *args], cwd=repo, capture_output=True, env=env, stdin=subprocess.DEVNULL)


def test_attack1_commondir_to_a_copy_with_an_fsmonitor_is_refused(repo, tmp_path):
    prog, mark = payload(tmp_path)
    hostgit.pin_run(repo)
    evil = tmp_path / "evil-git"
    shutil.copytree(repo / ".git", evil)
    git(evil.parent, "--git-dir", str(evil), "config", "core.fsmonitor", str(prog))
    (repo / ".git" / "commondir").write_text(str(evil) + "\n")
    (repo / "new.txt").write_text("x\n")
    plain_git(repo, "status")
    assert mark.exists()  # the payload works on plain git
    mark.unlink()
    with pytest.raises(hostgit.GitRefused, match="commondir"):
        credit.take_baseline(repo)
    with pytest.raises(hostgit.GitRefused, match="commondir"):
        audit.change_since(repo, None, 1000)
    hostgit.unpin(repo)  # a fresh start on the planted repository refuses it too
    with pytest.raises(hostgit.GitRefused, match="commondir"):
        credit.take_baseline(repo)
    assert not mark.exists()


def test_attack2_a_renamed_and_replaced_git_folder_is_refused(repo, tmp_path):
    prog, mark = payload(tmp_path)
    hostgit.pin_run(repo)
    base = credit.take_baseline(repo)
    os.rename(repo / ".git", repo / ".gitreal")
    shutil.copytree(repo / ".gitreal", repo / ".git")
    git(repo, "config", "core.fsmonitor", str(prog))
    (repo / "new.txt").write_text("x\n")
    plain_git(repo, "status")
    assert mark.exists()
    mark.unlink()
    with pytest.raises(hostgit.GitRefused, match="not the git folder this run started with"):
        credit.credit_since(repo, base)
    # Started afresh on it: the fsmonitor (and hooks, pager…) are overridden, not run.
    hostgit.unpin(repo)
    assert "new.txt" in credit.credit_since(repo, base)["files"]
    assert not mark.exists()


def test_a_changed_repository_config_is_refused(repo):
    hostgit.pin_run(repo)
    credit.take_baseline(repo)
    with open(repo / ".git" / "config", "a") as f:
        f.write("[core]\n\tfsmonitor = /bin/true\n")
    with pytest.raises(hostgit.GitRefused, match="changed since this run started"):
        credit.take_baseline(repo)


def test_attack3_a_nested_repository_staged_as_a_gitlink_is_not_entered(repo, tmp_path):
    prog, mark = payload(tmp_path)
    sub = repo / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    git(sub, "config", "user.name", "t")
    git(sub, "config", "user.email", "t@t.invalid")
    (sub / "f").write_text("x\n")
    git(sub, "add", "f")
    git(sub, "commit", "-qm", "sub")
    git(repo, "add", "sub")  # a gitlink
    git(sub, "config", "core.fsmonitor", str(prog))
    (sub / "f").write_text("changed\n")
    plain_git(repo, "status")
    assert mark.exists()
    mark.unlink()
    hostgit.pin_run(repo)
    base = credit.take_baseline(repo)
    audit.change_since(repo, None, 10_000)
    credit.credit_since(repo, base)
    assert not mark.exists()


def test_filter_drivers_hooks_and_external_diffs_do_not_run(repo, tmp_path):
    prog, mark = payload(tmp_path)
    git(repo, "config", "filter.evil.clean", str(prog))
    git(repo, "config", "filter.evil.required", "true")
    git(repo, "config", "diff.external", str(prog))
    git(repo, "config", "diff.evil.textconv", str(prog))
    git(repo, "config", "core.pager", str(prog))
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    hooks = repo / ".git" / "hooks"
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch {mark}\n")
    (hooks / "pre-commit").chmod(0o755)
    (repo / "README.md").write_text("changed\n")
    plain_git(repo, "add", "-A")
    assert mark.exists()
    plain_git(repo, "reset", "-q")
    mark.unlink()
    stat, diff = audit.change_since(repo, git(repo, "rev-parse", "HEAD").strip(), 10_000)
    assert "README.md" in stat and "+changed" in diff
    hostgit.out(repo, "diff", "HEAD")
    hostgit.out(repo, "commit", "-qam", "through the runner")
    assert not mark.exists()
    assert hostgit.identify(repo).filters == ("evil",)


def test_includes_in_the_repository_config_are_refused(repo):
    (repo / "inc.cfg").write_text("[core]\n\tfsmonitor = /bin/true\n")
    git(repo, "config", "include.path", "../inc.cfg")
    with pytest.raises(hostgit.GitRefused, match="include"):
        credit.take_baseline(repo)


def test_a_gitdir_file_is_followed_only_for_a_git_worktree(repo, tmp_path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    ident = hostgit.identify(wt)
    assert ident.kind == "file" and ident.common_dir == (repo / ".git").resolve()
    assert credit.take_baseline(wt).head == git(repo, "rev-parse", "HEAD").strip()
    other = tmp_path / "other"
    other.mkdir()
    (other / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    with pytest.raises(hostgit.GitRefused, match="not a `git worktree`"):
        hostgit.identify(other)
    (other / ".git").unlink()
    (other / ".git").symlink_to(repo / ".git")
    with pytest.raises(hostgit.GitRefused, match="symbolic link"):
        hostgit.identify(other)


def test_the_environment_and_a_relative_path_entry_cannot_steer_git(repo, tmp_path, monkeypatch):
    prog, mark = payload(tmp_path)
    fake = repo / "git"
    fake.write_text(f"#!/bin/sh\ntouch {mark}\n")
    fake.chmod(0o755)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", "." + os.pathsep + os.environ["PATH"])
    monkeypatch.setattr(hostgit, "_git_binary", [])
    monkeypatch.setenv("GIT_DIR", str(tmp_path))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(prog))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.fsmonitor={prog}'")
    (repo / "README.md").write_text("changed\n")
    assert "README.md" in hostgit.out(repo, "diff", "HEAD")
    credit.take_baseline(repo)
    assert not mark.exists()
    assert os.path.isabs(hostgit.git_binary()) and hostgit.git_binary() != str(fake)
