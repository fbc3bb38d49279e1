"""events.jsonl: what a post does: waits, gates, audits and their evidence, notices, rewinds."""

# Each kind narrows the discriminator `type: str` of `Event` to its own Literal, which is what the
# union on `type` reads. Pyright calls that override unsafe because a pydantic field can be
# assigned; no event is assigned to after it is made (`emit` writes the model as built), so the
# narrowing holds: this one rule is off in the event modules only.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Literal

from autodev.records.event_base import Event, Number, TurnEvent


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
