"""One durable JSONL append log.

Every record is one line, written with a single write() and fsynced before append() returns, so
anything that depends on a record happens after it is on disk. A final line without its newline
is an append that died mid-write: it is dropped on open. A malformed line anywhere else is
corruption: the journal refuses to open and names the line; it rewrites nothing.

Reads that the daemon does on every turn (the tail, recent ids) cost the size of the tail, not the
size of the file.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from autodev.errors import CorruptLogError, LogWriteError, RecordError

# What a line holds and how its text is made safe to write: callers import these from here.
from autodev.store.jsonline import JsonObject as JsonObject
from autodev.store.jsonline import is_object as is_object
from autodev.store.jsonline import safe as safe
from autodev.store.jsonline import safe_text as safe_text

_BLOCK = 64 * 1024


def _object(raw: bytes) -> JsonObject:
    """One line parsed; ValueError when it is not JSON, or JSON but not an object."""
    rec: object = json.loads(raw)
    if not is_object(rec):
        raise ValueError("not a JSON object")
    return rec


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _line_number(path: Path, offset: int) -> int:
    """1-based line number of the byte at `offset` (only used to report corruption)."""
    n = 1
    with open(path, "rb") as f:
        remaining = offset
        while remaining > 0:
            chunk = f.read(min(_BLOCK, remaining))
            if not chunk:
                break
            n += chunk.count(b"\n")
            remaining -= len(chunk)
    return n


class Journal:
    """An append-only JSONL file with idempotent appends by the record's `id` field."""

    def __init__(
        self,
        path: Path,
        *,
        id_window: int = 4096,
        check_tail_bytes: int = 256 * 1024,
        redact: Callable[[JsonObject], JsonObject] | None = None,
        idempotent: bool = True,
        schema: Callable[[JsonObject], None] | None = None,
    ):
        """`schema` checks each record read on open and each one appended (a `records.check_*`:
        raises ValueError saying what does not fit)."""
        self.path = Path(path)
        self._schema = schema
        self._redact = redact
        self._idempotent = idempotent
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._id_window = id_window
        self._ids: OrderedDict[str, JsonObject] = OrderedDict()
        self._unsynced = False  # written by append(durable=False), not yet fsynced (`sync`)
        # Given each line appended, as written: the daemon's telemetry hands a turn's lines to its
        # exporter's process rather than have it read them back (issue 33).
        self.tap: Callable[[bytes], None] | None = None
        created = not self.path.exists()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        if created:
            fsync_dir(self.path.parent)
        elif os.fstat(self._fd).st_mode & 0o077:
            os.fchmod(self._fd, 0o600)  # a log an older autodev left readable to others
        # Validate before repairing: a damaged log must be left exactly as it was found.
        for rec in self._load_tail_records(check_tail_bytes):
            self._remember(rec)
        self.dropped_torn_tail = self._repair_torn_tail()

    # -- opening -------------------------------------------------------------------------------

    def _repair_torn_tail(self) -> bool:
        size = os.fstat(self._fd).st_size
        if size == 0:
            return False
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return False
            # Walk back to the last newline; everything after it is the torn append.
            pos = size
            while pos > 0:
                start = max(0, pos - _BLOCK)
                f.seek(start)
                chunk = f.read(pos - start)
                i = chunk.rfind(b"\n")
                if i >= 0:
                    cut = start + i + 1
                    break
                pos = start
            else:
                cut = 0
        os.ftruncate(self._fd, cut)
        os.fsync(self._fd)
        return True

    def _load_tail_records(self, max_bytes: int) -> list[JsonObject]:
        """Parse the last `max_bytes` of the file, refusing malformed lines with their number."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            return []
        start = max(0, size - max_bytes)
        with open(self.path, "rb") as f:
            f.seek(start)
            data = f.read(size - start)
        offset = start
        if start > 0:
            nl = data.find(b"\n")
            offset += nl + 1
            data = data[nl + 1 :]
        out: list[JsonObject] = []
        for raw in data.split(b"\n")[:-1]:
            out.append(self._parse(raw, offset))
            offset += len(raw) + 1
        return out

    def _parse(self, raw: bytes, offset: int) -> JsonObject:
        try:
            rec = _object(raw)
        except ValueError as e:
            raise self._refusal(
                CorruptLogError,
                offset,
                f"is corrupt ({e}); autodev refuses to run on a damaged log",
                "; restore it from a backup or move the run folder aside to start a fresh run",
            ) from None
        if self._schema is not None:
            try:
                self._schema(rec)
            except ValueError as e:
                raise self._refusal(
                    RecordError,
                    offset,
                    f"does not fit its schema ({e}); autodev refuses to run on a log it cannot read",
                    ": a newer autodev may have written it (upgrade), or it was edited by hand "
                    "(restore it or move the run folder aside)",
                ) from None
        return rec

    def _refusal(self, error: type[CorruptLogError], offset: int, what: str, fix: str) -> CorruptLogError:
        """The error for the line at `offset`, naming the file and the line in message and fix."""
        line = _line_number(self.path, offset)
        return error(
            f"{self.path}: line {line} {what} and has changed nothing",
            f"inspect line {line} of {self.path}{fix}",
        )

    def _remember(self, rec: JsonObject) -> None:
        if not self._idempotent:
            return
        rid = rec.get("id")
        if isinstance(rid, str):
            self._ids[rid] = rec
            self._ids.move_to_end(rid)
            while len(self._ids) > self._id_window:
                self._ids.popitem(last=False)

    # -- writing -------------------------------------------------------------------------------

    def seen(self, rid: str) -> JsonObject | None:
        """The record already appended under this provisioned id, if it is in the recent window."""
        return self._ids.get(rid)

    def append(self, record: JsonObject, durable: bool = True) -> JsonObject:
        """Append `record` durably. A record whose `id` was already appended is not written again;
        the earlier record is returned instead.

        `durable=False` is the group commit (issue 33): the line is written now, in one write()
        (a reader and a `kill -9` see it), and fsynced by the next durable append to this file
        or by `sync`, which the daemon calls before every state.json write, before it idles and
        on close. Only a record that no effect waits for may be appended so."""
        rid = record.get("id") if self._idempotent else None
        if isinstance(rid, str) and rid in self._ids:
            return self._ids[rid]
        if self._schema is not None:
            try:
                self._schema(record)
            except ValueError as e:
                # Written, it would stop the next open: refuse it before it reaches the disk.
                raise RecordError(
                    # Named by type and id only: the record itself is not redacted yet.
                    f"{self.path}: refused to append a record that does not fit its schema ({e}; "
                    f"type {record.get('type') or record.get('kind')!r}, id {record.get('id')!r})",
                    "this is a bug in autodev; report it with this message",
                ) from None
        if self._redact is not None:
            record = self._redact(record)  # secrets never reach a log
        try:
            data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        except UnicodeEncodeError:
            record = safe(record)  # what is returned and remembered is what the log holds
            data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                raise OSError(f"short write ({written} of {len(data)} bytes)")
            if durable:
                os.fsync(self._fd)  # and with it every line written before
            self._unsynced = not durable
        except OSError as e:
            # Take back a partial line so the file stays a valid prefix.
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise LogWriteError(
                f"could not append to {self.path}: {e}",
                "free disk space or fix the I/O problem, then run `autodev start` to resume",
            ) from e
        self._remember(record)
        if self.tap is not None:
            self.tap(data)
        return record

    def sync(self) -> None:
        """fsync the lines `append(durable=False)` wrote since the last fsync (none: no call)."""
        if not self._unsynced or self._fd < 0:
            return
        try:
            os.fsync(self._fd)
        except OSError as e:
            raise LogWriteError(
                f"could not append to {self.path}: {e}",
                "free disk space or fix the I/O problem, then run `autodev start` to resume",
            ) from e
        self._unsynced = False

    def close(self) -> None:
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------------

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def tail(self, n: int) -> list[JsonObject]:
        """The newest `n` records, oldest first. Reads only as many blocks as it needs."""
        return read_tail(self.path, n)

    def last(self) -> JsonObject | None:
        t = self.tail(1)
        return t[0] if t else None


def read_tail(path: Path, n: int) -> list[JsonObject]:
    """The newest `n` complete records of a JSONL file, oldest first (a torn final line is skipped)."""
    out: list[JsonObject] = []
    if n <= 0:
        return out
    for rec in iter_records_reverse(path):
        out.append(rec)
        if len(out) >= n:
            break
    out.reverse()
    return out


def iter_records(path: Path) -> Iterator[JsonObject]:
    """Every complete record from the start (for full rebuilds and exports, not hot paths)."""
    if not Path(path).exists():
        return
    with open(path, "rb") as f:
        lineno = 0
        for raw in f:
            lineno += 1
            if not raw.endswith(b"\n"):
                return  # torn final line
            try:
                yield _object(raw)
            except ValueError:
                raise CorruptLogError(
                    f"{path}: line {lineno} is corrupt; nothing was changed",
                    f"inspect line {lineno} of {path}",
                ) from None


def _last_newline_end(f: BinaryIO) -> int:
    """Offset just past the file's last newline: everything after it is a torn append."""
    f.seek(0, os.SEEK_END)
    pos = f.tell()
    while pos > 0:
        start = max(0, pos - _BLOCK)
        f.seek(start)
        i = f.read(pos - start).rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return 0


def iter_records_reverse(path: Path) -> Iterator[JsonObject]:
    """Complete records from the newest backwards, reading block by block."""
    if not Path(path).exists():
        return
    with open(path, "rb") as f:
        pos = _last_newline_end(f)
        buf = b""
        while pos > 0:
            start = max(0, pos - _BLOCK)
            f.seek(start)
            buf = f.read(pos - start) + buf
            pos = start
            parts = buf.split(b"\n")
            # parts[-1] is empty (the text after the final newline); parts[0] may be cut short.
            buf = parts[0] if pos > 0 else b""
            complete = parts[1:-1] if pos > 0 else parts[:-1]
            for raw in reversed(complete):
                if raw:
                    try:
                        yield _object(raw)
                    except ValueError:
                        raise CorruptLogError(
                            f"{path}: a corrupt line after byte {pos}; nothing was changed",
                            f"inspect {path} after byte {pos}",
                        ) from None
            buf = buf + b"\n" if pos > 0 else b""


def last_evidence(run_dir: Path, posts: int = 200) -> JsonObject | None:
    """The test evidence on the newest audit verdict among the thread's last `posts` posts (here,
    beside `read_tail`, so status's quick path reads it without the records)."""
    thread = run_dir / "thread.jsonl"
    if not thread.exists():
        return None
    for p in reversed(read_tail(thread, posts)):
        ev = p.get("evidence")
        if p.get("from") == "audit" and is_object(ev):
            return ev
    return None
