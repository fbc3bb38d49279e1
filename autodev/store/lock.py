"""The daemon's lock: one daemon per repository, released by the kernel if the process dies."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from autodev.errors import DaemonRunningError


class DaemonLock:
    """An flock held for the daemon's lifetime; the kernel releases it if the process dies."""

    def __init__(self, path: Path):
        self.path = path
        self.fd = -1

    def acquire(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(self.fd, 32, 0).decode(errors="replace").strip()
            os.close(self.fd)
            self.fd = -1  # release() must not close it again (EBADF would hide the real error)
            raise DaemonRunningError(
                f"a daemon (pid {pid or '?'}) is already running this repository",
                "use `autodev status`, or `autodev stop` first",
            ) from None
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = -1

    @staticmethod
    def holder(path: Path) -> int | None:
        """The pid of the running daemon, or None when no daemon holds the lock."""
        if not path.exists():
            return None
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raw = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(raw) if raw.isdigit() else -1
        finally:
            os.close(fd)
        return None
