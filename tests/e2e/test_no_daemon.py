"""Commands that need a daemon, run when none is running: the action is queued and the command
says in one line that `autodev start` applies it; status's "continue" line then starts with
`autodev start`, and following it continues the run (SPEC §13)."""

from __future__ import annotations

import pytest

from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import SOLO, done_accepted, status_json


def test_resume_without_a_daemon_says_start_applies_it_and_start_continues(repo, autodev, inproc):
    write_team(repo, SOLO, done_accepted("solo"))
    assert "no daemon is running" in inproc(repo, "pause", check=True).stdout
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "continue with: autodev start, then autodev resume" in r.stdout
    st = status_json(inproc, repo)
    assert st["state"] == "paused" and st["continue"].startswith("autodev start, then autodev resume")

    out = inproc(repo, "resume", check=True).stdout.strip().splitlines()
    assert out == [
        "resume queued",
        "no daemon is running: the next `autodev start` applies what is queued, in order (resume), "
        "and continues the run",
    ]
    # send, approve, deny and answer share the line (approve/deny/answer need an open gate or notice).
    lines = inproc(repo, "send", "go on", check=True).stdout.strip().splitlines()
    assert lines[-1] == (
        "no daemon is running: the next `autodev start` applies what is queued, in order "
        "(resume, 1 message), and continues the run"
    )
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo))[-2:] == [("solo", "done", None, None), ("audit", "say", None, None)]


@pytest.mark.full
def test_queued_actions_are_listed_applied_in_order_and_a_message_replaces_a_queued_stop(
    repo, autodev, inproc
):
    write_team(repo, SOLO, done_accepted("solo", "first") + done_accepted("solo", "second"))
    assert autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=60).returncode == 0
    # A message, then a stop: start applies both, in that order.
    inproc(repo, "send", "a note", check=True)
    out = inproc(repo, "stop", check=True).stdout
    assert "in order (1 message, stop); the queued stop then ends the run again" in out, out
    assert "queued: 1 message, stop (no daemon is running" in inproc(repo, "status", check=True).stdout
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert "applied now in order: 1 message, stop" in r.stdout, r.stdout + r.stderr
    assert "run stopped: you stopped the run" in r.stdout
    assert thread_of(repo)[-1]["from"] == "user" and thread_of(repo)[-1]["text"] == "a note"
    assert status_json(inproc, repo)["queued"] == []
    # A stop, then a message: the message replaces the stop and says so; start continues.
    inproc(repo, "stop", check=True)
    out = inproc(repo, "send", "one more thing", check=True).stdout
    assert "this message cancels the queued stop" in out, out
    assert "queued: 1 message (" in inproc(repo, "status", check=True).stdout
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 0 and "you stopped the run" not in r.stdout, r.stdout + r.stderr
    posts = [(p["from"], p["text"]) for p in thread_of(repo)]
    assert ("user", "one more thing") in posts and posts[-2] == ("solo", "second"), posts
