"""What every participant kind's turn shares, written once: the turn's first and last records,
the user's `stop`, the turn's deadline, the one nudge, failover across what the participant may
use, and the figures a resumed or handed-over turn carries on from.

A kind's runner (`harness/turn.ModelTurn`, `agents/turn.AgentTurn`, chosen by
`daemon/kinds`) decides only how its participant takes a step: a model request and its tool
calls, or one run of a coding-agent CLI. When to stop, when time is up, when to nudge, what a
usage limit does and what a resumed turn has spent already are decided here, the same for both.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from autodev.config import prompts
from autodev.harness import credit
from autodev.harness.messages import Message
from autodev.records.events import FailoverEvent, NudgedEvent, TurnEndedEvent, TurnStartedEvent
from autodev.records.harness_log import CreditBaseline, Nudged, TurnFinished, TurnStarted
from autodev.rules.moves import MOVES

if TYPE_CHECKING:
    from autodev.harness.context import TurnContext, TurnResult
    from autodev.records.state import Spent

__all__ = [
    "TIMED_OUT",
    "AllModelsLimited",
    "Deadline",
    "Nudge",
    "TurnStopped",
    "TurnTimedOut",
    "all_limited",
    "carry",
    "check_stop",
    "failover",
    "log_turn_finished",
    "log_turn_started",
    "stop_requested",
    "usable",
]

TIMED_OUT = "turn ran past turnTimeoutMin without a post"

T = TypeVar("T")


class TurnStopped(Exception):
    """The user asked the run to stop while the turn was running (at a step boundary, or during
    a model request or a CLI run, which is dropped). The turn stays open; `start` continues it."""


class TurnTimedOut(Exception):
    """The turn's deadline (turnTimeoutMin) passed during a model request."""


class AllModelsLimited(Exception):
    """Every model (and agent CLI) of the participant hit a usage limit; the run waits until
    `reset_at`."""

    def __init__(self, reset_at: float, detail: str):
        super().__init__(detail)
        self.reset_at, self.detail = reset_at, detail


# -- the turn's first and last records ------------------------------------------------------------


def log_turn_started(
    ctx: TurnContext,
    baseline: credit.Baseline,
    messages: Sequence[Message],
    *,
    durable: bool = True,
    agent: str | None = None,
) -> None:
    """The turn's first record: what recovery rebuilds it from (its baseline and messages).
    `durable=False`: the caller's next record is an intent, fsynced before its effect, and this
    with it (the group commit). `agent`: an agent turn's first CLI."""
    rec = TurnStarted(
        run=ctx.who.run_id,
        turn=ctx.who.turn,
        participant=ctx.who.name,
        head=baseline.head,
        baseline=CreditBaseline.model_validate(credit.baseline_to_json(baseline)),
        messages=list(messages),
    )
    if agent is not None:  # written only for an agent turn, as ever
        rec = rec.model_copy(update={"agent": agent})
    (ctx.record if durable else ctx.record_later)(rec)
    ctx.emit(TurnStartedEvent())


def log_turn_finished(ctx: TurnContext, result: TurnResult) -> None:
    """The turn's last record (its post's seq, or why there is none) and its event."""
    result.compactions = ctx.compactions
    seq = result.post.seq if result.post else None
    ctx.record_later(
        TurnFinished(run=ctx.who.run_id, turn=ctx.who.turn, seq=seq, reason=result.reason)
    )  # fsynced before state.json
    ctx.emit(TurnEndedEvent(steps=result.steps, posted=seq, reason=result.reason or None))


# -- stop and deadline ----------------------------------------------------------------------------


def stop_requested(ctx: TurnContext) -> bool:
    """The user is stopping the run (the same `stop` that cuts the turn's tools)."""
    return ctx.tools.workspace.stopping_now()


def check_stop(ctx: TurnContext) -> None:
    """At a step boundary: the turn stays open on a stop; `start` continues it from here."""
    if stop_requested(ctx):
        raise TurnStopped()


@dataclass(frozen=True)
class Deadline:
    """turnTimeoutMin from the moment the turn (or its resumption) began."""

    at: float  # time.monotonic()

    @classmethod
    def of(cls, ctx: TurnContext) -> Deadline:
        return cls(time.monotonic() + ctx.limits.timeout_sec)

    def passed(self) -> bool:
        return time.monotonic() > self.at


# -- the nudge ------------------------------------------------------------------------------------


@dataclass
class Nudge:
    """One reminder per turn: the first time the participant's step ends without a post it is
    nudged (a `nudged` record, so a resumed turn knows), the second time the turn ends silent."""

    given: bool = False

    @staticmethod
    def text(ctx: TurnContext) -> str:
        return prompts.render("nudge.md", {"kinds": ", ".join(MOVES)}, ctx.models.overrides)

    def after_silence(
        self, ctx: TurnContext, who: str, message: Message, event: NudgedEvent | None = None
    ) -> str | None:
        """`who` ("the model stopped", "the agent exited") ended a step without a post. None: it
        is nudged now (`message` recorded, `event` emitted when given); else why the turn ends
        silent."""
        if self.given:
            return f"{who} twice without posting"
        self.given = True
        ctx.record(Nudged(run=ctx.who.run_id, turn=ctx.who.turn, message=message))
        if event is not None:
            ctx.emit(event)
        return None


# -- failover on usage limits ---------------------------------------------------------------------


def usable(ctx: TurnContext, options: Sequence[T], label: Callable[[T], str]) -> list[T]:
    """The participant's options (models, CLIs) in their order, less those at a usage limit."""
    now = time.time()
    return [o for o in options if ctx.limited_until.get(label(o), 0) <= now]


def failover(ctx: TurnContext, label: str, until: float, retry_after: float, to: str | None) -> None:
    """`label` is at its usage limit until `until` (epoch seconds): the turn moves to `to`."""
    ctx.limited_until[label] = until
    ctx.emit(FailoverEvent(model=label, to=to, retry_after=retry_after))


def all_limited(ctx: TurnContext, labels: Sequence[str], detail: str) -> AllModelsLimited:
    """Every option is limited: the run waits for the first of them to reset."""
    return AllModelsLimited(min(ctx.limited_until.get(x, 0) for x in labels), detail)


# -- usage carry-over -----------------------------------------------------------------------------


class SoFar(Protocol):
    """What a turn has spent and told so far (a `TurnResult`, or a `Resume` of one)."""

    spent: Spent
    told: bool


def carry(src: SoFar, dst: SoFar) -> None:
    """`dst` carries on from `src`: a turn resumed after a crash or a provider pause, or handed
    from the participant's CLIs to its models, counts what was spent before exactly once."""
    dst.spent, dst.told = src.spent.copy(), src.told
