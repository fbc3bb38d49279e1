"""What the user asks for: inbox/*.json messages (a union on `kind`). Events are events.py."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autodev.records.base import Open


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
