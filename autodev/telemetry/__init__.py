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
- `background`: the exporter's engine (a bounded queue, one thread, turns sent together)
- `worker`: the exporter's own process, which runs `background` for the daemon
- `process`: the daemon's side of that process (a line per finished turn, never waited on)

Nothing of OpenTelemetry is imported unless telemetry is on (`start` returns None first).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from autodev.errors import UsageError, extra_fix
from autodev.telemetry.settings import HEADER_VARS, Telemetry, resolve

if TYPE_CHECKING:
    from autodev.config.telemetry import TelemetryConfig
    from autodev.store.paths import RunPaths
    from autodev.telemetry.process import Exporter

__all__ = ["HEADER_VARS", "Telemetry", "not_installed", "resolve", "start"]


def not_installed(cfg: Telemetry, load: bool = True) -> UsageError | None:
    """Telemetry is on (`cfg`) but this install lacks the `telemetry` extra: the sentence and the
    fix, for pipx, uv and pip (`trace export` refuses, `doctor` and `start` warn), else None.
    `load=False` only finds the modules (the daemon: its exporter process imports them)."""
    try:
        for name in (
            "opentelemetry.exporter.otlp.proto.http.metric_exporter",
            "opentelemetry.exporter.otlp.proto.http.trace_exporter",
            "autodev.telemetry.otel",
        ):
            if load:
                importlib.import_module(name)
            elif importlib.util.find_spec(name) is None:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
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
    redact: Callable[[], Sequence[str]],
) -> Exporter | None:
    """The daemon's exporter process, or None when telemetry is off; `redact`: the secret values
    it masks, as the daemon knows them now (asked again at each turn's end). A missing install or a collector that cannot be set up is a warning: telemetry
    never stops a run."""
    cfg = resolve(config)
    if cfg is None:
        return None
    from autodev.guard import keys

    secrets = {n: v for n in HEADER_VARS if (v := keys.get(n))}
    missing = not_installed(cfg, load=False)
    if missing is not None:
        warn(f"{missing.message}; the run goes on without telemetry. fix: {missing.fix}")
        return None
    from autodev.telemetry.process import Exporter

    try:
        return Exporter(cfg, paths, run, secrets, redact, warn)
    except OSError as e:
        warn(f"telemetry: the exporter process could not start ({e}); the run goes on without telemetry")
        return None
