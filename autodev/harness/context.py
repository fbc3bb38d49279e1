"""A turn's context and result: what the turn loop, its model requests and its tool calls
(`turn`, `generation`, `calls`) and an agent CLI's turn share; `TurnRunner`, what runs one
participant kind's turn, and the `Seat` it is given besides the context."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from autodev.harness import providers
from autodev.harness.model import LitellmModel, Model
from autodev.harness.registry import Tool
from autodev.harness.tools import Workspace
from autodev.records.harness_log import HarnessRecord
from autodev.records.harness_log import line as harness_line
from autodev.records.state import Spent, TurnUsage
from autodev.store.journal import JsonObject

if TYPE_CHECKING:
    from autodev.config import Participant, RunConfig
    from autodev.harness.browser import Browser
    from autodev.harness.hooks import Hooks
    from autodev.harness.recovery import Resume
    from autodev.records.events import TurnEvent
    from autodev.records.post import Post
    from autodev.store.events import Events
    from autodev.store.journal import Journal
    from autodev.store.thread import Thread

__all__ = ["Seat", "TurnContext", "TurnResult", "TurnRunner"]


@dataclass
class TurnContext:
    run_id: str
    turn: int
    name: str
    can_write: bool
    team_writers: dict[str, bool]
    repo: Path
    thread: Thread
    events: Events
    hlog: Journal  # the harness log
    workspace: Workspace
    targets: list[providers.Target]
    system_prompt: str
    turn_prompt: str
    restricted: bool = False
    max_steps: int = 40
    timeout_sec: float = 1200.0
    max_retries: int = 4
    retry_backoff_sec: float = 2.0
    limited_until: dict[str, float] = field(default_factory=dict)  # target label -> epoch secs
    overrides: Path | None = None
    withheld: frozenset[str] = frozenset()  # tools of capabilities this participant does not hold
    extra_tools: list[Tool[str]] = field(
        default_factory=list[Tool[str]]
    )  # granted beyond the built-ins (MCP, browser)
    tool_guard: Callable[[str], str | None] | None = None  # refusal of a gate-required tool, or None
    browser: Browser | None = None  # this participant's browser, when granted
    tell_user: Callable[[str, str | None], str] | None = None  # raises a notice; returns its id
    compactions: int = 0  # compactions made in this turn (status shows their sum)
    hooks: Hooks | None = None  # when config.toml declares any
    branch: str | None = None  # the run's branch (state `branch`): credit counts commits on it
    model: Model = field(default_factory=LitellmModel)  # what answers the turn's requests
    # `autodev replay --tools recorded`: (turn, call id, tool name) -> the recorded result
    recorded_tools: Callable[[int, str, str], str] | None = None

    def record(self, rec: HarnessRecord) -> JsonObject:
        """Append a record of this turn to the harness log (fsynced before anything relies on it)."""
        return self._append(rec, durable=True)

    def record_later(self, rec: HarnessRecord) -> JsonObject:
        """`record` for a record no effect waits for (the group commit, issue 33): written now,
        fsynced with the next intent record of this log or before the next state.json write."""
        return self._append(rec, durable=False)

    def _append(self, rec: HarnessRecord, durable: bool) -> JsonObject:
        # ts: when it happened, for the spans autodev/telemetry derives from this log
        at = rec.model_copy(update={"ts": round(time.time(), 6)})
        return self.hlog.append(harness_line(at), durable=durable)

    def emit(self, ev: TurnEvent) -> JsonObject:
        """An event of this participant's turn (its participant and turn filled in)."""
        return self.events.emit(ev.model_copy(update={"participant": self.name, "turn": self.turn}))


@dataclass
class TurnResult:
    post: Post | None  # the turn's post, once it is on the thread
    steps: int = 0
    reason: str = ""
    told: bool = False
    spent: Spent = field(default_factory=Spent)  # tokens and cost, in all and per model label
    compactions: int = 0

    def count(self, gen: providers.Generation) -> None:
        """Add one generation's tokens and cost, in all and for its model."""
        self.spent.add(
            gen.model,
            TurnUsage(
                generations=1,
                prompt_tokens=gen.prompt_tokens,
                completion_tokens=gen.completion_tokens,
                cached_tokens=gen.cached_tokens,
                cost=gen.cost or 0.0,
            ),
        )


@dataclass(frozen=True)
class Seat:
    """What a participant's turn is given besides its context: the participant as configured,
    the run's settings, and what a kind may need of the run's folder."""

    participant: Participant
    config: RunConfig
    run_dir: Path  # the run's folder (an agent CLI's raw streams go to run_dir/agents/)
    resumed: list[JsonObject] = field(
        default_factory=list[JsonObject]
    )  # the resumed turn's harness-log lines
    redact: Callable[[str], str] = lambda s: s  # the run's masker


class TurnRunner(Protocol):
    """Runs one turn of one participant of its kind to the turn's post (or to silence), under
    the shared policy (`harness/policy`). `daemon/kinds` holds one per kind."""

    def run(self, ctx: TurnContext, seat: Seat, resume: Resume | None) -> TurnResult:
        """The turn `ctx` (with `resume`: continued from its harness-log records). Raises
        `TurnStopped` (left open on a stop), `AllModelsLimited`, or a provider error."""
        ...
