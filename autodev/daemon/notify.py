"""Tell the human when the run needs them: `notifyCommand` (the JSON payload on stdin) and
`notifyUrl` (the same JSON POSTed), once per change into gated, awaiting_user, paused,
faulted or complete.

Each notification runs on its own background thread with a timeout, and is tried once: a slow
or dead receiver never holds up the daemon's loop. Its outcome is an event (`notified` or
`notify_failed`), so a failure is visible in the Feed, never silent. At exit the daemon waits for
notifications still in flight, bounded by notifyTimeoutSec, so `complete` is still delivered.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from autodev.guard.display import line
from autodev.host.procgroup import run_json
from autodev.records.events import Event, NotifiedEvent, NotifyFailedEvent

NOTIFY_STATES = ("gated", "awaiting_user", "paused", "faulted", "complete")


def payload(state: str, why: Mapping[str, object] | None, repo: str, run: str) -> dict[str, object]:
    why = why or {}
    # A receiver shows the text to a person (a desktop notification, a chat message): control
    # characters from a participant's gate or question arrive escaped, on one line.
    return {
        "state": state,
        "reason": why.get("code"),
        "text": line(str(why.get("text", ""))),
        "repo": repo,
        "run": run,
        "continue": line(str(why.get("continue", ""))),
    }


Emit = Callable[[Event], object]  # events.emit: thread-safe


class Notifier:
    def __init__(
        self, command: str, url: str, timeout: float, cwd: str | Path, env: dict[str, str], emit: Emit
    ):
        self.command, self.url, self.timeout, self.cwd, self.env = command, url, timeout, cwd, env
        self.emit = emit  # events.emit: thread-safe
        self.threads: list[threading.Thread] = []

    @property
    def active(self) -> bool:
        return bool(self.command or self.url)

    def fire(self, data: dict[str, object]) -> None:
        if not self.active:
            return
        t = threading.Thread(target=self._deliver, args=(data,), daemon=True, name="autodev-notify")
        t.start()
        self.threads = [x for x in self.threads if x.is_alive()] + [t]

    def _deliver(self, data: dict[str, object]) -> None:
        if self.command:
            try:
                code, _out, err = run_json(self.command, data, self.cwd, self.timeout, self.env)
                problem = "timed out" if code is None else (f"exited {code}" if code else "")
            except OSError as e:
                problem, err = f"could not run: {e}", ""
            self._outcome("command", data, problem, (err or "")[-300:])
        if self.url:
            req = urllib.request.Request(
                self.url, json.dumps(data).encode(), {"Content-Type": "application/json"}, method="POST"
            )
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:
                    problem = "" if r.status < 300 else f"HTTP {r.status}"
            except Exception as e:  # any failure of the receiver: reported, never raised
                problem = f"{type(e).__name__}: {e}"
            self._outcome("url", data, problem, "")

    def _outcome(self, via: str, data: dict[str, object], problem: str, detail: str) -> None:
        state = str(data["state"])
        try:
            if problem:
                self.emit(NotifyFailedEvent(via=via, state=state, error=problem, detail=detail))
            else:
                self.emit(NotifiedEvent(via=via, state=state))
        except Exception:  # the logs may be what failed (faulted); nothing else to tell
            pass

    def drain(self) -> None:
        """Wait for notifications in flight, at most notifyTimeoutSec in all."""
        deadline = time.monotonic() + self.timeout + 1
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
