"""One turn: a participant's tool loop, from the turn prompt to its one post.

Every effect is preceded by an intent record in the harness log and followed by its result:
turn started (with git HEAD and the credit baseline), generation started (with its attempt
number), tool started (with effective arguments and whether it is safe to replay), post
committed, turn finished. Any prefix of that log is a state recovery can start from.

The loop is here; one model request (failover, backoff, compaction) is `generation.generate`,
one tool call is `calls.run_call`, and the model behind both is the context's `Model`. What every
participant kind's turn shares (stop, deadline, nudge, failover, carried figures) is `policy`;
`ModelTurn` is this kind's `TurnRunner` (the daemon picks it in `daemon/kinds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autodev.harness import credit, providers
from autodev.harness.calls import offered, resume_call, run_call
from autodev.harness.context import Seat, TurnContext, TurnResult
from autodev.harness.generation import generate
from autodev.harness.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolMessage,
    UserMessage,
    assistant,
    calls_of,
)
from autodev.harness.policy import (
    TIMED_OUT,
    AllModelsLimited,
    Deadline,
    Nudge,
    TurnStopped,
    TurnTimedOut,
    carry,
    check_stop,
    log_turn_finished,
    log_turn_started,
)
from autodev.harness.recovery import Resume
from autodev.records.events import GenerationEvent, TurnResumedEvent
from autodev.records.harness_log import GenerationFinished
from autodev.store.journal import safe, safe_text

__all__ = [
    "AllModelsLimited",
    "ModelTurn",
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
    messages: list[Message]
    origins: dict[int, str]
    nudge: Nudge = field(default_factory=Nudge)
    attempts: int = 0  # attempts already made for the next generation


class ModelTurn:
    """The `TurnRunner` of a participant with a model: the tool loop below, through litellm
    (or the context's `Model`)."""

    def run(self, ctx: TurnContext, seat: Seat, resume: Resume | None) -> TurnResult:
        return run_turn(ctx, resume)


def run_turn(ctx: TurnContext, resume: Resume | None = None) -> TurnResult:
    """Run one turn to its post (or to silence). With `resume`, continue an interrupted turn
    from its last safe boundary instead of starting afresh."""
    result, deadline = TurnResult(None), Deadline.of(ctx)
    at = _start(ctx) if resume is None else _resume(ctx, resume, result)
    while result.post is None:
        check_stop(ctx)
        if result.steps >= ctx.limits.max_steps:
            result.reason = f"reached maxStepsPerTurn ({ctx.limits.max_steps}) without a post"
            break
        if deadline.passed():
            result.reason = TIMED_OUT
            break
        step = result.steps + 1
        try:
            gen = generate(ctx, at.messages, at.origins, step, at.attempts)
        except TurnTimedOut:  # the deadline passed while the model was answering
            result.reason = TIMED_OUT
            break
        at.attempts = 0
        if gen is None:
            result.reason = "context"
            break
        result.steps = step
        result.count(gen)
        _generated(ctx, step, gen)
        at.messages.append(_safe(gen.message))  # a lone surrogate would fail the next request
        at.origins[len(at.messages) - 1] = gen.source
        calls = calls_of(gen.message)
        if not calls:
            nudge: UserMessage = {"role": "user", "content": Nudge.text(ctx)}
            silent = at.nudge.after_silence(ctx, "the model stopped", nudge)
            if silent:
                result.reason = silent
                break
            at.messages.append(nudge)  # logged: resume replays it
            continue
        for call in calls:
            at.messages.append(_answer(call, run_call(ctx, call, at.baseline, result)))
    log_turn_finished(ctx, result)
    return result


def _answer(call: ToolCall, text: str) -> ToolMessage:
    # a result may quote the model's own arguments (a path with a lone surrogate): safe, or the
    # next request fails to encode
    return {"role": "tool", "tool_call_id": call["id"], "content": safe_text(text)}


def _safe(message: AssistantMessage) -> AssistantMessage:
    return assistant(safe(message))  # every string escaped: the same keys, so the same shape


def _start(ctx: TurnContext) -> _Loop:
    baseline = credit.take_baseline(ctx.who.repo, ctx.who.branch)
    messages: list[Message] = [
        {"role": "system", "content": ctx.models.system_prompt},
        {"role": "user", "content": ctx.models.turn_prompt},
    ]
    # Nothing runs before the first request's intent record (generation_started, fsynced), or
    # else the turn's end (its state.json write fsyncs the log first): this is fsynced with it.
    log_turn_started(ctx, baseline, messages, durable=False)
    return _Loop(baseline, messages, {})


def _resume(ctx: TurnContext, resume: Resume, result: TurnResult) -> _Loop:
    at = _Loop(
        credit.baseline_from_json(resume.baseline),
        resume.messages,
        dict(resume.origins),
        Nudge(resume.nudged),
        resume.attempts,
    )
    result.steps = resume.steps
    carry(resume, result)  # spent before the crash or the provider pause: part of this turn
    ctx.compactions = resume.compactions  # made before the crash; later ones add to them
    ctx.emit(TurnResumedEvent(step=resume.steps, pending_tools=len(resume.pending)))
    for call, began in resume.pending:
        at.messages.append(_answer(call, resume_call(ctx, call, began, at.baseline, result)))
    return at


def _generated(ctx: TurnContext, step: int, gen: providers.Generation) -> None:
    ctx.record_later(  # what comes next (a tool's or the post's intent) is fsynced, and this with it
        GenerationFinished(
            run=ctx.who.run_id,
            turn=ctx.who.turn,
            step=step,
            message=gen.message,
            source=gen.source,
            finish_reason=gen.finish_reason,
            response_model=gen.response_model,
            model=gen.model,
            prompt_tokens=gen.prompt_tokens,
            completion_tokens=gen.completion_tokens,
            cached_tokens=gen.cached_tokens,
            cost=gen.cost,
        )
    )
    ctx.emit(
        GenerationEvent(
            step=step,
            model=gen.model,
            prompt_tokens=gen.prompt_tokens,
            completion_tokens=gen.completion_tokens,
            cached_tokens=gen.cached_tokens,
            cost=gen.cost,
        )
    )
