"""A small real OTLP/HTTP receiver for the tests: it decodes the protobuf requests autodev's
exporter sends (opentelemetry-proto) and keeps every span and metric data point it got (points
are cumulative: `latest` gives each series' last value)."""

from __future__ import annotations

import gzip
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def _value(v) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, kind) if kind else None


def _attrs(kvs) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in kvs}


class Receiver:
    """Started on 127.0.0.1 on a free port; `url` is what OTEL_EXPORTER_OTLP_ENDPOINT takes."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.points: list[dict] = []
        self.headers: list[dict[str, str]] = []  # each request's, lower-cased names
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    receiver._traces(body)
                    reply = trace_service_pb2.ExportTraceServiceResponse()
                elif self.path == "/v1/metrics":
                    receiver._metrics(body)
                    reply = metrics_service_pb2.ExportMetricsServiceResponse()
                else:
                    self.send_error(404)
                    return
                data = reply.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _traces(self, body: bytes) -> None:
        req = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        with self.lock:
            for rs in req.resource_spans:
                resource = _attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append(
                            {
                                "name": s.name,
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "parent": s.parent_span_id.hex() or None,
                                "attributes": _attrs(s.attributes),
                                "events": [e.name for e in s.events],
                                "status": s.status.code,
                                "start": s.start_time_unix_nano,
                                "end": s.end_time_unix_nano,
                                "resource": resource,
                                "scope": ss.scope.name,
                            }
                        )

    def _metrics(self, body: bytes) -> None:
        req = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
        with self.lock:
            for rm in req.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        for p in getattr(m, kind).data_points:
                            value = (
                                p.sum
                                if kind == "histogram"
                                else (p.as_double if p.HasField("as_double") else p.as_int)
                            )
                            self.points.append(
                                {"name": m.name, "attributes": _attrs(p.attributes), "value": value}
                            )

    def latest(self, name: str) -> list[dict]:
        """The last point of each series of metric `name` (a series: its attributes)."""
        out: dict[str, dict] = {}
        for p in self.points:
            if p["name"] == name:
                out[repr(sorted(p["attributes"].items()))] = p
        return list(out.values())

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
