"""The process groups this process started through the door (host/spawn: a child with
`start_new_session` leads its own group), kept two ways.

In memory, those whose leader no one has waited for yet: `procgroup.end_all` ends them when this
process is told to end (a daemon's SIGTERM, an eval's Ctrl-C), since a group of its own is out of
reach of a signal to ours. Its owner ending it (`procgroup.kill_group`) takes it off.

On disk, in a daemon (`keep_ledger`): a file per group in the run folder's `groups/`, so that the
next daemon ends what a daemon killed with -9 left running (`procgroup.reap_ledger`). Its leaders
die with their daemon (die_with_parent), but what they started lives on in their groups: a
background job of a command without the sandbox, bubblewrap's inner process killed in its set-up.
Intent first: the file is made (`intent`, holding the program's name) before the child starts, so
a group that could not be listed never starts; once it runs, the file is renamed after its
leader's pid and start time in clock ticks, which name one process even after the pid is reused;
it is removed when the group is ended or its leader waited for. A kill between the start and the
rename leaves an intent without a pid, which the reaper drops: the child, killed with its daemon a
few system calls after its exec, has started nothing. Not fsynced: a machine that loses its page
cache has no process left either.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

INTENT = ".intent-"  # an intent's name: the reaper drops it (no pid yet)


class Leader(Protocol):
    """What is kept of a started child (a subprocess.Popen)."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...


_GROUPS: dict[int, Leader] = {}
_LOCK = threading.Lock()
_LEDGER: list[Path] = []  # the folder, in a daemon
_FILES: dict[int, Path] = {}


def keep_ledger(folder: Path | None) -> None:
    """From now on, a file in `folder` per group started here (None: no more files; those of
    groups still running stay, for the next daemon)."""
    with _LOCK:
        for pgid in [g for g, q in _GROUPS.items() if q.returncode is not None]:
            _unlist(pgid)  # waited for by its owner, who ended what it left
        _FILES.clear()
        _LEDGER[:] = [folder] if folder is not None else []
    if folder is not None:
        folder.mkdir(mode=0o700, exist_ok=True)


def intent(argv: Sequence[str | os.PathLike[str]], new_group: bool) -> Path | None:
    """The ledger file of a group about to start (OSError: it must not start); None when none is
    kept (not a daemon, or not a group of its own)."""
    if not (new_group and _LEDGER):
        return None
    path = _LEDGER[0] / f"{INTENT}{os.getpid()}-{os.urandom(6).hex()}"
    # the program's name only: a command's text is a model's and may hold anything
    name: str = os.path.basename(os.fspath(argv[0])) if argv else ""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, name.encode())
    finally:
        os.close(fd)
    return path


def own(p: Leader, listed: Path | None) -> None:
    """Group `p.pid` started: kept, and its intent (if any) named after it."""
    with _LOCK:
        for pgid in [g for g, q in _GROUPS.items() if q.returncode is not None]:
            del _GROUPS[pgid]  # waited for by its owner, who ended what it left (or had nothing left)
            _unlist(pgid)
        _GROUPS[p.pid] = p
        if listed is not None:
            _name(listed, p.pid)


def _name(listed: Path, pid: int) -> None:
    try:  # not yet waited for: /proc holds it (a zombie at worst)
        with open(f"/proc/{pid}/stat", "rb") as f:
            started = int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        listed.unlink(missing_ok=True)  # no /proc: nothing the next daemon could check either
        return
    path = listed.with_name(f"{pid}-{started}")
    try:
        os.replace(listed, path)
    except FileNotFoundError:
        return  # the run folder was deleted since the intent: the run faults on it (store/faults)
    _FILES[pid] = path


def live() -> list[int]:
    """The groups started here whose leader has not been waited for (so its pid is still its)."""
    with _LOCK:
        return [g for g, p in _GROUPS.items() if p.returncode is None]


def forget(pgid: int) -> None:
    """Group `pgid` ended by its owner: kept no more."""
    with _LOCK:
        _GROUPS.pop(pgid, None)
        _unlist(pgid)


def _unlist(pgid: int) -> None:
    path = _FILES.pop(pgid, None)
    if path is not None:
        path.unlink(missing_ok=True)
