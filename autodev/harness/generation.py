"""One model request of a turn: failover on usage limits, backoff on transient errors, and
compaction when the turn's messages outgrow the target's window. Each attempt is preceded by its
`generation_started` record, and each compaction by its `compacted` record, so a resumed turn
counts attempts and stubs results exactly as the original did.

A request runs in a worker thread while the turn's thread watches `stop` and the turn's
deadline: either cuts the request at once instead of waiting for the provider. The request is
left to end on its own and its answer is dropped; no `generation_finished` follows its
`generation_started`, so a resumed turn asks again."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from autodev.errors import ProviderError
from autodev.harness import compaction, providers
from autodev.harness.calls import offered
from autodev.harness.messages import Message, ToolSpec, estimate_tokens
from autodev.harness.policy import (
    AllModelsLimited,
    TurnStopped,
    TurnTimedOut,
    all_limited,
    check_stop,
    failover,
    usable,
)
from autodev.records.events import CompactedEvent, ContextExceededEvent, RetryEvent
from autodev.records.harness_log import Compacted, GenerationStarted

if TYPE_CHECKING:
    from autodev.harness.context import TurnContext

__all__ = ["AllModelsLimited", "TurnStopped", "TurnTimedOut", "generate"]


_POLL_SEC = 0.1  # how often a waiting turn looks at `stop` and its deadline


def _tool_specs(ctx: TurnContext) -> list[ToolSpec]:
    return [t.spec() for t in offered(ctx.tools).values()]


def _budget(target: providers.Target) -> int:
    """Input tokens a request may hold: the window minus the output cap (at least half of it)."""
    return max(target.window - target.max_output, target.window // 2)


def _compact(
    ctx: TurnContext, messages: list[Message], target: providers.Target, step: int, *, hard: bool, budget: int
) -> bool:
    """Fit `messages` into `budget` tokens by stubbing tool results; the stubs go to the harness
    log first, so resume replays exactly this. False when nothing could be compacted."""
    tools = _tool_specs(ctx)
    before = estimate_tokens(messages, tools)
    stubs = compaction.plan(messages, tools, budget, hard=hard)
    if not stubs:
        return False
    ctx.record(Compacted(run=ctx.who.run_id, turn=ctx.who.turn, step=step, hard=hard, stubs=stubs))
    compaction.apply(messages, stubs)
    ctx.compactions += 1
    ctx.emit(
        CompactedEvent(
            step=step,
            model=target.label,
            hard=hard,
            stubbed=len(stubs),
            tokens_before=before,
            tokens_after=estimate_tokens(messages, tools),
            window=target.window,
        )
    )
    return True


def generate(
    ctx: TurnContext, messages: list[Message], origins: dict[int, str], step: int, attempt: int = 0
) -> providers.Generation | None:
    """One model answer for `step`. `attempt` counts the attempts already made (it survives
    restarts via the harness log). None: the turn cannot fit its window."""
    squeezed = False
    while True:
        ready = usable(ctx, ctx.models.targets, lambda t: t.label)
        if not ready:
            labels = [t.label for t in ctx.models.targets]
            raise all_limited(ctx, labels, f"every model of {ctx.who.name} is at its usage limit")
        target = ready[0]
        if estimate_tokens(messages, _tool_specs(ctx)) > _budget(target):
            _compact(ctx, messages, target, step, hard=False, budget=_budget(target))
        attempt += 1
        ctx.record(
            GenerationStarted(
                run=ctx.who.run_id, turn=ctx.who.turn, step=step, attempt=attempt, model=target.label
            )
        )
        try:
            return _ask(ctx, target, messages, origins)
        except providers.ContextExceeded as e:
            ctx.emit(ContextExceededEvent(model=target.label, error=str(e)[:500]))
            # Our estimate fitted but the provider counts more: compact harder, retry once.
            tighter = min(_budget(target), estimate_tokens(messages, _tool_specs(ctx)) * 6 // 10)
            if squeezed or not _compact(ctx, messages, target, step, hard=True, budget=tighter):
                return None
            squeezed = True
        except providers.Refused as e:
            raise e.to_error(ctx.who.name, target.label) from e
        except providers.RateLimited as e:
            nxt = [t.label for t in ready[1:]]
            failover(ctx, target.label, time.time() + e.retry_after, e.retry_after, nxt[0] if nxt else None)
        except providers.Transient as e:
            if attempt > ctx.limits.max_retries:
                raise ProviderError(
                    f"{ctx.who.name}'s model failed {attempt} times: {e}",
                    "check the provider's status; `autodev resume` tries again",
                ) from e
            delay = providers.backoff(attempt, ctx.limits.retry_backoff_sec)
            ctx.emit(RetryEvent(model=target.label, attempt=attempt, delay=delay, error=str(e)[:300]))
            _pause(ctx, delay)


def _cut(ctx: TurnContext) -> None:
    """Raise when the turn must end now: the user's `stop`, or the turn's deadline."""
    ws = ctx.tools.workspace
    check_stop(ctx)
    if ws.deadline is not None and time.monotonic() >= ws.deadline:
        raise TurnTimedOut()


def _ask(
    ctx: TurnContext, target: providers.Target, messages: list[Message], origins: dict[int, str]
) -> providers.Generation:
    """The model's answer, or TurnStopped / TurnTimedOut as soon as the turn must end."""
    got: list[providers.Generation | BaseException] = []  # what the request's thread hands back
    done = threading.Event()
    sent, tools = list(messages), _tool_specs(ctx)  # the turn may append once it has moved on

    def request() -> None:
        try:
            answer = ctx.models.model.complete(
                target,
                sent,
                tools,
                turn_id=f"{ctx.who.run_id}:{ctx.who.turn}",
                timeout=ctx.tools.workspace.time_for(ctx.limits.timeout_sec),
                origins=dict(origins),
            )
            got.append(answer)
        except BaseException as e:  # noqa: BLE001 - handed to the turn's thread, raised there
            got.append(e)
        finally:
            done.set()

    threading.Thread(target=request, name="model-request", daemon=True).start()
    while not done.wait(_POLL_SEC):
        _cut(ctx)
    if isinstance(got[0], BaseException):
        raise got[0]
    return got[0]


def _pause(ctx: TurnContext, seconds: float) -> None:
    """A backoff that `stop` and the turn's deadline cut short."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        _cut(ctx)
        providers.sleep(min(left, _POLL_SEC * 2))
