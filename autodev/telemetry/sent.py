"""What was exported where: `telemetry.jsonl` in the run folder, one line per turn (and one for
the run's root span) a collector accepted, keyed by a hash of the collector's traces URL.

This is what makes a span go out once: OTLP receivers do not all drop a span they already hold
(Jaeger and Tempo store both copies; Phoenix keeps the first by span id), so autodev does not
rely on them. A turn is marked after its export succeeded; a crash between the two re-sends
that one turn on the next export, with the same ids (a receiver that dedups by id shows it once).
Another collector (another URL) gets the whole run again: it has seen none of it.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from autodev.records.exported import Exported
from autodev.store.journal import Journal, iter_records


def destination(url: str) -> str:
    """A collector's name in the cursor: a hash, so a token in its URL is not written down."""
    return hashlib.sha256(url.encode()).hexdigest()[:12]


class Sent:
    """The cursor of one run folder for one collector."""

    def __init__(self, path: Path, url: str):
        self.path, self.dest = path, destination(url)
        self._done: set[str] = set()
        if path.exists():
            marks = [Exported.model_validate(r) for r in iter_records(path)]
            self._done = {m.id for m in marks if m.dest == self.dest}
        self._journal: Journal | None = None

    def _id(self, run: str, part: str) -> str:
        return f"{self.dest}:{run}:{part}"

    def has(self, run: str, part: str) -> bool:
        """True when `part` ("t3", or "root") of `run` went to this collector."""
        return self._id(run, part) in self._done

    def mark(self, run: str, part: str, spans: int) -> None:
        rid = self._id(run, part)
        if rid in self._done:
            return
        if self._journal is None:
            self._journal = Journal(self.path)
        # Not fsynced one by one (issue 33: telemetry's cost per turn): a mark a power cut loses
        # only re-sends its turn with the same ids; `close` fsyncs what is written.
        mark = Exported(
            id=rid, type="exported", dest=self.dest, run=run, part=part, spans=spans, ts=time.time()
        )
        self._journal.append(mark.dump(), durable=False)
        self._done.add(rid)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None
