"""Best of N (docs/best-of.md): `start --best-of N` (start.py hands it here) and `pick`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from autodev.cli.root import app, current_paths
from autodev.errors import UsageError


def _vary(text: str | None, team_file: Path) -> list[tuple[str, str]]:
    """`--vary team=a.toml,b.toml` (run k gets the k-th team file) or `--vary model=m1,m2` (run k
    gets the team with every participant's model the k-th): (name, team.toml text) per variant."""
    if not text:
        return []
    what, eq, values = text.partition("=")
    items = [v for v in values.split(",") if v]
    if what not in ("team", "model") or not eq or not items:
        raise UsageError(
            f"--vary {text}: give team=FILE,FILE,... or model=MODEL,MODEL,... (run k uses the k-th, cycling)",
            "e.g. --vary team=.autodev/fast.toml,.autodev/careful.toml  |  --vary model=openai/gpt-5,anthropic/claude-sonnet-4-5",
        )
    if what == "model":
        from autodev.group.launch import model_variants

        return model_variants(team_file, items)
    from autodev.group.launch import team_variants

    return team_variants([Path(f).resolve() for f in items])


def start_group(
    objective: str | None,
    n: int | None,
    parallel: int | None,
    vary: str | None,
    max_cost_usd: float | None,
    resume: str | None,
) -> None:
    from autodev.group import launch

    paths = current_paths()
    if resume is not None:
        if n is not None or objective:
            raise UsageError(
                "--resume-group takes no objective and no --best-of", "autodev start --resume-group ID"
            )
        g = launch.resume(paths, resume)
        print(f"group {g.id}: driver started again ({g.n} runs); `autodev status` shows them")
        return
    if n is None:
        raise UsageError("--parallel, --vary and --group-max-cost-usd go with --best-of N", "add --best-of N")
    if not objective:
        raise UsageError("a group needs its objective", 'autodev start --best-of 3 "fix the failing test"')
    g = launch.launch(paths, objective, n, parallel, _vary(vary, paths.team_file), max_cost_usd)
    print(f"group {g.id}: {g.n} runs of the team from {g.base[:12]}, {g.parallel} at a time")
    for k in range(1, g.n + 1):
        print(f"  run {k}: {g.worktree_of(k)} (its own clone, branch {g.branch_of(k)})")
    print("follow them with `autodev status`; when they have ended, `autodev pick` ranks them")


@app.command()
def pick(
    run: int | None = typer.Argument(None, help="The run to apply instead of the winner (with --apply)."),
    apply: bool = typer.Option(False, "--apply", help="Merge the winner (or run K) into your branch."),
    group: str | None = typer.Option(
        None, "--group", help="The group's id; default: this repository's newest."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Rank a best-of group's ended runs (no model): the table, the winner and why."""
    from autodev.group import pick as picking
    from autodev.group.record import find
    from autodev.store.paths import RunPaths, find_repo
    from autodev.user.group_view import render_pick

    if run is not None and not apply:
        raise UsageError(f"run {run} given without --apply", f"autodev pick {run} --apply")
    g = find(RunPaths(find_repo()).repo, group)
    p = picking.rank_group(g)
    if as_json:
        print(json.dumps(p.to_json(), indent=1))
    else:
        render_pick(p, applying=apply)
    if apply:
        print(picking.apply(p, run))
