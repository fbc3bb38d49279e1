"""How a tool is cut: at the turn's deadline (turnTimeoutMin) or as soon as the user runs
`autodev stop`. A tool that waits on something outside the daemon (a process, an MCP server, a
browser) waits under a `Watch` or `wait_future`; a tool that works in the daemon itself (the file
tools) calls `Workspace.cut` between pieces of its work."""

from __future__ import annotations

import concurrent.futures
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")  # what the awaited future holds

POLL_SEC = 0.1  # how often a waiting tool looks at `stop` and its deadline
STOPPING = "stopped: the user is stopping the run"


class Watch:
    """Calls `kill` at a deadline or when `stopping()` says so; `finish()` says which."""

    def __init__(self, kill: Callable[[], None], seconds: float, stopping: Callable[[], bool]):
        self._kill, self._stopping, self._why = kill, stopping, ""
        self._end = time.monotonic() + seconds
        self._seconds = seconds
        self._over = threading.Event()
        threading.Thread(target=self._run, name="tool-deadline", daemon=True).start()

    def _run(self) -> None:
        while not self._over.wait(POLL_SEC):
            if self._stopping():
                self._why = "stopped: the run is stopping"
            elif time.monotonic() >= self._end:
                self._why = f"stopped after {self._seconds:g} s (its time limit)"
            else:
                continue
            self._kill()
            return

    def finish(self) -> str:
        self._over.set()
        return self._why


def wait_future(future: concurrent.futures.Future[T], seconds: float, stopping: Callable[[], bool]) -> str:
    """Wait for `future` at most `seconds`, less if `stopping()` turns true. "" when it is done;
    otherwise why not (the caller cancels it)."""
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        concurrent.futures.wait([future], timeout=max(0.0, min(POLL_SEC, left)))
        if future.done():
            return ""
        if stopping():
            return STOPPING
        if left <= 0:
            return f"no answer within {seconds:g} s"
