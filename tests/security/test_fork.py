"""`autodev fork` and `autodev rewind` keep the run's own config, never a `.autodev` that the
commit at SEQ holds: a participant can commit one with git plumbing (its working tree's
`.autodev/` is read-only in the sandbox, its index and objects are not), with `sandbox = "off"`
and hooks for the next start, or as a link to a host folder a copy would be written through."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from autodev.store.paths import RunPaths
from tests.conftest import git
from tests.timeline.conftest import copy_run, recorded_run  # noqa: F401 - the session's recorded run

HOSTILE = 'sandbox = "off"\n[[hooks]]\non = "on_state"\ncommand = "touch /tmp/pwned"\n'


def _plant(repo: Path, entries: list[tuple[str, str, str]], seq: int = 5) -> str:
    """A commit on the run's branch adding (mode, path, content) entries, made as a participant
    would in the sandbox: blobs and index only, the working tree untouched; post `seq` is made
    to have been posted on it."""
    index = repo / ".git" / "plant-index"
    env = {"GIT_INDEX_FILE": str(index)}
    run = lambda *a, i=None: subprocess.run(  # noqa: E731
        ["git", *a], cwd=repo, check=True, capture_output=True, text=True, input=i, env={**os.environ, **env}
    ).stdout.strip()
    run("read-tree", "HEAD")
    for mode, path, content in entries:
        blob = run("hash-object", "-w", "--stdin", i=content)
        run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
    tree = run("write-tree")
    commit = run("commit-tree", tree, "-p", "HEAD", "-m", "innocent", i="")
    git(repo, "update-ref", "HEAD", commit)
    index.unlink()
    thread = RunPaths(repo).thread
    lines = [json.loads(line) for line in thread.read_text().splitlines()]
    assert lines[seq - 1]["seq"] == seq
    lines[seq - 1]["head"] = commit
    thread.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return commit


def test_a_fork_at_a_commit_holding_its_own_autodev_gets_the_runs_config(recorded_run, tmp_path, inproc):  # noqa: F811
    repo = copy_run(recorded_run, tmp_path / "repo")
    own = (repo / ".autodev" / "config.toml").read_text()
    _plant(
        repo,
        [
            ("100644", ".autodev/config.toml", HOSTILE),
            ("100644", ".autodev/team.toml", (repo / ".autodev" / "team.toml").read_text()),
        ],
    )
    into = tmp_path / "fork"
    r = inproc(repo, "fork", "5", "--into", str(into))
    assert r.returncode == 0, r.stdout + r.stderr
    got = (into / ".autodev" / "config.toml").read_text()
    assert got == own and "hooks" not in tomllib.loads(got)


@pytest.mark.parametrize("link", ["absolute", "relative"])
def test_a_fork_at_a_commit_whose_autodev_is_a_link_writes_nothing_through_it(
    recorded_run,  # noqa: F811
    tmp_path,
    inproc,
    link,
):
    repo = copy_run(recorded_run, tmp_path / "repo")
    victim = tmp_path / "victim"
    victim.mkdir()
    target = str(victim) if link == "absolute" else "../victim"
    _plant(repo, [("120000", ".autodev", target)])
    into = tmp_path / "fork"
    r = inproc(repo, "fork", "5", "--into", str(into))
    assert r.returncode == 0, r.stdout + r.stderr
    assert list(victim.iterdir()) == []
    assert (into / ".autodev").is_dir() and not (into / ".autodev").is_symlink()
    assert (into / ".autodev" / "team.toml").read_text() == (repo / ".autodev" / "team.toml").read_text()


def test_a_rewind_to_a_commit_holding_its_own_autodev_keeps_the_runs_config(recorded_run, tmp_path, inproc):  # noqa: F811
    """The rewind's reset writes the commit's tracked files; `.autodev/` is not one of them."""
    repo = copy_run(recorded_run, tmp_path / "repo")
    own = {f.name: f.read_text() for f in (repo / ".autodev").iterdir()}
    _plant(repo, [("100644", ".autodev/config.toml", HOSTILE)], seq=3)
    r = inproc(repo, "rewind", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert {f.name: f.read_text() for f in (repo / ".autodev").iterdir()} == own
    r = inproc(repo, "rewind", "--undo")
    assert r.returncode == 0, r.stdout + r.stderr
    assert {f.name: f.read_text() for f in (repo / ".autodev").iterdir()} == own


def test_the_printed_cd_hint_is_shell_quoted(recorded_run, tmp_path, inproc):  # noqa: F811
    """Issue 29, finding 14: a folder with a space and a `$(...)` in its name, pasted from the
    hint, is a name to the shell, not a command. The hint is run by a real bash here."""
    repo = copy_run(recorded_run, tmp_path / "repo")
    into = tmp_path / "my fork $(touch pwned)"
    r = inproc(repo, "fork", "3", "--into", str(into))
    assert r.returncode == 0, r.stdout + r.stderr
    hint = r.stdout.split("`")[1]
    assert hint == f"cd {shlex.quote(str(into.resolve()))} && autodev start", r.stdout
    pasted = subprocess.run(
        ["bash", "-c", hint.replace("&& autodev start", "&& pwd")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert pasted.stdout.strip() == str(into.resolve()), pasted.stderr
    assert not (tmp_path / "pwned").exists() and not (into / "pwned").exists()


def test_a_forks_repository_cannot_reach_the_originals_git(recorded_run, tmp_path, inproc):  # noqa: F811
    """The fork's sandbox leaves its repository's `.git` writable (commits): it is a clone of its
    own, never a worktree sharing the user's `.git`, so a participant of the fork moving a branch
    there (as `git update-ref` in the sandbox would) moves nothing of the user's."""
    repo = copy_run(recorded_run, tmp_path / "repo")
    branches = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads")
    into = tmp_path / "fork"
    r = inproc(repo, "fork", "3", "--into", str(into))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (into / ".git").is_dir() and not (into / ".git").is_symlink()  # not a `gitdir:` link
    assert Path(git(into, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()) == into / ".git"
    assert not (into / ".git" / "objects" / "info" / "alternates").exists()
    assert not (repo / ".git" / "worktrees").exists()
    assert git(into, "remote").strip() == ""  # no way back to the user's repository

    (into / "x.txt").write_text("the fork's work\n")
    git(into, "add", "x.txt")
    git(into, "commit", "-qm", "the fork's commit")
    mine = git(into, "rev-parse", "HEAD").strip()
    git(into, "update-ref", "refs/heads/main", mine)
    git(into, "branch", "-f", "hijacked", mine)
    assert git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads") == branches
    assert subprocess.run(["git", "cat-file", "-e", mine], cwd=repo, capture_output=True).returncode != 0


def test_a_fork_at_a_commit_no_branch_reaches_has_it(recorded_run, tmp_path, inproc):  # noqa: F811
    """A clone takes branches and tags; a post's commit on a detached HEAD is fetched by its id."""
    repo = copy_run(recorded_run, tmp_path / "repo")
    planted = _plant(repo, [("100644", "detached.txt", "only here\n")])
    git(repo, "update-ref", "refs/heads/main", planted + "^")
    into = tmp_path / "fork"
    r = inproc(repo, "fork", "5", "--into", str(into))
    assert r.returncode == 0, r.stdout + r.stderr
    assert git(into, "rev-parse", "HEAD").strip() == planted
    assert (into / "detached.txt").read_text() == "only here\n"
