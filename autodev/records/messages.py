"""What is exchanged rather than kept as state: events.jsonl lines (an envelope, typed where a
reader relies on fields) and inbox/*.json messages (a union on `kind`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autodev.records.base import SCHEMA, Open, State
from autodev.records.state import Reason


class Event(Open):
    """Every event: its type, time and run (SPEC §3); the rest is the type's own, additive."""

    type: str
    ts: str
    run: str
    schema_: int = Field(default=SCHEMA, alias="schema")


class PostEvent(Event):
    """A post copied into events (its `id` as `post_id`): the panel's Feed shows these."""

    seq: int
    from_: str = Field(alias="from")
    kind: str
    text: str


class GenerationEvent(Event):
    participant: str
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None


class StateEvent(Event):
    state: State
    reason: Reason | None = None


EVENTS: dict[str, type[Event]] = {"post": PostEvent, "generation": GenerationEvent, "state": StateEvent}


class _Inbox(Open):
    id: str = Field(min_length=1)
    ts: str | None = None


class SendMessage(_Inbox):
    kind: Literal["send"]
    text: str


class AnswerMessage(_Inbox):
    kind: Literal["answer"]
    notice_id: str
    text: str


class ApproveMessage(_Inbox):
    kind: Literal["approve"]
    gate_id: str | None = None
    digest: str | None = None  # display.digest of the gate text the user approved


class DenyMessage(_Inbox):
    kind: Literal["deny"]
    gate_id: str | None = None
    reason: str | None = None


class NoticeMessage(_Inbox):
    kind: Literal["notice"]
    notice_id: str
    action: str


INBOX: dict[str, type[_Inbox]] = {
    "send": SendMessage,
    "answer": AnswerMessage,
    "approve": ApproveMessage,
    "deny": DenyMessage,
    "notice": NoticeMessage,
}
InboxMessage = Annotated[
    SendMessage | AnswerMessage | ApproveMessage | DenyMessage | NoticeMessage, Field(discriminator="kind")
]
