"""The OpenTelemetry SDK side: our plain spans as SDK spans with the derived ids, the OTLP/HTTP
exporters, and the GenAI metrics. Imported only when telemetry is on (or by `trace export`).

Spans are built as finished `ReadableSpan`s, not through a tracer: their times and ids come
from the log, not from the moment of export. The sampler of OTEL_TRACES_SAMPLER is asked once
per run, about its root (the trace id is the run's), so a run is exported whole or not at all.

Semantic conventions: the GenAI conventions' current Development version. Without
OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental the spans also carry `gen_ai.system`
(the name before `gen_ai.provider.name`) for receivers that still read it; with it, only the
latest names are emitted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import (  # the sampler OTEL_TRACES_SAMPLER names: no public way to it
    Decision,
    Sampler,
    _get_from_env_or_default,  # pyright: ignore[reportPrivateUsage]  # OTel SDK: no public way to it
)
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import AttributeValue

from autodev import __version__
from autodev.telemetry.settings import Telemetry, headers
from autodev.telemetry.spans import Attr, Span, span_id, trace_id

SCOPE = InstrumentationScope("autodev", __version__, "https://opentelemetry.io/schemas/1.41.0")
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]


def resource() -> Resource:
    """service.name from OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES, else "autodev"."""
    import os

    attrs: dict[str, AttributeValue] = {"service.version": __version__}
    if not os.environ.get("OTEL_SERVICE_NAME") and "service.name=" not in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    ):
        attrs["service.name"] = "autodev"
    return Resource.create(attrs)


def sampled(run: str, sampler: Sampler | None = None) -> bool:
    """Whether the sampler (OTEL_TRACES_SAMPLER's, by default) keeps this run's trace."""
    s = sampler or _get_from_env_or_default()
    return (
        s.should_sample(None, trace_id(run), f"invoke_workflow {run}").decision == Decision.RECORD_AND_SAMPLE
    )


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


def to_sdk(run: str, spans: Sequence[Span], res: Resource, latest: bool = False) -> list[ReadableSpan]:
    """Our spans as SDK spans of the run's trace, ids derived from their keys."""
    tid = trace_id(run)
    flags = TraceFlags(TraceFlags.SAMPLED)
    out: list[ReadableSpan] = []
    for s in spans:
        attrs: dict[str, Attr] = dict(s.attributes)
        if not latest and "gen_ai.provider.name" in attrs:
            attrs["gen_ai.system"] = attrs["gen_ai.provider.name"]
        if s.error:
            attrs["error.type"] = s.error
        parent = SpanContext(tid, span_id(s.parent), False, flags) if s.parent is not None else None
        out.append(
            ReadableSpan(
                name=s.name,
                context=SpanContext(tid, span_id(s.key), False, flags),
                parent=parent,
                resource=res,
                attributes=attrs,
                events=[Event(e.name, e.attributes, _ns(e.ts)) for e in s.events],
                kind=SpanKind.CLIENT if s.kind == "client" else SpanKind.INTERNAL,
                status=Status(StatusCode.ERROR, s.error) if s.error else Status(StatusCode.UNSET),
                start_time=_ns(s.start),
                end_time=_ns(s.end),
                instrumentation_scope=SCOPE,
            )
        )
    return out


def span_exporter(cfg: Telemetry, secrets: Mapping[str, str]) -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(
        endpoint=cfg.traces_url, headers=headers("traces", secrets), timeout=cfg.timeout_sec
    )


def metric_reader(cfg: Telemetry, secrets: Mapping[str, str]) -> MetricReader:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    exporter = OTLPMetricExporter(
        endpoint=cfg.metrics_url, headers=headers("metrics", secrets), timeout=cfg.timeout_sec
    )
    return PeriodicExportingMetricReader(
        exporter, export_interval_millis=60_000, export_timeout_millis=cfg.timeout_sec * 1000
    )


def export(exporter: SpanExporter, spans: list[ReadableSpan]) -> bool:
    return exporter.export(spans) == SpanExportResult.SUCCESS


class Metrics:
    """The GenAI client metrics and the run's counters, recorded from a turn's spans once its
    export succeeded (so a turn is counted once, like its spans)."""

    def __init__(self, reader: MetricReader, res: Resource):
        self.provider = MeterProvider(resource=res, metric_readers=[reader])
        meter = self.provider.get_meter("autodev", __version__)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.cost = meter.create_counter("autodev.cost", unit="USD", description="What the generations cost.")
        self.turns = meter.create_counter("autodev.run.turns", unit="{turn}", description="Turns taken.")
        self.credited = meter.create_counter(
            "autodev.run.credited_work", unit="{post}", description="work_done posts credited."
        )
        self.silent = meter.create_counter(
            "autodev.run.silent_turns", unit="{turn}", description="Turns without a post."
        )
        self.pauses = meter.create_counter(
            "autodev.run.pauses", unit="{pause}", description="Pauses, by reason."
        )

    def record(self, spans: Sequence[Span], pauses: Sequence[str] = ()) -> None:
        """One turn's spans (the turn's own first, as `spans.turn_spans` gives them) and the
        reasons of the pauses that followed it."""
        if not spans:
            return
        run_attrs: dict[str, Attr] = {
            "gen_ai.agent.name": str(spans[0].attributes.get("gen_ai.agent.name", ""))
        }
        for s in spans:
            a = s.attributes
            op = a.get("gen_ai.operation.name")
            op = op if isinstance(op, str) else ""  # "": neither a request nor an agent (no figures)
            base: dict[str, Attr] = {"gen_ai.operation.name": op, **run_attrs}
            if a.get("gen_ai.agent.name") == "audit":  # the audit's call, in the turn it judged
                base["gen_ai.agent.name"] = "audit"
            if a.get("gen_ai.provider.name"):
                base["gen_ai.provider.name"] = a["gen_ai.provider.name"]
            if a.get("gen_ai.request.model"):
                base["gen_ai.request.model"] = a["gen_ai.request.model"]
            if op == "chat" or (op == "invoke_agent" and s.kind == "client"):
                for kind, key in (
                    ("input", "gen_ai.usage.input_tokens"),
                    ("output", "gen_ai.usage.output_tokens"),
                ):
                    if key in a:
                        self.tokens.record(int(s.amount(key)), {**base, "gen_ai.token.type": kind})
                if a.get("autodev.cost_usd"):
                    self.cost.add(float(s.amount("autodev.cost_usd")), base)
            if op in ("chat", "invoke_agent"):
                self.duration.record(
                    max(0.0, s.end - s.start), {**base, **({"error.type": s.error} if s.error else {})}
                )
            if s is spans[0]:
                self.turns.add(1, run_attrs)
                if a.get("autodev.harness.credit", "none") != "none":
                    self.credited.add(1, run_attrs)
                if "autodev.post.seq" not in a:
                    self.silent.add(1, run_attrs)
        for why in pauses:
            self.pauses.add(1, {"autodev.pause.reason": why})

    def shutdown(self, timeout_ms: float = 5000) -> None:
        """Export what was recorded (once: the reader's last collection) and stop."""
        self.provider.shutdown(timeout_millis=timeout_ms)
