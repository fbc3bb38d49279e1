"""Reading events.jsonl for the Feed: a bounded tail first (so a long run opens fast), then
only the bytes appended since. Read-only: the panel never opens a log for writing, so it can
neither repair a torn tail nor race the daemon's appends.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from autodev.store.journal import JsonObject, is_object

TAIL_RECORDS = 400  # how many of the newest events the Feed opens with
TAIL_BYTES = 1024 * 1024  # and never more than this much of the file


class EventTail:
    """Follows one JSONL file by byte offset. `read_new()` returns the complete records
    appended since the last call; the first call returns the bounded tail."""

    def __init__(self, path: Path, tail_records: int = TAIL_RECORDS, tail_bytes: int = TAIL_BYTES):
        self.path = Path(path)
        self.tail_records = tail_records
        self.tail_bytes = tail_bytes
        self.offset: int | None = None  # bytes consumed; None until the tail is read
        self._ino: int | None = None
        self.skipped = 0  # malformed lines passed over (the daemon refuses them)

    def read_new(self) -> list[JsonObject]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self.offset, self._ino = None, None
            return []
        if self.offset is not None and (st.st_ino != self._ino or st.st_size < self.offset):
            self.offset = None  # the file was replaced or cut: start again from its tail
        with open(self.path, "rb") as f:
            if self.offset is None:
                start = max(0, st.st_size - self.tail_bytes)
                f.seek(start)
                data = f.read(st.st_size - start)
                if start > 0:
                    # The first line was cut by the byte bound: it belongs to older history.
                    nl = data.find(b"\n")
                    data, start = (data[nl + 1 :], start + nl + 1) if nl >= 0 else (b"", st.st_size)
                records = self._parse(data, start)
                self._ino = st.st_ino
                return records[-self.tail_records :]
            f.seek(self.offset)
            data = f.read(max(0, st.st_size - self.offset))
            return self._parse(data, self.offset)

    def _parse(self, data: bytes, start: int) -> list[JsonObject]:
        # Only whole lines count: an append in progress is read on the next change.
        end = data.rfind(b"\n") + 1
        self.offset = start + end
        out: list[JsonObject] = []
        for raw in data[:end].split(b"\n"):
            if not raw.strip():
                continue
            try:
                rec: object = json.loads(raw)
            except ValueError:
                self.skipped += 1
                continue
            if is_object(rec):
                out.append(rec)
        return out
