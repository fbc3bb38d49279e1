"""What the user's requests do to the state, as pure functions (controls, messages, restarts)."""

from __future__ import annotations

from autodev.daemon import inputs, recovery
from autodev.rules.reasons import reason


def test_only_controls_after_the_applied_mark_are_pending() -> None:
    st = {"controls_applied": 2, "controls": [{"n": 2, "action": "stop"}, {"n": 3, "action": "pause"}]}
    assert inputs.todo(st) == [{"n": 3, "action": "pause"}]
    assert not inputs.stop_requested(st)
    assert inputs.stop_requested({**st, "controls_applied": 1})


def test_pause_then_resume_brings_back_an_open_question() -> None:
    asked = {"state": "awaiting_user", "reason": reason("question", who="builder")}
    state, why, extra = inputs.after_control(asked, "pause")
    assert state == "paused" and why["code"] == "user" and extra["paused_from"]["state"] == "awaiting_user"
    paused = {"state": state, "reason": why, **extra}
    assert inputs.after_control(paused, "resume") == ("awaiting_user", asked["reason"], {"paused_from": None})
    assert inputs.after_control(paused, "pause") is None
    assert inputs.after_control({"state": "complete"}, "pause") is None


def test_resume_ends_a_wait_and_stop_keeps_what_was_going_on() -> None:
    assert inputs.after_control({"state": "waiting"}, "resume") == ("running", None, {"wait": None})
    state, why, extra = inputs.after_stop({"state": "gated", "reason": {"code": "gated"}})
    assert state == "stopped" and why["continue"] == "autodev start"
    assert extra["paused_from"] == {"state": "gated", "reason": {"code": "gated"}}


def test_a_user_message_answers_runs_and_releases_unpinned_holds() -> None:
    s = {
        "state": "awaiting_user",
        "question": {"from": "builder"},
        "talk_turns": 5,
        "notices": {"1": {"hold": "commands", "pinned": False}, "2": {"hold": "write", "pinned": True}},
    }
    s = inputs.user_message(s, "use port 8080")
    assert (s["state"], s["question"], s["talk_turns"], s["objective"]) == (
        "running",
        None,
        0,
        "use port 8080",
    )
    assert s["notices"]["1"]["hold"] is None and s["notices"]["2"]["hold"] == "write"
    for i in range(12):
        s = inputs.user_message(s, f"m{i}")
    assert len(s["user_messages"]) == inputs.USER_KEEP and s["objective"] == "use port 8080"


def test_a_restart_picks_up_an_open_gate_and_counts_the_session() -> None:
    gated = {"state": "gated", "reason": {"code": "gated"}}
    s = {"state": "stopped", "turn": 4, "sessions": 1, "paused_from": gated}
    warn: list[str] = []
    s = recovery.restarted(s, run_id="r1", head="abc", pid=42, stamp="x", warn=warn)
    assert (s["state"], s["sessions"], s["accounted_turn"], s["pid"]) == ("gated", 2, 4, 42)
    running = recovery.restarted({"state": "faulted"}, run_id="r1", head=None, pid=1, stamp="x", warn=warn)
    assert running["state"] == "running" and running["run_id"] == "r1" and warn == []
