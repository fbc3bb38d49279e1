"""A turn's context and result: what the turn loop, its model requests and its tool calls
(`turn`, `generation`, `calls`) and an agent CLI's turn share; `TurnRunner`, what runs one
participant kind's turn, and the `Seat` it is given besides the context.

The context is given in parts, one per concern, each fixed for the turn: whose turn it is and
where (`Who`), the logs it writes (`Logs`), what answers it and what it is asked (`Models`),
its bounds (`Limits`) and what its calls may act on (`Toolbox`). `TurnContext` holds them and
what changes while the turn runs (models put at their usage limit, compactions)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from autodev.harness import providers
from autodev.harness.model import LitellmModel, Model
from autodev.harness.registry import Tool, ToolEnv
from autodev.harness.tools import Workspace
from autodev.records.harness_log import AgentStarted, HarnessRecord, ToolStarted
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

__all__ = [
    "Limits",
    "Logs",
    "Models",
    "Seat",
    "Toolbox",
    "TurnContext",
    "TurnResult",
    "TurnRunner",
    "TurnToolEnv",
    "Who",
]


@dataclass(frozen=True)
class Who:
    """Whose turn it is and where it works: the run, the turn, the participant and what it and
    its team may write, the repository and the run's branch."""

    run_id: str
    turn: int
    name: str
    can_write: bool
    team_writers: dict[str, bool]  # participant -> whether it writes (a handoff's check)
    repo: Path
    branch: str | None = None  # the run's branch (state `branch`): credit counts commits on it


@dataclass(frozen=True)
class Logs:
    """Where the turn is written: the thread, the events, the harness log."""

    thread: Thread
    events: Events
    hlog: Journal  # the harness log


@dataclass(frozen=True)
class Models:
    """What answers the turn and what it is asked: the model targets in failover order, the
    client that sends the requests, the prompts and the run's prompt overrides."""

    targets: list[providers.Target]
    system_prompt: str
    turn_prompt: str
    overrides: Path | None = None
    model: Model = field(default_factory=LitellmModel)  # what answers the turn's requests


@dataclass(frozen=True)
class Limits:
    """How far the turn may go: its steps, its time, a model request's retries, and whether the
    talk limit restricts its post."""

    max_steps: int = 40
    timeout_sec: float = 1200.0
    max_retries: int = 4
    retry_backoff_sec: float = 2.0
    restricted: bool = False  # the talk limit is reached: only some moves are accepted


@dataclass(frozen=True)
class Toolbox:
    """What the turn's tool calls may act on, and what stands before them."""

    workspace: Workspace
    withheld: frozenset[str] = frozenset()  # tools of capabilities this participant does not hold
    extra: list[Tool[str]] = field(default_factory=list[Tool[str]])  # beyond the built-ins (MCP, browser)
    guard: Callable[[str], str | None] | None = None  # refusal of a gate-required tool, or None
    browser: Browser | None = None  # this participant's browser, when granted
    hooks: Hooks | None = None  # when config.toml declares any
    tell_user: Callable[[str, str | None], str] | None = None  # raises a notice; returns its id
    # `autodev replay --tools recorded`: (turn, call id, tool name) -> the recorded result
    recorded: Callable[[int, str, str], str] | None = None


@dataclass
class TurnContext:
    who: Who
    logs: Logs
    models: Models
    tools: Toolbox
    limits: Limits = Limits()
    limited_until: dict[str, float] = field(default_factory=dict)  # target label -> epoch secs
    compactions: int = 0  # compactions made in this turn (status shows their sum)
    # A tool or an agent CLI ran in this turn (its intent record was appended here): the turn's
    # end must look at git. Known from memory for a turn this process began (issue 33).
    ran: bool = False

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
        if isinstance(rec, ToolStarted | AgentStarted):
            self.ran = True
        return self.logs.hlog.append(harness_line(at), durable=durable)

    def emit(self, ev: TurnEvent) -> JsonObject:
        """An event of this participant's turn (its participant and turn filled in)."""
        return self.logs.events.emit(
            ev.model_copy(update={"participant": self.who.name, "turn": self.who.turn})
        )


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


@dataclass(kw_only=True)
class TurnToolEnv(ToolEnv):
    """A tool call's `ToolEnv` within a turn: the thread tools act on the turn and its result
    (the registry does not name them: this module imports it)."""

    turn: TurnContext
    result: TurnResult


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
