"""OpenTelemetry traces and metrics of a run, by the GenAI semantic conventions (SPEC §19).

Spans are derived from the durable record (harness.jsonl and events.jsonl), never recorded live,
so a crash cannot tear a trace: a turn is exported once it has finished, whole, with ids hashed
from the run, turn and call, and a cursor (`telemetry.jsonl`) keeps a span from going out twice.

- `settings`: on or off, and where to (OTEL_* variables, the `[telemetry]` table); pure
- `spans`: spans as plain data, their ids, the run's root; pure, no OpenTelemetry import
- `turn`, `turnevents`: a finished turn's spans from its harness records and its events; pure
- `reading`: a run's records parsed, whole, one turn read backwards, or handed over in memory
- `sent`: the cursor of what each collector accepted
- `otel`: the SDK side (spans with derived ids, OTLP/HTTP exporters, the GenAI metrics)
- `export`: sending turns and the root; `autodev trace export`
- `background`: the daemon's exporter (a bounded queue, one thread, turns sent together)

Nothing of OpenTelemetry is imported unless telemetry is on (`start` returns None first).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from autodev.errors import UsageError, extra_fix
from autodev.telemetry.settings import HEADER_VARS, Telemetry, resolve

if TYPE_CHECKING:
    from autodev.config.telemetry import TelemetryConfig
    from autodev.store.paths import RunPaths
    from autodev.telemetry.background import Background

__all__ = ["HEADER_VARS", "Telemetry", "not_installed", "resolve", "start"]


def not_installed(cfg: Telemetry) -> UsageError | None:
    """Telemetry is on (`cfg`) but this install lacks the `telemetry` extra: the sentence and the
    fix, for pipx, uv and pip (`trace export` refuses, `doctor` and `start` warn), else None."""
    try:
        for name in (
            "opentelemetry.exporter.otlp.proto.http.metric_exporter",
            "opentelemetry.exporter.otlp.proto.http.trace_exporter",
            "autodev.telemetry.otel",
        ):
            importlib.import_module(name)
    except ImportError as e:
        return UsageError(
            f"telemetry is on (traces to {cfg.traces_url}) but OpenTelemetry, the `telemetry` extra, "
            f"is not installed ({e.name or 'opentelemetry'} is missing)",
            extra_fix("telemetry")
            + "; or unset OTEL_EXPORTER_OTLP_ENDPOINT (and [telemetry]) to run without it",
        )
    return None


def start(
    paths: RunPaths,
    config: TelemetryConfig | None,
    run: str,
    warn: Callable[[str], object],
    redact: Callable[[str], str],
) -> Background | None:
    """The daemon's background exporter, or None when telemetry is off. A missing install or a
    collector that cannot be set up is a warning: telemetry never stops a run."""
    cfg = resolve(config)
    if cfg is None:
        return None
    from autodev.guard import keys

    secrets = {n: v for n in HEADER_VARS if (v := keys.get(n))}
    missing = not_installed(cfg)
    if missing is not None:
        warn(f"{missing.message}; the run goes on without telemetry. fix: {missing.fix}")
        return None
    from autodev.telemetry.background import Background
    from autodev.telemetry.export import Sender

    return Background(Sender.open(cfg, paths, secrets, redact), run, warn)
