"""The exporter's engine, run in its own process (`worker`) for the daemon and in-process by
tests: a finished turn goes into a bounded queue with the lines the daemon wrote since the last
one (`saw`), and one thread derives its spans from them (from the logs when they lack its
beginning) and sends them. Whoever hands it turns never waits for a collector.

Turns that finish close together go out in one request (issue 33: a request costs the exporter
more CPU than deriving a turn's spans): a finished turn waits at most `LINGER_S` for the next
ones. A full queue or a failed export leaves the turns in the logs for `autodev trace export`
and says so once in a warning (again only after the collector came back and went away).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Literal, TypeAlias, assert_never

from autodev.telemetry import reading
from autodev.telemetry.export import Prepared, Sender
from autodev.telemetry.reading import Batch

if TYPE_CHECKING:
    from autodev.records.state import RunState
    from autodev.store.journal import JsonObject

LINGER_S = 1.0  # how long a finished turn waits for the next ones to go out with it
MAX_SPANS = 512  # sent at once at most (the OTel SDK's batch size)


@dataclass(frozen=True)
class _TurnJob:
    turn: int
    batch: Batch  # the lines written since the last turn (none: the turn is read from the logs)


@dataclass(frozen=True)
class _CatchUp:
    below: int


@dataclass(frozen=True)
class _Root:
    state: RunState


# What the sending thread is given: a finished turn, the earlier turns to catch up on, or the
# complete run's root span; None stops it.
_Job: TypeAlias = "_TurnJob | _CatchUp | _Root"
# What a step of the sending thread did: the spans sent (0: none to send), None: the collector did
# not take them, "waiting": a turn kept to go out with the next ones.
_Outcome: TypeAlias = 'int | None | Literal["waiting"]'


class Background:
    """The exporter: `turn_done` never blocks; one thread sends."""

    def __init__(self, sender: Sender, run: str, warn: Callable[[str], object]):
        self.sender, self.run, self.warn = sender, run, warn
        self.queue: queue.Queue[_Job | None] = queue.Queue(maxsize=sender.cfg.queue_size)
        self._failing = False
        self._overflowing = False
        self._batch = Batch()  # the lines the daemon wrote since the last finished turn
        self._pending: list[Prepared] = []  # turns waiting to go out together
        self._since = 0.0  # when the first of them was ready
        self.thread = threading.Thread(target=self._work, name="autodev-telemetry", daemon=True)
        self.thread.start()

    # -- the side that hands turns over -----------------------------------------------------------

    def saw(self, log: Literal["harness", "events"], line: JsonObject) -> None:
        """A line the daemon appended to the harness log or to events.jsonl: a finished turn is
        exported from the lines it was handed, read back from the files only when they lack
        its beginning (a turn begun before this daemon)."""
        (self._batch.harness if log == "harness" else self._batch.events).append(line)

    def turn_done(self, turn: int) -> None:
        try:
            batch, self._batch = self._batch, Batch()
            self.queue.put_nowait(_TurnJob(turn, batch))
            self._overflowing = False
        except queue.Full:
            if not self._overflowing:
                self._overflowing = True
                self.warn(
                    f"telemetry: the export queue is full (a slow or unreachable collector at "
                    f"{self.sender.cfg.traces_url}); turn {turn} and later ones are not exported now: "
                    "`autodev trace export` sends them"
                )

    def catch_up(self, below: int) -> None:
        """Queue the earlier finished turns the collector may not have (at the daemon's start)."""
        try:
            self.queue.put_nowait(_CatchUp(below))
        except queue.Full:
            pass

    def close(self, state: RunState | None, timeout_sec: float) -> None:
        """Send what is queued within `timeout_sec`, and the root when the run is complete, then
        stop (what is left stays in the logs for `autodev trace export`)."""
        deadline = time.monotonic() + timeout_sec
        try:
            if state is not None and state.state == "complete":
                self.queue.put(_Root(state), timeout=max(0.01, deadline - time.monotonic()))
            self.queue.put(None, timeout=max(0.01, deadline - time.monotonic()))
        except queue.Full:
            pass
        self.thread.join(max(0.01, deadline - time.monotonic()))
        if not self.thread.is_alive():
            self.sender.close(max(0.1, deadline - time.monotonic()))

    # -- the sending thread -----------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            wait = max(0.0, self._since + LINGER_S - time.monotonic()) if self._pending else None
            try:
                item = self.queue.get(timeout=wait)
            except queue.Empty:  # the oldest waiting turn has waited long enough
                self._report(self._attempt(self._flush))
                continue
            try:
                if not isinstance(item, _TurnJob):  # a catch-up, the root, the end: after those waiting
                    self._report(self._attempt(self._flush))
                if item is None:
                    return
                self._report(self._attempt(partial(self._run_job, item)))
            finally:
                self.queue.task_done()

    def _run_job(self, job: _Job) -> _Outcome:
        match job:
            case _TurnJob():
                return self._add(job)
            case _CatchUp():
                return None if self.sender.catch_up(self.run, job.below)["failed"] else 0
            case _Root():
                return self.sender.root(self.run, job.state)
            case _:
                assert_never(job)

    def _add(self, job: _TurnJob) -> _Outcome:
        """Derive a finished turn's spans and keep them to send with the next ones."""
        if any(p.turn == job.turn for p in self._pending):
            return 0  # settled again: it is waiting already
        if self.sender.sent.has(self.run, f"t{job.turn}"):
            return 0  # settled again after a restart: it went out before
        got = job.batch.turn(self.run, job.turn)
        recs, events = got or reading.one_turn(self.sender.paths, self.run, job.turn)
        ready = self.sender.prepare(self.run, job.turn, recs, events)
        if ready is None:
            return 0
        if not self._pending:
            self._since = time.monotonic()
        self._pending.append(ready)
        if sum(len(p.spans) for p in self._pending) >= MAX_SPANS:
            return self._flush()
        return "waiting"

    def _flush(self) -> int | None:
        """Send the waiting turns in one request: the spans sent, None when the collector did
        not take them (they stay in the logs)."""
        turns, self._pending = self._pending, []
        if not turns:
            return 0
        return sum(len(p.spans) for p in turns) if self.sender.send(self.run, turns) else None

    def _attempt(self, step: Callable[[], _Outcome]) -> tuple[_Outcome, str]:
        try:
            return step(), "the collector did not accept them"
        except Exception as e:  # telemetry never stops a run: said once, the turn stays in the logs
            self._pending = []
            return None, f"{type(e).__name__}: {e}"

    def _report(self, outcome: tuple[_Outcome, str]) -> None:
        n, detail = outcome
        if n == "waiting":
            return  # nothing sent yet: the flush says how it went
        if n is None and not self._failing:
            self._failing = True
            self.warn(
                f"telemetry: export to {self.sender.cfg.traces_url} failed ({detail[:300]}); the run goes on, "
                "its spans stay in the logs: `autodev trace export` sends them"
            )
        elif n is not None:
            self._failing = False
