"""`autodev trace export [--run ID]`: a stored run's trace and metrics, sent after the fact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from autodev.cli.root import app
from autodev.errors import UsageError
from autodev.store.paths import RunPaths, find_repo

if TYPE_CHECKING:  # the records (pydantic) load when the command runs, not for `autodev --help`
    from autodev.records.state import RunState

trace_app = typer.Typer(help="OpenTelemetry traces of runs (docs/telemetry.md).", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


def _run_paths(run: str | None) -> tuple[RunPaths, str, RunState | None]:
    """The run folder, the run id and its state: this repository's run, or `run` from the index."""
    from autodev.store import runs
    from autodev.store.rebuild import read_state

    if run is None:
        paths = RunPaths(find_repo())
        st = read_state(paths)
        if not st.run_id:
            raise UsageError(
                "this repository has no run to export",
                "start one with `autodev start`, or name one with --run ID",
            )
        return paths, st.run_id, st
    for row in runs.listing():
        if row["run"] == run and (repo := row["repo"]):
            paths = RunPaths(Path(repo))
            if str(paths.run_dir) != str(row["run_dir"]) or not paths.run_dir.exists():
                break
            st = read_state(paths)
            return paths, run, st if st.run_id == run else None
    raise UsageError(f"no stored run {run!r}", "`autodev runs` lists the runs and their ids")


@trace_app.command("export")
def export(
    run: str = typer.Option(
        None, "--run", help="The run's id (`autodev runs`); default: this repository's run."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Send a finished or crashed run's spans and metrics to the OTLP collector of
    OTEL_EXPORTER_OTLP_ENDPOINT (or of the telemetry table of .autodev/config.toml); what that
    collector already has is skipped."""
    from autodev.config import load_config
    from autodev.guard import keys
    from autodev.guard.redact import Redactor
    from autodev.store.lock import DaemonLock
    from autodev.telemetry import HEADER_VARS, not_installed, resolve

    paths, run_id, st = _run_paths(run)
    cfg = resolve(load_config(paths.config_file).telemetry)
    if cfg is None:
        raise UsageError(
            "telemetry is off: there is no collector to send the trace to",
            "set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://127.0.0.1:4318) or add a [telemetry] "
            "table to .autodev/config.toml",
        )
    if DaemonLock.holder(paths.lock):
        raise UsageError(
            f"the daemon of run {run_id} is running: it exports turns as they finish",
            "run `autodev trace export` after it stops (`autodev stop`)",
        )
    missing = not_installed(cfg)
    if missing is not None:
        raise missing
    from autodev.telemetry.export import Sender, export_run

    secrets = {n: v for n in HEADER_VARS if (v := keys.get(n))}
    sender = Sender.open(cfg, paths, secrets, Redactor.from_env(HEADER_VARS).text)
    try:
        out = export_run(sender, run_id, st)
    finally:
        sender.close(cfg.timeout_sec)
    if as_json:
        print(json.dumps({**out, "endpoint": cfg.traces_url}))
    else:
        print(
            f"run {run_id}: {out['spans']} spans of {out['turns']} turns sent to {cfg.traces_url}"
            + (f"; {out['skipped']} turns it already had" if out["skipped"] else "")
            + (
                f"; {out['unfinished']} unfinished (sent once `autodev start` finishes them)"
                if out["unfinished"]
                else ""
            )
        )
    if out["failed"]:
        from autodev.errors import AutodevError

        raise AutodevError(
            f"the collector at {cfg.traces_url} did not accept {out['failed']} of the parts",
            "check that it is running and reachable, then run `autodev trace export` again (what it has is skipped)",
        )
