"""Waits and gates through the real CLI and daemon (subprocesses, scripted team, real HTTP).

A wait is rechecked on a doubling schedule and its author speaks again after each; a user
message ends it early. Gates are decided by gateAutoDeny / gateAutoApprove / the user, each
decision a system note naming who decided, and the declarer speaks next. The command runner
refuses gateRequired commands (also inside `x && git push`) until a gate naming them is
approved, and each approval covers one use.
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from tests.conftest import git, shape, thread_of, write_team
from tests.e2e.helpers import (
    ACCEPT,
    PAIR,
    call,
    cli,
    events,
    post,
    prompt_of,
    requests_of,
    run_until_idle,
    scheduled,
    start_detached,
    state_of,
    status_json,
    status_text,
    step,
    tool_results,
    ts,
    turns_of,
    wait_for,
)

# -- waits -------------------------------------------------------------------------------------


@pytest.mark.full
def test_wait_is_rechecked_with_doubling_delays_up_to_the_cap(repo, autodev):
    script = "".join(post("alice", "wait", f"CI still running ({i})") for i in range(1, 5))
    script += post("alice", "done", "CI is green") + ACCEPT
    write_team(repo, PAIR, script, "waitFirstSec = 0.2\nwaitCapSec = 0.8\n")
    run_until_idle(autodev, repo, "ship it once CI passes", expect=0)

    assert shape(thread_of(repo)) == [("user", "say", None, None)] + [("alice", "wait", None, None)] * 4 + [
        ("alice", "done", None, None),
        ("audit", "say", None, None),
    ]
    waits = events(repo, "wait")
    assert [(e["delay"], e["streak"]) for e in waits] == [(0.2, 1), (0.4, 2), (0.8, 3), (0.8, 4)]
    # The author speaks again after each wait (bob, silent longest, never gets the turn)...
    assert scheduled(repo) == [("alice", "silent_longest")] + [("alice", "after_wait")] * 4
    # ...and not before its delay has passed.
    started = [e for e in events(repo, "turn_started")][1:]
    for w, t in zip(waits, started):
        assert ts(t) - ts(w) >= w["delay"] - 0.02, (w, t)
    # The daemon slept through the waits: one request per turn, no busy polling of the model.
    assert len(requests_of(repo, "alice")) == 5


def test_user_message_ends_a_long_wait_early_and_goes_to_the_waiting_author(repo, autodev, inproc):
    script = (
        post("alice", "wait", "waiting for the staging deploy")
        + post("alice", "done", "staging is up")
        + ACCEPT
    )
    write_team(repo, PAIR, script, "waitFirstSec = 60\nwaitCapSec = 60\n")
    start_detached(autodev, repo, "deploy to staging")
    wait_for("waiting", lambda: state_of(repo).get("state") == "waiting")

    st = status_json(inproc, repo)
    assert st["reason"]["code"] == "wait"
    assert st["wait"]["author"] == "alice" and st["wait"]["delay"] == 60
    assert st["next"]["speaker"] == "alice" and st["next"]["rule"] == "after_wait"
    text = status_text(inproc, repo)
    assert "The run stopped and why" in text and "alice is waiting" in text
    assert re.search(r"next check in (5\d|60)s", text), text

    began = time.monotonic()
    cli(inproc, repo, "send", "STAGING-IS-READY: the deploy finished")
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")
    assert time.monotonic() - began < 30, "the wait was not ended early by the message"

    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("alice", "wait", None, None),
        ("user", "say", None, None),
        ("alice", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert scheduled(repo) == [("alice", "silent_longest"), ("alice", "user_message")]
    last = turns_of(repo, "alice")[-1][0]
    assert "STAGING-IS-READY: the deploy finished" in prompt_of(last)


# -- gates -------------------------------------------------------------------------------------


def gate_notes(repo) -> list[dict]:
    return [p for p in thread_of(repo) if p["from"] == "system" and p.get("gate")]


@pytest.mark.full
def test_gates_auto_denied_then_auto_approved_each_named_and_back_to_the_declarer(repo, autodev):
    script = (
        post("alice", "gate", "force-push the rewritten history to main")
        + post("alice", "gate", "publish the v1.0 release tag")
        + post("alice", "done", "tagged")
        + ACCEPT
    )
    config = 'gateAutoDeny = ["*force*"]\ngateAutoApprove = ["*release tag*", "*force*"]\n'
    write_team(repo, PAIR, script, config)
    run_until_idle(autodev, repo, "release v1.0", expect=0)

    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("alice", "gate", None, None),
        ("system", "say", None, None),
        ("alice", "gate", None, None),
        ("system", "say", None, None),
        ("alice", "done", None, None),
        ("audit", "say", None, None),
    ]
    notes = gate_notes(repo)
    # Deny patterns are checked first, even though an approve pattern matches too.
    assert [n["gate"]["decision"] for n in notes] == ["denied", "approved"]
    assert "denied by gateAutoDeny '*force*'" in notes[0]["text"]
    assert "approved by gateAutoApprove '*release tag*'" in notes[1]["text"]
    assert all(n["gate"]["declarer"] == "alice" for n in notes)
    # The declarer speaks after each decision (bob would otherwise be silent longest).
    assert scheduled(repo) == [
        ("alice", "silent_longest"),
        ("alice", "gate_decision"),
        ("alice", "gate_decision"),
    ]
    assert [(e["decision"], e["by"]) for e in events(repo, "gate_decided")] == [
        ("denied", "gateAutoDeny '*force*'"),
        ("approved", "gateAutoApprove '*release tag*'"),
    ]


GATED_SCRIPT = (
    post("alice", "gate", "drop the legacy_users table in production")
    + post("alice", "done", "handled the gate decision")
    + ACCEPT
)


def _gated_run(autodev, inproc, repo) -> str:
    write_team(repo, PAIR, GATED_SCRIPT)
    run_until_idle(autodev, repo, "clean up the database", expect=3)
    st = status_json(inproc, repo)
    assert st["state"] == "gated" and st["reason"]["code"] == "gated"
    gates = [n for n in st["needs_you"] if n["type"] == "gate"]
    assert [(g["from"], g["text"]) for g in gates] == [("alice", "drop the legacy_users table in production")]
    text = status_text(inproc, repo)
    assert "The run stopped and why" in text and "alice declared a gate" in text
    assert f"autodev approve {gates[0]['id']}" in text
    return gates[0]["id"]


@pytest.mark.full
def test_gated_then_approved_by_the_user(repo, autodev, inproc):
    gid = _gated_run(autodev, inproc, repo)
    cli(inproc, repo, "approve", gid)
    run_until_idle(autodev, repo, expect=0)
    note = gate_notes(repo)[-1]
    assert note["gate"] == {"id": gid, "decision": "approved", "declarer": "alice", "by": "the user"}
    assert f"Gate {gid} by alice approved by the user" in note["text"]
    assert scheduled(repo)[-1] == ("alice", "gate_decision")
    assert shape(thread_of(repo))[-3:] == [
        ("system", "say", None, None),
        ("alice", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert status_json(inproc, repo)["needs_you"] == []


@pytest.mark.full
def test_gated_then_denied_with_a_reason(repo, autodev, inproc):
    gid = _gated_run(autodev, inproc, repo)
    cli(inproc, repo, "deny", gid, "--reason", "take a backup first")
    run_until_idle(autodev, repo, expect=0)
    note = gate_notes(repo)[-1]
    assert note["gate"]["decision"] == "denied" and note["gate"]["by"] == "the user"
    assert note["text"] == f"Gate {gid} by alice denied by the user: take a backup first"
    assert scheduled(repo)[-1] == ("alice", "gate_decision")
    # The declarer's next turn shows the decision and the reason.
    assert "denied by the user: take a backup first" in prompt_of(turns_of(repo, "alice")[-1][0])


GATE_THEN_QUESTION = (
    post("alice", "gate", "rotate the production signing key")
    + post("alice", "say", "Understood, I will wait for your decision.", "user")
    + post("alice", "done", "key rotated")
    + ACCEPT
)


def _message_while_gated_then_approve(autodev, inproc, repo) -> dict:
    """A detached daemon: gated; the user writes; alice answers with a question; the user
    approves; alice finishes. Returns the final status."""
    write_team(repo, PAIR, GATE_THEN_QUESTION)
    start_detached(autodev, repo, "rotate keys")
    wait_for("gated", lambda: state_of(repo).get("state") == "gated")
    gid = state_of(repo)["gate"]["id"]

    cli(inproc, repo, "send", "ROTATE-NOTE: do it after 18:00 UTC")
    wait_for("alice's reply", lambda: state_of(repo).get("state") == "awaiting_user")
    assert scheduled(repo)[-1] == ("alice", "user_message")
    assert "ROTATE-NOTE: do it after 18:00 UTC" in prompt_of(turns_of(repo, "alice")[-1][0])
    st = status_json(inproc, repo)
    # The gate is still open, and approvable, after the message went to its declarer.
    assert [(n["type"], n.get("id")) for n in st["needs_you"] if n["type"] == "gate"] == [("gate", gid)]

    cli(inproc, repo, "approve", gid)
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")
    assert gate_notes(repo)[-1]["gate"] == {
        "id": gid,
        "decision": "approved",
        "declarer": "alice",
        "by": "the user",
    }
    assert scheduled(repo)[-1] == ("alice", "gate_decision")
    return status_json(inproc, repo)


@pytest.mark.full
def test_user_message_while_gated_goes_to_the_declarer_and_the_gate_stays_open(repo, autodev, inproc):
    st = _message_while_gated_then_approve(autodev, inproc, repo)
    assert st["state"] == "complete"
    assert not [n for n in st["needs_you"] if n["type"] == "gate"]


@pytest.mark.full
def test_a_question_the_asker_moved_past_leaves_needs_you(repo, autodev, inproc):
    st = _message_while_gated_then_approve(autodev, inproc, repo)
    assert st["needs_you"] == [], st["needs_you"]


# -- gateRequired commands ----------------------------------------------------------------------

PUSH = "git push -q origin main"


def test_gate_required_command_refused_then_allowed_once_after_approval(repo, autodev, tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    script = (
        # turn 1: the push, hidden after `touch`, is refused as a whole; then alice asks for it
        step("alice", call("run_command", command=f"touch before-marker && {PUSH}"))
        + post("alice", "gate", f"I need to run `{PUSH}` to publish the branch")
        # turn 2 (after the approval): the push runs once; the same command again is refused
        + step("alice", call("run_command", command=f"touch after-marker && {PUSH}"))
        + step("alice", call("run_command", command=PUSH))
        + post("alice", "done", "pushed")
        + ACCEPT
    )
    # The remote is a folder outside the repository, which a sandboxed push cannot write.
    config = 'gateRequired = ["git push*"]\ngateAutoApprove = ["*git push*"]\nsandbox = "off"\n'
    write_team(repo, PAIR, script, config)
    run_until_idle(autodev, repo, "publish main", expect=0)

    t1, t2 = turns_of(repo, "alice")[:2]
    refused = tool_results(t1[1])[0]
    assert refused.startswith("error:"), refused
    assert "gate" in refused and PUSH in refused
    assert not (repo / "before-marker").exists(), "a refused command must not run at all"

    allowed = tool_results(t2[1])[0]
    assert allowed.startswith("exit code: 0"), allowed
    assert (repo / "after-marker").exists()
    head = git(repo, "rev-parse", "HEAD").strip()
    assert (
        subprocess.run(
            ["git", "--git-dir", str(remote), "rev-parse", "main"], check=True, capture_output=True, text=True
        ).stdout.strip()
        == head
    )

    again = tool_results(t2[2])[-1]
    assert again.startswith("error:") and "gate" in again, again
    assert [e["command"] for e in events(repo, "command_refused")] == [f"touch before-marker && {PUSH}", PUSH]
    assert len(events(repo, "gate_used")) == 1
    assert scheduled(repo)[1] == ("alice", "gate_decision")
