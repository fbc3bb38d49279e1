"""The Typer app; the edge where typed errors become a message and a fix, and finding the run, are
edge.py (the steering commands' quick path shares them without importing typer)."""

from __future__ import annotations

import typer

from autodev.cli.edge import _paths, guarded, version_line

__all__ = ["_paths", "app", "main"]

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Run a team of LLM participants on this git repository.",
    epilog=(
        "Offline, without a model: `autodev demo` runs a scripted team; `python -m autodev.scripted "
        "SCRIPT.toml` serves a scripted OpenAI-compatible model for your own teams (`--help` there)."
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


def _version(value: bool) -> None:
    if value:
        print(version_line())
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
    """The Typer app, every command registered (autodev.cli.full does), behind the error edge."""
    guarded(app)
