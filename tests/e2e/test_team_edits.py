"""Live edits of .autodev/team.toml on a running (detached) daemon: a valid edit applies at the
next turn boundary, an invalid one is rejected with the error in status and events while the
old team keeps working."""

from __future__ import annotations

import pytest

from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import (
    ACCEPT,
    PAIR,
    cli,
    events,
    post,
    prompt_of,
    requests_of,
    scheduled,
    start_detached,
    state_of,
    status_json,
    status_text,
    wait_for,
)

CAROL = """
[[participants]]
name = "carol"
model = "scripted"
write = false
lane = "Reviews."
"""


@pytest.mark.full
def test_participant_added_mid_run_speaks_after_the_reload(repo, autodev, inproc):
    script = (
        post("alice", "say", "Who should review this?", "user")
        + post("alice", "say", "carol, please review", "carol")
        + post("carol", "done", "reviewed and complete")
        + ACCEPT
    )
    write_team(repo, PAIR, script)
    start_detached(autodev, repo, "write the changelog")
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")
    assert not events(repo, "team_reloaded")

    team = repo / ".autodev" / "team.toml"
    team.write_text(team.read_text() + CAROL)
    cli(inproc, repo, "send", "carol joined the team; hand it to her")
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")

    reloads = events(repo, "team_reloaded")
    assert len(reloads) == 1 and reloads[0]["participants"] == ["alice", "bob", "carol"]
    assert scheduled(repo)[-2:] == [("alice", "user_message"), ("carol", "handoff")]
    assert shape(thread_of(repo))[-3:] == [
        ("alice", "say", "carol", None),
        ("carol", "done", None, None),
        ("audit", "say", None, None),
    ]
    # No warning about an unknown handoff target: carol was on the team when alice named her.
    assert not [e for e in events(repo, "warning") if "carol" in e["message"]]
    parts = {p["name"]: p for p in status_json(inproc, repo)["participants"]}
    assert parts["carol"]["turns"] == 1 and parts["carol"]["model"] == "scripted"


@pytest.mark.full
def test_invalid_team_edit_is_rejected_and_the_old_team_keeps_working(repo, autodev, inproc):
    script = (
        post("alice", "say", "Shall bob finish it?", "user")
        + post("alice", "say", "bob, please finish", "bob")
        + post("bob", "done", "finished by the old team")
        + ACCEPT
    )
    write_team(repo, PAIR, script)
    start_detached(autodev, repo, "tidy the docs")
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")

    team = repo / ".autodev" / "team.toml"
    team.write_text(PAIR.replace('name = "bob"', 'name = "Bad Name"'))
    cli(inproc, repo, "send", "yes, bob finishes")
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")

    warnings = [e["message"] for e in events(repo, "warning")]
    assert any("team edit rejected" in w and "Bad Name" in w for w in warnings), warnings
    assert not events(repo, "team_reloaded")
    assert "Bad Name" in (state_of(repo).get("team_error") or "")
    # The old team (with bob) ran on.
    assert scheduled(repo)[-2:] == [("alice", "user_message"), ("bob", "handoff")]
    assert shape(thread_of(repo))[-2:] == [("bob", "done", None, None), ("audit", "say", None, None)]

    st = status_json(inproc, repo)
    assert "Bad Name" in (st["team_error"] or "")
    assert "team file problem (the old team is kept)" in status_text(inproc, repo)


@pytest.mark.full
def test_team_error_is_cleared_when_a_restart_finds_the_file_fixed(repo, autodev, inproc):
    script = post("alice", "say", "Question one?", "user") + post("alice", "say", "Question two?", "user")
    write_team(repo, PAIR, script)
    start_detached(autodev, repo, "tidy the docs")
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")
    team = repo / ".autodev" / "team.toml"
    team.write_text(PAIR.replace('name = "bob"', 'name = "Bad Name"'))
    cli(inproc, repo, "send", "answer one")
    wait_for("the rejection", lambda: state_of(repo).get("team_error"))
    cli(inproc, repo, "stop")
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None)

    team.write_text(PAIR)
    cli(inproc, repo, "send", "answer two")
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 3, r.stdout + r.stderr
    assert status_json(inproc, repo)["team_error"] is None


TRIO = PAIR.replace(
    "[audit]",
    """[[participants]]
name = "carol"
model = "scripted"
write = false

[audit]""",
)


@pytest.mark.full
def test_removing_and_renaming_participants_keeps_history_and_figures(repo, autodev, inproc):
    script = (
        post("alice", "say", "bob, your view?", "bob")
        + post("bob", "say", "Which licence should we use?", "user")
        + post("robert", "done", "licence chosen and added")
        + ACCEPT
    )
    write_team(repo, TRIO, script)
    start_detached(autodev, repo, "add a licence")
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")

    # carol leaves; bob is renamed robert (a new participant as far as the run can tell).
    team = repo / ".autodev" / "team.toml"
    team.write_text(PAIR.replace('name = "bob"', 'name = "robert"'))
    cli(inproc, repo, "send", "MIT")
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")

    assert events(repo, "team_reloaded")[-1]["participants"] == ["alice", "robert"]
    # bob's open question has no one on the team to answer it: routing falls through.
    assert scheduled(repo)[-1] == ("robert", "silent_longest")
    assert any("bob" in e["message"] for e in events(repo, "warning"))
    # History is untouched: bob's posts stay bob's.
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("alice", "say", "bob", None),
        ("bob", "say", "user", None),
        ("user", "say", None, None),
        ("robert", "done", None, None),
        ("audit", "say", None, None),
    ]
    # robert starts with a fresh cursor: every post so far is new to it, in its bounded index.
    [first] = [q for q in requests_of(repo, "robert")][:1]
    assert "#3 bob say→user" in prompt_of(first) and "#4 user say" in prompt_of(first)
    parts = {p["name"]: p for p in status_json(inproc, repo)["participants"]}
    assert parts["bob"]["model"] == "(not on the team now)" and parts["bob"]["turns"] == 1
    assert parts["robert"]["turns"] == 1 and "carol" not in parts
