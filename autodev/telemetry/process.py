"""The daemon's side of its exporter process (`telemetry.worker`): the lines the daemon appends to
its logs, as written, and a line per finished turn, written to the process's stdin at the turn's
end, never waited on. The spans are derived and sent by the other process, outside the daemon's
GIL (issue 33).

What the pipe cannot take at once waits in memory for the next turn's end; past `BEHIND_BYTES`
(the exporter is stuck, or far behind a slow collector) it is dropped with one warning: those
turns stay in the logs, and the next daemon's catch-up or `autodev trace export` sends them. An
exporter that died is said once; the run goes on untraced.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from autodev.host import spawn
from autodev.host.hostproc import PYTHON_SAFE
from autodev.store.paths import RunPaths
from autodev.telemetry.settings import Telemetry

if TYPE_CHECKING:
    from autodev.store.journal import Journal

WORKER = "autodev.telemetry.worker"
LATE_S = 2.0  # what a closing exporter gets beyond its own deadline (its start-up, its exit)
PIPE_BYTES = 1 << 20  # asked of the kernel for the pipe (Linux's default limit for a user)
BEHIND_BYTES = 8 << 20  # waiting beyond the pipe: more, and the exporter is given up on for now
F_SETPIPE_SZ = 1031  # fcntl's, on Linux


class Exporter:
    """The exporter process of one daemon: `watch`'s taps, `turn_done` and `catch_up` never
    block; `close` waits for it (bounded)."""

    def __init__(
        self,
        cfg: Telemetry,
        paths: RunPaths,
        run: str,
        secrets: Mapping[str, str],
        redact: Callable[[], Sequence[str]],
        warn: Callable[[str], object],
    ):
        self.cfg, self.warn = cfg, warn
        # the daemon's secret values, asked again at each turn's end: a team edit may add some
        self._values = redact
        self._taught: Sequence[str] = redact()
        self._closing = False
        self._lost = False  # lines were dropped, or the exporter is gone: said once
        self._gone = False
        self._out = bytearray()  # what the pipe has not taken yet, whole lines after the first
        self._lock = threading.Lock()  # events are appended from other threads too
        hello: dict[str, object] = {
            "run": run,
            "repo": str(paths.repo),
            "cfg": asdict(cfg),
            "secrets": dict(secrets),
            "redact": list(self._taught),
        }
        self.proc = spawn.popen(
            [sys.executable, *PYTHON_SAFE, "-m", WORKER],
            "autodev",
            stdin=spawn.PIPE,
            stdout=spawn.PIPE,
            cwd=paths.run_dir,
            die_with_parent=signal.SIGKILL,  # never outlives its daemon (nor races the next one)
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._fd = self.proc.stdin.fileno()
        try:
            fcntl.fcntl(self._fd, F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # the kernel's default size (64 KiB): what does not fit waits for the next turn
        # Blocking for the first line only: it may be longer than the pipe holds (many secrets),
        # and the process reads it before anything else.
        try:
            os.write(self._fd, (json.dumps(hello) + "\n").encode())
        except OSError:  # it died at once: reaped here, said by the caller
            self.proc.kill()
            self.proc.wait()
            raise
        os.set_blocking(self._fd, False)
        self._reader = threading.Thread(target=self._read, name="autodev-telemetry-said", daemon=True)
        self._reader.start()

    def watch(self, harness_log: Journal, events: Journal) -> None:
        """Be handed each line the daemon appends to the harness log and events, as written."""
        harness_log.tap, events.tap = self._tap(b'{"h":'), self._tap(b'{"e":')

    def _tap(self, head: bytes) -> Callable[[bytes], None]:
        def tap(data: bytes) -> None:
            with self._lock:
                self._out += head + data.rstrip(b"\n") + b"}\n"

        return tap

    def turn_done(self, turn: int) -> None:
        values = self._values()
        if values is not self._taught:  # the daemon's Redactor replaces its list when it learns
            if list(values) != list(self._taught):
                with self._lock:  # before the turn: its spans are masked with them too
                    self._out += (json.dumps({"redact": list(values)}) + "\n").encode()
            self._taught = values
        self._send({"turn": turn}, f"turn {turn} and the ones before it not sent yet")

    def catch_up(self, below: int) -> None:
        """Have the exporter send the earlier finished turns the collector may not have."""
        self._send({"catch_up": below}, f"the turns before {below}")

    def close(self, timeout_sec: float) -> None:
        """Let the exporter send what is queued (and the run's root when the run is complete)
        within `timeout_sec`, then end it; what it has not sent stays in the logs."""
        deadline = time.monotonic() + timeout_sec
        self._closing = True
        with self._lock:
            self._out += (json.dumps({"close": timeout_sec}) + "\n").encode()
        while time.monotonic() < deadline:
            with self._lock:  # not held while waiting: the taps go on meanwhile
                self._flush()
                if not self._out or self._gone:
                    break
            select.select([], [self._fd], [], max(0.0, deadline - time.monotonic()))
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except OSError:
            pass  # a pipe whose reader is gone: nothing more to say to it
        try:
            self.proc.wait(max(0.0, deadline - time.monotonic()) + LATE_S)
        except spawn.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.warn(
                f"telemetry: the exporter did not finish within {timeout_sec:g} s of the daemon's end; "
                "what it had not sent stays in the logs: `autodev trace export` sends it"
            )
        self._reader.join(LATE_S)

    def _send(self, msg: dict[str, int], what: str) -> None:
        with self._lock:
            self._out += (json.dumps(msg) + "\n").encode()
            self._flush()
            if not self._out:
                self._lost = False  # caught up: a later fall behind is said again
            if len(self._out) <= BEHIND_BYTES or self._gone:
                return
            # Keep the end of a line the pipe took the beginning of; drop the rest.
            cut = self._out.find(b"\n") + 1
            del self._out[cut:]
            self._taught = ()  # a dropped lesson is given again with the next turn
            said, self._lost = self._lost, True
        if not said:
            self.warn(
                f"telemetry: the exporter process could not take {what}: it is behind (a slow or "
                "unreachable collector); they stay in the logs: `autodev trace export` sends them"
            )

    def _flush(self) -> None:
        """Write what the pipe takes now (the lock held)."""
        if self._gone:
            self._out.clear()
            return
        try:
            n = os.write(self._fd, self._out)
        except BlockingIOError:
            return
        except OSError:  # the exporter is gone: its death is said by `_read`
            self._gone = True
            self._out.clear()
            return
        del self._out[:n]

    def _read(self) -> None:
        """The exporter's warnings, as it says them; and its death, if it dies before `close`."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                said = json.loads(line).get("warn")
            except (ValueError, AttributeError):
                said = None
            self.warn(str(said) if said else f"telemetry: the exporter said {line[:300]!r}")
        code = self.proc.wait()
        if not self._closing and code != 0:
            self._lost = True
            self.warn(
                f"telemetry: the exporter process ended (exit {code}); the run goes on untraced: "
                "`autodev trace export` sends its spans"
            )
