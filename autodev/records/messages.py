"""What the user asks for: inbox/*.json messages (a union on `kind`). Events are events.py."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

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


AnyInbox = SendMessage | AnswerMessage | ApproveMessage | DenyMessage | NoticeMessage
"""Every inbox kind: the one list of them (the daemon dispatches on it with `match`)."""
InboxMessage = Annotated[AnyInbox, Field(discriminator="kind")]


def _kind(model: type[_Inbox]) -> str:
    kind: str = get_args(model.model_fields["kind"].annotation)[0]
    return kind


INBOX: dict[str, type[_Inbox]] = {_kind(m): m for m in get_args(AnyInbox)}
