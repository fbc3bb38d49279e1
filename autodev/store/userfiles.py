"""`.autodev/` belongs to the user: the daemon honours a change to it only when no turn was
running while it was made.

The sandbox makes `.autodev/` read-only for commands and the file tools refuse it, but a run
without a sandbox (or a participant that is itself an agent CLI) could still rewrite the team,
the config or a prompt to switch its own guard off. So the daemon takes a `stamp` of the
folder's content when a turn starts and when it ends; a difference is refused: the old team and
config stay, status and an event say so, and the prompt overrides in use are the copy taken
when the folder was last accepted (`snapshot_prompts`), not the files on disk.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

_MAX_BYTES = 16 * 1024 * 1024  # beyond this, sizes and times stand in for content


def stamp(folder: Path) -> str:
    """A digest of every file under `folder` (names and content; symbolic links by target).
    Content, not times: a command can set a file's time back."""
    h = hashlib.sha256()
    if not folder.exists():
        return "missing"
    budget = _MAX_BYTES
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(root, name)
            rel = os.path.relpath(p, folder)
            h.update(b"\0f" + rel.encode("utf-8", "surrogateescape"))
            try:
                if os.path.islink(p):
                    h.update(b"\0l" + os.readlink(p).encode("utf-8", "surrogateescape"))
                    continue
                st = os.stat(p)
                if st.st_size <= budget:
                    budget -= st.st_size
                    with open(p, "rb") as f:
                        h.update(f.read())
                else:
                    h.update(f"{st.st_size}:{st.st_mtime_ns}".encode())
            except OSError as e:
                h.update(f"\0e{e.errno}".encode())
        for d in dirs:
            h.update(
                b"\0d" + os.path.relpath(os.path.join(root, d), folder).encode("utf-8", "surrogateescape")
            )
    return h.hexdigest()


def snapshot_prompts(source: Path, dest: Path) -> Path:
    """Copy the prompt overrides (`.autodev/prompts/`) to `dest`, replacing what was there; the
    daemon reads prompts from the copy, so an override changed during a turn is not used."""
    tmp = dest.with_name(dest.name + ".new")
    shutil.rmtree(tmp, ignore_errors=True)
    if source.is_dir():
        shutil.copytree(source, tmp, symlinks=False, dirs_exist_ok=True)
    else:
        tmp.mkdir(parents=True)
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
    return dest
