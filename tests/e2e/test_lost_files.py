"""What a run survives losing, through the real CLI and daemon: state.json (rebuilt from the
logs, never a silent fresh run), .autodev/ to `git clean -fdx` (status and start say how to
restore it; `init --from-run` does), and the race of two `start "objective"` calls."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import git, run_dir, thread_of, write_team
from tests.e2e.helpers import (
    ACCEPT,
    SOLO,
    call,
    cli,
    done_accepted,
    events,
    post,
    run_until_idle,
    state_of,
    status_json,
    step,
    wait_for,
)

QUESTION = (
    step(
        "solo",
        call("write_file", path="a.txt", content="a\n"),
        call("run_command", command="git add a.txt && git commit -qm a"),
    )
    + post("solo", "work_done", "added a", "solo")
    + post("solo", "say", "red or blue?", "user")
    + post("solo", "done", "painted it")
    + ACCEPT
)


@pytest.mark.full
def test_a_lost_state_json_is_rebuilt_from_the_logs(repo, autodev, inproc):
    write_team(repo, SOLO, QUESTION)
    run_until_idle(autodev, repo, "paint it", expect=3)
    before = status_json(inproc, repo)
    assert before["state"] == "awaiting_user"
    (run_dir(repo) / "state.json").unlink()

    after = status_json(inproc, repo)  # readers see the rebuilt state, without writing it
    assert not (run_dir(repo) / "state.json").exists()
    for key in ("run_id", "turn", "state", "objective", "totals"):
        assert after[key] == before[key], key
    assert [n["type"] for n in after["needs_you"]] == ["question"]
    assert after["participants"] == before["participants"]
    assert any("rebuilt from its logs" in w for w in after["warnings"])

    run_until_idle(autodev, repo, expect=3)  # the question is still open: not a fresh run
    st = state_of(repo)
    assert st["run_id"] == before["run_id"] and st["question"]["text"] == "red or blue?"
    assert any("rebuilt" in e["message"] for e in events(repo, "warning"))
    cli(inproc, repo, "send", "blue")
    run_until_idle(autodev, repo, expect=0)
    assert state_of(repo)["participants"]["solo"]["credited"] == 1
    # Turn numbers went on from the logs (a fresh count would have reused turn 1's post id).
    assert [p["turn"] for p in thread_of(repo) if p.get("turn")] == [1, 2, 3]


@pytest.mark.full
def test_a_lost_state_json_keeps_an_open_gate(repo, autodev, inproc):
    write_team(
        repo, SOLO, post("solo", "gate", "git push origin main") + post("solo", "done", "pushed") + ACCEPT
    )
    run_until_idle(autodev, repo, "push it", expect=3)
    gid = state_of(repo)["gate"]["id"]
    (run_dir(repo) / "state.json").unlink()
    assert f"approval of gate {gid} sent" in cli(inproc, repo, "approve")
    run_until_idle(autodev, repo, expect=0)
    assert [p["gate"]["decision"] for p in thread_of(repo) if p.get("gate")] == ["approved"]


@pytest.mark.full
def test_after_git_clean_status_and_start_say_how_to_restore_and_init_from_run_does(repo, autodev, inproc):
    write_team(repo, SOLO, QUESTION, "maxTalkTurns = 7\n")
    run_until_idle(autodev, repo, "paint it", expect=3)
    git(repo, "clean", "-fdxq")  # what a participant once ran: .autodev/ is gone
    assert not (repo / ".autodev").exists()

    r = inproc(repo, "status")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "team.toml is missing" in text and "autodev init --from-run" in text
    assert "awaiting_user" in text
    r = autodev(repo, "start")
    assert r.returncode == 2 and "autodev init --from-run" in r.stderr and "Traceback" not in r.stderr

    assert "restored" in cli(inproc, repo, "init", "--from-run")
    assert (repo / ".autodev" / "config.toml").read_text() == "maxTalkTurns = 7\n"
    assert (repo / ".autodev" / "script.toml").exists()
    r = inproc(repo, "init", "--from-run")
    assert r.returncode == 2 and "--force" in r.stderr
    cli(inproc, repo, "send", "blue")
    run_until_idle(autodev, repo, expect=0)  # the same run, continued


def test_init_from_run_without_a_run_says_what_to_do(repo, inproc):
    r = inproc(repo, "init", "--from-run")
    assert r.returncode == 2 and "autodev init --team" in r.stderr


def test_the_loser_of_two_simultaneous_starts_leaves_no_trace(repo, autodev, inproc):
    write_team(repo, SOLO, post("solo", "say", "which one?", "user"))
    starts = [
        subprocess.Popen(
            [sys.executable, "-m", "autodev", "start", f"objective {k}"],
            cwd=repo,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for k in "AB"
    ]
    for p in starts:
        autodev.adopt(p.pid)
    codes = sorted(p.wait(timeout=60) for p in starts)
    assert codes == [0, 2], [p.stderr.read() for p in starts]
    st = status_json(inproc, repo)
    autodev.adopt(st["daemon_pid"])
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")
    users = [p["text"] for p in thread_of(repo) if p["from"] == "user"]
    assert len(users) == 1 and users[0] in ("objective A", "objective B")
    assert not list((run_dir(repo) / "inbox").iterdir())  # nothing staged or queued is left
    cli(inproc, repo, "stop")


def test_a_git_lock_left_by_a_killed_git_is_removed_at_start_and_the_builder_commits(repo, autodev):
    """A kill -9 in the middle of `git commit` leaves .git/index.lock: every later git write of
    the run would fail. The daemon removes it on start (no git process runs here) and says so."""
    (repo / ".git" / "index.lock").write_bytes(b"")
    commit = "echo hello > hello.txt && git add hello.txt && git commit -qm 'solo: hello'"
    write_team(repo, SOLO, step("solo", call("run_command", command=commit)) + done_accepted("solo"))
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello")
    assert r.returncode == 0, r.stdout + r.stderr
    [warning] = [e for e in events(repo, "warning") if "index.lock" in e["message"]]
    assert warning["message"].startswith(
        "removed .git/index.lock: git lock file(s) no running git process holds"
    )
    assert git(repo, "log", "-1", "--format=%s").strip() == "solo: hello"
