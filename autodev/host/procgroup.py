"""Process groups, the one way autodev ends what it started: every command, agent CLI, MCP server,
browser, hook and notification runs as the leader of its own group, and is ended whole with
`kill_group` (children it left in the background included); `run_json` runs `sh -c` in its own
group with a JSON payload on stdin (hooks and notifications).

A process told to end ends what it started: `end_all` kills every group it started through the
door (host/spawn.py) and has not ended (a daemon on SIGTERM: its turn's command, in bubblewrap or
not); `end_trees` ends an autodev child and every process below it, whatever group each leads
(an eval ending its runs' daemons: SIGTERM first, so that each ends its own, then SIGKILL)."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Protocol

from autodev.host import spawn


class Room(Protocol):
    """What a hook runs in: guard/sandbox.Room (here only its shape: host/ is below guard/)."""

    def wrap(self, argv: list[str]) -> list[str]: ...
    def env(self, env: dict[str, str]) -> dict[str, str]: ...


__all__ = ["end_all", "end_trees", "group_members", "kill_group", "run_json"]


def kill_group(pgid: int | None, grace: float = 0.0) -> bool:
    """End process group `pgid`: SIGKILL at once, or with `grace` seconds SIGTERM first and SIGKILL
    what is left after them. Our own group is never killed. False if there was no such group (or
    it is not ours to signal)."""
    if pgid is None or pgid <= 1 or pgid == os.getpgrp():
        return False
    spawn.forget_group(pgid)  # its owner ends it: not left for end_all
    try:
        if grace > 0:
            os.killpg(pgid, signal.SIGTERM)
            end = time.monotonic() + grace
            while time.monotonic() < end:
                os.killpg(pgid, 0)  # ProcessLookupError once the whole group is gone
                if _only_zombies(pgid):
                    break  # what is left waits for its parent's wait (our own child, often)
                time.sleep(0.05)
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return grace > 0  # gone during the grace: it was there
    except PermissionError:
        return False
    return True


def end_all(keep: Collection[int] = ()) -> int:
    """SIGKILL to every process group this process started and has not ended (nor waited for
    its leader), but those in `keep` (what was there before the caller began): how many."""
    groups = [g for g in spawn.live_groups() if g not in keep]
    for g in groups:
        kill_group(g)
    return len(groups)


def end_trees(roots: list[int], grace: float) -> None:
    """End each of `roots` (leaders of their own groups: autodev children) and every process below
    them: SIGTERM to the roots' groups, up to `grace` seconds for them to end, then SIGKILL to what
    is left of the roots' groups and to every process (and its group) seen below them, before and
    after the grace. A root ends its own children on SIGTERM (a daemon: `end_all`); what one left
    regardless (it was stuck, or killed) is still found here, as it was seen below it."""
    seen = _below(roots)
    for r in roots:
        _signal(r, signal.SIGTERM)
    end = time.monotonic() + grace
    while any(_running(r) for r in roots) and time.monotonic() < end:
        time.sleep(0.05)
    seen.update(_below(roots))
    for r in roots:
        kill_group(r)
    for (pid, start), pgid in seen.items():
        now, group, _ = _stat(pid)
        if now != start:
            continue  # gone (its pid may be another process's by now)
        if group in (pgid, pid):  # the group it was seen in (which lives on while it is in it), or its own
            kill_group(group)
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def group_members(pgid: int) -> list[tuple[int, int]]:
    """(pid, start time in clock ticks) of every live process in group `pgid`: a group lives on
    after its leader dies, as long as a process it started is in it."""
    out: list[tuple[int, int]] = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            start, group, _ = _stat(int(d.name))
            if start >= 0 and group == pgid and _running(int(d.name)):
                out.append((int(d.name), start))
    return out


def _only_zombies(pgid: int) -> bool:
    """Whether nothing in group `pgid` runs any more (per /proc; False where there is none)."""
    return os.path.isdir("/proc/self") and not group_members(pgid)


def _signal(pgid: int, sig: int) -> bool:
    """`sig` to group `pgid`; False when there is no such group."""
    if pgid <= 1 or pgid == os.getpgrp():
        return False
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _running(pid: int) -> bool:
    """Whether `pid` runs (neither gone nor a zombie its parent has not waited for yet)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stat(pid: int) -> tuple[int, int, int]:
    """(start time, process group, parent) of `pid` from /proc, or (-1, -1, -1) when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return -1, -1, -1
    return int(fields[19]), int(fields[2]), int(fields[1])


def _below(roots: list[int]) -> dict[tuple[int, int], int]:
    """Every live process at or below `roots` (by parent links): (pid, start time) → its group."""
    children: dict[int, list[int]] = {}
    stats: dict[int, tuple[int, int, int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (st := _stat(int(d.name)))[0] >= 0:
            stats[int(d.name)] = st
            children.setdefault(st[2], []).append(int(d.name))
    out: dict[tuple[int, int], int] = {}
    todo = [r for r in roots if r in stats]
    while todo:
        pid = todo.pop()
        start, pgid, _ = stats[pid]
        if (pid, start) not in out:
            out[(pid, start)] = pgid
            todo.extend(children.get(pid, []))
    return out


def run_json(
    command: str,
    data: Mapping[str, object],
    cwd: str | Path,
    timeout: float,
    env: dict[str, str],
    room: Room | None = None,
) -> tuple[int | None, str, str]:
    """`sh -c command` with `data` as JSON on stdin, in its own process group (killed whole on
    timeout), inside `room` when given (a hook), else on the host (notifyCommand, a hook the
    user set `host = true`). Returns (exit code or None on timeout, stdout, stderr)."""
    argv = ["sh", "-c", command]
    if room is None:
        p = spawn.popen(
            argv, "user-command", cwd=cwd, env=env, start_new_session=True, text=True,
            stdin=spawn.PIPE, stdout=spawn.PIPE, stderr=spawn.PIPE,
        )  # fmt: skip
    else:
        p = spawn.popen(
            room.wrap(argv),
            "sandboxed",
            cwd=cwd,
            env=room.env(env),
            start_new_session=True,
            text=True,
            stdin=spawn.PIPE,
            stdout=spawn.PIPE,
            stderr=spawn.PIPE,
        )
    try:
        out, err = p.communicate(json.dumps(data), timeout=timeout)
        return p.returncode, out, err
    except spawn.TimeoutExpired:
        kill_group(p.pid)
        out, err = p.communicate()
        return None, out, err
