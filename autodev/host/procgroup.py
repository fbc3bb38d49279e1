"""Process groups, the one way autodev ends what it started: every command, agent CLI, MCP server,
browser, hook and notification runs as the leader of its own group, and is ended whole with
`kill_group` (children it left in the background included); `run_json` runs `sh -c` in its own
group with a JSON payload on stdin (hooks and notifications)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Protocol

from autodev.host import spawn


class Room(Protocol):
    """What a hook runs in: guard/sandbox.Room (here only its shape: host/ is below guard/)."""

    def wrap(self, argv: list[str]) -> list[str]: ...
    def env(self, env: dict[str, str]) -> dict[str, str]: ...


__all__ = ["kill_group", "run_json"]


def kill_group(pgid: int | None, grace: float = 0.0) -> bool:
    """End process group `pgid`: SIGKILL at once, or with `grace` seconds SIGTERM first and SIGKILL
    what is left after them. Our own group is never killed. False if there was no such group (or
    it is not ours to signal)."""
    if pgid is None or pgid <= 1 or pgid == os.getpgrp():
        return False
    try:
        if grace > 0:
            os.killpg(pgid, signal.SIGTERM)
            end = time.monotonic() + grace
            while time.monotonic() < end:
                os.killpg(pgid, 0)  # ProcessLookupError once the whole group is gone
                time.sleep(0.05)
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return grace > 0  # gone during the grace: it was there
    except PermissionError:
        return False
    return True


def run_json(
    command: str,
    data: dict,
    cwd: str | Path,
    timeout: float,
    env: dict[str, str],
    room: Room | None = None,
) -> tuple[int | None, str, str]:
    """`sh -c command` with `data` as JSON on stdin, in its own process group (killed whole on
    timeout), inside `room` when given (a hook), else on the host (notifyCommand, a hook the
    user set `host = true`). Returns (exit code or None on timeout, stdout, stderr)."""
    argv = ["sh", "-c", command]
    how = dict(cwd=cwd, stdin=spawn.PIPE, stdout=spawn.PIPE, stderr=spawn.PIPE, text=True)
    if room is None:
        p = spawn.popen(argv, "user-command", env=env, start_new_session=True, **how)
    else:
        p = spawn.popen(room.wrap(argv), "sandboxed", env=room.env(env), start_new_session=True, **how)
    try:
        out, err = p.communicate(json.dumps(data), timeout=timeout)
        return p.returncode, out, err
    except spawn.TimeoutExpired:
        kill_group(p.pid)
        out, err = p.communicate()
        return None, out, err
