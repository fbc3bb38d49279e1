"""`autodev init`: give a repository its `.autodev/` folder from what autodev ships."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import cast

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
    exclude_from_git(repo)
    return target


def exclude_from_git(repo: Path) -> None:
    """`.autodev/` is the run's team, not the project's work: listed in the repository's own
    `info/exclude` (never a tracked .gitignore), as demo and eval do, so a participant's
    `git add -A` does not commit the team files and a rewind does not keep them as uncommitted
    changes. Not a git repository: nothing to do."""
    from autodev.host import hostgit

    r = hostgit.run(repo, "rev-parse", "--git-path", "info/exclude", check=False)
    if r.returncode != 0 or not r.stdout.strip():
        return
    path = Path(r.stdout.strip())
    path = path if path.is_absolute() else Path(repo) / path
    text = path.read_text() if path.is_file() else ""
    if any(x.strip().strip("/") == CONFIG_DIR for x in text.splitlines()):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(("\n" if text and not text.endswith("\n") else "") + f"{CONFIG_DIR}/\n")


# -- the last team used, kept in the run folder (recovery after `git clean -fdx`) ----------------

SAVED = "team"  # folder in the run folder
# every team the run's daemons loaded, numbered from 1 (`team` in daemon_started and
# team_reloaded events): replay runs each turn with the team in force then
HISTORY = "team-history"


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
        team: dict[str, object] = tomllib.loads((config_dir / "team.toml").read_text())
        scripted = team.get("scripted")
        script = cast("dict[str, object]", scripted).get("path") if isinstance(scripted, dict) else None
    except (OSError, ValueError):
        script = None
    if isinstance(script, str):
        p = (config_dir / script).resolve()
        if p.is_relative_to(config_dir.resolve()):  # only what lives in .autodev/ itself
            files.append(p)
    return [f for f in files if f.is_file()]


def save_team(config_dir: Path, run_dir: Path) -> int:
    """Copy the team the daemon just loaded into the run folder (private, replaced atomically),
    and keep it in the run's team history; returns its number there."""
    files = {
        f.resolve().relative_to(config_dir.resolve()).as_posix(): f.read_bytes()
        for f in _team_files(config_dir)
    }
    _write_files(_saved_dir(run_dir), files)
    return _keep_version(Path(run_dir) / HISTORY, files)


def _write_files(out: Path, files: dict[str, bytes]) -> None:
    import os

    out.mkdir(mode=0o700, exist_ok=True)
    for rel, data in files.items():
        dest = out / rel
        dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as w:
            w.write(data)
        os.replace(tmp, dest)


def team_versions(run_dir: Path) -> dict[int, Path]:
    """The run's team history: number -> folder (team.toml, config.toml, a script)."""
    hist = Path(run_dir) / HISTORY
    if not hist.is_dir():
        return {}
    return {int(d.name): d for d in hist.iterdir() if d.name.isdigit() and d.is_dir()}


def _keep_version(hist: Path, files: dict[str, bytes]) -> int:
    """The number of `files` in the history: the newest one when it holds the same files, else
    a new one (written aside, then renamed into place: a crash leaves no half version)."""
    versions = team_versions(hist.parent)
    if versions:
        n = max(versions)
        newest = versions[n]
        held = {f.relative_to(newest).as_posix(): f.read_bytes() for f in newest.rglob("*") if f.is_file()}
        if held == files:
            return n
    n = max(versions, default=0) + 1
    hist.mkdir(mode=0o700, exist_ok=True)
    tmp = hist / f".{n}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    _write_files(tmp, files)
    tmp.rename(hist / str(n))
    return n


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
