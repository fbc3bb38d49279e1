"""What every record shares: the Open base (extra fields kept), the schema number, the moves
and the run states."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

SCHEMA = 1  # state.json's and events.jsonl's `schema` (state.SCHEMA, events.SCHEMA: a test keeps them equal)

Move = Literal["say", "work_done", "handoff", "wait", "gate", "done"]
State = Literal[
    "running", "waiting", "awaiting_user", "gated", "auditing", "paused", "stopped", "complete", "faulted"
]


class Open(BaseModel):
    """A record read from a file: fields a newer autodev added are kept, not refused."""

    # defer_build: a class costs its schema only when it first validates (cold commands stay fast)
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)
