"""Text rich rendered, kept with the key of everything the rendering read, so the same output
again is printed without importing rich: that import is most of a cold `--help` or `status`
(issue 33).

The key covers what the caller renders from (its sources, its data) and what rich reads of
this process: the platform, the output's encoding, which of stdin, stdout and stderr is a
terminal and its size, and the environment variables rich and typer read for width, colour and
terminal detection, plus any variable whose name says TERM, COLOR or TTY. A file holds the last
few renderings; it is only a cache (store/memo.py): missing, cut or foreign, it costs a
rendering, never a different output.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import cast

# What rich's Console and typer's console read from the environment for the width, the colours
# and whether they write to a terminal.
VARIABLES = (
    "COLUMNS",
    "LINES",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
    "NO_COLOR",
    "FORCE_COLOR",
    "PY_COLORS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "COLORTERM",
    "TERM",
    "TERMINAL_WIDTH",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "GITHUB_ACTIONS",
    "DATABRICKS_RUNTIME_VERSION",
)
_NAMED = ("TERM", "COLOR", "TTY")


def installed(pkg: str) -> str:
    """`rich-14.1.0.dist-info`: the distribution's metadata folder beside the package, found
    without importing it or importlib.metadata (which cost what keeping a rendering saves)."""
    from importlib.util import find_spec

    spec = find_spec(pkg)
    if spec is None or spec.origin is None:
        return f"{pkg}: missing"
    site = Path(spec.origin).parent.parent
    return " ".join(
        sorted(n for n in os.listdir(site) if n.startswith(f"{pkg}-") and n.endswith(".dist-info"))
    )


def rendering_key(*parts: str | bytes) -> str:
    """The key of one rendering of `parts` on this process's terminal, as rich would see it."""
    h = hashlib.sha256()
    for part in (*parts, sys.platform, str(sys.stdout.encoding), installed("rich")):
        data = part if isinstance(part, bytes) else part.encode("utf-8", "surrogateescape")
        h.update(hashlib.sha256(data).digest())
    for fd in (0, 1, 2):
        try:
            size = tuple(os.get_terminal_size(fd))
        except OSError:
            size = None
        h.update(f"{fd}:{os.isatty(fd)}:{size}\0".encode())
    names = sorted({*VARIABLES, *(k for k in os.environ if any(w in k.upper() for w in _NAMED))})
    for name in names:
        h.update(f"{name}={os.environ.get(name)!r}\0".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


class Kept:
    """The renderings kept in one memo file (the newest `most`)."""

    def __init__(self, path: Path, most: int = 8) -> None:
        from autodev.store.memo import read_memo

        self.path = path
        self.most = most
        kept = read_memo(path)
        self.texts: dict[str, object] = {}
        if isinstance(kept, dict):
            self.texts = dict(cast("dict[str, object]", kept))  # JSON: an object's keys are strings

    def get(self, key: str) -> str | None:
        text = self.texts.get(key)
        return text if isinstance(text, str) else None

    def put(self, key: str, text: str) -> None:
        """Keep `text` under `key`; a folder that cannot hold the file leaves the memo as it was
        (the next call renders again)."""
        from autodev.store.memo import write_memo

        self.texts.pop(key, None)
        self.texts[key] = text
        write_memo(self.path, dict(list(self.texts.items())[-self.most :]))
