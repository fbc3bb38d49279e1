"""Sending a run's spans and metrics: the daemon's background exporter (a turn as it finishes)
and `autodev trace export` (a stored run, after the fact). Both derive the spans from the logs
(`spans`), skip what the cursor says this collector already has (`sent`), and mark a turn only
after the collector accepted it.

The daemon never waits for a collector: finished turns go into a bounded queue that one thread
drains; a full queue or a failed export leaves the turn in the logs for `autodev trace export`
and says so once in a warning event (again only after the collector came back and went away).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypedDict, assert_never

from autodev.records.events import DaemonStartedEvent, ErrorEvent, Event, StateEvent, WarningEvent
from autodev.records.harness_log import HarnessRecord
from autodev.store.journal import JsonObject
from autodev.store.paths import RunPaths
from autodev.telemetry import reading
from autodev.telemetry.reading import Batch
from autodev.telemetry.sent import Sent
from autodev.telemetry.settings import Telemetry
from autodev.telemetry.spans import Attr, Redact, SpanEvent, epoch, workflow_span
from autodev.telemetry.turn import turn_spans

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SpanExporter

    from autodev.records.state import RunState
    from autodev.store.journal import Journal
    from autodev.telemetry.otel import Metrics


class Exported(TypedDict):
    """What `export_run` sent, skipped and failed (`autodev trace export --json` prints it)."""

    run: str
    turns: int
    spans: int
    skipped: int
    failed: int
    unfinished: int


def pauses(events: Iterable[Event]) -> list[str]:
    """The reason codes of the pauses among `events`."""
    return [
        str(ev.reason.code if ev.reason else None) or "unknown"
        for ev in events
        if isinstance(ev, StateEvent) and ev.state == "paused"
    ]


@dataclass
class Sender:
    """What one export needs: the collector, the cursor, the metrics, the settings."""

    cfg: Telemetry
    paths: RunPaths
    exporter: SpanExporter
    sent: Sent
    metrics: Metrics
    resource: Resource
    redact: Redact

    @classmethod
    def open(
        cls,
        cfg: Telemetry,
        paths: RunPaths,
        secrets: Mapping[str, str],
        redact: Redact,
        exporter: SpanExporter | None = None,
        reader: MetricReader | None = None,
    ) -> Sender:
        from autodev.telemetry import otel

        res = otel.resource()
        return cls(
            cfg,
            paths,
            exporter or otel.span_exporter(cfg, secrets),
            Sent(paths.run_dir / "telemetry.jsonl", cfg.traces_url),
            otel.Metrics(reader or otel.metric_reader(cfg, secrets), res),
            res,
            redact,
        )

    def sampled(self, run: str) -> bool:
        from autodev.telemetry import otel

        return otel.sampled(run)

    def turn(
        self, run: str, turn: int, records: Sequence[HarnessRecord], events: Sequence[Event]
    ) -> int | None:
        """Send one finished turn; the number of spans sent (0: nothing to send), None when the
        collector did not take them."""
        from autodev.telemetry import otel

        part = f"t{turn}"
        if self.sent.has(run, part):
            return 0
        spans = turn_spans(run, records, events, capture=self.cfg.capture_content, redact=self.redact)
        if not spans:
            return 0
        if self.sampled(run) and not otel.export(
            self.exporter, otel.to_sdk(run, spans, self.resource, self.cfg.latest)
        ):
            return None
        self.sent.mark(run, part, len(spans))
        self.metrics.record(spans, pauses(events))
        return len(spans)

    def root(self, run: str, state: RunState | None, rec: reading.RunRecord | None = None) -> int | None:
        """Send the run's `invoke_workflow` span (once per collector): from its first record to
        its last, with the daemon starts and state changes as events."""
        from autodev.telemetry import otel

        if self.sent.has(run, "root"):
            return 0
        rec = rec or reading.whole_run(self.paths, run)
        if rec.start is None:
            return 0
        span = workflow_span(run, rec.start, rec.end or rec.start, state)
        every = [e for group in rec.events.values() for e in group]
        span.events = list(_run_events(every, self.redact))
        if self.sampled(run) and not otel.export(
            self.exporter, otel.to_sdk(run, [span], self.resource, self.cfg.latest)
        ):
            return None
        self.sent.mark(run, "root", 1)
        self.metrics.record([], pauses(rec.events.get(None, [])))
        return 1

    def catch_up(self, run: str, below: int) -> Exported:
        """Finished turns before `below` the collector does not have (a daemon killed before its
        exporter sent them, or one that ran with telemetry off)."""
        return export_run(self, run, None, below=below)

    def close(self, timeout_sec: float) -> None:
        try:
            self.metrics.shutdown(timeout_sec * 1000)
        finally:
            self.exporter.shutdown()
            self.sent.close()


_ROOT_EVENTS = (DaemonStartedEvent, StateEvent, WarningEvent, ErrorEvent)


def _run_events(events: Iterable[Event], redact: Redact) -> Iterable[SpanEvent]:
    for ev in events:
        ts = epoch(ev.ts)
        if ts is not None and isinstance(ev, _ROOT_EVENTS):
            attrs: dict[str, Attr] = {
                f"autodev.{k}": v if isinstance(v, int | float | bool) else redact(str(v)[:500])
                for k, v in ev.dump().items()
                if k not in ("type", "ts", "run", "schema") and v is not None
            }
            yield SpanEvent(ev.type, ts, attrs)


def export_run(sender: Sender, run: str, state: RunState | None, below: int | None = None) -> Exported:
    """`autodev trace export`: every finished turn the collector does not have, then the root
    (unless `below` limits it to turns before that one). What was sent, skipped and failed."""
    rec = reading.whole_run(sender.paths, run)
    out = Exported(run=run, turns=0, spans=0, skipped=0, failed=0, unfinished=0)
    finished = set(rec.finished_turns())
    for t in sorted(rec.harness):
        if below is not None and t >= below:
            continue
        if t not in finished:
            out["unfinished"] += 1
            continue
        n = sender.turn(run, t, rec.harness[t], rec.events.get(t, []))
        if n is None:
            out["failed"] += 1
        elif n == 0:
            out["skipped"] += 1
        else:
            out["turns"] += 1
            out["spans"] += n
    if below is None:
        n = sender.root(run, state, rec)
        if n is None:
            out["failed"] += 1
        else:
            out["spans"] += n
    return out


@dataclass(frozen=True)
class _TurnJob:
    turn: int
    batch: Batch | None  # the turn's lines, handed over in memory (None: read them from the logs)


@dataclass(frozen=True)
class _CatchUp:
    below: int


@dataclass(frozen=True)
class _Root:
    state: RunState


# What the sending thread is given: a finished turn, the earlier turns to catch up on, or the
# complete run's root span; None stops it.
_Job: TypeAlias = "_TurnJob | _CatchUp | _Root"


class Background:
    """The daemon's exporter: `turn_done` never blocks; one thread sends."""

    def __init__(self, sender: Sender, run: str, warn: Callable[[str], object]):
        self.sender, self.run, self.warn = sender, run, warn
        self.queue: queue.Queue[_Job | None] = queue.Queue(maxsize=sender.cfg.queue_size)
        self._failing = False
        self._overflowing = False
        self._batch: Batch | None = None  # the lines written since the last turn done (`watch`)
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._work, name="autodev-telemetry", daemon=True)
        self.thread.start()

    def watch(self, harness_log: Journal, events: Journal) -> None:
        """Be handed each line the daemon appends to the harness log and events, so a finished
        turn is exported from memory rather than read back from the files (issue 33: the
        exporter's cost per turn). Not with content capture: a captured message must be what
        the log holds, and a turn's messages are a list the turn goes on changing."""
        if self.sender.cfg.capture_content:
            return
        self._batch = Batch()
        harness_log.tap, events.tap = self._saw_harness, self._saw_event

    def _saw_harness(self, line: JsonObject) -> None:
        with self._lock:
            if self._batch is not None:
                self._batch.harness.append(line)

    def _saw_event(self, line: JsonObject) -> None:
        with self._lock:
            if self._batch is not None:
                self._batch.events.append(line)

    def _take(self) -> Batch | None:
        with self._lock:
            batch = self._batch
            if batch is not None:
                self._batch = Batch()
            return batch

    def turn_done(self, turn: int) -> None:
        try:
            self.queue.put_nowait(_TurnJob(turn, self._take()))
            self._overflowing = False
        except queue.Full:
            if not self._overflowing:
                self._overflowing = True
                self.warn(
                    f"telemetry: the export queue is full (a slow or unreachable collector at "
                    f"{self.sender.cfg.traces_url}); turn {turn} and later ones are not exported now: "
                    "`autodev trace export` sends them"
                )

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            try:
                if item is None:
                    return
                self._send(item)
            finally:
                self.queue.task_done()

    def _run_job(self, job: _Job) -> int | None:
        match job:
            case _TurnJob():
                if self.sender.sent.has(self.run, f"t{job.turn}"):
                    return 0  # settled again after a restart: it went out before
                got = job.batch.turn(self.run, job.turn) if job.batch is not None else None
                recs, events = got or reading.one_turn(self.sender.paths, self.run, job.turn)
                return self.sender.turn(self.run, job.turn, recs, events)
            case _CatchUp():
                return None if self.sender.catch_up(self.run, job.below)["failed"] else 0
            case _Root():
                return self.sender.root(self.run, job.state)
            case _:
                assert_never(job)

    def _send(self, job: _Job) -> None:
        try:
            n = self._run_job(job)
        except Exception as e:  # telemetry never stops a run: said once, the turn stays in the logs
            n = None
            detail = f"{type(e).__name__}: {e}"
        else:
            detail = "the collector did not accept them"
        if n is None and not self._failing:
            self._failing = True
            self.warn(
                f"telemetry: export to {self.sender.cfg.traces_url} failed ({detail[:300]}); the run goes on, "
                "its spans stay in the logs: `autodev trace export` sends them"
            )
        elif n is not None:
            self._failing = False

    def catch_up(self, below: int) -> None:
        """Queue the earlier finished turns the collector may not have (at the daemon's start)."""
        try:
            self.queue.put_nowait(_CatchUp(below))
        except queue.Full:
            pass

    def close(self, state: RunState | None, timeout_sec: float) -> None:
        """Send what is queued within `timeout_sec`, and the root when the run is complete, then
        stop (what is left stays in the logs for `autodev trace export`)."""
        deadline = time.monotonic() + timeout_sec
        try:
            if state is not None and state.state == "complete":
                self.queue.put(_Root(state), timeout=max(0.01, deadline - time.monotonic()))
            self.queue.put(None, timeout=max(0.01, deadline - time.monotonic()))
        except queue.Full:
            pass
        self.thread.join(max(0.01, deadline - time.monotonic()))
        if not self.thread.is_alive():
            self.sender.close(max(0.1, deadline - time.monotonic()))
