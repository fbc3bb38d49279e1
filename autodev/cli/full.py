"""The whole Typer app: root.py's app with every command registered. Commands register themselves
on import; this order is the order `autodev --help` lists them in."""

from __future__ import annotations

from autodev.cli.root import app, current_paths, main

# isort: off
from autodev.cli import setup, start, best, send, look, timeline, evaluate, trace
# isort: on

# the command modules are here for registering their commands on import
__all__ = [
    "app",
    "best",
    "current_paths",
    "evaluate",
    "look",
    "main",
    "send",
    "setup",
    "start",
    "timeline",
    "trace",
]
