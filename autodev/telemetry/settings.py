"""Whether telemetry is on and where it goes, from the standard `OTEL_*` variables and the
`[telemetry]` table (pure: no OpenTelemetry import, so a command with telemetry off loads none).

On when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or the table's
`endpoint`) is set, unless `enabled = false` or OTEL_SDK_DISABLED=true. Only OTLP over HTTP/protobuf is
spoken; another OTEL_EXPORTER_OTLP_PROTOCOL is a configuration error, not a silent fallback.
Headers (often a collector's key) are a secret: `autodev start` hands them to the daemon with
the provider keys, never in its environment (redact.SECRET_NAMES).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from autodev.config.telemetry import TelemetryConfig
from autodev.errors import ConfigError

HEADER_VARS = (
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
)
LATEST = "gen_ai_latest_experimental"


@dataclass(frozen=True)
class Telemetry:
    """Resolved telemetry settings."""

    traces_url: str
    metrics_url: str
    capture_content: bool = False
    queue_size: int = 256
    timeout_sec: float = 5.0
    latest: bool = False  # OTEL_SEMCONV_STABILITY_OPT_IN has gen_ai_latest_experimental


def _signal_url(env: Mapping[str, str], base: str | None, signal: str) -> str | None:
    own = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip()
    if own:
        return own  # used as given (the OTLP specification: no path appended)
    return f"{base.rstrip('/')}/v1/{signal}" if base else None


def resolve(config: TelemetryConfig | None, env: Mapping[str, str] | None = None) -> Telemetry | None:
    """The settings, or None when telemetry is off."""
    env = os.environ if env is None else env
    cfg = config or TelemetryConfig()
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or not cfg.enabled:
        return None
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or cfg.endpoint.strip() or None
    traces = _signal_url(env, base, "traces")
    if traces is None:
        return None
    for var in (
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ):
        value = env.get(var, "").strip()
        if value and value != "http/protobuf":
            raise ConfigError(
                f"{var}={value}: autodev exports OTLP over HTTP with protobuf only",
                f"set {var}=http/protobuf (or unset it) and point the endpoint at the collector's "
                "HTTP port (4318 by default)",
            )
    opt_in = {v.strip() for v in env.get("OTEL_SEMCONV_STABILITY_OPT_IN", "").split(",")}
    return Telemetry(
        traces_url=traces,
        metrics_url=_signal_url(env, base, "metrics") or traces.replace("/v1/traces", "/v1/metrics"),
        capture_content=cfg.capture_content,
        queue_size=cfg.queue_size,
        timeout_sec=cfg.export_timeout_sec,
        latest=LATEST in opt_in,
    )


def headers(signal: str, secrets: Mapping[str, str]) -> dict[str, str]:
    """The headers for `signal` from the OTLP header variables (`k=v,k2=v2`, values URL-encoded),
    looked up in `secrets` (the key store) first, then the environment."""
    from urllib.parse import unquote

    def get(name: str) -> str:
        return secrets.get(name) or os.environ.get(name, "")

    raw = get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_HEADERS") or get("OTEL_EXPORTER_OTLP_HEADERS")
    out: dict[str, str] = {}
    for item in raw.split(","):
        k, sep, v = item.partition("=")
        if sep and k.strip():
            out[unquote(k.strip()).lower()] = unquote(v.strip())
    return out
