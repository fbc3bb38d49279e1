"""Faults of the machine, not of autodev: a read-only or missing `$AUTODEV_HOME`, a full disk, a
run folder deleted under a running daemon. Each becomes one line that names the path and the fix:
exit 2 before a run (the CLI edge, `doctor`), `faulted` with that line as the reason during one.

The daemon keeps a small reserve file in the run folder and deletes it before it records a fault
caused by a full disk, so there is room to write state.json saying why.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from autodev.errors import AutodevError, UsageError

RESERVE = ".reserve"  # in the run folder: freed to record a full-disk fault
RESERVE_BYTES = 256 * 1024

FULL = (errno.ENOSPC, errno.EDQUOT)
READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
GONE = (errno.ENOENT, errno.ENOTDIR)


class EnvironmentFault(UsageError):
    """The machine refuses what autodev must do (write its files): the path and the fix."""


class RunFolderLost(AutodevError):
    """The run folder was deleted or replaced while the daemon ran."""


def _where(path: str) -> str:
    """The folder to name in a fix: AUTODEV_HOME when the path lies under it."""
    from autodev.store.paths import autodev_home

    home = autodev_home()
    try:
        Path(path).resolve().relative_to(home.resolve())
    except (ValueError, OSError):
        return str(Path(path).parent)
    return f"{home} (AUTODEV_HOME)"


def _elsewhere(path: str) -> str:
    """A folder to suggest for AUTODEV_HOME that is not inside the one that refused `path`: a
    read-only home is no place to suggest ~/.autodev."""
    import getpass

    home = Path.home().resolve()
    refused = Path(path).resolve().parent
    in_home = refused == home or home in refused.parents
    for candidate in (Path.home() / ".autodev", Path("/var/tmp") / f"autodev-{getpass.getuser()}"):
        c = candidate.resolve()
        if (in_home and home in c.parents) or c == refused or refused in c.parents:
            continue
        return str(candidate)
    return "/a/folder/on/a/writable/disk"


def explain(e: OSError) -> EnvironmentFault | None:
    """The one-line fault for an OSError the machine caused, or None for any other."""
    path = str(e.filename) if e.filename else ""
    why = e.strerror or str(e)
    if e.errno in FULL:
        from autodev.store.paths import autodev_home

        where = _where(path) if path else f"{autodev_home()} (AUTODEV_HOME)"
        return EnvironmentFault(
            f"no space left on the disk holding {path or where} ({why})",
            f"free some space there, or set AUTODEV_HOME to a folder on a disk with room (now {where})",
        )
    if e.errno in READ_ONLY and path:
        return EnvironmentFault(
            f"cannot write {path}: {why}",
            f"make {_where(path)} writable, or set AUTODEV_HOME to a writable folder "
            f"(e.g. `export AUTODEV_HOME={_elsewhere(path)}`)",
        )
    if e.errno in GONE and path:
        return EnvironmentFault(
            f"{path} does not exist ({why}); was the folder deleted?",
            f"create {Path(path).parent} again (or set AUTODEV_HOME to a folder that exists), then run the command again",
        )
    return None


def writable(folder: Path) -> EnvironmentFault | None:
    """Can autodev create `folder` (or use it) and write a file there? Tried for real: a probe file
    is created in the nearest existing folder and removed. None when it can."""
    probe = Path(folder)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    test = probe / f".autodev-probe-{os.getpid()}"
    try:
        fd = os.open(test, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"x" * 4096)
        finally:
            os.close(fd)
            test.unlink(missing_ok=True)
    except OSError as e:
        if e.filename is None:
            e.filename = str(test)
        fault = explain(e)
        if fault is None:
            raise
        if probe != Path(folder):
            fault.message += f" (to create {folder})"
        return fault
    return None


def keep_reserve(run_dir: Path) -> None:
    """Put the reserve file in place (best effort: on a disk already too full for it, nothing)."""
    path = Path(run_dir) / RESERVE
    try:
        if path.exists() and path.stat().st_size >= RESERVE_BYTES:
            return
        with open(path, "wb") as f:
            f.write(b"\0" * RESERVE_BYTES)
            f.flush()
            os.fsync(f.fileno())
    except OSError:
        Path(path).unlink(missing_ok=True)


def free_reserve(run_dir: Path) -> None:
    (Path(run_dir) / RESERVE).unlink(missing_ok=True)


class FolderWatch:
    """Notices a run folder deleted or replaced under the daemon: the folder and its lock file
    must stay the ones it opened (same device and inode)."""

    def __init__(self, run_dir: Path, lock: Path):
        self.run_dir, self.lock = Path(run_dir), Path(lock)
        self._ids = (self._id(self.run_dir), self._id(self.lock))

    @staticmethod
    def _id(path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def check(self) -> None:
        if (self._id(self.run_dir), self._id(self.lock)) != self._ids:
            raise RunFolderLost(
                f"the run folder {self.run_dir} was deleted or replaced while the daemon ran; "
                "what this run wrote there since is lost",
                "keep AUTODEV_HOME out of cleanup jobs (tmp cleaners, `rm -rf`), then `autodev start` "
                "to begin again from what is left",
            )
