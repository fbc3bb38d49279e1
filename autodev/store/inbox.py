"""The inbox: one file per user action, written atomically, consumed by the daemon exactly once.

`autodev send` and friends work with or without a running daemon and from any number of
terminals: each message is written to a temporary name and renamed into place, so the daemon
sees whole messages only. File names sort by time, then sender, so one sender's order is kept.
The daemon appends the message to the thread under the message id (idempotent) before it
deletes the file, so a crash in between never loses or duplicates it.

A file that is not a message autodev wrote (not JSON, not UTF-8, not an object, a field missing
or of the wrong type) is set aside under a `.bad` name for the user to inspect: it never reaches
the thread and never stops the daemon.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from autodev.store import plain
from autodev.store.journal import fsync_dir, is_object, safe
from autodev.store.thread import now_ts

KINDS = ("send", "answer", "approve", "deny", "notice")


def drop(inbox: Path, kind: str, **payload: object) -> dict[str, object]:
    """Write one message into the inbox; returns it (with its id)."""
    mid, msg, tmp = _write(inbox, kind, payload, "tmp")
    os.replace(tmp, inbox / f"{mid}.json")
    fsync_dir(inbox)
    return msg


def stage(inbox: Path, kind: str, **payload: object) -> Path:
    """Write a message under a name the daemon skips; `publish` queues it (start's objective)."""
    return _write(inbox, kind, payload, "staged")[2]


def _write(
    inbox: Path, kind: str, payload: dict[str, object], suffix: str
) -> tuple[str, dict[str, object], Path]:
    """The message, fsynced at inbox/.ID.SUFFIX (a name the daemon skips): (ID, message, path)."""
    if kind not in KINDS:
        raise ValueError(f"unknown inbox kind {kind!r}")
    inbox.mkdir(parents=True, exist_ok=True, mode=0o700)
    mid = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}"
    msg = safe({"id": f"in-{mid}", "kind": kind, "ts": now_ts(), **payload})
    path = inbox / f".{mid}.{suffix}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # private to the user
    with open(fd, "w", encoding="utf-8") as f:
        json.dump(msg, f, ensure_ascii=False)
        f.flush()
        os.fsync(f.fileno())
    return mid, msg, path


def publish(staged: Path) -> None:
    """Queue a staged message (atomic rename); a missing one was published or discarded."""
    name = staged.name.removeprefix(".").removesuffix(".staged")
    try:
        os.replace(staged, staged.with_name(f"{name}.json"))
    except FileNotFoundError:
        return
    fsync_dir(staged.parent)


def discard(staged: Path | None) -> None:
    if staged is not None:
        try:
            staged.unlink()
        except FileNotFoundError:
            pass


def problem(msg: object) -> str | None:
    """Why `msg` is not a message the daemon can act on, or None when it is one (the shapes are
    records.InboxMessage). A message as autodev writes it is checked as plain JSON (store/plain.py):
    pydantic loads only for one that does not fit, for the model's own verdict."""
    if plain.inbox_fits(msg):
        return None
    from autodev import records

    if not is_object(msg):
        return f"it is a JSON {type(msg).__name__}, not an object"
    if not isinstance(msg.get("id"), str) or not msg["id"]:
        return 'it has no "id" string'
    kind = msg.get("kind")
    if kind not in KINDS:
        return f'its "kind" is {kind!r}, not one of {", ".join(KINDS)}'
    try:
        records.inbox_message(msg)
    except records.ValidationError as e:
        name = str(e.errors()[0]["loc"][-1])
        field = records.INBOX[kind].model_fields.get(name)
        optional = field is not None and not field.is_required()
        return f'its "{name}" must be {"a string or null" if optional else "a string"} for a {kind} message'
    return None


MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # a message is a user's text: more is damage from outside


def _read_regular(p: Path) -> bytes | None:
    """The file's bytes (at most MAX_MESSAGE_BYTES + 1), or None when it is not a regular file:
    opened without following a link and without blocking, so a FIFO cannot stall the daemon."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise
    except OSError:  # a link (ELOOP), a folder on some systems, no permission: not ours
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = MAX_MESSAGE_BYTES + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def pending(
    inbox: Path, set_aside: Callable[[Path, str], None] | None = None
) -> list[tuple[Path, dict[str, object]]]:
    """Complete, well-formed messages in arrival order.

    With `set_aside`, a damaged file is renamed to `<name>.bad` and reported through it;
    without (a reader only peeking), it is skipped and left for the daemon.
    """
    if not inbox.exists():
        return []
    out: list[tuple[Path, dict[str, object]]] = []
    for p in sorted(inbox.glob("*.json")):
        try:
            raw = _read_regular(p)
            if raw is None:  # a FIFO, a folder, a link: never a message autodev wrote; ignored
                continue
            if len(raw) > MAX_MESSAGE_BYTES:
                raise ValueError(f"{len(raw)} bytes, more than the {MAX_MESSAGE_BYTES} a message may have")
            msg: object = json.loads(raw.decode("utf-8"))
        except FileNotFoundError:
            continue
        except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, or nested beyond reason
            why = f"it is not a JSON message ({type(e).__name__}: {str(e)[:120]})"
        else:
            why = problem(msg)
            if why is None:
                assert is_object(msg)  # `problem` found an object
                out.append((p, msg))
                continue
        if set_aside is not None:
            # Renamed into place only when whole, so this is damage from outside autodev:
            # keep the file for the user to inspect, under a name the daemon skips.
            try:
                p.rename(p.with_suffix(".bad"))
            except FileNotFoundError:
                continue
            set_aside(p.with_suffix(".bad"), why)
    return out


def done(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
