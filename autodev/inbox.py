"""The inbox: one file per user action, written atomically, consumed by the daemon exactly once.

`autodev send` and friends work with or without a running daemon and from any number of
terminals: each message is written to a temporary name and renamed into place, so the daemon
sees whole messages only. File names sort by time, then sender, so one sender's order is kept.
The daemon appends the message to the thread under the message id (idempotent) before it
deletes the file, so a crash in between never loses or duplicates it.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

from autodev.journal import fsync_dir
from autodev.thread import now_ts

KINDS = ("send", "answer", "approve", "deny", "notice")


def drop(inbox: Path, kind: str, **payload) -> dict:
    """Write one message into the inbox; returns it (with its id)."""
    if kind not in KINDS:
        raise ValueError(f"unknown inbox kind {kind!r}")
    inbox.mkdir(parents=True, exist_ok=True)
    mid = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
    msg = {"id": f"in-{mid}", "kind": kind, "ts": now_ts(), **payload}
    tmp = inbox / f".{mid}.tmp"
    with open(tmp, "w") as f:
        json.dump(msg, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, inbox / f"{mid}.json")
    fsync_dir(inbox)
    return msg


def pending(inbox: Path) -> list[tuple[Path, dict]]:
    """Complete messages in arrival order."""
    if not inbox.exists():
        return []
    out = []
    for p in sorted(inbox.glob("*.json")):
        try:
            out.append((p, json.loads(p.read_text())))
        except FileNotFoundError:
            continue
        except ValueError:
            # Renamed into place only when whole, so this is damage from outside autodev:
            # keep the file for the user to inspect, under a name the daemon skips.
            p.rename(p.with_suffix(".bad"))
    return out


def done(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
