"""The `[telemetry]` table of `.autodev/config.toml`: OpenTelemetry export (autodev/telemetry)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from autodev.config.base import MODEL_CONFIG


class TelemetryConfig(BaseModel):
    """`[telemetry]`: traces and metrics over OTLP/HTTP, on when OTEL_EXPORTER_OTLP_ENDPOINT or
    `endpoint` is set. The standard `OTEL_*` variables apply as well (headers, service name,
    sampler); the table is only needed for what they cannot say."""

    model_config = MODEL_CONFIG

    enabled: bool = Field(
        default=True,
        description="false turns telemetry off even when OTEL_EXPORTER_OTLP_ENDPOINT is set.",
    )
    endpoint: str = Field(
        default="",
        description="The OTLP/HTTP base URL, as OTEL_EXPORTER_OTLP_ENDPOINT (/v1/traces and "
        '/v1/metrics are appended), e.g. "http://127.0.0.1:4318": set, telemetry is on. The '
        "variable, when set, wins.",
    )
    capture_content: bool = Field(
        default=False,
        alias="captureContent",
        description="Export message contents (the turn prompt, model answers, tool arguments and "
        "results) as gen_ai.input.messages / gen_ai.output.messages / gen_ai.tool.call.*; "
        "they are redacted like every log. Off: only names, ids, figures and outcomes leave.",
    )
    queue_size: int = Field(
        default=256,
        alias="queueSize",
        ge=1,
        le=100000,
        description="Finished turns waiting for the background exporter; when it is full (a slow "
        "or dead collector) a turn is left for `autodev trace export` and a warning event says so.",
    )
    export_timeout_sec: float = Field(
        default=5,
        alias="exportTimeoutSec",
        gt=0,
        le=300,
        description="Longest one export may take (retries included) before it is given up; the "
        "run never waits for it.",
    )
