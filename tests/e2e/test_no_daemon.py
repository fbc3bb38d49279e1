"""Commands that need a daemon, run when none is running: the action is queued and the command
says in one line that `autodev start` applies it; status's "continue" line then starts with
`autodev start`, and following it continues the run (SPEC §13)."""

from __future__ import annotations

from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import SOLO, done_accepted, status_json


def test_resume_without_a_daemon_says_start_applies_it_and_start_continues(repo, autodev):
    write_team(repo, SOLO, done_accepted("solo"))
    assert "no daemon is running" in autodev(repo, "pause", check=True).stdout
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "continue with: autodev start, then autodev resume" in r.stdout
    st = status_json(autodev, repo)
    assert st["state"] == "paused" and st["continue"].startswith("autodev start, then autodev resume")

    out = autodev(repo, "resume", check=True).stdout.strip().splitlines()
    assert out == [
        "resume queued; no daemon is running: the next `autodev start` applies it and continues the run"
    ]
    # send, approve, deny and answer share the line (approve/deny/answer need an open gate or notice).
    lines = autodev(repo, "send", "go on", check=True).stdout.strip().splitlines()
    assert lines[-1] == "no daemon is running: `autodev start` applies it and continues the run"
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo))[-2:] == [("solo", "done", None, None), ("audit", "say", None, None)]
