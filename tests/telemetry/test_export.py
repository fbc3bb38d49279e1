"""Exporting a run's record through the SDK: in-memory exporters for the shape, ids, metrics and
the once-only cursor; a real OTLP/HTTP exporter against a closed port for a dead collector."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from autodev.config.telemetry import TelemetryConfig
from autodev.records.state import RunState
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths
from autodev.telemetry import otel
from autodev.telemetry.background import Background
from autodev.telemetry.export import Sender, export_run
from autodev.telemetry.sent import Sent
from autodev.telemetry.settings import resolve
from autodev.telemetry.spans import span_id, trace_id
from tests.telemetry.test_spans import RUN, turn_events, turn_records

URL = "http://127.0.0.1:4318"


def write_run(paths: RunPaths, crash: bool = False) -> None:
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    with Journal(paths.harness_log) as h, Journal(paths.events, idempotent=False) as e:
        write_records(h, e, crash)


def write_records(h: Journal, e: Journal, crash: bool = False) -> None:
    e.append({"type": "daemon_started", "run": RUN, "ts": "2026-12-02T00:00:00.000Z", "pid": 1})
    for ev in turn_events(crash):
        e.append(ev)
    for r in turn_records(crash):
        h.append(r)
    e.append(
        {
            "type": "state",
            "run": RUN,
            "ts": "2026-12-02T00:00:02.000Z",
            "state": "paused",
            "reason": {"code": "silent"},
        }
    )


def sender(
    paths: RunPaths, exporter: SpanExporter, url: str = URL, **cfg
) -> tuple[Sender, InMemoryMetricReader]:
    settings = resolve(TelemetryConfig(endpoint=url, **cfg), env={})
    assert settings is not None
    reader = InMemoryMetricReader()
    res = otel.resource()
    s = Sender(
        settings,
        paths,
        exporter,
        Sent(paths.run_dir / "telemetry.jsonl", settings.traces_url),
        otel.Metrics(reader, res),
        res,
        lambda x: x,
    )
    return s, reader


def metric_points(reader: InMemoryMetricReader) -> dict[str, list]:
    out: dict[str, list] = {}
    data = reader.get_metrics_data()
    assert data is not None
    for rm in data.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                out.setdefault(m.name, []).extend(m.data.data_points)
    return out


def test_a_run_is_exported_once_with_derived_ids_and_metrics(tmp_path):
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    mem = InMemorySpanExporter()
    s, reader = sender(paths, mem)
    out = export_run(s, RUN, RunState(state="complete", turn=1))
    spans = mem.get_finished_spans()
    assert out["turns"] == 1 and out["spans"] == len(spans) == 8
    assert {sp.context.trace_id for sp in spans} == {trace_id(RUN)}
    by_name = {sp.name: sp for sp in spans}
    root, turn = by_name["invoke_workflow autodev"], by_name["invoke_agent builder"]
    assert root.parent is None and root.context.span_id == span_id(RUN)
    assert turn.parent is not None and turn.parent.span_id == root.context.span_id
    assert by_name["chat gpt-5"].parent.span_id == turn.context.span_id  # type: ignore[union-attr]
    assert (
        turn.attributes is not None and turn.attributes["gen_ai.system"] == "openai"
    )  # the older name, without the opt-in
    assert by_name["execute_tool github__merge"].attributes["error.type"] == "tool_error"  # type: ignore[index]
    assert [e.name for e in root.events] == ["daemon_started", "state"]
    points = metric_points(reader)
    tokens = {p.attributes["gen_ai.token.type"]: p.sum for p in points["gen_ai.client.token.usage"]}
    assert tokens == {"input": 320, "output": 40}
    assert all(p.attributes["gen_ai.agent.name"] == "builder" for p in points["gen_ai.client.token.usage"])
    assert sum(p.value for p in points["autodev.run.turns"]) == 1
    assert sum(p.value for p in points["autodev.run.credited_work"]) == 1
    assert [p.attributes["autodev.pause.reason"] for p in points["autodev.run.pauses"]] == ["silent"]
    assert round(sum(p.value for p in points["autodev.cost"]), 6) == 0.03

    again = export_run(s, RUN, RunState(state="complete"))  # nothing twice to the same collector
    assert again["spans"] == 0 and again["skipped"] == 1 and len(mem.get_finished_spans()) == 8
    s.close(1)
    s2, _ = sender(paths, mem)  # a new process reads the cursor from telemetry.jsonl
    assert export_run(s2, RUN, None)["spans"] == 0
    other = InMemorySpanExporter()
    s3, _ = sender(paths, other, url="http://127.0.0.1:9999")  # another collector has none of it
    assert export_run(s3, RUN, None)["spans"] == 8


def test_opt_in_to_the_latest_conventions_drops_the_old_name(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http,gen_ai_latest_experimental")
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    mem = InMemorySpanExporter()
    settings = resolve(TelemetryConfig(endpoint=URL))
    assert settings is not None and settings.latest
    s = Sender(
        settings,
        paths,
        mem,
        Sent(paths.run_dir / "t.jsonl", URL),
        otel.Metrics(InMemoryMetricReader(), otel.resource()),
        otel.resource(),
        str,
    )
    export_run(s, RUN, None)
    assert all("gen_ai.system" not in (sp.attributes or {}) for sp in mem.get_finished_spans())


def test_the_sampler_of_the_environment_applies_to_a_whole_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "always_off")
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    mem = InMemorySpanExporter()
    s, _ = sender(paths, mem)
    out = export_run(s, RUN, None)
    assert mem.get_finished_spans() == () and out["failed"] == 0


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_collector_never_slows_the_run_and_is_said_once(tmp_path):
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    url = f"http://127.0.0.1:{_closed_port()}"
    settings = resolve(TelemetryConfig(endpoint=url, export_timeout_sec=0.5), env={})
    assert settings is not None
    real = Sender.open(settings, paths, {}, str, reader=InMemoryMetricReader())
    warnings: list[str] = []
    bg = Background(real, RUN, warnings.append)
    began = time.monotonic()
    for _ in range(3):
        bg.turn_done(1)
    assert time.monotonic() - began < 0.1  # the run does not wait for the collector
    bg.close(None, 5)
    assert len(warnings) == 1 and "failed" in warnings[0] and "autodev trace export" in warnings[0]
    assert not Sent(paths.run_dir / "telemetry.jsonl", settings.traces_url).has(RUN, "t1")


class _Stuck(SpanExporter):
    def __init__(self):
        self.release = threading.Event()

    def export(self, spans):
        self.release.wait(5)
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.release.set()


def test_a_full_queue_drops_turns_with_one_warning(tmp_path):
    paths = RunPaths(tmp_path / "repo")
    write_run(paths)
    stuck = _Stuck()
    s, _ = sender(paths, stuck, queue_size=1)
    warnings: list[str] = []
    bg = Background(s, RUN, warnings.append)
    for _ in range(5):
        bg.turn_done(1)
    assert len(warnings) == 1 and "queue is full" in warnings[0]
    stuck.release.set()
    bg.close(None, 5)


def test_settings_from_the_standard_variables():
    assert resolve(None, env={}) is None
    on = resolve(None, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"})
    assert (
        on is not None
        and on.traces_url == "http://c:4318/v1/traces"
        and on.metrics_url == "http://c:4318/v1/metrics"
    )
    own = resolve(None, env={"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"})
    assert own is not None and own.traces_url == "http://t/x"
    assert resolve(TelemetryConfig(enabled=False), env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"}) is None
    assert resolve(None, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"}) is None
    assert resolve(TelemetryConfig(), env={}) is None
    table = resolve(TelemetryConfig(endpoint="http://127.0.0.1:4318"), env={})
    assert table is not None and table.traces_url == "http://127.0.0.1:4318/v1/traces"
    from autodev.errors import ConfigError

    with pytest.raises(ConfigError, match="OTEL_EXPORTER_OTLP_PROTOCOL=grpc"):
        resolve(None, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


def test_headers_are_secrets_and_parsed_like_the_sdk():
    from autodev.guard.redact import is_secret_name
    from autodev.telemetry.settings import headers

    assert is_secret_name("OTEL_EXPORTER_OTLP_HEADERS")
    assert headers("traces", {"OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b,X-Team=t"}) == {
        "api-key": "a b",
        "x-team": "t",
    }


class _Counting(InMemorySpanExporter):
    def __init__(self):
        super().__init__()
        self.requests = 0

    def export(self, spans):
        self.requests += 1
        return super().export(spans)


def test_turns_that_finish_close_together_go_out_in_one_request(tmp_path):
    """A request costs the exporter more than deriving a turn (issue 33): the turns that finish
    within `LINGER_S` of the first go out together, each marked sent once the collector took them."""
    paths = RunPaths(tmp_path / "repo")
    paths.run_dir.mkdir(parents=True)
    counting = _Counting()
    s, reader = sender(paths, counting)
    bg = Background(s, RUN, lambda m: None)
    with Journal(paths.harness_log) as h, Journal(paths.events, idempotent=False) as e:
        for n in (1, 2, 3):
            for ev in turn_events():
                e.append({**ev, "turn": n} if "turn" in ev else ev)
            for r in turn_records():
                post = {"id": f"{RUN}:t{n}:post"} if "id" in r else {}  # ids are once per log
                h.append({**r, "turn": n, "ts": r["ts"] + 10 * n, **post})
            bg.turn_done(n)
    bg.close(None, 5)
    assert counting.requests == 1 and len(counting.get_finished_spans()) == 3 * 7
    sent = Sent(paths.run_dir / "telemetry.jsonl", s.cfg.traces_url)
    assert all(sent.has(RUN, f"t{n}") for n in (1, 2, 3))
    assert sum(p.value for p in metric_points(reader)["autodev.run.turns"]) == 3
