"""rewinds.jsonl: a rewind's intent and its end (autodev/timeline/rewind.py). The intent holds
all a crashed rewind needs to be finished by the next owner of the run, so it is written whole
before the first step; the fields are in the order the file has always had them."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autodev.records.base import Open


class RewindStarted(Open):
    type: Literal["rewind_started"]
    id: str  # rewind-<n>
    n: int
    last_seq: int  # the thread's last post when it was asked
    head_before: str | None  # None: the branch had no commit
    branch: str | None  # None: a detached HEAD
    ts: str
    to_seq: int
    target: str  # the commit the branch goes back to
    restore: str | None  # an undo: the commit of the uncommitted work to put back
    undo_of: int | None


class RewindFinished(Open):
    type: Literal["rewind_finished"]
    id: str  # rewind-<n>:done
    n: int
    note_seq: int
    ts: str


RewindRecord = Annotated[RewindStarted | RewindFinished, Field(discriminator="type")]
