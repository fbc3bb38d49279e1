"""One turn: a participant's tool loop, from the turn prompt to its one post.

Every effect is preceded by an intent record in the harness log and followed by its result:
turn started (with git HEAD and the credit baseline), generation started (with its attempt
number), tool started (with effective arguments and whether it is safe to replay), post
committed, turn finished. Any prefix of that log is a state recovery can start from.

The loop is here; one model request (failover, backoff, compaction) is `generation.generate`,
one tool call is `calls.run_call`, and the model behind both is the context's `Model`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from autodev.config import prompts
from autodev.harness import credit, providers
from autodev.harness.calls import offered, resume_call, run_call
from autodev.harness.context import TurnContext, TurnResult
from autodev.harness.generation import AllModelsLimited, TurnStopped, TurnTimedOut, generate
from autodev.harness.recovery import Resume
from autodev.records.events import GenerationEvent, TurnEndedEvent, TurnResumedEvent, TurnStartedEvent
from autodev.rules.moves import MOVES
from autodev.store.journal import safe

__all__ = [
    "AllModelsLimited",
    "TurnContext",
    "TurnResult",
    "TurnStopped",
    "log_turn_finished",
    "log_turn_started",
    "offered",
    "run_turn",
]


@dataclass
class _Loop:
    """Where the loop stands: what a resumed turn carries on from."""

    baseline: credit.Baseline
    messages: list[dict]
    origins: dict[int, str]
    nudged: bool = False
    attempts: int = 0  # attempts already made for the next generation


def run_turn(ctx: TurnContext, resume: Resume | None = None) -> TurnResult:
    """Run one turn to its post (or to silence). With `resume`, continue an interrupted turn
    from its last safe boundary instead of starting afresh."""
    result, started = TurnResult(None), time.monotonic()
    at = _start(ctx) if resume is None else _resume(ctx, resume, result)
    while result.post is None:
        if ctx.workspace.stopping is not None and ctx.workspace.stopping():
            raise TurnStopped()  # the turn stays open; `start` continues it from here
        if result.steps >= ctx.max_steps:
            result.reason = f"reached maxStepsPerTurn ({ctx.max_steps}) without a post"
            break
        if time.monotonic() - started > ctx.timeout_sec:
            result.reason = "turn ran past turnTimeoutMin without a post"
            break
        step = result.steps + 1
        try:
            gen = generate(ctx, at.messages, at.origins, step, at.attempts)
        except TurnTimedOut:  # the deadline passed while the model was answering
            result.reason = "turn ran past turnTimeoutMin without a post"
            break
        at.attempts = 0
        if gen is None:
            result.reason = "context"
            break
        result.steps = step
        result.count(gen)
        _generated(ctx, step, gen)
        at.messages.append(safe(gen.message))  # a lone surrogate would fail the next request
        at.origins[len(at.messages) - 1] = gen.source
        calls = gen.message.get("tool_calls") or []
        if not calls:
            if at.nudged:
                result.reason = "the model stopped twice without posting"
                break
            at.nudged = True
            at.messages.append(_nudge(ctx))
            continue
        for call in calls:
            at.messages.append(_answer(call, run_call(ctx, call, at.baseline, result)))
    log_turn_finished(ctx, result)
    return result


def _answer(call: dict, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call["id"], "content": text}


def _start(ctx: TurnContext) -> _Loop:
    baseline = credit.take_baseline(ctx.repo, ctx.branch)
    messages = [
        {"role": "system", "content": ctx.system_prompt},
        {"role": "user", "content": ctx.turn_prompt},
    ]
    log_turn_started(ctx, baseline, messages)
    return _Loop(baseline, messages, {})


def log_turn_started(ctx: TurnContext, baseline: credit.Baseline, messages: list[dict], **extra: Any) -> None:
    """The turn's first record: what recovery rebuilds it from (its baseline and messages)."""
    ctx.record(
        "turn_started",
        participant=ctx.name,
        head=baseline.head,
        baseline=credit.baseline_to_json(baseline),
        messages=messages,
        **extra,
    )
    ctx.emit(TurnStartedEvent())


def _resume(ctx: TurnContext, resume: Resume, result: TurnResult) -> _Loop:
    at = _Loop(
        credit.baseline_from_json(resume.baseline),
        resume.messages,
        dict(resume.origins),
        resume.nudged,
        resume.attempts,
    )
    result.steps, result.told = resume.steps, resume.told
    # Tokens and cost spent before the crash or the provider pause are part of this turn.
    result.prompt_tokens, result.completion_tokens = resume.prompt_tokens, resume.completion_tokens
    result.cost, result.models = resume.cost, {k: dict(v) for k, v in resume.models.items()}
    result.cached_tokens = resume.cached_tokens
    ctx.compactions = resume.compactions  # made before the crash; later ones add to them
    ctx.emit(TurnResumedEvent(step=resume.steps, pending_tools=len(resume.pending)))
    for call, began in resume.pending:
        at.messages.append(_answer(call, resume_call(ctx, call, began, at.baseline, result)))
    return at


def _generated(ctx: TurnContext, step: int, gen: providers.Generation) -> None:
    usage = {
        "model": gen.model,
        "prompt_tokens": gen.prompt_tokens,
        "completion_tokens": gen.completion_tokens,
        "cached_tokens": gen.cached_tokens,
        "cost": gen.cost,
    }
    ctx.record(
        "generation_finished",
        step=step,
        message=gen.message,
        source=gen.source,
        finish_reason=gen.finish_reason,
        response_model=gen.response_model,
        **usage,
    )
    ctx.emit(GenerationEvent(step=step, **usage))


def _nudge(ctx: TurnContext) -> dict:
    """The reminder after the model's first answer without a tool call (logged: resume replays it)."""
    nudge = {
        "role": "user",
        "content": prompts.render("nudge.md", {"kinds": ", ".join(MOVES)}, ctx.overrides),
    }
    ctx.record("nudged", message=nudge)
    return nudge


def log_turn_finished(ctx: TurnContext, result: TurnResult) -> None:
    """The turn's last record (its post's seq, or why there is none) and its event."""
    result.compactions = ctx.compactions
    seq = result.post["seq"] if result.post else None
    ctx.record("turn_finished", seq=seq, reason=result.reason)
    ctx.emit(TurnEndedEvent(steps=result.steps, posted=seq, reason=result.reason or None))
