"""Reading a run's durable record for its spans: the whole run (`autodev trace export`) or one
turn read backwards from the end of the logs (the daemon, as a turn finishes: the cost of the
turn, not of the run)."""

from __future__ import annotations

from dataclasses import dataclass, field

from autodev.store.journal import iter_records, iter_records_reverse
from autodev.store.paths import RunPaths
from autodev.telemetry.spans import epoch, group_events


@dataclass
class RunRecord:
    """A run's harness records and events, by turn (events before the first turn: key None)."""

    run: str
    harness: dict[int, list[dict]] = field(default_factory=dict)
    events: dict[int | None, list[dict]] = field(default_factory=dict)
    start: float | None = None
    end: float | None = None

    def finished_turns(self) -> list[int]:
        """Turns whose turn_finished is in the log, in order."""
        return [
            t
            for t, recs in sorted(self.harness.items())
            if any(r.get("type") == "turn_finished" for r in recs)
        ]


def _mine(rec: dict, run: str) -> bool:
    return rec.get("run") == run


def whole_run(paths: RunPaths, run: str) -> RunRecord:
    """Every record of `run` in the run folder's harness log and events."""
    out = RunRecord(run)
    times: list[float] = []
    if paths.harness_log.exists():
        for rec in iter_records(paths.harness_log):
            if _mine(rec, run) and isinstance(turn := rec.get("turn"), int):
                out.harness.setdefault(turn, []).append(rec)
    if paths.events.exists():
        events = [e for e in iter_records(paths.events) if _mine(e, run)]
        out.events = group_events(events)
        times = [x for x in (epoch(e.get("ts")) for e in events) if x is not None]
    for recs in out.harness.values():
        times += [x for x in (epoch(r.get("ts")) for r in recs) if x is not None]
    if times:
        out.start, out.end = min(times), max(times)
    return out


def one_turn(paths: RunPaths, run: str, turn: int) -> tuple[list[dict], list[dict]]:
    """(harness records, events) of one turn, read backwards from the end of both logs until the
    turn's beginning (its turn_started; its `scheduled` event), in file order."""
    recs: list[dict] = []
    for rec in iter_records_reverse(paths.harness_log):
        t = rec.get("turn")
        if not _mine(rec, run) or not isinstance(t, int):
            continue
        if t < turn:
            break
        if t == turn:
            recs.append(rec)
            if rec.get("type") == "turn_started":
                break
    recs.reverse()
    events: list[dict] = []
    for ev in iter_records_reverse(paths.events):
        if not _mine(ev, run):
            continue
        t = ev.get("turn")
        if isinstance(t, int) and not isinstance(t, bool) and t < turn:
            break
        events.append(ev)
        if ev.get("type") == "scheduled" and t == turn:
            break
    events.reverse()
    return recs, group_events(events).get(turn, [])
