"""The Typer app, the edge where typed errors become a message and a fix, and finding the run."""

from __future__ import annotations

import sys

import typer

from autodev.errors import AutodevError, NotInitializedError
from autodev.store.paths import RunPaths, find_repo

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Run a team of LLM participants on this git repository.",
    epilog=(
        "Offline, without a model: `autodev demo` runs a scripted team; `autodev-scripted SCRIPT.toml` "
        "serves a scripted OpenAI-compatible model for your own teams (`--help` there)."
    ),
)


def _flags_without_type() -> None:
    """typer 0.29 prints `<bool>` beside every flag (`--json <bool>`), as if it took a value:
    flags show no type."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich


_flags_without_type()


def _paths(initialized: bool = True) -> RunPaths:
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


def _version(value: bool) -> None:
    if value:
        import platform

        from autodev import __version__

        print(
            f"autodev {__version__} (autodev-team) on Python {platform.python_version()} at {sys.executable}"
        )
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version and the Python it runs on.",
    ),
):
    """Run a team of LLM participants on this git repository."""


def main() -> None:
    try:
        app()
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
