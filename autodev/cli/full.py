"""The whole Typer app: root.py's app with every command registered. Commands register themselves
on import; this order is the order `autodev --help` lists them in."""

from __future__ import annotations

from autodev.cli.root import _paths, app, main

# isort: off
from autodev.cli import setup, start, best, send, look, timeline, evaluate, trace  # noqa: F401
# isort: on

__all__ = ["_paths", "app", "main"]
