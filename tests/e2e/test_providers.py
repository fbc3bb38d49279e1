"""Provider faults through the real daemon and real HTTP: usage limits fail over to the next
model, exhausted models make the run wait for the reset, 5xx errors retry with backoff, and
exhausted retries pause the run with the error (the open turn then resumes, nothing lost)."""

from __future__ import annotations

import pytest

from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import ACCEPT, BUILDER, done_accepted, events_of, post, status_json, step, team_of_one

DONE = done_accepted("builder")

FAST = "retryBackoffSec = 0.05\nmaxRetries = 2\n"


def test_usage_limit_fails_over_and_the_turn_completes(repo, autodev):
    write_team(
        repo,
        team_of_one("builder", 'failover = ["scripted:backup"]'),
        """
[[step]]
participant = "builder"
error = 429
retry_after = 30
"""
        + DONE,
        FAST,
    )
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("builder", "done", None, None),
        ("audit", "say", None, None),
    ]
    ev = events_of(repo)
    fo = [e for e in ev if e["type"] == "failover"]
    assert fo and fo[0]["model"] == "scripted" and fo[0]["to"] == "scripted:backup"
    assert fo[0]["retry_after"] == 30
    gens = [e for e in ev if e["type"] == "generation" and e["participant"] == "builder"]
    assert [g["model"] for g in gens] == ["scripted:backup"]


@pytest.mark.full
def test_all_models_limited_waits_for_the_reset_then_continues(repo, autodev):
    write_team(
        repo,
        BUILDER,
        """
[[step]]
participant = "builder"
error = 429
retry_after = 1
"""
        + DONE,
        FAST,
    )
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 0, r.stdout + r.stderr
    ev = events_of(repo)
    waits = [e for e in ev if e["type"] == "state" and e["state"] == "waiting"]
    assert waits and waits[0]["reason"]["code"] == "usage_limit"
    # The same turn continued after the reset (no second turn_started for it).
    turns = [e["turn"] for e in ev if e["type"] == "turn_started"]
    assert turns == [1]
    assert any(e["type"] == "turn_resumed" for e in ev)
    assert shape(thread_of(repo))[1] == ("builder", "done", None, None)


@pytest.mark.full
def test_server_errors_retry_with_backoff_then_succeed(repo, autodev):
    write_team(
        repo,
        BUILDER,
        """
[[step]]
participant = "builder"
error = 500
[[step]]
participant = "builder"
error = 503
"""
        + DONE,
        FAST,
    )
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 0, r.stdout + r.stderr
    retries = [e for e in events_of(repo) if e["type"] == "retry"]
    assert [e["attempt"] for e in retries] == [1, 2]
    assert retries[1]["delay"] == 2 * retries[0]["delay"]


@pytest.mark.full
def test_retries_exhausted_pause_with_the_error_and_resume_continues(repo, autodev, inproc):
    write_team(
        repo,
        BUILDER,
        """
[[step]]
participant = "builder"
error = 500
[[step]]
participant = "builder"
error = 500
[[step]]
participant = "builder"
error = 500
"""
        + DONE,
        FAST,
    )
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 3, r.stdout + r.stderr
    st = status_json(inproc, repo)
    assert st["state"] == "paused" and st["reason"]["code"] == "provider"
    assert "failed 3 times" in st["reason"]["text"]
    assert shape(thread_of(repo)) == [("user", "say", None, None)]
    inproc(repo, "resume", check=True)
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    ev = events_of(repo)
    assert [e["turn"] for e in ev if e["type"] == "turn_started"] == [1]
    assert shape(thread_of(repo))[1:] == [("builder", "done", None, None), ("audit", "say", None, None)]


@pytest.mark.full
def test_the_audits_transient_errors_are_retried_and_exhausted_retries_pause_until_resume(
    repo, autodev, inproc
):
    """The audit's model fails like a participant's: 500s are retried with backoff; when the
    retries run out the run pauses (reason provider) instead of the daemon crashing, and
    `resume` audits the same done post."""
    script = post("builder", "done", "finished") + step("audit", error=500) * 3 + ACCEPT
    write_team(repo, BUILDER, script, FAST)
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    retries = [e for e in events_of(repo) if e["type"] == "retry"]
    assert [(e["participant"], e["attempt"]) for e in retries] == [("audit", 1), ("audit", 2)]
    assert retries[1]["delay"] == 2 * retries[0]["delay"]
    st = status_json(inproc, repo)
    assert st["state"] == "paused" and st["reason"]["code"] == "provider"
    assert "the audit's model scripted failed 3 times" in st["reason"]["text"]
    assert shape(thread_of(repo))[1:] == [("builder", "done", None, None)]
    inproc(repo, "resume", check=True)
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    # The same done post was audited; no turn ran before it.
    assert shape(thread_of(repo))[1:] == [("builder", "done", None, None), ("audit", "say", None, None)]
    assert [e["seq"] for e in events_of(repo) if e["type"] == "audit"] == [2]
    assert [e["turn"] for e in events_of(repo) if e["type"] == "turn_started"] == [1]


@pytest.mark.full
def test_the_audits_usage_limit_pauses_the_run_with_a_provider_reason(repo, autodev, inproc):
    script = post("builder", "done", "finished") + step("audit", error=429) + ACCEPT
    write_team(repo, BUILDER, script, FAST)
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    st = status_json(inproc, repo)
    assert st["state"] == "paused" and st["reason"]["code"] == "provider"
    assert "the audit's model scripted is at its usage limit" in st["reason"]["text"]
    assert [e for e in events_of(repo) if e["type"] == "retry"] == []
    inproc(repo, "resume", check=True)
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo))[-1] == ("audit", "say", None, None)
