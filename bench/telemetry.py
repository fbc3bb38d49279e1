"""The daemon's time per turn with telemetry on against off: the same scripted run, exported
over OTLP/HTTP to a local receiver that decodes what it gets (the spans must arrive: a figure of
a run that exported nothing would flatter telemetry)."""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.live import Child, make_repo, read_jsonl, rotation_steps, run_dir
from bench.runs import MAX_TALK, OBJECTIVE, _timing


class _Receiver:
    """An OTLP/HTTP receiver on 127.0.0.1 counting the spans it decodes."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

        self.spans = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/traces":
                    req = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                    receiver.spans += sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _run(turns: int, endpoint: str | None) -> tuple[float, float]:
    """ms per turn (turns 2..N) of one scripted run, and of it outside model requests; telemetry
    on when `endpoint` is given."""
    with tempfile.TemporaryDirectory(prefix="autodev-bench-otel-") as tmp:
        root = Path(tmp)
        home = root / "home"
        repo = make_repo(root, rotation_steps(turns), {"maxTalkTurns": min(2 * turns + 10, MAX_TALK)})
        if endpoint:
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        try:
            ex = Child(repo, home, "start", "--foreground", "--until-idle", OBJECTIVE).wait(600 + 2 * turns)
        finally:
            os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
        if ex.code != 0:
            raise RuntimeError(f"the scripted run exited {ex.code}:\n{ex.stderr[-1500:]}")
        t = _timing(read_jsonl(run_dir(repo, home) / "events.jsonl"))
    if not t["window_turns"]:
        return 0.0, 0.0
    return t["window_s"] / t["window_turns"] * 1e3, (t["window_s"] - t["model_s"]) / t["window_turns"] * 1e3


def bench_telemetry(turns: int = 100, pairs: int = 8) -> dict:
    """Runs off and on alternately (`pairs` times), the median of each: eight pairs, as two and
    then four left the ratio to the shared machine's noise (runs of one setting 10% apart, and
    four-pair ratios of 0.93 to 1.08 within one idle hour for the same build, 6 December 2026)."""
    receiver = _Receiver()
    off: list[float] = []
    on: list[float] = []
    own: list[float] = []  # telemetry off, outside model requests
    try:
        for _ in range(pairs):
            ms, outside = _run(turns, None)
            off.append(ms)
            own.append(outside)
            on.append(_run(turns, receiver.url)[0])
    finally:
        receiver.close()
    if receiver.spans == 0:
        raise RuntimeError("telemetry on exported no span: the comparison would mean nothing")
    m_off, m_on = statistics.median(off), statistics.median(on)
    m_own = statistics.median(own)
    ratio = m_on / m_off if m_off else 0.0
    return {
        "name": "daemon time per turn, telemetry on / off",
        "compare": f"{turns}-turn scripted run, {pairs} runs each",
        "detail": {
            "off ms/turn": round(m_off, 1),
            "on ms/turn": round(m_on, 1),
            "spans received": receiver.spans,
            "runs off": [round(x, 1) for x in off],
            "runs on": [round(x, 1) for x in on],
        },
        "unit": "ratio of ms/turn",
        "ratio": round(ratio, 2),
        "target": "≤ 1.05",  # issue 33: telemetry costs at most 5% of the daemon's time per turn
        "holds": ratio <= 1.05,
        "method": "events.jsonl: turns 2..N between turn 1's and turn N's turn_ended; "
        "OTEL_EXPORTER_OTLP_ENDPOINT at a local OTLP/HTTP receiver that decodes the spans",
        "also": [
            {
                # issue 33: "the daemon's own time per turn goes from 27 ms to at most 12 ms". The
                # 27 ms was this measure: outside the model requests (docs/benchmarks.md at cac70be,
                # "27 ms per turn outside the model"); the request time is the scripted server's.
                "name": "daemon's own time per turn, telemetry off",
                "compare": f"{turns}-turn scripted run, median of {pairs}",
                "detail": {
                    "outside model requests ms/turn": round(m_own, 1),
                    "whole turn ms/turn": round(m_off, 1),
                    "runs outside model requests": [round(x, 1) for x in own],
                },
                "unit": "ms per turn outside model requests",
                "ratio": round(m_own, 1),
                "target": "≤ 12 ms",
                "holds": m_own <= 12,
                "method": "events.jsonl: turns 2..N; a request's time is its generation event's ts "
                "minus the turn's previous event's ts, and is left out",
            }
        ],
    }
