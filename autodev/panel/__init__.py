"""`autodev panel`: a Textual app to watch a run live and answer it from the keyboard.

Importing this package is cheap; the app (and Textual) load only in `run_panel`.
"""

from __future__ import annotations

from pathlib import Path


def run_panel(repo: Path) -> None:
    from autodev.panel.app import run

    run(repo)
