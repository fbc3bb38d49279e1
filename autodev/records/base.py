"""What every record shares: the Open base (extra fields kept), the schema number, the moves
and the run states."""

from __future__ import annotations

from typing import Literal, Self

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

    def but(self, **changes: object) -> Self:
        """A copy with `changes` (by field name; a model or its plain form), validated. What was
        set stays set and the changed fields become set, so a write of the copy keeps every key
        the file had (and the extras a newer autodev added) and adds the changed ones."""
        data = self._plain()
        fields = type(self).model_fields
        for name, value in changes.items():
            data[fields[name].alias or name if name in fields else name] = value
        return type(self).model_validate(data)

    def without(self, *names: str) -> Self:
        """A copy with `names` unset: back to their defaults, and not written."""
        data = self._plain()
        fields = type(self).model_fields
        for name in names:
            data.pop(fields[name].alias or name if name in fields else name, None)
        return type(self).model_validate(data)

    def dump(self) -> dict[str, object]:
        """The record as its file holds it: file names of fields, only what was set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def set_fields(self) -> dict[str, object]:
        """The fields that were set (read from the file or changed), by field name."""
        return {name: getattr(self, name) for name in self.model_fields_set}

    def _plain(self) -> dict[str, object]:
        return self.model_dump(by_alias=True, exclude_unset=True)
