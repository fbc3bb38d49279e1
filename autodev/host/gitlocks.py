"""Stale git lock files: what a git process killed mid-write leaves behind (`kill -9` of the
daemon, a command cut by `stop` or `turnTimeoutMin`). Git refuses every later write while one
exists ("cannot lock ref 'HEAD'", "index.lock: File exists") and tells the user to delete it once
no git process is running. autodev does exactly that, and only that: a lock file is removed when
no live git process works in the repository, and the removal is reported (an event, the
command's result), never silent.

A git process "works in the repository" when its working folder or its command line is inside
the work tree or the git folders. A git process whose working folder cannot be read is taken as
working here: a lock is never removed under a process that may hold it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autodev.errors import AutodevError
from autodev.host import hostgit

# Where git writes `<name>.lock` beside the file it replaces.
_TOP = ("index", "HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "packed-refs", "shallow")


def _candidates(git_dir: Path, common: Path) -> list[Path]:
    found: list[Path] = []
    for folder in dict.fromkeys([git_dir, common]):
        found += [folder / f"{name}.lock" for name in _TOP if os.path.lexists(folder / f"{name}.lock")]
        refs = folder / "refs"
        if refs.is_dir() and not refs.is_symlink():
            for root, dirs, files in os.walk(refs):  # never follows symlinked folders
                found += [Path(root) / f for f in files if f.endswith(".lock")]
                dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
    return found


def _inside(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def git_running_in(folders: list[str]) -> bool:
    """Whether a live git process (other than us) works in one of `folders`."""
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            comm = Path(entry.path, "comm").read_text().strip()
            if not comm.startswith("git"):
                continue
            argv = Path(entry.path, "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read: not a git process we can see
            continue
        paths = [a.split(b"=", 1)[1] if b"=/" in a else a for a in argv]  # `--git-dir=/…` too
        if any(_inside(os.fsdecode(a), folders) for a in paths if a.startswith(b"/")):
            return True
        try:
            cwd = os.readlink(Path(entry.path, "cwd"))
        except FileNotFoundError:
            continue  # exited meanwhile
        except OSError:
            return True  # a git process we cannot look into may be working here
        if _inside(cwd, folders):
            return True
    return False


def clear_stale(repo: Path) -> list[str]:
    """Remove the lock files no live git process can be holding; returns what was removed (paths
    relative to the work tree) for the caller to report. Nothing when git is running here, when
    the repository's layout is refused (the pinned git refuses it anyway) or there is no lock."""
    work_tree = Path(os.path.realpath(repo))
    try:
        _kind, _ident, _text, git_dir, common = hostgit.layout(work_tree)
    except AutodevError:
        return []
    locks = _candidates(git_dir, common)
    if not locks:
        return []
    folders = [str(work_tree), os.path.realpath(git_dir), os.path.realpath(common)]
    if git_running_in(folders):
        return []
    removed: list[str] = []
    for lock in locks:
        try:
            st = os.lstat(lock)
            if not stat.S_ISREG(st.st_mode):
                continue  # only a file git wrote; a planted symlink or folder stays for the user to see
            os.unlink(lock)
        except FileNotFoundError:
            continue
        try:
            removed.append(str(lock.relative_to(work_tree)))
        except ValueError:
            removed.append(str(lock))
    return removed


def report(removed: list[str]) -> str:
    """One line saying what was removed and why."""
    return (
        f"removed {', '.join(removed)}: git lock file(s) no running git process holds, left by a git "
        "command that was killed mid-write"
    )
