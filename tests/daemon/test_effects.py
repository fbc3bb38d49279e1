"""What a post does, as a pure function: post + state + config → change (no daemon, no files)."""

from __future__ import annotations

from types import SimpleNamespace

from autodev.config import RunConfig, Team
from autodev.daemon import effects
from autodev.daemon.effects import Change, Note
from autodev.records import Post
from autodev.records.events import GateDecidedEvent, WaitEvent
from autodev.records.state import ModelUsage, RunState, Spent, TurnUsage

TEAM = Team.model_validate(
    {
        "participants": [
            {"name": "builder", "model": "openai/gpt-5-mini", "write": True},
            {"name": "reviewer", "model": "openai/gpt-5-mini", "write": False},
        ]
    }
)
CONFIG = RunConfig.model_validate({"maxTalkTurns": 3, "waitFirstSec": 10, "waitCapSec": 40, "maxWaitMin": 1})
STATE = {"state": "running", "reason": None, "talk_turns": 0, "applied_seq": 4}


def state(**fields) -> RunState:
    return RunState.model_validate({**STATE, **fields})


def line(**fields) -> Post:
    """A thread line, as the thread hands it out."""
    return Post.model_validate(
        {"seq": 5, "from": "builder", "text": "", "ts": "2026-12-01T00:00:00.000Z", **fields}
    )


def no_audit(post: Post, st: RunState) -> Change:
    raise AssertionError("only a done post is audited")


def change(post: dict, st: dict | None = None, audit=no_audit, config=CONFIG, tail=()) -> Change:
    full = line(**post)
    return effects.post_change(
        full,
        full.from_,
        state(**(st or {})),
        config=config,
        team=TEAM,
        tail=list(tail),
        audit=audit,
        run_id="r1",
        now=1000.0,
    )


def test_every_change_carries_applied_seq_so_it_is_applied_once() -> None:
    assert change({"kind": "say", "text": "hi"}).state == {"talk_turns": 1, "applied_seq": 5}


def test_credited_work_resets_the_talk_count_and_talk_past_the_limit_pauses() -> None:
    work = change({"kind": "work_done", "credit": {"commits": ["abc"]}}, {"talk_turns": 3})
    assert work.state["talk_turns"] == 0 and "state" not in work.state
    talk = change({"kind": "say", "from": "builder"}, {"talk_turns": 3})
    assert talk.state["state"] == "paused" and talk.state["reason"]["code"] == "talk_limit"


def test_a_reader_may_hand_over_to_a_writer_once_past_the_limit() -> None:
    handed = change({"kind": "say", "from": "reviewer", "handoff": "builder"}, {"talk_turns": 3})
    assert "state" not in handed.state
    again = change({"kind": "say", "from": "reviewer", "handoff": "builder"}, {"talk_turns": 4})
    assert again.state["state"] == "paused"


def test_a_question_to_the_user_waits_for_the_answer() -> None:
    ch = change({"kind": "say", "text": "which port?", "handoff": "user"})
    assert ch.state["state"] == "awaiting_user"
    q = ch.state["question"]
    assert q is not None and q.dump() == {"from": "builder", "seq": 5, "text": "which port?"}


def test_the_askers_next_post_closes_its_question() -> None:
    ch = change({"kind": "say"}, {"question": {"from": "builder", "seq": 3, "text": "?"}})
    assert ch.state["question"] is None


def test_waits_back_off_then_pause_when_they_last_too_long() -> None:
    first = change({"kind": "wait", "text": "CI runs"})
    wait, last = first.state["wait"], first.state["last_wait"]
    assert first.state["state"] == "waiting" and wait is not None and wait.due == 1010.0
    assert last is not None
    assert first.out == [WaitEvent(participant="builder", delay=10, due=1010.0, streak=1)]
    second = change({"kind": "wait"}, {"last_wait": last.dump()})
    wait = second.state["wait"]
    assert wait is not None and wait.delay == 20 and wait.since == 1000.0
    long_ago = {**last.dump(), "since": 1000.0 - 55, "streak": 3}
    too_long = change({"kind": "wait"}, {"last_wait": long_ago})
    assert too_long.state["state"] == "paused" and too_long.state["reason"]["code"] == "wait_too_long"


def test_a_gate_opens_or_is_decided_by_the_rules_with_its_note() -> None:
    opened = change({"kind": "gate", "text": "deploy to prod"}).apply(state())
    assert opened.state == "gated" and opened.gate and opened.gate.id == "5"
    auto = RunConfig.model_validate({"gateAutoApprove": ["deploy*"]})
    approved = change({"kind": "gate", "text": "deploy to prod"}, config=auto)
    after = approved.apply(state())
    assert after.state == "running" and after.gate is None and [g.id for g in after.approved_gates] == ["5"]
    [note, event] = approved.out
    assert isinstance(note, Note) and note.id == "r1:gate:5"
    assert event == GateDecidedEvent(id="5", decision="approved", by=note.extra["gate"]["by"])


def test_done_goes_to_the_audit_it_is_given() -> None:
    seen = []

    def audit(post: Post, st: RunState) -> Change:
        seen.append((post.seq, st.applied_seq))
        return Change({"state": "complete"}, [Note("audit", "Accepted.")])

    ch = change({"kind": "done", "text": "all done"}, audit=audit)
    assert seen == [(5, 4)]
    assert ch.state["state"] == "complete" and ch.state["applied_seq"] == 5
    assert [n.text for n in ch.out if isinstance(n, Note)] == ["Accepted."]


def test_three_identical_posts_pause_the_run() -> None:
    tail = [line(seq=n, kind="say", text="same") for n in (2, 3, 4)]
    ch = change({"kind": "say", "text": "same"}, tail=tail)
    assert ch.state["state"] == "paused" and ch.state["reason"]["code"] == "stagnation"


FIGURES = SimpleNamespace(
    spent=Spent(
        TurnUsage(prompt_tokens=10, completion_tokens=2, cost=0.5, cached_tokens=4),
        {"m": ModelUsage(generations=1, cost=0.5)},
    ),
    compactions=0,
)


def test_a_turns_figures_count_once_whatever_replays_them() -> None:
    s = effects.account(
        RunState(accounted_turn=0), "builder", 1, FIGURES, line(kind="work_done", credit={"c": 1})
    )
    q = s.participants["builder"]
    assert q.cached_tokens == 4 and s.models["m"].generations == 1
    assert (q.turns, q.prompt_tokens, q.cost, q.credited, s.accounted_turn) == (1, 10, 0.5, 1, 1)
    assert effects.account(s, "builder", 1, FIGURES, None).participants["builder"].turns == 1
    # As state.json holds them: the keys a turn's figures have always had, and the model's usage.
    assert s.dump()["participants"] == {
        "builder": {
            "turns": 1,
            "credited": 1,
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "cached_tokens": 4,
            "compactions": 0,
            "cost": 0.5,
            "silent_streak": 0,
            "last_turn": 1,
        }
    }
    assert s.dump()["models"] == {
        "m": {"generations": 1, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.5}
    }


def test_silent_turns_pause_at_the_limit_and_not_twice() -> None:
    s, paused = effects.silent(RunState(accounted_turn=0), "builder", 1, FIGURES, 2)
    assert paused is None and s.participants["builder"].silent_streak == 1
    s, paused = effects.silent(s, "builder", 2, FIGURES, 2)
    assert paused is not None and s.state == "paused" and paused["code"] == "silent"
    again, paused = effects.silent(s, "builder", 2, FIGURES, 2)
    assert paused is None and again.participants["builder"].turns == 2


def test_the_next_speaker_while_the_user_is_asked_is_the_asker() -> None:
    st = state(state="awaiting_user", question={"from": "reviewer", "seq": 3, "text": "?"})
    assert effects.plan_next(st, ["builder", "reviewer"], [], {}).speaker == "reviewer"
    gated = state(state="gated", gate={"id": "7", "declarer": "builder"})
    assert effects.plan_next(gated, ["builder", "reviewer"], [], {}).rule == "gate_decision"
