"""Walks of a repository's folders that a sweep after every command can afford: a folder whose
inode and times are as at its last look is not listed again, so a walk costs a stat per folder
(issue 33: the daemon's own time per turn). Used by `gitquarantine` for the work tree's nested
`.git`s and for the links, FIFOs and devices in a git folder.

A folder changed in the last `RACY_NS` is listed afresh each time, as git treats "racily clean"
index entries: a change within the same clock tick would leave its times as they were. A folder
is listed through a descriptor opened with `O_NOFOLLOW`, so one swapped for a link since its
stat is not followed.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_WALKED = 200_000  # entries looked at in one walk, as for secret files
MAX_KEPT = 100_000  # listings kept: past it they are dropped (folders deleted since leave theirs)
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class Listed:
    """A folder's subfolders, its links, FIFOs and devices, and whether it holds a `.git`, as of
    its stat `key`: (inode, mtime, ctime) in ns, which creating, removing or renaming an entry
    changes."""

    key: tuple[int, int, int]
    odd: tuple[str, ...]
    folders: tuple[str, ...]
    entries: int
    dotgit: bool


_EMPTY = Listed((0, 0, 0), (), (), 0, False)
_DOTGIT = os.sep + ".git"
_KEPT: dict[str, Listed] = {}


def odd_entries(folder: Path) -> list[Path]:
    """The links, FIFOs and devices anywhere below `folder`, read from the entries' types with no
    file opened. A socket is not one of them: git's own fsmonitor listens on one in the git
    folder, and opening a socket fails at once."""
    return [Path(p) for _, listed in _walk(folder, into_dotgit=True) for p in listed.odd]


def dotgits(work: Path) -> list[Path]:
    """Every `.git` below the top of the work tree, not entering any."""
    top = str(work)
    return [Path(f) / ".git" for f, listed in _walk(work, into_dotgit=False) if listed.dotgit and f != top]


def _walk(top: Path, *, into_dotgit: bool) -> Iterator[tuple[str, Listed]]:
    """Each folder below `top` (itself included) with its listing, until MAX_WALKED entries were
    looked at; a `.git` folder is entered only `into_dotgit`."""
    seen = 0
    stack = [str(top)]
    while stack and seen <= MAX_WALKED:
        folder = stack.pop()
        listed = listing(folder)
        seen += listed.entries
        yield folder, listed
        stack += listed.folders if into_dotgit else [f for f in listed.folders if not f.endswith(_DOTGIT)]


def listing(folder: str) -> Listed:
    """`folder`'s listing: the one kept when its inode and times are unchanged, else read now."""
    try:
        st = os.lstat(folder)
    except OSError:
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        _KEPT.pop(folder, None)
        return _EMPTY  # gone, unreadable or no longer a folder: nothing below it to look at
    had = _KEPT.get(folder)
    if had is not None and had.key == (st.st_ino, st.st_mtime_ns, st.st_ctime_ns):
        return had
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return _EMPTY
    odd: list[str] = []
    folders: list[str] = []
    names = 0
    dotgit = False
    try:
        st = os.fstat(fd)
        with os.scandir(fd) as entries:  # a socket's lstat goes through `fd`: before it is closed
            for e in entries:
                names += 1
                dotgit = dotgit or e.name == ".git"
                path = os.path.join(folder, e.name)
                if e.is_dir(follow_symlinks=False):
                    folders.append(path)
                elif e.is_symlink() or not (e.is_file(follow_symlinks=False) or _is_socket(e)):
                    odd.append(path)
    except OSError:
        return _EMPTY
    finally:
        os.close(fd)
    listed = Listed((st.st_ino, st.st_mtime_ns, st.st_ctime_ns), tuple(odd), tuple(folders), names, dotgit)
    if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS:
        if len(_KEPT) >= MAX_KEPT:
            _KEPT.clear()  # the next walks list afresh: a cost, never a wrong answer
        _KEPT[folder] = listed
    else:
        _KEPT.pop(folder, None)
    return listed


def kept(folder: str) -> bool:
    """Whether a listing of `folder` is kept (for tests of the walk's reuse)."""
    return folder in _KEPT


def _is_socket(entry: os.DirEntry[str]) -> bool:
    try:
        return stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        return False
