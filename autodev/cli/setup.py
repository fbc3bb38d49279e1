"""Set-up commands: `init`, `doctor`, `config`."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from autodev.cli.root import app
from autodev.errors import UsageError
from autodev.store.paths import RunPaths, find_repo

if TYPE_CHECKING:
    from autodev.setup.teamchecks import Check


@app.command()
def init(
    team: str | None = typer.Option(None, help="Copy teams/NAME.toml as the team."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing .autodev/."),
    from_run: bool = typer.Option(
        False, "--from-run", help="Restore the team this repository's run last used (after `git clean`)."
    ),
):
    """Create .autodev/ (team.toml, config.toml) from the shipped example."""
    from autodev.config.project import init_from_run, init_project

    if from_run:
        if team is not None:
            raise UsageError("give --team or --from-run, not both", "autodev init --from-run")
        paths = RunPaths(find_repo())
        folder = init_from_run(paths.repo, paths.run_dir, force)
        print(f"restored {folder}/ from the run folder {paths.run_dir}; continue with: autodev start")
        return
    folder = init_project(find_repo(), team, force)
    print(
        f'wrote {folder}/ — edit team.toml, check with `autodev doctor`, then: autodev start "your objective"'
    )


@app.command()
def doctor(
    online: bool = typer.Option(
        False, "--online", help="Also ask litellm about provider keys and contact each api_base."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Check what `start` needs, without starting anything: exit 0 when it would work, 2 when not."""
    from dataclasses import asdict

    from autodev.setup.doctor import FAIL, run_checks

    checks = run_checks(online=online)
    ready = not any(c.status == FAIL for c in checks)
    if as_json:
        print(json.dumps({"ready": ready, "checks": [asdict(c) for c in checks]}, indent=1))
    else:
        for c in checks:
            print(check_line(c))
        print("start would work" if ready else "start would not work: fix the FAIL lines above")
    raise typer.Exit(0 if ready else 2)


@app.command("config")
def config_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Print every configuration key with its value, default and meaning."""
    from autodev.config import config_rows, load_config

    paths = RunPaths(find_repo())
    rows = config_rows(load_config(paths.config_file))
    if as_json:
        print(json.dumps([dict(zip(("key", "value", "default", "meaning"), r)) for r in rows], indent=1))
        return
    from rich.table import Table

    from autodev.user.render import console

    t = Table(title=f"{paths.config_file}", show_lines=False)
    for col in ("key", "value", "default", "meaning"):
        t.add_column(col, overflow="fold")
    for r in rows:
        t.add_row(*r)
    console().print(t)


def check_line(c: Check) -> str:
    """A doctor check as it prints: one line, or a multi-line message (a team file's problems,
    each with its fix) kept as it was written, indented under its first line."""
    head = f"{c.status:<4}  {c.name:<18} "
    lines = c.detail.splitlines() or [""]
    if len(lines) == 1 and "\n" not in c.fix:
        return head + lines[0] + (f"  → fix: {c.fix}" if c.fix else "")
    pad = " " * len(head)
    fix = c.fix.splitlines()
    out = [head + lines[0], *(pad + x for x in lines[1:])]
    if fix:
        out += [f"{pad}→ fix: {fix[0]}", *(pad + x for x in fix[1:])]
    return "\n".join(out)
