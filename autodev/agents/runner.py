"""The subprocess of one CLI run: its own process group (a session), cwd = the repository, stdin
closed, stdout read line by line into the raw stream file and a queue, stderr to a file. The
whole group (the CLI, its shell commands, its MCP servers) is killed on timeout or stop."""

from __future__ import annotations

import queue
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from autodev.agents.events import Arrival, StreamEnd, StreamLine
from autodev.host import spawn
from autodev.host.procgroup import kill_group, start_time

KILL_GRACE_SEC = 2.0


class CliProcess:
    """One CLI run. Lines arrive on `events` as `StreamLine`s; a `StreamEnd` ends them."""

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: Path,
        env: dict[str, str],
        raw: Path,
        stderr: Path,
        events: queue.Queue[Arrival],
        redact: Callable[[str], str] = lambda s: s,
    ) -> None:
        raw.parent.mkdir(parents=True, exist_ok=True)
        self.events, self.redact = events, redact
        self.proc = spawn.popen(
            argv,
            "agent-cli",
            cwd=cwd,
            env=env,
            stdin=spawn.DEVNULL,
            stdout=spawn.PIPE,
            stderr=spawn.PIPE,
            start_new_session=True,
            die_with_parent=signal.SIGKILL,  # a daemon killed (-9) takes its CLI with it
        )
        self.pid = self.proc.pid
        self.started = start_time(self.pid)
        self._raw, self._err = open(raw, "a"), open(stderr, "a")
        self._errors = threading.Thread(target=self._copy_stderr, name=f"agent-err-{self.pid}", daemon=True)
        self._reader = threading.Thread(target=self._read, name=f"agent-{self.pid}", daemon=True)
        self._errors.start()
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for chunk in self.proc.stdout:
            # Masked before it is kept or parsed: a CLI can print what it read (a .env, a key).
            line = self.redact(chunk.decode("utf-8", "replace").rstrip("\r\n"))
            # The raw stream is evidence, not state: flushed, not fsync'd.
            self._raw.write(line + "\n")
            self._raw.flush()
            self.events.put(StreamLine(line))
        self._errors.join(timeout=5)
        code = self.proc.wait()
        self.events.put(StreamEnd(code))

    def _copy_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in self.proc.stderr:
            self._err.write(self.redact(chunk.decode("utf-8", "replace")))
            self._err.flush()

    def kill(self) -> None:
        kill_group(self.pid, KILL_GRACE_SEC)

    def close(self) -> None:
        """After eof: the group's leftovers (a shell the CLI started in the background) go too."""
        kill_group(self.pid)
        self._reader.join(timeout=5)
        self._errors.join(timeout=5)
        self._raw.close()
        self._err.close()
