"""events.jsonl: the machine-activity log (turns, tools, generations, audits, warnings...)."""

from __future__ import annotations

import threading
from pathlib import Path

from autodev.store.journal import Journal
from autodev.store.thread import now_ts

SCHEMA = 1


class Events:
    def __init__(self, path: Path, run_id: str, redact=lambda s: s):
        # A log of what happened, not of intents: the same id (a gate's, a notice's) may recur.
        from autodev.records import check_event

        self.journal = Journal(path, redact=redact, idempotent=False, schema=check_event)
        self.run_id = run_id
        self._lock = threading.Lock()  # notifications report from their own threads

    def emit(self, type: str, **fields) -> dict:
        rec = {"type": type, "ts": now_ts(), "run": self.run_id, "schema": SCHEMA}
        rec.update(fields)
        with self._lock:
            return self.journal.append(rec)

    def close(self) -> None:
        self.journal.close()
