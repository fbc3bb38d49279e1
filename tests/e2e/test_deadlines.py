"""Every tool runs under a deadline the user and the config can cut, through the real daemon:
`autodev stop` ends a running command, or a model request, at once (the turn stays open and
continues on `start`), and `turnTimeoutMin` cuts a command that would outlive the turn."""

from __future__ import annotations

import time

import pytest

from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import (
    SOLO,
    call,
    cli,
    events,
    post,
    records_of,
    requests_of,
    run_until_idle,
    start_detached,
    status_json,
    step,
    tool_results,
    wait_for,
)

SLOW = step("solo", call("run_command", command="sleep 120")) + post(
    "solo", "say", "the command ended", "user"
)


def _started(repo, name: str):
    return lambda: any(
        r.get("type") == "tool_started" and r.get("name") == name
        for r in records_of(run_dir(repo) / "harness.jsonl")
    )


@pytest.mark.full
def test_stop_cuts_a_running_command_and_the_turn_continues_on_start(repo, autodev, inproc):
    write_team(repo, SOLO, SLOW)
    start_detached(autodev, repo, "run the slow thing")
    wait_for("the command to start", _started(repo, "run_command"))
    began = time.monotonic()
    cli(inproc, repo, "stop")
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None, timeout=20)
    assert time.monotonic() - began < 15  # not the 120 s of the command
    assert status_json(inproc, repo)["state"] == "stopped"
    assert [e["participant"] for e in events(repo, "turn_stopped")] == ["solo"]
    assert [p["from"] for p in thread_of(repo)] == ["user"]  # the turn made no post yet

    run_until_idle(autodev, repo, expect=3)  # the same turn continues: the model sees the cut
    (result,) = tool_results(requests_of(repo, "solo")[-1])
    assert result.startswith("stopped: the user is stopping the run")
    assert [(p["from"], p["kind"]) for p in thread_of(repo)] == [("user", "say"), ("solo", "say")]
    assert thread_of(repo)[1]["turn"] == 1


def test_turn_timeout_cuts_a_command_that_would_outlive_the_turn(repo, autodev):
    # The first turn warms the daemon up (litellm's first request is slow on a loaded machine
    # and now counts against the turn's time too); the second runs the command.
    script = post("solo", "say", "warming up") + SLOW
    write_team(repo, SOLO, script, "turnTimeoutMin = 0.1\n")  # 6 s
    began = time.monotonic()
    run_until_idle(autodev, repo, "run the slow thing", expect=3)
    assert time.monotonic() - began < 60
    # The turn ended at its deadline (silent); the cut is in the harness log.
    (result,) = [
        r["result"] for r in records_of(run_dir(repo) / "harness.jsonl") if r["type"] == "tool_finished"
    ]
    assert "timed out after" in result and "the turn's time left" in result
    assert any("turnTimeoutMin" in (e.get("reason") or "") for e in events(repo, "silent_turn"))


@pytest.mark.full
def test_stop_cuts_a_slow_model_request_and_the_turn_continues_on_start(repo, autodev, inproc):
    # The provider takes 120 s to answer the first time; `stop` does not wait for it.
    write_team(repo, SOLO, step("solo", call("post", kind="say", text="late", handoff="user"), delay_sec=120))
    start_detached(autodev, repo, "answer slowly")
    wait_for("the request to start", lambda: requests_of(repo, "solo"))
    began = time.monotonic()
    cli(inproc, repo, "stop")
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None, timeout=20)
    assert time.monotonic() - began < 15  # not the 120 s of the request
    assert status_json(inproc, repo)["state"] == "stopped"
    assert [e["participant"] for e in events(repo, "turn_stopped")] == ["solo"]
    assert [p["from"] for p in thread_of(repo)] == ["user"]

    run_until_idle(autodev, repo, expect=3)  # the same turn asks again and is answered at once
    assert [(p["from"], p["text"]) for p in thread_of(repo)] == [("user", "answer slowly"), ("solo", "late")]
    assert thread_of(repo)[1]["turn"] == 1
    assert len(events(repo, "turn_started")) == 1


@pytest.mark.full
def test_stop_cuts_a_slow_audit_and_start_audits_the_same_post(repo, autodev, inproc):
    # The audit's model takes 120 s the first time; `stop` leaves the done post unaudited, and
    # the next `start` audits it before any turn.
    slow_accept = step("audit", call("verdict", accept=True, gap=""), delay_sec=120)
    write_team(repo, SOLO, post("solo", "done", "finished") + slow_accept)
    start_detached(autodev, repo, "finish it")
    wait_for("the audit's request", lambda: requests_of(repo, "audit"))
    began = time.monotonic()
    cli(inproc, repo, "stop")
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None, timeout=20)
    assert time.monotonic() - began < 15  # not the 120 s of the request
    st = status_json(inproc, repo)
    assert st["state"] == "stopped"
    assert [e["seq"] for e in events(repo, "audit_stopped")] == [2]
    assert events(repo, "audit") == []  # no verdict was recorded

    run_until_idle(autodev, repo, expect=0)  # the same done post is audited, and accepted
    assert status_json(inproc, repo)["state"] == "complete"
    assert [e["seq"] for e in events(repo, "audit")] == [2]
    assert [(p["from"], p["kind"]) for p in thread_of(repo)] == [
        ("user", "say"),
        ("solo", "done"),
        ("audit", "say"),
    ]
