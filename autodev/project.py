"""`autodev init`: give a repository its `.autodev/` folder from what autodev ships."""

from __future__ import annotations

import shutil
from pathlib import Path

from autodev.errors import UsageError
from autodev.paths import shipped

CONFIG_DIR = ".autodev"


def shipped_teams() -> list[str]:
    """Names of the teams shipped in teams/, for `autodev init --team NAME`."""
    folder = shipped("teams")
    return sorted(p.stem for p in folder.glob("*.toml")) if folder.is_dir() else []


def init_project(repo: Path, team: str | None = None, force: bool = False) -> Path:
    """Create `repo/.autodev/` from the shipped example; `team` picks a shipped team file.

    With `force`, the shipped files overwrite their namesakes in an existing `.autodev/`;
    files the user added there (prompt overrides, scripts) are left alone.
    Returns the `.autodev/` folder.
    """
    repo = Path(repo)
    if not repo.is_dir():
        raise UsageError(f"{repo} is not a folder", "run autodev init inside your repository")
    target = repo / CONFIG_DIR

    # Check the team first so a typo never leaves a half-made folder behind.
    team_file: Path | None = None
    if team is not None:
        names = shipped_teams()
        if team not in names:
            raise UsageError(
                f'there is no shipped team "{team}"',
                f"use --team with one of: {', '.join(names) or '(none shipped)'}",
            )
        team_file = shipped("teams") / f"{team}.toml"

    if target.exists() and not target.is_dir():
        raise UsageError(
            f"{target} exists and is not a folder", "move that file away, then run autodev init again"
        )
    if target.exists() and not force:
        raise UsageError(
            f"{target} already exists; autodev init will not overwrite it",
            "use --force to replace the shipped files in it (your other files there are kept)",
        )

    example = shipped("autodev.example")
    if not example.is_dir():
        raise UsageError(f"the shipped example folder is missing ({example})", "reinstall autodev")
    shutil.copytree(example, target, dirs_exist_ok=True)
    if team_file is not None:
        shutil.copyfile(team_file, target / "team.toml")
    return target
