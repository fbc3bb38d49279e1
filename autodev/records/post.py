"""thread.jsonl: one post (SPEC §3) and the notes a system post carries."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from autodev.records.base import Move, Open


class Credit(Open):
    commits: list[Any] = []
    files: list[Any] = []


class GateNote(Open):
    id: str
    decision: str | None = None
    declarer: str | None = None
    by: str | None = None


class NoticeNote(Open):
    id: str
    from_: str | None = Field(default=None, alias="from")
    hold: str | None = None
    answered: bool | None = None


class Post(Open):
    """One line of thread.jsonl (SPEC §3)."""

    seq: int = Field(ge=1)
    from_: str = Field(alias="from")
    kind: Move
    text: str
    handoff: str | None = None
    ts: str
    id: str | None = None  # a provisioned id: appending it twice writes it once
    turn: int | str | None = None  # the daemon writes the turn number; the SPEC leaves it open
    credit: Credit | None = None  # work_done: null when not credited
    gate: GateNote | None = None  # a system note of a gate decision
    notice: NoticeNote | None = None  # a system note of a notice or its answer
    verdict: Literal["accept", "reopen"] | None = None  # the audit's note
    by: str | None = None  # who reopened: the model, or the check
    head: str | None = (
        None  # HEAD when a participant posted, or a notice was raised mid-turn (rewind's target)
    )
    rewind: dict[str, Any] | None = None  # a system note: posts after `to_seq` are superseded

    @property
    def credited(self) -> bool:
        """work_done with credited work (commits or changed files) on its line."""
        return self.kind == "work_done" and self.credit is not None and bool(self.credit.dump())
