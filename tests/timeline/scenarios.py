"""Recorded runs that replay must hold up on (issue 32), made with the scripted model and the real
daemon: a team edited while the daemon runs, `.autodev/` files committed by a participant, a
notice answered while a gate is open and then the gate approved, a nanosecond clock's output,
and a fork of that run that goes on by itself.

Posts of the main run:
  #1 user objective
  #2 builder work_done (turn 1): a.txt and the untracked .autodev/ files, committed; it printed
     12345678 (a number a 7-to-40-hex-digit mask took for a commit id)
  #3 reviewer say -> user (turn 2): asks the user
  -- the reviewer's lane is edited in .autodev/team.toml while the daemon runs (team_reloaded)
  #4 user say: "blue"
  #5 reviewer say -> builder (turn 3)
  #6 system: the builder's notice, raised after it committed b.txt in turn 4 (a mid-turn post)
  #7 builder gate (turn 4)
  #8 system: the user answered the notice (the gate still open)
  #9 system: the gate approved by the user
  #10 builder work_done (turn 5): it ran `date +%s%N` (a different output every time)
  #11 reviewer done (turn 6)
  #12 audit accepts

The fork: made at post 1 (the objective), the user adds "green" before its first turn (its turn 1
sees 2 posts), the builder adds c.txt, the reviewer says done, the audit accepts.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from autodev.store.paths import RunPaths
from tests.conftest import GIT_ENV, Runner, git, write_team

LANE = "Reviews each change"
EDITED_LANE = "Reviews each change strictly"

TEAM = f"""
[[participants]]
name = "builder"
model = "scripted"
write = true

[[participants]]
name = "reviewer"
model = "scripted"
write = false
lane = "{LANE}"

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""

SCRIPT = """
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "a.txt", content = "a\\n" } },
  { tool = "run_command", args = { command = "echo 12345678 && git add -A && git commit -qm a" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "a added", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "say", text = "which colour?", handoff = "user" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "say", text = "blue it is; add b.txt", handoff = "builder" } }]
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "b.txt", content = "b\\n" } },
  { tool = "run_command", args = { command = "git add b.txt && git commit -qm b" } },
  { tool = "tell_user", args = { text = "b is in; which shade?" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "gate", text = "may I deploy b?" } }]
[[step]]
participant = "builder"
calls = [{ tool = "run_command", args = { command = "date +%s%N" } }]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "deployed", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "done", text = "a and b are right" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]

# the fork's: after every step above was taken (the fork copies the ledger)
[[step]]
participant = "builder"
calls = [
  { tool = "write_file", args = { path = "c.txt", content = "c\\n" } },
  { tool = "run_command", args = { command = "git add c.txt && git commit -qm c" } },
]
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "c added", handoff = "reviewer" } }]
[[step]]
participant = "reviewer"
calls = [{ tool = "post", args = { kind = "done", text = "c is right" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def _state(repo: Path, home: Path) -> dict:
    f = home_run(repo, home) / "state.json"
    return json.loads(f.read_text()) if f.exists() else {}


def home_run(repo: Path, home: Path) -> Path:
    old = os.environ.get("AUTODEV_HOME")
    os.environ["AUTODEV_HOME"] = str(home)
    try:
        return RunPaths(repo).run_dir
    finally:
        if old is None:
            os.environ.pop("AUTODEV_HOME")
        else:
            os.environ["AUTODEV_HOME"] = old


def _wait(what: str, check, timeout: float = 120) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _thread(repo: Path, home: Path) -> list[dict]:
    f = home_run(repo, home) / "thread.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []


def record(base: Path) -> tuple[Path, Path, Path]:
    """(repository, AUTODEV_HOME, run folder) of the main run, complete."""
    repo, home = base / "repo", base / "home"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "autodev tests")
    git(repo, "config", "user.email", "tests@autodev.invalid")
    (repo / "README.md").write_text("# test repo\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    # .autodev/ is not excluded from git here (a team written by hand): `git add -A` commits it
    write_team(repo, TEAM, SCRIPT)
    runner = Runner()
    guard = str(Path(__file__).parent.parent / "guard")  # no connection beyond loopback
    env = {"AUTODEV_HOME": str(home), "PYTHONPATH": guard, **GIT_ENV}
    try:
        daemon = runner.popen(repo, "start", "--foreground", "add a.txt and b.txt", env=env)
        _wait("the reviewer's question", lambda: _state(repo, home).get("state") == "awaiting_user")
        team = repo / ".autodev" / "team.toml"
        team.write_text(team.read_text().replace(f'"{LANE}"', f'"{EDITED_LANE}"'))
        runner(repo, "send", "blue", env=env, check=True)
        _wait("the gate", lambda: _state(repo, home).get("state") == "gated")
        runner(repo, "answer", "1", "the darkest", env=env, check=True)
        _wait("the answer", lambda: len(_thread(repo, home)) == 8)
        runner(repo, "approve", env=env, check=True)
        out, err = daemon.communicate(timeout=180)
        assert daemon.returncode == 0, out + err
    finally:
        runner.cleanup()
    run_dir = home_run(repo, home)
    posts = _thread(repo, home)
    assert [(p["from"], p["kind"]) for p in posts] == [
        ("user", "say"),
        ("builder", "work_done"),
        ("reviewer", "say"),
        ("user", "say"),
        ("reviewer", "say"),
        ("system", "say"),
        ("builder", "gate"),
        ("system", "say"),
        ("system", "say"),
        ("builder", "work_done"),
        ("reviewer", "done"),
        ("audit", "say"),
    ], posts
    return repo, home, run_dir


def record_fork(main: tuple[Path, Path, Path], base: Path) -> tuple[Path, Path, Path]:
    """(repository, AUTODEV_HOME, run folder) of a fork of the main run at post 1, complete."""
    import shutil

    src, home, run_dir = main
    repo = base / "repo"
    shutil.copytree(src, repo, symlinks=True)
    fhome = base / "home"
    dst = home_run(repo, fhome)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(run_dir, dst, ignore=shutil.ignore_patterns("daemon.lock", "*.sock"))
    runner = Runner()
    guard = str(Path(__file__).parent.parent / "guard")
    env = {"AUTODEV_HOME": str(fhome), "PYTHONPATH": guard, **GIT_ENV}
    into = base / "fork"
    try:
        runner(repo, "fork", "1", "--into", str(into), env=env, check=True)
        runner(into, "send", "green", env=env, check=True)
        r = runner(into, "start", "--foreground", "--until-idle", env=env, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        runner.cleanup()
    posts = _thread(into, fhome)
    assert [(p["from"], p["kind"]) for p in posts[1:]] == [
        ("user", "say"),
        ("builder", "work_done"),
        ("reviewer", "done"),
        ("audit", "say"),
    ], posts
    return into, fhome, home_run(into, fhome)
