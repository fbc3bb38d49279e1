"""What a turn's events add to its spans: the scheduler's rule and the post on the turn, the
audit as a child span (with its evidence and its model call), and the events of the turn and of
its model requests as span events. Pure: no OpenTelemetry import, no I/O."""

from __future__ import annotations

from collections.abc import Sequence

from autodev.records.events import (
    AuditEvent,
    AuditStartedEvent,
    AuditStoppedEvent,
    BranchMovedBackEvent,
    BudgetReachedEvent,
    CommandRefusedEvent,
    CompactedEvent,
    ContextExceededEvent,
    ErrorEvent,
    Event,
    EvidenceEvent,
    FailoverEvent,
    GateUsedEvent,
    GitQuarantinedEvent,
    NoticeAnsweredEvent,
    NoticeEvent,
    NudgedEvent,
    PostEvent,
    RetryEvent,
    ScheduledEvent,
    SilentTurnEvent,
    StateEvent,
    ToolCrashedEvent,
    ToolInterruptedEvent,
    ToolRefusedEvent,
    TurnRecoveredEvent,
    TurnResumedEvent,
    TurnStoppedEvent,
    WarningEvent,
)
from autodev.telemetry.spans import Attr, Redact, Span, SpanEvent, Turn, epoch, provider_of, scalar

# Events of a turn that become events of its span (the rest are spans or attributes already).
TURN_EVENTS: tuple[type[Event], ...] = (
    TurnResumedEvent,
    TurnRecoveredEvent,
    ToolCrashedEvent,
    ToolInterruptedEvent,
    NudgedEvent,
    NoticeEvent,
    NoticeAnsweredEvent,
    GateUsedEvent,
    ToolRefusedEvent,
    CommandRefusedEvent,
    GitQuarantinedEvent,
    BranchMovedBackEvent,
    BudgetReachedEvent,
    SilentTurnEvent,
    TurnStoppedEvent,
    ErrorEvent,
    WarningEvent,
    StateEvent,
)
# Events of a model request: on its chat span.
CHAT_EVENTS: tuple[type[Event], ...] = (FailoverEvent, RetryEvent, CompactedEvent, ContextExceededEvent)
# The envelope: not an attribute of a span event (a chat event's participant is its turn's).
_ENVELOPE = frozenset({"type", "ts", "run", "schema", "turn"})
_CHAT_ENVELOPE = _ENVELOPE | {"participant"}


def apply_events(t: Turn, turn: Span, events: Sequence[Event]) -> None:
    """Add `events` (the turn's, in order) to `turn` and to its requests' spans; an audit's
    span joins the turn's children."""
    audits: dict[int | None, Span] = {}
    for ev in events:
        ts = epoch(ev.ts)
        if ts is None:
            continue
        match ev:
            case ScheduledEvent():
                turn.attributes["autodev.rules.scheduler.rule"] = (
                    str(ev.rule) if "rule" in ev.model_fields_set else ""
                )
            case PostEvent():
                _post(turn, ev)
            case AuditStartedEvent():
                attrs: dict[str, Attr] = {} if ev.seq is None else {"autodev.harness.audit.seq": ev.seq}
                audits[ev.seq] = Span(f"{t.key}:audit:{ev.seq}", "audit", t.key, ts, ts, attrs)
            case AuditEvent() if ev.seq in audits:
                _audit(audits[ev.seq], ev, ts)
            case EvidenceEvent() if ev.seq in audits:
                _evidence(audits[ev.seq], ev, t.redact)
            case AuditStoppedEvent() if ev.seq in audits:
                audits[ev.seq].end, audits[ev.seq].error = ts, "stopped"
            case _ if isinstance(ev, CHAT_EVENTS):
                line = ev.dump()
                step = line.get("step", t.step)
                chat = t.chats.get(step) if isinstance(step, int) else None
                target = chat or turn
                target.events.append(SpanEvent(ev.type, ts, _attributes(line, _CHAT_ENVELOPE, t.redact)))
            case _ if isinstance(ev, TURN_EVENTS):
                turn.events.append(SpanEvent(ev.type, ts, _attributes(ev.dump(), _ENVELOPE, t.redact)))
            case _:
                pass
    t.last = max([t.last or 0.0, *(a.end for a in audits.values())])
    for span in audits.values():
        t.agents.append(span)  # children of the turn like an agent run (exported with it)


def _attributes(line: dict[str, object], envelope: frozenset[str], redact: Redact) -> dict[str, Attr]:
    """An event's own fields, as its line holds them, as span-event attributes."""
    return {f"autodev.{k}": scalar(v, redact) for k, v in line.items() if k not in envelope}


def _post(turn: Span, ev: PostEvent) -> None:
    post = ev.post
    for k, v in (("kind", post.kind), ("handoff", post.handoff), ("seq", post.seq)):
        if v is not None:
            turn.attributes[f"autodev.post.{k}"] = v
    if post.kind == "work_done":
        commits = post.credit.commits if post.credit else []
        files = post.credit.files if post.credit else []
        turn.attributes["autodev.harness.credit"] = (
            f"commits:{len(commits)}" if commits else f"files:{len(files)}" if files else "none"
        )


def _audit(span: Span, ev: AuditEvent, ts: float) -> None:
    span.end = ts
    span.attributes["autodev.harness.audit.accept"] = ev.accept
    span.attributes["autodev.harness.audit.by"] = ev.by or ""
    if ev.model and (ev.by == "model" or ev.prompt_tokens):
        # its model call: tokens and cost, so the trace adds up to `status`
        provider, model = provider_of(None, ev.model)
        span.attributes.update(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.agent.name": "audit",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "gen_ai.usage.input_tokens": ev.prompt_tokens,
                "gen_ai.usage.output_tokens": ev.completion_tokens,
                "autodev.cost_usd": ev.cost,
            }
        )


def _evidence(span: Span, ev: EvidenceEvent, redact: Redact) -> None:
    # counts and the outcome, never the tests' output or ids (SPEC §22)
    span.attributes["autodev.evidence.outcome"] = ev.outcome
    span.attributes["autodev.evidence.command"] = redact(ev.command)
    for k, v in ev.counts.items():
        span.attributes[f"autodev.evidence.{k}"] = v
