"""autodev's own processes on the host: never importing from the repository, never readable by
another process of the user.

Python puts the script's folder, or the working directory for `-m`, first on `sys.path`: a
participant's `ctypes.py` in the repository would then be what `import ctypes` loads. So the
daemon starts outside the repository with `-P` (`python -m` children too: `PYTHON_SAFE`),
`harden()` drops every `sys.path` entry that is relative or inside the repository, and makes
the process not dumpable: `/proc/<pid>/mem`, `environ` and ptrace are then closed to other
processes of the same user (an agent CLI runs as the user, outside the sandbox).
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
# The flags for a `python -m autodev.…` child: no script folder or working directory on sys.path.
PYTHON_SAFE = ("-P",)


def python_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for an autodev Python child whose working directory may be a repository: PYTHONPATH
    without its empty and relative entries, which `-P` leaves in place and which would name
    that directory (`PYTHONPATH=.`, or a trailing `:`). Absolute entries are the user's."""
    out = dict(env)
    if "PYTHONPATH" in out:
        kept = [p for p in out["PYTHONPATH"].split(os.pathsep) if p and os.path.isabs(p)]
        if kept:
            out["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del out["PYTHONPATH"]
    return out


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def drop_repository_from_path(repo: Path | None) -> list[str]:
    """Remove from sys.path what could load code from the repository: "" and relative entries
    (the working directory), and folders inside `repo` other than where autodev and the
    installed packages themselves live (autodev installed inside the repository it works on is
    the user's choice: docs/security.md). Returns what was removed."""
    keep = {os.path.realpath(p) for p in sysconfig.get_paths().values() if p}
    import autodev

    keep.add(os.path.realpath(os.path.dirname(os.path.dirname(autodev.__file__))))
    real_repo = os.path.realpath(repo) if repo is not None else None
    removed: list[str] = []
    for entry in list(sys.path):
        real = os.path.realpath(entry) if entry else ""
        if (
            not entry
            or not os.path.isabs(entry)
            or (real_repo is not None and _inside(real, real_repo) and real not in keep)
        ):
            sys.path.remove(entry)
            removed.append(entry)
    return removed


def not_dumpable() -> bool:
    """prctl(PR_SET_DUMPABLE, 0): True when the kernel took it (Linux), else False."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only now: after drop_repository_from_path, never a participant's ctypes.py

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")
    return libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0


def leave(repo: Path, to: Path) -> None:
    """Change the working directory to `to` when it is inside `repo` (the daemon's run folder)."""
    here = os.path.realpath(os.getcwd()) if os.path.exists(".") else ""
    if not here or _inside(here, os.path.realpath(repo)):
        os.chdir(to)


def harden(repo: Path | None) -> None:
    """What every autodev process that holds keys or speaks for the user does first: the
    repository off sys.path, then not dumpable."""
    drop_repository_from_path(repo)
    not_dumpable()
