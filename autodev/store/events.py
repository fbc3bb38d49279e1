"""events.jsonl: the machine-activity log (turns, tools, generations, audits, warnings...)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.store.journal import Journal, JsonObject
from autodev.store.thread import now_ts

if TYPE_CHECKING:
    from autodev.records.events import Event
    from autodev.records.post import Post

SCHEMA = 1


class Events:
    def __init__(
        self,
        path: Path,
        run_id: str,
        redact: Callable[[JsonObject], JsonObject] = lambda s: s,
        group: bool = False,
    ):
        """`group`: the daemon's group commit (issue 33): an event is written at once and fsynced
        with the next state.json write (`StateFile.sync_first`), as it idles or on close; an
        event is what happened, never an intent an effect waits for."""
        # A log of what happened, not of intents: the same id (a gate's, a notice's) may recur.
        from autodev.records import check_event

        self.journal = Journal(path, redact=redact, idempotent=False, schema=check_event)
        self.run_id = run_id
        self._durable = not group
        self._lock = threading.Lock()  # notifications report from their own threads

    def emit(self, ev: Event) -> JsonObject:
        """Append one event (a model of `records.events`): its envelope, then the fields its
        emitter set."""
        from autodev.records.events import record

        rec = record(ev, now_ts(), self.run_id)
        with self._lock:
            return self.journal.append(rec, durable=self._durable)

    def sync(self) -> None:
        """fsync the events written since the last fsync (the group commit)."""
        with self._lock:
            self.journal.sync()

    def posted(self, post: Post) -> JsonObject:
        """A post just appended to the thread, copied into events: the one place that happens."""
        from autodev.records.events import PostEvent

        return self.emit(PostEvent(post=post))

    def close(self) -> None:
        with self._lock:
            self.journal.close()
