"""Notices through the real CLI and daemon: `tell_user` raises a numbered notice under Needs you
(one per turn), `autodev answer` delivers 300 + 300 characters into the participant's next turn
prompt, and a notice's hold takes tools away until a user message, or `notice --release` for a
pinned hold, gives them back. Assertions read what the scripted model server actually received."""

from __future__ import annotations

import pytest

from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import (
    ACCEPT,
    PAIR,
    call,
    cli,
    events,
    events_of,
    post,
    prompt_of,
    run_until_idle,
    scheduled,
    start_detached,
    state_of,
    status_json,
    status_text,
    step,
    tool_names,
    tool_results,
    turns_of,
    wait_for,
)

NOTICE = "NOTICE-START please create a staging API token " + "n" * 300 + " NOTICE-TAIL"
ANSWER = "ANSWER-START the token is in the vault under staging " + "a" * 300 + " ANSWER-TAIL"


def test_notice_answered_reaches_the_next_turn_prompt_and_a_second_notice_is_refused(repo, autodev, inproc):
    script = (
        step("alice", call("tell_user", text=NOTICE))
        + step("alice", call("tell_user", text="SECOND NOTICE in the same turn"))
        + post("alice", "say", "I need the token, see my notice.", "user")
        + post("alice", "done", "used the token")
        + ACCEPT
    )
    write_team(repo, PAIR, script)
    start_detached(autodev, repo, "set up staging")
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")

    first_turn = turns_of(repo, "alice")[0]
    assert tool_results(first_turn[1]) == [
        "notice 1 raised; the user's answer will reach you in a later turn"
    ]
    second = tool_results(first_turn[2])[-1]
    assert second.startswith("refused:") and "one notice per turn" in second
    assert not any("SECOND NOTICE" in p["text"] for p in thread_of(repo))
    assert [e["id"] for e in events(repo, "notice")] == ["1"]

    notes = [p for p in thread_of(repo) if p["from"] == "system" and p.get("notice")]
    assert len(notes) == 1 and notes[0]["text"] == f"alice told the user: {NOTICE[:300]}"

    st = status_json(inproc, repo)
    notices = [n for n in st["needs_you"] if n["type"] == "notice"]
    assert [(n["id"], n["from"], n["text"], n["answered"]) for n in notices] == [
        ("1", "alice", NOTICE, False)
    ]
    text = status_text(inproc, repo)
    assert "notice 1 from alice" in text and 'autodev answer 1 "..."' in text

    cli(inproc, repo, "answer", "1", ANSWER)
    wait_for("the answer", lambda: state_of(repo)["notices"]["1"].get("answer"))
    cli(inproc, repo, "send", "carry on")
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")

    assert scheduled(repo)[-1] == ("alice", "user_message")
    prompt = prompt_of(turns_of(repo, "alice")[-1][0])
    assert NOTICE[:300] in prompt and ANSWER[:300] in prompt
    assert "NOTICE-TAIL" not in prompt and "ANSWER-TAIL" not in prompt
    # Delivered once: the answered notice (no hold) no longer needs the user.
    assert not [n for n in status_json(inproc, repo)["needs_you"] if n["type"] == "notice"]


@pytest.mark.full
def test_hold_released_by_send_unless_pinned_then_released_by_notice_release(repo, autodev, inproc):
    script = (
        # alice turn 1: a notice holding `commands`; the hold starts with her next turn
        step(
            "alice",
            call("tell_user", text="check the billing dashboard for me", hold="commands"),
            call("post", kind="say", text="bob, your view?", handoff="bob"),
        )
        + post("bob", "say", "back to you", "alice")
        # alice turn 2: no run_command (held)
        + post("alice", "say", "waiting on the dashboard check", "user")
        # alice turn 3, after `send`: released; a second notice holds commands again
        + step(
            "alice",
            call("tell_user", text="now check the invoices", hold="commands"),
            call("post", kind="say", text="one more check, please", handoff="user"),
        )
        # alice turn 4, after `notice --hold 2` and `send`: still held (pinned)
        + post("alice", "gate", "send the invoices to the customer")
        # alice turn 5, after `notice --release 2` and `approve`: run_command is back
        + post("alice", "done", "invoices sent")
        + ACCEPT
    )
    write_team(repo, PAIR, script)

    def asked(n_posts: int):
        return lambda: (
            len(thread_of(repo)) >= n_posts and state_of(repo).get("state") in ("awaiting_user", "gated")
        )

    start_detached(autodev, repo, "sort out billing")
    wait_for("alice's second turn", asked(5))  # user, note, alice, bob, alice
    turns = turns_of(repo, "alice")
    assert "run_command" in tool_names(turns[0][0])
    assert "run_command" not in tool_names(turns[1][0])
    assert "write_file" in tool_names(turns[1][0])  # only the held capability is gone
    note = [p for p in thread_of(repo) if p.get("notice")][0]
    assert note["text"] == "alice told the user (holding commands): check the billing dashboard for me"
    st = status_json(inproc, repo)
    held = [n for n in st["needs_you"] if n["type"] == "notice"]
    assert [(n["id"], n["hold"], n["pinned"]) for n in held] == [("1", "commands", False)]
    assert "autodev notice --release 1" in held[0]["do"]

    cli(inproc, repo, "send", "done, the dashboard is fine")
    wait_for("alice's third turn", asked(8))
    assert "run_command" in tool_names(turns_of(repo, "alice")[2][0]), "send did not release the hold"
    assert state_of(repo)["notices"]["1"]["hold"] is None

    cli(inproc, repo, "notice", "--hold", "2")
    wait_for("the pin", lambda: state_of(repo)["notices"]["2"].get("pinned"))
    # Notice 1 is released but unanswered; notice 2 holds commands, pinned.
    assert [
        (n["id"], n["hold"], n["pinned"])
        for n in status_json(inproc, repo)["needs_you"]
        if n["type"] == "notice"
    ] == [("1", None, False), ("2", "commands", True)]
    cli(inproc, repo, "send", "invoices look fine")
    wait_for("alice's gate", lambda: state_of(repo).get("state") == "gated")
    assert scheduled(repo)[-1] == ("alice", "user_message")
    assert "run_command" not in tool_names(turns_of(repo, "alice")[3][0]), "send released a pinned hold"

    cli(inproc, repo, "notice", "--release", "2")
    wait_for("the release", lambda: state_of(repo)["notices"]["2"]["hold"] is None)
    cli(inproc, repo, "approve")
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")
    assert scheduled(repo)[-1] == ("alice", "gate_decision")
    assert "run_command" in tool_names(turns_of(repo, "alice")[4][0])
    assert shape(thread_of(repo))[-2:] == [("alice", "done", None, None), ("audit", "say", None, None)]


# Regression: events.jsonl once dropped these, as the journal de-duplicated records by `id`.
@pytest.mark.full
def test_notice_and_gate_events_all_reach_events_jsonl(repo, autodev, inproc):
    script = (
        step(
            "alice",
            call("tell_user", text="which region?"),
            call("post", kind="gate", text="create the production bucket"),
        )
        + post("alice", "done", "bucket created")
        + ACCEPT
    )
    write_team(repo, PAIR, script)
    run_until_idle(autodev, repo, "make a bucket", expect=3)
    cli(inproc, repo, "answer", "1", "eu-west-1")
    cli(inproc, repo, "approve")
    run_until_idle(autodev, repo, expect=0)
    # The answer and the decision did happen (thread and state agree)...
    assert [p["gate"]["decision"] for p in thread_of(repo) if p.get("gate")] == ["approved"]
    assert state_of(repo)["notices"]["1"]["answer"] == "eu-west-1"
    # ...so their events must be in the log too.
    types = [e["type"] for e in events_of(repo)]
    assert "gate_open" in types and "notice" in types
    assert "notice_answered" in types
    assert "gate_decided" in types
