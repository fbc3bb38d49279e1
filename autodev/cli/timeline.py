"""Rewind, fork and replay (autodev/timeline): `rewind`, `replay`, `runs export`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from autodev.cli.edge import run_paths
from autodev.cli.look import runs_app
from autodev.cli.root import app, current_paths
from autodev.errors import UsageError


@app.command()
def rewind(
    seq: int | None = typer.Argument(None, help="The post the run continues from (its #seq)."),
    undo: bool = typer.Option(False, "--undo", help="Undo the newest rewind."),
    run: str | None = typer.Option(
        None, "--run", help="The run's id (`autodev runs`); default: this repository's."
    ),
):
    """Continue the run as if post SEQ were the last: later posts superseded, the branch back at
    its commit (later work kept on refs/autodev/rewound/N), the state as it was then."""
    from autodev.timeline import rewind as rw

    if (seq is None) == (not undo):
        raise UsageError(
            "give a post's seq, or --undo, exactly one of them", "autodev rewind 12  |  autodev rewind --undo"
        )
    paths = run_paths(run)
    done = rw.request(paths, seq, undo=undo)
    print(
        f"rewound to post {done['to_seq']} (note #{done['note_seq']}); "
        "`autodev resume` (or `autodev start` when no daemon runs) continues the run"
    )


@app.command()
def replay(
    source: str | None = typer.Argument(
        None, help="A run id, or a bundle (.tar.gz); default: this repository's run."
    ),
    tools: str = typer.Option(
        "real", "--tools", help="real: run the tools again; recorded: reuse their results."
    ),
    keep: Path | None = typer.Option(None, "--keep", help="Replay in this (new) folder and keep it."),
):
    """Re-run a recorded run offline (answers from the recording, no provider, no key) and
    report "identical" or the first divergence: exit 0 or 1."""
    import tempfile

    from autodev.replay import bundle
    from autodev.replay import replay as rp

    if tools not in ("real", "recorded"):
        raise UsageError(f"--tools {tools!r} is not real or recorded", "autodev replay --tools recorded")
    with tempfile.TemporaryDirectory(prefix="autodev-bundle-") as tmp:
        if source and (source.endswith((".tar.gz", ".tgz")) or Path(source).is_file()):
            rec = bundle.recording(Path(source), Path(tmp))
        else:
            rec = rp.from_run(run_paths(source))
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=False)
        diverged = rp.run(rec, recorded_tools=tools == "recorded", keep=keep)
    if diverged is None:
        print("identical")
        return
    print(diverged)
    raise typer.Exit(1)


@runs_app.command("export")
def export(
    run: str | None = typer.Argument(None, help="The run's id (default: this repository's run)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="The file to write (default: stdout)."),
):
    """Write a run as one .tar.gz (logs, team files, the repository's base and commits; keys
    redacted) that `autodev replay` reads."""
    import tempfile

    from autodev.replay import bundle

    paths = run_paths(run)
    if out is not None:
        bundle.export(paths, out)
        print(f"wrote {out}", file=sys.stderr)
        return
    if sys.stdout.isatty():
        raise UsageError("the bundle is binary: redirect it to a file", "autodev runs export > run.tar.gz")
    with tempfile.TemporaryDirectory(prefix="autodev-export-") as tmp:
        f = bundle.export(paths, Path(tmp) / "run.tar.gz")
        sys.stdout.buffer.write(f.read_bytes())
        sys.stdout.flush()


@app.command()
def fork(
    seq: int = typer.Argument(..., help="The post the new run starts from (its #seq)."),
    into: Path = typer.Option(
        ..., "--into", help="A new folder: the git repository of the new run (a clone of its own)."
    ),
):
    """Start a new run beside this one: a clone of the repository at the commit of post SEQ, and a
    run whose thread is this run's up to SEQ (`autodev runs` shows the lineage)."""
    import shlex

    from autodev.timeline import fork as fk

    done = fk.fork(current_paths(), seq, into)
    # the hint is meant to be pasted into a shell: a folder named `$(...)` must stay a name
    print(
        f"forked run {done['forked_from']['run']} at post {seq} into {done['into']} "
        f"(branch {done['branch']}, run {done['run']}); "
        f"`cd {shlex.quote(str(done['into']))} && autodev start` continues it"
    )
