"""`autodev init`: give a repository its `.autodev/` folder from what autodev ships."""

from __future__ import annotations

import shutil
from pathlib import Path

from autodev.errors import UsageError
from autodev.store.paths import shipped

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


# -- the last team used, kept in the run folder (recovery after `git clean -fdx`) ----------------

SAVED = "team"  # folder in the run folder


def _saved_dir(run_dir: Path) -> Path:
    return Path(run_dir) / SAVED


def saved_team(run_dir: Path) -> Path | None:
    """The saved copy of the last team file used by the run, if there is one."""
    p = _saved_dir(run_dir) / "team.toml"
    return p if p.is_file() else None


def _team_files(config_dir: Path) -> list[Path]:
    """team.toml, config.toml and a scripted team's script, when they exist in .autodev/."""
    import tomllib

    files = [config_dir / "team.toml", config_dir / "config.toml"]
    try:
        script = (tomllib.loads((config_dir / "team.toml").read_text()).get("scripted") or {}).get("path")
    except (OSError, ValueError):
        script = None
    if isinstance(script, str):
        p = (config_dir / script).resolve()
        if p.is_relative_to(config_dir.resolve()):  # only what lives in .autodev/ itself
            files.append(p)
    return [f for f in files if f.is_file()]


def save_team(config_dir: Path, run_dir: Path) -> None:
    """Copy the team the daemon just loaded into the run folder (private, replaced atomically)."""
    import os

    out = _saved_dir(run_dir)
    out.mkdir(mode=0o700, exist_ok=True)
    for f in _team_files(config_dir):
        rel = f.resolve().relative_to(config_dir.resolve())
        dest = out / rel
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as w:
            w.write(f.read_bytes())
        os.replace(tmp, dest)


def init_from_run(repo: Path, run_dir: Path, force: bool = False) -> Path:
    """Restore `.autodev/` from the team the run last used (e.g. after `git clean -fdx`)."""
    src = _saved_dir(run_dir)
    if saved_team(run_dir) is None:
        raise UsageError(
            f"the run folder {run_dir} keeps no team to restore",
            "create one with `autodev init --team NAME` (see `autodev init --help`)",
        )
    target = Path(repo) / CONFIG_DIR
    if (target / "team.toml").exists() and not force:
        raise UsageError(
            f"{target / 'team.toml'} already exists; autodev init --from-run will not overwrite it",
            "use --force to replace it with the run's last team",
        )
    target.mkdir(exist_ok=True)
    for f in sorted(src.rglob("*")):
        if f.is_file() and not f.name.startswith("."):
            dest = target / f.relative_to(src)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
    return target
