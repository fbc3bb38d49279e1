"""events.jsonl: every kind of event as a model, in one union on `type`.

The kinds are models in three modules by family (events_run.py: the run, the daemon, posts,
hooks and MCP servers; events_turn.py: a turn and an agent CLI; events_effects.py: waits, gates,
audits, notices, rewinds) on the base of event_base.py; all of them are importable from here.

An event is written by `store.events.Events.emit(model)`: the envelope (`type`, `ts`, `run`,
`schema`) first, then the fields the emitter set (`exclude_unset`: a field left at its default
is not written, one set to None is written as null), so a line is what the emitter said.

Reading is additive (SPEC §3): fields a newer autodev adds are kept (`Open`), every field but a
kind's core has a default so lines written before it existed still load, and a `type` this
version does not know reads as `UnknownEvent` instead of failing: events.jsonl is a log people
and tools read, never one the run depends on to go on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, cast, get_args

from pydantic import ConfigDict, Discriminator, Tag, TypeAdapter, ValidationError

from autodev.records.base import SCHEMA, Open
from autodev.records.event_base import (
    Event,
    Number,
    TurnEvent,
    UnknownEvent,
)
from autodev.records.events_effects import (
    EVIDENCE_IDS,
    AuditEvent,
    AuditStartedEvent,
    AuditStoppedEvent,
    EvidenceEvent,
    GateDecidedEvent,
    GateOpenEvent,
    GateUsedEvent,
    NoticeAnsweredEvent,
    NoticeEvent,
    NoticePinnedEvent,
    NoticeReleasedEvent,
    RewindEvent,
    WaitEvent,
)
from autodev.records.events_run import (
    EVENT_KEYS,
    BudgetReachedEvent,
    ConfigRefusedEvent,
    ControlEvent,
    DaemonStartedEvent,
    ErrorEvent,
    HookEvent,
    LeftoverKilledEvent,
    McpServerDownEvent,
    McpServerReapedEvent,
    McpServerRestartedEvent,
    McpServerStartedEvent,
    NotifiedEvent,
    NotifyFailedEvent,
    PostEvent,
    ScheduledEvent,
    StateEvent,
    TeamReloadedEvent,
    WarningEvent,
)
from autodev.records.events_turn import (
    AgentErrorEvent,
    AgentFinishedEvent,
    AgentKilledEvent,
    AgentLimitEvent,
    AgentStartedEvent,
    AgentTextEvent,
    AgentTimeoutEvent,
    BranchMovedBackEvent,
    CommandRefusedEvent,
    CompactedEvent,
    ContextExceededEvent,
    EffectsRecoveredEvent,
    FailoverEvent,
    GenerationEvent,
    GitQuarantinedEvent,
    NudgedEvent,
    RetryEvent,
    SilentTurnEvent,
    ToolCrashedEvent,
    ToolEvent,
    ToolInterruptedEvent,
    ToolRefusedEvent,
    TurnEndedEvent,
    TurnRecoveredEvent,
    TurnResumedEvent,
    TurnStartedEvent,
    TurnStoppedEvent,
)

__all__ = [  # the kinds and their base, for `from autodev.records.events import ...`
    "AgentErrorEvent",
    "AgentFinishedEvent",
    "AgentKilledEvent",
    "AgentLimitEvent",
    "AgentStartedEvent",
    "AgentTextEvent",
    "AgentTimeoutEvent",
    "AuditEvent",
    "AuditStartedEvent",
    "AuditStoppedEvent",
    "BranchMovedBackEvent",
    "BudgetReachedEvent",
    "CommandRefusedEvent",
    "CompactedEvent",
    "ConfigRefusedEvent",
    "ContextExceededEvent",
    "ControlEvent",
    "DaemonStartedEvent",
    "EVIDENCE_IDS",
    "EffectsRecoveredEvent",
    "ErrorEvent",
    "Event",
    "EvidenceEvent",
    "FailoverEvent",
    "GateDecidedEvent",
    "GateOpenEvent",
    "GateUsedEvent",
    "GenerationEvent",
    "GitQuarantinedEvent",
    "HookEvent",
    "McpServerDownEvent",
    "LeftoverKilledEvent",
    "McpServerReapedEvent",
    "McpServerRestartedEvent",
    "McpServerStartedEvent",
    "NoticeAnsweredEvent",
    "NoticeEvent",
    "NoticePinnedEvent",
    "NoticeReleasedEvent",
    "NotifiedEvent",
    "NotifyFailedEvent",
    "NudgedEvent",
    "Number",
    "PostEvent",
    "RetryEvent",
    "RewindEvent",
    "ScheduledEvent",
    "SilentTurnEvent",
    "StateEvent",
    "TeamReloadedEvent",
    "ToolCrashedEvent",
    "ToolEvent",
    "ToolInterruptedEvent",
    "ToolRefusedEvent",
    "TurnEndedEvent",
    "TurnEvent",
    "TurnRecoveredEvent",
    "TurnResumedEvent",
    "TurnStartedEvent",
    "TurnStoppedEvent",
    "UnknownEvent",
    "WaitEvent",
    "WarningEvent",
]

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
    LeftoverKilledEvent,
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
    | Annotated[LeftoverKilledEvent, Tag("leftover_killed")]
    | Annotated[UnknownEvent, Tag(_UNKNOWN)],
    Discriminator(_kind),
]

_adapter = TypeAdapter(AnyEvent, config=ConfigDict(defer_build=True))


def build_schemas() -> None:
    """The envelope's and the union's validators, built now (`records.build_log_schemas`)."""
    Envelope.model_rebuild(force=True)
    _adapter.rebuild(force=True)


def parse(rec: object) -> AnyEvent:
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
    return {"type": ev.type, "ts": ts, "run": run, "schema": SCHEMA, **ev.fields()}


def readable(rec: Mapping[str, object]) -> AnyEvent | None:
    """An event for display (the panel's Feed), leniently: a field that does not fit its kind
    is left out (its default shown) rather than losing the line; None when even the kind's core
    fields are missing."""
    rec = dict(rec)
    for _ in range(len(rec) + 1):
        try:
            return parse(rec)
        except ValidationError as e:
            bad = {key for err in e.errors() if (key := _key(err["loc"])) in rec}
            if not bad:
                return None
            for key in bad:
                del rec[key]
    return None


def _key(loc: tuple[int | str, ...]) -> str:
    """The key of a line an error is about: `loc` starts with the kind's tag, then the field (a
    post event's post fields are one deeper, under `post`)."""
    if loc[:2] == ("post", "post") and len(loc) > 2:
        return EVENT_KEYS.get(str(loc[2]), str(loc[2]))
    return str(loc[1]) if len(loc) > 1 else ""
