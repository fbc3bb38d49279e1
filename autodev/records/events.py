"""events.jsonl: every kind of event as a model, in one union on `type`.

An event is written by `store.events.Events.emit(model)`: the envelope (`type`, `ts`, `run`,
`schema`) first, then the fields the emitter set (`exclude_unset`: a field left at its default
is not written, one set to None is written as null), so a line is what the emitter said.

Reading is additive (SPEC §3): fields a newer autodev adds are kept (`Open`), every field but a
kind's core has a default so lines written before it existed still load, and a `type` this
version does not know reads as `UnknownEvent` instead of failing: events.jsonl is a log people
and tools read, never one the run depends on to go on.
"""

# Each kind narrows the discriminator `type: str` of `Event` to its own Literal, which is what the
# union on `type` reads. Pyright calls that override unsafe because a pydantic field can be
# assigned; no event is assigned to after it is made (`emit` writes the model as built), so the
# narrowing holds: this one rule is off in this file only.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, cast, get_args

from pydantic import ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError

from autodev.records.base import SCHEMA, Move, Open, State
from autodev.records.post import Credit, GateNote, NoticeNote, Post
from autodev.records.state import Reason

Number = int | float  # written as the emitter gave it: an int stays an int on disk


class Event(Open):
    """Every event: its type, time and run (SPEC §3); the rest is the type's own, additive.

    `ts` and `run` are the envelope `emit` fills in; a line read from the file must have them
    (`records.event` checks)."""

    type: str
    ts: str = ""
    run: str = ""
    schema_: int = Field(default=SCHEMA, alias="schema")


class TurnEvent(Event):
    """An event of a participant (and, inside a turn, of that turn): `TurnContext.emit` fills
    both in."""

    participant: str | None = None
    turn: int | None = None


# -- the run and the daemon -------------------------------------------------------------------


class DaemonStartedEvent(Event):
    type: Literal["daemon_started"] = "daemon_started"
    pid: int | None = None
    sandbox: str | None = None
    team: int | None = None  # the team it loaded: its number in the run folder's team-history/


class StateEvent(Event):
    type: Literal["state"] = "state"
    state: State
    reason: Reason | None = None


class ControlEvent(Event):
    """A queued pause, resume or stop, applied."""

    type: Literal["control"] = "control"
    action: str | None = None


class WarningEvent(Event):
    type: Literal["warning"] = "warning"
    message: str = ""


class ErrorEvent(TurnEvent):
    type: Literal["error"] = "error"
    message: str = ""
    detail: Any = None  # a provider's raw answer, when there is one


class TeamReloadedEvent(Event):
    type: Literal["team_reloaded"] = "team_reloaded"
    participants: list[str] = []
    team: int | None = None  # its number in the run folder's team-history/ (replay uses it)


class ConfigRefusedEvent(TurnEvent):
    """A change to .autodev/ made during a turn, kept out."""

    type: Literal["config_refused"] = "config_refused"
    message: str = ""


class BudgetReachedEvent(TurnEvent):
    type: Literal["budget_reached"] = "budget_reached"
    text: str = ""


class ScheduledEvent(TurnEvent):
    """Who speaks next and by which rule of the scheduler."""

    type: Literal["scheduled"] = "scheduled"
    rule: str | None = None
    why: str | None = None


class PostEvent(Event):
    """A post copied into events (its `id` as `post_id`, its `ts` the event's): the panel's Feed
    shows these. `of` is the one place a post becomes an event."""

    type: Literal["post"] = "post"
    seq: int
    from_: str = Field(alias="from")
    kind: Move
    text: str
    handoff: str | None = None
    post_id: str | None = None
    turn: int | str | None = None
    credit: Credit | None = None
    gate: GateNote | None = None
    notice: NoticeNote | None = None
    verdict: Literal["accept", "reopen"] | None = None
    by: str | None = None
    head: str | None = None
    rewind: dict[str, Any] | None = None

    @classmethod
    def of(cls, post: Post) -> PostEvent:
        line = post.dump()  # the post as its thread line holds it
        return cls.model_validate({("post_id" if k == "id" else k): v for k, v in line.items() if k != "ts"})


# -- a turn -----------------------------------------------------------------------------------


class TurnStartedEvent(TurnEvent):
    type: Literal["turn_started"] = "turn_started"


class TurnResumedEvent(TurnEvent):
    type: Literal["turn_resumed"] = "turn_resumed"
    step: int | None = None
    pending_tools: int | None = None


class TurnEndedEvent(TurnEvent):
    type: Literal["turn_ended"] = "turn_ended"
    steps: int | None = None
    posted: int | None = None  # the post's seq; None: the turn ended silent
    reason: str | None = None


class TurnStoppedEvent(TurnEvent):
    """A turn left open at a step boundary by `stop`; `start` continues it."""

    type: Literal["turn_stopped"] = "turn_stopped"


class SilentTurnEvent(TurnEvent):
    type: Literal["silent_turn"] = "silent_turn"
    reason: str | None = None
    streak: int | None = None


class GenerationEvent(TurnEvent):
    """One model answer: its tokens and cost (summed in status and the panel's header)."""

    type: Literal["generation"] = "generation"
    step: int | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: Number | None = None


class FailoverEvent(TurnEvent):
    type: Literal["failover"] = "failover"
    model: str | None = None
    to: str | None = None  # None: no model left, the run waits for the reset
    retry_after: Number | None = None


class RetryEvent(TurnEvent):
    type: Literal["retry"] = "retry"
    model: str | None = None
    attempt: int | None = None
    delay: Number | None = None
    error: str = ""


class CompactedEvent(TurnEvent):
    type: Literal["compacted"] = "compacted"
    step: int | None = None
    model: str | None = None
    hard: bool = False
    stubbed: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    window: int | None = None


class ContextExceededEvent(TurnEvent):
    type: Literal["context_exceeded"] = "context_exceeded"
    model: str | None = None
    error: str = ""


class ToolEvent(TurnEvent):
    """A tool call of a turn (`post` excepted)."""

    type: Literal["tool"] = "tool"
    name: str | None = None
    agent: str | None = None  # an agent CLI's own tool


class ToolInterruptedEvent(TurnEvent):
    type: Literal["tool_interrupted"] = "tool_interrupted"
    name: str | None = None
    crashes: int | None = None


class ToolCrashedEvent(TurnEvent):
    """A tool call a crash cut, found by recovery."""

    type: Literal["tool_crashed"] = "tool_crashed"
    name: str | None = None
    call_id: str | None = None
    crashes: int | None = None
    replay_safe: bool | None = None


class ToolRefusedEvent(TurnEvent):
    type: Literal["tool_refused"] = "tool_refused"
    name: str | None = None


class CommandRefusedEvent(TurnEvent):
    type: Literal["command_refused"] = "command_refused"
    command: str = ""


class GitQuarantinedEvent(TurnEvent):
    """Files a participant left that git would run or follow, moved out of the repository
    (`host/gitquarantine`)."""

    type: Literal["git_quarantined"] = "git_quarantined"
    paths: list[str] = []
    why: list[str] = []
    folder: str = ""


class BranchMovedBackEvent(TurnEvent):
    """The run's branch moved to a commit that does not hold the turn's starting commit."""

    type: Literal["branch_moved_back"] = "branch_moved_back"
    branch: str = ""
    start: str = ""  # the branch's commit when the turn began
    to: str | None = None  # where the branch is now (None: deleted)
    dropped: list[str] = []
    restored: bool = False


class TurnRecoveredEvent(TurnEvent):
    type: Literal["turn_recovered"] = "turn_recovered"
    step: int | None = None
    posted: int | None = None


class EffectsRecoveredEvent(Event):
    """A post's effects (`seq`) or a silent turn's figures (`turn`) applied on restart."""

    type: Literal["effects_recovered"] = "effects_recovered"
    seq: int | None = None
    turn: int | None = None


class NudgedEvent(TurnEvent):
    type: Literal["nudged"] = "nudged"
    agent: str | None = None
    exit_code: int | None = None


# -- an agent CLI's run -----------------------------------------------------------------------


class AgentStartedEvent(TurnEvent):
    type: Literal["agent_started"] = "agent_started"
    agent: str | None = None
    pid: int | None = None


class AgentFinishedEvent(TurnEvent):
    type: Literal["agent_finished"] = "agent_finished"
    agent: str | None = None
    exit_code: int | None = None
    timed_out: bool | None = None
    limited: bool | None = None


class AgentKilledEvent(TurnEvent):
    """A CLI a dead daemon left running, killed before the turn goes on."""

    type: Literal["agent_killed"] = "agent_killed"
    pid: int | None = None


class AgentTimeoutEvent(TurnEvent):
    type: Literal["agent_timeout"] = "agent_timeout"
    agent: str | None = None
    pid: int | None = None


class AgentTextEvent(TurnEvent):
    type: Literal["agent_text"] = "agent_text"
    agent: str | None = None
    text: str = ""


class AgentLimitEvent(TurnEvent):
    type: Literal["agent_limit"] = "agent_limit"
    agent: str | None = None
    reset_at: Number | None = None
    text: str = ""


class AgentErrorEvent(TurnEvent):
    type: Literal["agent_error"] = "agent_error"
    agent: str | None = None
    text: str = ""


# -- what a post does: waits, gates, audits, notices --------------------------------------------


class WaitEvent(TurnEvent):
    type: Literal["wait"] = "wait"
    delay: Number | None = None
    due: Number | None = None  # epoch seconds
    streak: int | None = None


class GateOpenEvent(Event):
    type: Literal["gate_open"] = "gate_open"
    id: str | None = None
    declarer: str | None = None
    text: str = ""


class GateDecidedEvent(Event):
    type: Literal["gate_decided"] = "gate_decided"
    id: str | None = None
    decision: str | None = None
    by: str | None = None


class GateUsedEvent(TurnEvent):
    type: Literal["gate_used"] = "gate_used"
    ids: list[str] = []


class AuditStartedEvent(Event):
    type: Literal["audit_started"] = "audit_started"
    seq: int | None = None
    n: int | None = None


class AuditStoppedEvent(Event):
    type: Literal["audit_stopped"] = "audit_stopped"
    seq: int | None = None
    n: int | None = None


class AuditEvent(Event):
    """The audit's verdict on a `done` post."""

    type: Literal["audit"] = "audit"
    seq: int | None = None
    accept: bool = False
    gap: str = ""
    by: str | None = None
    # What its requests spent, as the run's figures count it (the trace's audit span carries it).
    model: str | None = None  # the audit's model as team.toml names it
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class EvidenceEvent(Event):
    """The test evidence of a `done` post (SPEC §22), recorded before the audit decides: the
    counts, the ids that matter (at most `EVIDENCE_IDS` of each; the whole record is
    evidence/done-*.json in the run folder), never the tests' output."""

    type: Literal["evidence"] = "evidence"
    seq: int | None = None
    summary: str = ""
    outcome: str = ""
    command: str = ""
    chosen: str = ""
    counts: dict[str, int] = {}
    fail_to_pass: list[str] = []
    pass_to_fail: list[str] = []
    still_failing: list[str] = []
    tests_changed: list[str] = []
    reason: str = ""
    base_sec: float = 0.0
    head_sec: float = 0.0
    base_cached: bool = False


EVIDENCE_IDS = 50


class NoticeEvent(TurnEvent):
    type: Literal["notice"] = "notice"
    id: str | None = None
    text: str = ""
    hold: str | None = None


class NoticeAnsweredEvent(TurnEvent):
    type: Literal["notice_answered"] = "notice_answered"
    id: str | None = None


class NoticePinnedEvent(Event):
    type: Literal["notice_pinned"] = "notice_pinned"
    id: str | None = None


class NoticeReleasedEvent(Event):
    type: Literal["notice_released"] = "notice_released"
    id: str | None = None


class RewindEvent(Event):
    type: Literal["rewind"] = "rewind"
    n: int | None = None
    to_seq: int | None = None
    seq: int | None = None  # the rewind's note on the thread
    undo_of: int | None = None


# -- hooks, notifications, MCP servers ---------------------------------------------------------


class HookEvent(Event):
    type: Literal["hook"] = "hook"
    on: str | None = None
    subject: str | None = None
    command: str = ""
    exit: int | None = None
    ok: bool = False
    problem: str | None = None
    output: str | None = None
    seconds: Number | None = None


class NotifiedEvent(Event):
    type: Literal["notified"] = "notified"
    via: str | None = None
    state: str | None = None


class NotifyFailedEvent(Event):
    type: Literal["notify_failed"] = "notify_failed"
    via: str | None = None
    state: str | None = None
    error: str | None = None
    detail: str | None = None


class McpServerStartedEvent(Event):
    type: Literal["mcp_server_started"] = "mcp_server_started"
    server: str | None = None
    tools: list[str] = []


class McpServerRestartedEvent(Event):
    type: Literal["mcp_server_restarted"] = "mcp_server_restarted"
    server: str | None = None
    tools: list[str] = []


class McpServerDownEvent(Event):
    type: Literal["mcp_server_down"] = "mcp_server_down"
    server: str | None = None
    error: str = ""
    restart_in: Number | None = None


class McpServerReapedEvent(Event):
    """An MCP server's process group a killed daemon left, ended by the next one."""

    type: Literal["mcp_server_reaped"] = "mcp_server_reaped"
    server: str | None = None
    pgid: int | None = None


class UnknownEvent(TurnEvent):
    """A `type` this version does not know (a newer autodev wrote it): read, never refused."""


KINDS: tuple[type[Event], ...] = (
    DaemonStartedEvent,
    StateEvent,
    ControlEvent,
    WarningEvent,
    ErrorEvent,
    TeamReloadedEvent,
    ConfigRefusedEvent,
    BudgetReachedEvent,
    ScheduledEvent,
    PostEvent,
    TurnStartedEvent,
    TurnResumedEvent,
    TurnEndedEvent,
    TurnStoppedEvent,
    SilentTurnEvent,
    GenerationEvent,
    FailoverEvent,
    RetryEvent,
    CompactedEvent,
    ContextExceededEvent,
    ToolEvent,
    ToolInterruptedEvent,
    ToolCrashedEvent,
    ToolRefusedEvent,
    CommandRefusedEvent,
    GitQuarantinedEvent,
    BranchMovedBackEvent,
    TurnRecoveredEvent,
    EffectsRecoveredEvent,
    NudgedEvent,
    AgentStartedEvent,
    AgentFinishedEvent,
    AgentKilledEvent,
    AgentTimeoutEvent,
    AgentTextEvent,
    AgentLimitEvent,
    AgentErrorEvent,
    WaitEvent,
    GateOpenEvent,
    GateDecidedEvent,
    GateUsedEvent,
    AuditStartedEvent,
    AuditStoppedEvent,
    AuditEvent,
    EvidenceEvent,
    NoticeEvent,
    NoticeAnsweredEvent,
    NoticePinnedEvent,
    NoticeReleasedEvent,
    RewindEvent,
    HookEvent,
    NotifiedEvent,
    NotifyFailedEvent,
    McpServerStartedEvent,
    McpServerRestartedEvent,
    McpServerDownEvent,
    McpServerReapedEvent,
)
"""Every kind this version writes; the union below is made from it."""

EVENTS: dict[str, type[Event]] = {get_args(k.model_fields["type"].annotation)[0]: k for k in KINDS}
_UNKNOWN = "unknown"


def _kind(v: object) -> str:
    t: object = cast("dict[str, object]", v).get("type") if isinstance(v, dict) else getattr(v, "type", None)
    return t if isinstance(t, str) and t in EVENTS else _UNKNOWN


# One union on `type`, with a fallback for kinds a newer autodev writes.
AnyEvent = Annotated[
    Annotated[DaemonStartedEvent, Tag("daemon_started")]
    | Annotated[StateEvent, Tag("state")]
    | Annotated[ControlEvent, Tag("control")]
    | Annotated[WarningEvent, Tag("warning")]
    | Annotated[ErrorEvent, Tag("error")]
    | Annotated[TeamReloadedEvent, Tag("team_reloaded")]
    | Annotated[ConfigRefusedEvent, Tag("config_refused")]
    | Annotated[BudgetReachedEvent, Tag("budget_reached")]
    | Annotated[ScheduledEvent, Tag("scheduled")]
    | Annotated[PostEvent, Tag("post")]
    | Annotated[TurnStartedEvent, Tag("turn_started")]
    | Annotated[TurnResumedEvent, Tag("turn_resumed")]
    | Annotated[TurnEndedEvent, Tag("turn_ended")]
    | Annotated[TurnStoppedEvent, Tag("turn_stopped")]
    | Annotated[SilentTurnEvent, Tag("silent_turn")]
    | Annotated[GenerationEvent, Tag("generation")]
    | Annotated[FailoverEvent, Tag("failover")]
    | Annotated[RetryEvent, Tag("retry")]
    | Annotated[CompactedEvent, Tag("compacted")]
    | Annotated[ContextExceededEvent, Tag("context_exceeded")]
    | Annotated[ToolEvent, Tag("tool")]
    | Annotated[ToolInterruptedEvent, Tag("tool_interrupted")]
    | Annotated[ToolCrashedEvent, Tag("tool_crashed")]
    | Annotated[ToolRefusedEvent, Tag("tool_refused")]
    | Annotated[CommandRefusedEvent, Tag("command_refused")]
    | Annotated[GitQuarantinedEvent, Tag("git_quarantined")]
    | Annotated[BranchMovedBackEvent, Tag("branch_moved_back")]
    | Annotated[TurnRecoveredEvent, Tag("turn_recovered")]
    | Annotated[EffectsRecoveredEvent, Tag("effects_recovered")]
    | Annotated[NudgedEvent, Tag("nudged")]
    | Annotated[AgentStartedEvent, Tag("agent_started")]
    | Annotated[AgentFinishedEvent, Tag("agent_finished")]
    | Annotated[AgentKilledEvent, Tag("agent_killed")]
    | Annotated[AgentTimeoutEvent, Tag("agent_timeout")]
    | Annotated[AgentTextEvent, Tag("agent_text")]
    | Annotated[AgentLimitEvent, Tag("agent_limit")]
    | Annotated[AgentErrorEvent, Tag("agent_error")]
    | Annotated[WaitEvent, Tag("wait")]
    | Annotated[GateOpenEvent, Tag("gate_open")]
    | Annotated[GateDecidedEvent, Tag("gate_decided")]
    | Annotated[GateUsedEvent, Tag("gate_used")]
    | Annotated[AuditStartedEvent, Tag("audit_started")]
    | Annotated[AuditStoppedEvent, Tag("audit_stopped")]
    | Annotated[AuditEvent, Tag("audit")]
    | Annotated[EvidenceEvent, Tag("evidence")]
    | Annotated[NoticeEvent, Tag("notice")]
    | Annotated[NoticeAnsweredEvent, Tag("notice_answered")]
    | Annotated[NoticePinnedEvent, Tag("notice_pinned")]
    | Annotated[NoticeReleasedEvent, Tag("notice_released")]
    | Annotated[RewindEvent, Tag("rewind")]
    | Annotated[HookEvent, Tag("hook")]
    | Annotated[NotifiedEvent, Tag("notified")]
    | Annotated[NotifyFailedEvent, Tag("notify_failed")]
    | Annotated[McpServerStartedEvent, Tag("mcp_server_started")]
    | Annotated[McpServerRestartedEvent, Tag("mcp_server_restarted")]
    | Annotated[McpServerDownEvent, Tag("mcp_server_down")]
    | Annotated[McpServerReapedEvent, Tag("mcp_server_reaped")]
    | Annotated[UnknownEvent, Tag(_UNKNOWN)],
    Discriminator(_kind),
]

_adapter = TypeAdapter(AnyEvent, config=ConfigDict(defer_build=True))


def parse(rec: object) -> Event:
    """One event of the union (an unknown `type`: `UnknownEvent`); raises ValidationError."""
    return _adapter.validate_python(rec)


class Envelope(Open):
    """What every line of events.jsonl must have."""

    type: str
    ts: str
    run: str


def record(ev: Event, ts: str, run: str) -> dict[str, object]:
    """The line `emit` writes: the envelope, then the fields the emitter set, by their names
    on disk (`from`, not `from_`)."""
    fields = ev.model_dump(by_alias=True, exclude_unset=True, exclude={"type", "ts", "run", "schema_"})
    return {"type": ev.type, "ts": ts, "run": run, "schema": SCHEMA, **fields}


def readable(rec: Mapping[str, object]) -> Event | None:
    """An event for display (the panel's Feed), leniently: a field that does not fit its kind
    is left out (its default shown) rather than losing the line; None when even the kind's core
    fields are missing."""
    rec = dict(rec)
    for _ in range(len(rec) + 1):
        try:
            return parse(rec)
        except ValidationError as e:
            bad = {str(err["loc"][1]) for err in e.errors() if len(err["loc"]) > 1 and err["loc"][1] in rec}
            if not bad:
                return None
            for key in bad:
                del rec[key]
    return None
