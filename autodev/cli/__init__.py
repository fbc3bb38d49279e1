"""The `autodev` command: parse, call one function, render. Typed errors become friendly
messages with the fix; exit 2 for usage and configuration, 1 for other failures.

Commands that never call a model (send, status, thread, pause, resume, stop, approve, deny,
config, init) must not import litellm: it costs seconds of start-up.

- `root`: the Typer app, `main` (the error edge), finding the repository
- `setup`: init, doctor, config
- `start`: start and its checks
- `send`: send, approve, deny, answer, notice, pause, resume, stop
- `look`: status, thread, runs, panel, demo
- `timeline`: rewind, replay, runs export (autodev/timeline)
- `evaluate`: eval
- `trace`: trace export (OpenTelemetry)
"""

from __future__ import annotations

from autodev.cli.root import _paths, app, main

# Commands register themselves on import; this order is the order `autodev --help` lists them in.
# isort: off
from autodev.cli import setup, start, send, look, timeline, evaluate, trace  # noqa: F401
# isort: on

__all__ = ["_paths", "app", "main"]
