"""The edge where typed errors become a message and a fix, and finding the run: shared by the
Typer app (root.py) and the steering commands' quick path (quick.py), so neither imports typer
to say what went wrong."""

from __future__ import annotations

import sys
from collections.abc import Callable

from autodev.errors import AutodevError, NotInitializedError
from autodev.store.paths import RunPaths, find_repo


def current_paths(initialized: bool = True) -> RunPaths:
    paths = RunPaths(find_repo())
    if initialized and not paths.team_file.exists():
        from autodev.config.project import saved_team

        if saved_team(paths.run_dir):  # e.g. after `git clean -fdx`: the run folder kept it
            raise NotInitializedError(
                f"{paths.team_file} is missing, but the run folder {paths.run_dir} keeps the last "
                "team this run used",
                "restore it with `autodev init --from-run`, then run the command again",
            )
        raise NotInitializedError(
            f"{paths.config_dir} has no team.toml", "run `autodev init` (or `autodev init --team pair`) first"
        )
    return paths


def run_paths(run: str | None) -> RunPaths:
    """The run named by its id (`autodev runs` lists them; a best-of group's runs included), or,
    without one, this repository's."""
    if run is None:
        return current_paths()
    from pathlib import Path

    from autodev.errors import UsageError
    from autodev.store import runs

    rows = [r for r in runs.listing() if r["run"] == run]
    repo = rows[0]["repo"] if rows else None
    if not repo:
        raise UsageError(f"no run {run!r} in the runs index", "`autodev runs` lists the runs on this machine")
    return RunPaths(Path(repo))


def guarded(call: Callable[[], object]) -> None:
    """Run the command: a typed error is said (message, fix) and exits with its code."""
    try:
        call()
    except AutodevError as e:
        _say(e)
    except OSError as e:
        # The machine refused a write (read-only or missing AUTODEV_HOME, a full disk): the path
        # and the fix, exit 2. Any other OSError is a bug and keeps its traceback.
        from autodev.store.faults import explain

        fault = explain(e)
        if fault is None:
            raise
        _say(fault)


def _say(e: AutodevError) -> None:
    print(f"autodev: {e.message}", file=sys.stderr)
    if e.fix:
        print(f"  fix: {e.fix}", file=sys.stderr)
    sys.exit(e.exit_code)


def version_line() -> str:
    import platform

    from autodev import __version__

    return f"autodev {__version__} (autodev-team) on Python {platform.python_version()} at {sys.executable}"
