"""thread.jsonl: one post (SPEC §3) and the notes a system post carries."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from autodev.records.base import Move, Open


class Credit(Open):
    """A work_done's credit (harness/credit.py): commits newest first, or the files changed; a
    rewrite adds `removed` (an extra)."""

    commits: list[str] = []
    files: list[str] = []


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


class RewindNote(Open):
    """A rewind's system note (timeline/rewind.py): posts after `to_seq` are superseded. The
    fields in the order the note writes them; a note read from an older line may lack the last."""

    n: int
    to_seq: int
    from_seq: int | None = None  # the thread's last post when it was asked
    head: str | None = None  # the commit the branch went back to
    ref: str | None = None  # where the work the superseded posts left is kept
    undo_of: int | None = None  # an undo: the rewind it undoes


class Post(Open):
    """One line of thread.jsonl (SPEC §3). A post has three forms: the `post` tool's arguments,
    this model, and its line (`dump`); events.jsonl carries the model too (`PostEvent`).

    A post is drafted (`draft`, by `rules.moves.check_post` or a note's author) without its seq
    and time; `Thread.append` stamps both and writes the line."""

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
    rewind: RewindNote | None = None  # a system note: posts after `to_seq` are superseded

    @classmethod
    def draft(cls, frm: str, kind: Move, text: str, handoff: str | None = None, **notes: object) -> Post:
        """A post before the thread numbers it: its seq and ts are placeholders (`DRAFT_SEQ`, "")
        that `Thread.append` replaces. `handoff` is always on the line, even when None; a note
        of None is left out (see `noted`)."""
        line = {"seq": DRAFT_SEQ, "from": frm, "kind": kind, "text": text, "handoff": handoff, "ts": ""}
        return cls.model_validate({**line, **_kept(notes)})

    def noted(self, **notes: object) -> Post:
        """This draft with `notes` (fields such as `id`, `turn`, `head`, or extras), in the order
        given after the fields a post has: a note of None is left out, but a work_done's
        `credit` of None is kept (its line says "not credited")."""
        return self.but(**_kept(notes))

    def stamped(self, seq: int, ts: str) -> Post:
        """This draft numbered and timed by the thread (both were set as placeholders)."""
        return self.model_copy(update={"seq": seq, "ts": ts})

    @property
    def credited(self) -> bool:
        """work_done with credited work (commits or changed files) on its line."""
        return self.kind == "work_done" and self.credit is not None and bool(self.credit.dump())


DRAFT_SEQ = 1  # a draft's seq until the thread stamps it: any valid seq, never written


def _kept(notes: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in notes.items() if v is not None or k == "credit"}
