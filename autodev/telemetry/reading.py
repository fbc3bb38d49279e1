"""Reading a run's durable record for its spans, each line parsed here into its record (a
`HarnessRecord`, an `Event`): the whole run (`autodev trace export`), one turn read backwards
from the end of the logs (a turn the daemon settled after a restart), or one turn from the lines
the daemon just wrote (`Batch`: handed to the exporter's process over its pipe, not read back)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import ValidationError

from autodev import records
from autodev.records.harness_log import HarnessRecord, TurnFinished, TurnStarted
from autodev.store.journal import JsonObject, iter_records, iter_records_reverse
from autodev.telemetry.spans import epoch, group_events, turn_of

if TYPE_CHECKING:
    from autodev.records.events import Event
    from autodev.store.paths import RunPaths


@dataclass
class RunRecord:
    """A run's harness records and events, by turn (events before the first turn: key None)."""

    run: str
    harness: dict[int, list[HarnessRecord]] = field(default_factory=dict[int, list[HarnessRecord]])
    events: dict[int | None, list[Event]] = field(default_factory=dict[int | None, list["Event"]])
    start: float | None = None
    end: float | None = None

    def finished_turns(self) -> list[int]:
        """Turns whose turn_finished is in the log, in order."""
        return [
            t for t, recs in sorted(self.harness.items()) if any(isinstance(r, TurnFinished) for r in recs)
        ]


def harness(line: JsonObject) -> HarnessRecord | None:
    """A harness-log line as its record; None for one that does not parse (never written so:
    the log refuses it; telemetry skips rather than stops)."""
    try:
        return records.harness(line)
    except ValidationError:
        return None


def event(line: JsonObject) -> Event | None:
    """An events.jsonl line as its event; None for one that does not parse."""
    try:
        return records.event(line)
    except ValidationError:
        return None


def _harness_of(lines: Iterable[JsonObject], run: str) -> Iterable[HarnessRecord]:
    for line in lines:
        rec = harness(line)
        if rec is not None and rec.run == run:
            yield rec


def _events_of(lines: Iterable[JsonObject], run: str) -> Iterable[Event]:
    for line in lines:
        ev = event(line)
        if ev is not None and ev.run == run:
            yield ev


def whole_run(paths: RunPaths, run: str) -> RunRecord:
    """Every record of `run` in the run folder's harness log and events."""
    out = RunRecord(run)
    times: list[float] = []
    if paths.harness_log.exists():
        for rec in _harness_of(iter_records(paths.harness_log), run):
            out.harness.setdefault(rec.turn, []).append(rec)
    if paths.events.exists():
        events = list(_events_of(iter_records(paths.events), run))
        out.events = group_events(events)
        times = [x for x in (epoch(e.ts) for e in events) if x is not None]
    for recs in out.harness.values():
        times += [x for x in (epoch(r.ts) for r in recs) if x is not None]
    if times:
        out.start, out.end = min(times), max(times)
    return out


def one_turn(paths: RunPaths, run: str, turn: int) -> tuple[list[HarnessRecord], list[Event]]:
    """(harness records, events) of one turn, read backwards from the end of both logs until the
    turn's beginning (its turn_started; its `scheduled` event), in file order."""
    return _turn_from(_harness_of(iter_records_reverse(paths.harness_log), run), turn), _events_from(
        _events_of(iter_records_reverse(paths.events), run), turn
    )


def _turn_from(newest_first: Iterable[HarnessRecord], turn: int) -> list[HarnessRecord]:
    """The turn's records, from the newest back to its (last) turn_started, in file order."""
    recs: list[HarnessRecord] = []
    for rec in newest_first:
        if rec.turn < turn:
            break
        if rec.turn == turn:
            recs.append(rec)
            if isinstance(rec, TurnStarted):
                break
    recs.reverse()
    return recs


def _events_from(newest_first: Iterable[Event], turn: int) -> list[Event]:
    """The turn's events, from the newest back to its `scheduled` event, in file order."""
    from autodev.records.events import ScheduledEvent

    events: list[Event] = []
    for ev in newest_first:
        t = turn_of(ev)
        if t is not None and t < turn:
            break
        events.append(ev)
        if isinstance(ev, ScheduledEvent) and t == turn:
            break
    events.reverse()
    return group_events(events).get(turn, [])


@dataclass
class Batch:
    """The lines the daemon wrote to both logs since the last turn it handed over (the journals'
    `tap`), handed to the exporter when a turn is done instead of read back from the files."""

    harness: list[JsonObject] = field(default_factory=list[JsonObject])
    events: list[JsonObject] = field(default_factory=list[JsonObject])

    def turn(self, run: str, turn: int) -> tuple[list[HarnessRecord], list[Event]] | None:
        """What `one_turn` would read for `turn`, or None when these lines do not hold its
        beginning and its end (it began before this daemon: read the files)."""
        from autodev.records.events import ScheduledEvent

        recs = _turn_from(reversed(list(_harness_of(self.harness, run))), turn)
        events = list(_events_of(self.events, run))
        if not (recs and isinstance(recs[0], TurnStarted) and any(isinstance(r, TurnFinished) for r in recs)):
            return None
        if not any(isinstance(e, ScheduledEvent) and turn_of(e) == turn for e in events):
            return None
        return recs, _events_from(reversed(events), turn)
