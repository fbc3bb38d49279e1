"""The turn policy every participant kind shares (harness/policy): one nudge, failover and the
wait when every option is limited, the deadline, stop, and the figures a turn carries on from.
Real journals and a real workspace; no model and no daemon."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from autodev.harness import policy
from autodev.harness.context import Limits, Logs, Models, Toolbox, TurnContext, TurnResult, Who
from autodev.harness.recovery import Resume
from autodev.harness.tools import Workspace
from autodev.records.events import NudgedEvent
from autodev.records.state import ModelUsage, TurnUsage
from autodev.store.events import Events
from autodev.store.journal import Journal, iter_records
from autodev.store.thread import Thread


def _ctx(repo: Path, tmp: Path, workspace: Workspace | None = None, limits: Limits = Limits()) -> TurnContext:
    run = tmp / "run"
    return TurnContext(
        Who("r1", 3, "builder", can_write=True, team_writers={"builder": True}, repo=repo),
        Logs(
            Thread(run / "thread.jsonl"), Events(run / "events.jsonl", "r1"), Journal(run / "harness.jsonl")
        ),
        Models([], "", ""),
        Toolbox(workspace or Workspace(repo, write=True, command_timeout=5)),
        limits,
    )


def _of(path: Path, kind: str) -> list[dict]:
    return [r for r in iter_records(path) if r["type"] == kind]


def test_one_nudge_then_the_turn_ends_silent(repo, tmp_path) -> None:
    ctx = _ctx(repo, tmp_path)
    nudge = policy.Nudge()
    message = {"role": "user", "content": policy.Nudge.text(ctx)}
    assert "post" in message["content"]
    assert (
        nudge.after_silence(ctx, "the agent exited", message, NudgedEvent(agent="codex", exit_code=0)) is None
    )
    assert nudge.given
    assert nudge.after_silence(ctx, "the agent exited", message) == "the agent exited twice without posting"
    (rec,) = _of(ctx.logs.hlog.path, "nudged")  # recorded once: a resumed turn is not nudged again
    assert rec["message"] == message and rec["turn"] == 3
    (ev,) = _of(ctx.logs.events.journal.path, "nudged")
    assert (ev["participant"], ev["agent"], ev["exit_code"]) == ("builder", "codex", 0)


def test_failover_skips_a_limited_option_and_all_limited_waits_for_the_first_reset(repo, tmp_path) -> None:
    ctx = _ctx(repo, tmp_path)
    options = ["agent:claude", "agent:codex", "m1"]
    now = time.time()
    policy.failover(ctx, "agent:claude", now + 60, 60.0, "agent:codex")
    assert policy.usable(ctx, options, str) == ["agent:codex", "m1"]
    (ev,) = _of(ctx.logs.events.journal.path, "failover")
    assert (ev["model"], ev["to"], ev["retry_after"]) == ("agent:claude", "agent:codex", 60.0)
    policy.failover(ctx, "agent:codex", now + 30, 30.0, "m1")
    policy.failover(ctx, "m1", now + 90, 90.0, None)
    assert policy.usable(ctx, options, str) == []
    waited = policy.all_limited(ctx, options, "every agent and model of builder is at its usage limit")
    assert waited.reset_at == now + 30 and "builder" in waited.detail


def test_the_deadline_and_stop(repo, tmp_path) -> None:
    ws = Workspace(repo, write=True, command_timeout=5)
    stopping = [False]
    ws.limit(None, lambda: stopping[0])
    ctx = _ctx(repo, tmp_path, workspace=ws, limits=Limits(timeout_sec=0.05))
    deadline = policy.Deadline.of(ctx)
    assert not deadline.passed()
    policy.check_stop(ctx)  # not stopping: nothing happens
    time.sleep(0.06)
    assert deadline.passed()
    stopping[0] = True
    assert policy.stop_requested(ctx)
    with pytest.raises(policy.TurnStopped):
        policy.check_stop(ctx)


def test_a_turn_carries_on_from_what_it_spent_and_told() -> None:
    resume = Resume(2, "builder", [], {})
    one = TurnUsage(generations=1, prompt_tokens=100, completion_tokens=20, cached_tokens=40, cost=0.5)
    resume.spent.add("agent:claude", one)
    resume.told = True
    result = TurnResult(None)
    policy.carry(resume, result)
    assert result.spent.total == one and result.told
    assert result.spent.models == {
        "agent:claude": ModelUsage(generations=1, prompt_tokens=100, completion_tokens=20, cost=0.5)
    }
    result.spent.add("agent:claude", one)  # a copy: the resume's figures stay as read
    assert resume.spent.models["agent:claude"].generations == 1 and resume.spent.total == one
    back = Resume(2, "builder", [], {})
    policy.carry(result, back)  # and the other way, when the CLIs hand the turn to the models
    assert back.spent.models["agent:claude"].generations == 2 and back.told
    assert (back.spent.total.prompt_tokens, back.spent.total.cached_tokens, back.spent.total.cost) == (
        200,
        80,
        1.0,
    )
