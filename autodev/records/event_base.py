"""events.jsonl: what every event shares (the envelope; a turn's participant and number).

The kinds are in events_run.py, events_turn.py and events_effects.py; events.py makes them one
union and reads and writes the lines.
"""

from __future__ import annotations

from pydantic import Field

from autodev.records.base import SCHEMA, Open

Number = int | float  # written as the emitter gave it: an int stays an int on disk


class Event(Open):
    """Every event: its type, time and run (SPEC §3); the rest is the type's own, additive.

    `ts` and `run` are the envelope `emit` fills in; a line read from the file must have them
    (`records.event` checks)."""

    type: str
    ts: str = ""
    run: str = ""
    schema_: int = Field(default=SCHEMA, alias="schema")

    def fields(self) -> dict[str, object]:
        """What its line holds after the envelope: the fields its emitter set (`exclude_unset`),
        by their names on disk (`from`, not `from_`)."""
        return self.model_dump(by_alias=True, exclude_unset=True, exclude={"type", "ts", "run", "schema_"})


class TurnEvent(Event):
    """An event of a participant (and, inside a turn, of that turn): `TurnContext.emit` fills
    both in."""

    participant: str | None = None
    turn: int | None = None


class UnknownEvent(TurnEvent):
    """A `type` this version does not know (a newer autodev wrote it): read, never refused."""
