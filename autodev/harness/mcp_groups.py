"""The MCP servers' process groups: which group a server just started leads, killing it, and
the groups file through which the next daemon stops what a daemon killed with -9 left running
(a server may outlive its stdin, and what it started always does)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from autodev.host.procgroup import kill_group
from autodev.store.journal import JsonObject, is_object


def find_group(command: str, args: list[str], taken: list[int | None]) -> int | None:
    """The process group of the server just started: our child that leads its own session and
    runs its arguments. The SDK stops only the server when it exits on its own; we stop what it
    left in its group too."""
    me = os.getpid()
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) in taken:
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        ppid, pgid = int(fields[1]), int(fields[2])
        if (
            ppid == me
            and pgid == int(entry)
            and argv[1:] == args
            and os.path.basename(argv[0]) == os.path.basename(command)
        ):
            return pgid
    return None


def save_groups(path: Path, groups: dict[str, int]) -> None:
    """The running servers' groups by server name (replaced atomically)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(groups))
    os.replace(tmp, path)


def reap_groups(path: Path) -> list[tuple[str, int]]:
    """Kill the groups a killed daemon left in `path` and remove it: (server, group) of each killed."""
    if not path.exists():
        return []
    try:
        groups: object = json.loads(path.read_text())
    except (OSError, ValueError):
        groups = {}
    killed: list[tuple[str, int]] = []
    found: JsonObject = groups if is_object(groups) else {}
    for name, pgid in found.items():
        if isinstance(pgid, int) and kill_group(pgid):
            killed.append((name, pgid))
    path.unlink(missing_ok=True)
    return killed
