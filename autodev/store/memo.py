"""Memos: small JSON files in a run folder that spare a cold command work it did before (the
sandbox probe, the team's models for `status`). A memo is never the truth: reading one that is
missing or cut by a crash gives None, and writing one is best effort (a read-only or full run
folder makes the command slower, not wrong). The write goes through a temporary file and
`os.replace`, so a reader sees the old memo or the new one, never half of one."""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_memo(path: Path) -> object:
    """The memo's JSON, or None when there is none (yet) or a crash cut it."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def write_memo(path: Path, data: object) -> None:
    """Replace the memo at `path` with `data`; on an OSError leave it as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
