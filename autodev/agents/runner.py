"""The subprocess of one CLI run: its own process group (a session), cwd = the repository, stdin
closed, stdout read line by line into the raw stream file and a queue, stderr to a file. The
whole group (the CLI, its shell commands, its MCP servers) is killed on timeout or stop."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path

KILL_GRACE_SEC = 2.0


def start_time(pid: int) -> float | None:
    """The process's start time in clock ticks (/proc/PID/stat field 22): with the pid, it names
    one process, so a recorded group is not confused with a later one that reused the pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return float(stat.rsplit(")", 1)[1].split()[19])


def kill_group(pgid: int, grace: float = KILL_GRACE_SEC) -> None:
    """SIGTERM the group, then SIGKILL what is left after `grace` seconds."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    end = time.monotonic() + grace
    while time.monotonic() < end:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def kill_stale(pid: int, started: float | None) -> bool:
    """Kill the group a dead daemon left running (recorded as pid + start time); True if it
    was still there."""
    if not pid or started is None or start_time(pid) != started:
        return False
    kill_group(pid)
    return True


class CliProcess:
    """One CLI run. Lines arrive on `events` as ("line", text); ("eof", exit_code) ends them."""

    def __init__(
        self, argv: list[str], *, cwd: Path, env: dict[str, str], raw: Path, stderr: Path, events: queue.Queue
    ):
        raw.parent.mkdir(parents=True, exist_ok=True)
        self.events = events
        self._err = open(stderr, "ab")
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._err,
                start_new_session=True,
            )
        except BaseException:
            self._err.close()
            raise
        self.pid = self.proc.pid
        self.started = start_time(self.pid)
        self._raw = open(raw, "ab")
        self._reader = threading.Thread(target=self._read, name=f"agent-{self.pid}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            # The raw stream is evidence, not state: flushed, not fsync'd.
            self._raw.write(line)
            self._raw.flush()
            self.events.put(("line", line.decode("utf-8", "replace").rstrip("\r\n")))
        code = self.proc.wait()
        self.events.put(("eof", code))

    def kill(self) -> None:
        kill_group(self.pid)

    def close(self) -> None:
        """After eof: the group's leftovers (a shell the CLI started in the background) go too."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._reader.join(timeout=5)
        self._raw.close()
        self._err.close()
