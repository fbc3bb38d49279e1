"""Rewind, fork and replay (autodev/timeline): `rewind`."""

from __future__ import annotations

import typer

from autodev.cli.root import _paths, app
from autodev.errors import UsageError


@app.command()
def rewind(
    seq: int | None = typer.Argument(None, help="The post the run continues from (its #seq)."),
    undo: bool = typer.Option(False, "--undo", help="Undo the newest rewind."),
):
    """Continue the run as if post SEQ were the last: later posts superseded, the branch back at
    its commit (later work kept on refs/autodev/rewound/N), the state as it was then."""
    from autodev.timeline import rewind as rw

    if (seq is None) == (not undo):
        raise UsageError(
            "give a post's seq, or --undo, exactly one of them", "autodev rewind 12  |  autodev rewind --undo"
        )
    paths = _paths()
    done = rw.request(paths, seq, undo=undo)
    print(
        f"rewound to post {done['to_seq']} (note #{done['note_seq']}); "
        "`autodev resume` (or `autodev start` when no daemon runs) continues the run"
    )
