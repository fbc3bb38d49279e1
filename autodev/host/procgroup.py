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


__all__ = [
    "end_all",
    "end_trees",
    "group_members",
    "kill_group",
    "kill_stale",
    "reap_ledger",
    "run_json",
    "start_time",
]


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


def start_time(pid: int) -> float | None:
    """The process's start time in clock ticks (/proc/PID/stat field 22): with the pid, it names
    one process, so a recorded group is not confused with a later one that reused the pid."""
    start = _stat(pid)[0]
    return float(start) if start >= 0 else None


def kill_stale(pid: int, started: float | None, grace: float = 0.0) -> bool:
    """Kill the group a dead process left running (recorded as its leader's pid + start time);
    True if any of it was still there. The leader may have died with its parent (die_with_parent)
    while what it started lives on in its group. Linux gives no new process a pid still in use as
    a group id, so while the group lives the pid is still the leader's; members started before the
    leader would be another group's (the pid reused after the group ended)."""
    if not pid or started is None:
        return False
    now = start_time(pid)
    if now is not None and now != started:
        return False  # the pid is another process's now
    # what still runs in it (a zombie leader, whose reaper is elsewhere, runs nothing)
    if not any(begun >= started for _, begun in group_members(pid)):
        return False
    kill_group(pid, grace)
    return True


def reap_ledger(folder: Path) -> list[tuple[int, str]]:
    """End the groups a killed daemon's ledger names (host/groups.py) and empty it: (group,
    what it was) of each that was still there. Run before the next daemon starts anything."""
    if not folder.is_dir():
        return []
    killed: list[tuple[int, str]] = []
    for path in sorted(folder.iterdir()):
        pid, _, started = path.name.partition("-")
        if pid.isdigit() and started.isdigit() and kill_stale(int(pid), float(started)):
            killed.append((int(pid), path.read_text(errors="replace")[:100]))
        path.unlink(missing_ok=True)
    end = time.monotonic() + REAP_WAIT_S  # SIGKILL is sent, not yet done: ended means gone
    while killed and time.monotonic() < end and any(group_members(g) for g, _ in killed):
        time.sleep(0.01)
    return killed


REAP_WAIT_S = 2.0


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
