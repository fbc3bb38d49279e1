"""Sending a run's spans and metrics: one turn, several at once (the daemon's exporter,
`background`), the run's root, or a stored run after the fact (`autodev trace export`). The spans
are derived from the records (`turn`), what the cursor says this collector already has is
skipped (`sent`), and a turn is marked only after the collector accepted it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from autodev.records.events import DaemonStartedEvent, ErrorEvent, Event, StateEvent, WarningEvent
from autodev.records.harness_log import HarnessRecord
from autodev.store.paths import RunPaths
from autodev.telemetry import reading
from autodev.telemetry.sent import Sent
from autodev.telemetry.settings import Telemetry
from autodev.telemetry.spans import Attr, Redact, Span, SpanEvent, epoch, workflow_span
from autodev.telemetry.turn import turn_spans

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SpanExporter

    from autodev.records.state import RunState
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
class Prepared:
    """A finished turn's spans, ready to go out (alone, or with the next ones: `Background`)."""

    turn: int
    spans: list[Span]
    pauses: list[str]  # the reason codes of the pauses that followed it (a metric)


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

    def prepare(
        self, run: str, turn: int, records: Sequence[HarnessRecord], events: Sequence[Event]
    ) -> Prepared | None:
        """One finished turn's spans, ready to send; None when there is nothing to send (this
        collector has it, or the turn has not finished)."""
        if self.sent.has(run, f"t{turn}"):
            return None
        spans = turn_spans(run, records, events, capture=self.cfg.capture_content, redact=self.redact)
        return Prepared(turn, spans, pauses(events)) if spans else None

    def send(self, run: str, turns: Sequence[Prepared]) -> bool:
        """Export `turns` in one request; once the collector took them, mark each turn sent and
        record its metrics. False when the collector did not take them."""
        from autodev.telemetry import otel

        spans = [s for p in turns for s in p.spans]
        if self.sampled(run) and not otel.export(
            self.exporter, otel.to_sdk(run, spans, self.resource, self.cfg.latest)
        ):
            return False
        for p in turns:
            self.sent.mark(run, f"t{p.turn}", len(p.spans))
            self.metrics.record(p.spans, p.pauses)
        return True

    def turn(
        self, run: str, turn: int, records: Sequence[HarnessRecord], events: Sequence[Event]
    ) -> int | None:
        """Send one finished turn; the number of spans sent (0: nothing to send), None when the
        collector did not take them."""
        ready = self.prepare(run, turn, records, events)
        if ready is None:
            return 0
        return len(ready.spans) if self.send(run, [ready]) else None

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
