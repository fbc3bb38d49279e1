"""What the user's requests do to the state, as pure functions (controls, messages, restarts)."""

from __future__ import annotations

from autodev.daemon import inputs, recovery
from autodev.records.state import RunState
from autodev.rules.reasons import reason


def state(**fields) -> RunState:
    return RunState.model_validate(fields)


def test_only_controls_after_the_applied_mark_are_pending() -> None:
    st = state(controls_applied=2, controls=[{"n": 2, "action": "stop"}, {"n": 3, "action": "pause"}])
    assert [c.dump() for c in inputs.todo(st)] == [{"n": 3, "action": "pause"}]
    assert not inputs.stop_requested(st)
    assert inputs.stop_requested(st.but(controls_applied=1))


def test_pause_then_resume_brings_back_an_open_question() -> None:
    asked = state(state="awaiting_user", reason=reason("question", who="builder"))
    step = inputs.after_control(asked, "pause")
    assert step is not None
    to, why, extra = step
    assert to == "paused" and why and why["code"] == "user"
    paused = asked.but(state=to, reason=why, **extra)
    assert paused.paused_from and paused.paused_from.state == "awaiting_user"
    assert inputs.after_control(paused, "resume") == (
        "awaiting_user",
        reason("question", who="builder"),
        {"paused_from": None},
    )
    assert inputs.after_control(paused, "pause") is None
    assert inputs.after_control(state(state="complete"), "pause") is None


def test_resume_ends_a_wait_and_stop_keeps_what_was_going_on() -> None:
    assert inputs.after_control(state(state="waiting"), "resume") == ("running", None, {"wait": None})
    to, why, extra = inputs.after_stop(state(state="gated", reason={"code": "gated"}))
    assert to == "stopped" and why["continue"] == "autodev start"
    stopped = RunState().but(**extra)
    assert stopped.dump()["paused_from"] == {"state": "gated", "reason": {"code": "gated"}}


def test_a_user_message_answers_runs_and_releases_unpinned_holds() -> None:
    s = state(
        state="awaiting_user",
        question={"from": "builder", "seq": 2},
        talk_turns=5,
        notices={
            "1": {"id": "1", "from": "builder", "hold": "commands", "pinned": False},
            "2": {"id": "2", "from": "builder", "hold": "write", "pinned": True},
        },
    )
    s = inputs.user_message(s, "use port 8080")
    assert (s.state, s.question, s.talk_turns, s.objective) == ("running", None, 0, "use port 8080")
    assert s.notices["1"].hold is None and s.notices["1"].released == "a user message"
    assert s.notices["2"].hold == "write"
    for i in range(12):
        s = inputs.user_message(s, f"m{i}")
    assert len(s.user_messages) == inputs.USER_KEEP and s.objective == "use port 8080"
    assert "notices" not in inputs.user_message(RunState(), "hi").dump()  # no notices, none written


def test_a_restart_picks_up_an_open_gate_and_counts_the_session() -> None:
    gated = {"state": "gated", "reason": {"code": "gated"}}
    s = state(state="stopped", turn=4, sessions=1, paused_from=gated, config_refused={"stamp": "y"})
    warn: list[str] = []
    s = recovery.restarted(s, run_id="r1", head="abc", pid=42, stamp="x", warn=warn)
    assert (s.state, s.sessions, s.accounted_turn, s.pid) == ("gated", 2, 4, 42)
    assert "config_refused" not in s.dump() and warn == []
    running = recovery.restarted(state(state="faulted"), run_id="r1", head=None, pid=1, stamp="x", warn=warn)
    assert running.state == "running" and running.run_id == "r1" and warn == []
    # What an older state lacked is written out, as before.
    assert {"turn", "cursors", "participants", "objective", "accounted_turn", "started_at"} <= set(
        running.dump()
    )
