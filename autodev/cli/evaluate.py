"""`autodev eval`: run teams on a tasks file and grade them (autodev/eval/, docs/eval.md).

Nothing here imports litellm: every run is its own `autodev start` process."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from autodev.cli.root import app

if TYPE_CHECKING:
    from autodev.eval.tasks import Selection
    from autodev.eval.teams import Caps


def _selection(instance_ids: list[str], shard: str | None, limit: int | None) -> Selection:
    """The tasks to run: matching an id glob, in the shard, the first `limit` of them."""
    from autodev.eval.tasks import Selection, parse_shard

    return Selection(tuple(instance_ids), parse_shard(shard) if shard is not None else None, limit)


def _caps(max_cost_usd: float | None, max_tokens: int | None, max_wall_min: float | None) -> Caps:
    """The per-run caps, each given one positive or left out."""
    from autodev.errors import UsageError
    from autodev.eval.teams import Caps

    for flag, value in (
        ("--max-cost-usd", max_cost_usd),
        ("--max-tokens", max_tokens),
        ("--max-wall-min", max_wall_min),
    ):
        if value is not None and value <= 0:
            raise UsageError(
                f"{flag} {value} is not a cap", f"give {flag} a positive number, or leave it out"
            )
    return Caps(max_cost_usd, max_tokens, max_wall_min)


@app.command("eval")
def eval_(
    tasks: Path = typer.Argument(
        ..., help="Tasks file: JSONL, autodev's fields or SWE-bench's (docs/eval.md)."
    ),
    team: list[Path] = typer.Option(..., "--team", help="A team TOML file; repeat to compare teams."),
    out: Path = typer.Option(..., "--out", help="Folder for results; re-running with it resumes."),
    repos: Path | None = typer.Option(None, "--repos", help="Local mirrors of SWE-bench's owner/name repos."),
    test_command: str | None = typer.Option(
        None,
        "--test-command",
        help="SWE-bench tasks: the test command, {tests} = FAIL_TO_PASS + PASS_TO_PASS.",
    ),
    config: Path | None = typer.Option(None, "--config", help="A config.toml every run gets."),
    max_cost_usd: float | None = typer.Option(None, "--max-cost-usd", help="Per run: maxCostUsd."),
    max_tokens: int | None = typer.Option(None, "--max-tokens", help="Per run: maxTokens."),
    max_wall_min: float | None = typer.Option(None, "--max-wall-min", help="Per run: stopped past this."),
    parallel: int = typer.Option(1, "--parallel", help="Runs at once (each its own clone and daemon)."),
    executor: str = typer.Option("local", "--executor", help="local, or ray (each task a Ray task)."),
    address: str | None = typer.Option(None, "--address", help="With --executor ray: the cluster's address."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Also re-run what could not be run."),
    setup_timeout: float = typer.Option(1800, "--setup-timeout-sec", help="Per task's setup command."),
    test_timeout: float = typer.Option(1800, "--test-timeout-sec", help="Per task's test command."),
    stop_grace: float = typer.Option(
        60, "--stop-grace-sec", help="After the wall cap's stop, before kill -9."
    ),
    grade_unsandboxed: bool = typer.Option(
        False,
        "--grade-unsandboxed",
        help="Run setup and tests on this machine when bubblewrap is missing (trusted tasks only).",
    ),
    instance_ids: list[str] = typer.Option(
        [], "--instance-ids", "-i", help="Only tasks whose id matches this glob; repeat for more."
    ),
    shard: str | None = typer.Option(
        None, "--shard", help="I/N: every N-th selected task from the I-th (1 <= I <= N)."
    ),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N selected tasks."),
    best_of: int = typer.Option(
        1,
        "--best-of",
        help="Run each task N times per team; report pick@N, pass@1, oracle@N (docs/best-of.md).",
    ),
):
    """Run each team on each task in a fresh clone, grade it with the hidden tests, compare."""
    from autodev.eval.driver import load_plan, run_eval
    from autodev.eval.teams import RunSettings, load_base_config

    caps = _caps(max_cost_usd, max_tokens, max_wall_min)
    selection = _selection(instance_ids, shard, limit)
    settings = RunSettings(
        caps=caps,
        config=load_base_config(config),
        setup_timeout_s=setup_timeout,
        test_timeout_s=test_timeout,
        stop_grace_s=stop_grace,
        grade_unsandboxed=grade_unsandboxed,
    )
    plan = load_plan(tasks, team, out, settings, repos, test_command, selection, best_of)
    raise typer.Exit(run_eval(plan, executor, parallel, address, retry_errors))
