"""The daemon: one per repository, running the run loop. Its parts, each owning one thing:

- `process`: the process (`Daemon`): lock, settings, open/run/close, faulted and stopped marks;
  `python -m autodev.daemon` (`main`).
- `loop`: the run loop (`Loop`): open, turn boundary, idle, running a turn and applying its
  outcome.
- `inputs`: what the user asks between turns: controls, the inbox, edits of .autodev/.
- `effects`: what a post does (pure: post + state + config → change; the audit passed in).
- `auditing`: the audit of a `done` post, as the daemon calls it.
- `notices`: tell_user notices, their answers and the capabilities they hold.
- `turnsetup`: a turn's context (prompts, workspace, targets, guards).
- `recovery`: everything a restart does (how a crash is recovered).
- `services`: scripted server, MCP servers, browsers, hooks and notifier.
- `handles`: the open run's files (`Run`) and the settings (`Settings`) parts are handed.

The daemon's flock (`DaemonLock`) is in `store/lock` (the CLI checks it on every command without
importing the daemon); importing this package is cheap: `Daemon` and `main` load the loop on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autodev.daemon.process import Daemon, main

__all__ = ["Daemon", "main"]


def __getattr__(name: str):
    if name in ("Daemon", "main"):
        from autodev.daemon import process

        return getattr(process, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
