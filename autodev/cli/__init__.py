"""The `autodev` command: parse, call one function, render. Typed errors become friendly
messages with the fix; exit 2 for usage and configuration, 1 for other failures.

Commands that never call a model (send, status, thread, pause, resume, stop, approve, deny,
config, init) must not import litellm: it costs seconds of start-up. The steering commands
(send, answer, approve, deny, notice, pause, resume, stop) and `status` and `--version` go
further: `main` runs them without typer (quick.py), and without pydantic for the steering ones
(issue 33); everything else, `--help` included, goes to the Typer app.

- `root`: the Typer app; `edge`: the error edge and finding the repository; `full`: the app with
  every command registered (`app` here is it)
- `quick`: the steering commands' path without typer; `steer`: what they do
- `setup`: init, doctor, config
- `start`: start and its checks
- `send`: send, approve, deny, answer, notice, pause, resume, stop
- `look`: status, thread, runs, panel, demo
- `timeline`: rewind, replay, runs export (autodev/timeline)
- `evaluate`: eval
- `trace`: trace export (OpenTelemetry)
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autodev.cli.full import app, current_paths

__all__ = ["current_paths", "app", "main"]


def main() -> None:
    from autodev.cli import quick

    quick.run(sys.argv[1:])  # exits when it ran the command
    from autodev.cli.full import main as app_main

    app_main()


def __getattr__(name: str) -> object:
    # The Typer app is built on first use: `main` needs it only for what quick.py leaves to it.
    if name in ("app", "current_paths"):
        from autodev.cli import full

        return getattr(full, name)
    raise AttributeError(f"module 'autodev.cli' has no attribute {name!r}")
