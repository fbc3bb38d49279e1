"""What the user sends to a run: `send`, `approve`, `deny`, `answer`, `notice`, `pause`, `resume`, `stop`.

The Typer commands (their arguments and help); what they do is steer.py, which the quick path
(quick.py) calls without importing typer.
"""

from __future__ import annotations

import typer

from autodev.cli.root import app

# What each command does is steer.py, imported when it runs: `autodev --help` and the other
# commands do not load the inbox and state modules.


@app.command()
def send(
    text: str | None = typer.Argument(None, help="Your message to the team; - reads it from stdin."),
    file: str | None = typer.Option(None, "--file", "-f", help="Read the message from this file."),
    to_all: bool = typer.Option(
        False, "--all", help="Send it to every run of this repository's best-of group."
    ),
    run: str | None = typer.Option(
        None, "--run", help="The run's id (`autodev runs`); default: this repository's."
    ),
):
    """Send a message to the run (queued; a daemon, or the next `autodev start`, applies it)."""
    from autodev.cli import steer

    steer.send(text, file, to_all, run)


@app.command()
def approve(gate_id: str | None = typer.Argument(None, help="The gate's id (default: the open gate).")):
    """Approve the open gate."""
    from autodev.cli import steer

    steer.approve(gate_id)


@app.command()
def deny(
    gate_id: str | None = typer.Argument(None, help="The gate's id (default: the open gate)."),
    reason: str = typer.Option("", "--reason", help="Why, for the declarer."),
):
    """Deny the open gate."""
    from autodev.cli import steer

    steer.deny(gate_id, reason)


@app.command()
def answer(
    notice_id: str = typer.Argument(..., help="The notice's id (see `autodev status`)."),
    text: str = typer.Argument(..., help="Your answer."),
):
    """Answer a participant's notice; the answer reaches it in its next turn."""
    from autodev.cli import steer

    steer.answer(notice_id, text)


@app.command()
def notice(
    release: str | None = typer.Option(None, "--release", help="Release the hold of notice ID."),
    hold: str | None = typer.Option(
        None, "--hold", help="Pin the hold of notice ID (user messages no longer release it)."
    ),
):
    """Pin or release the capability a notice holds."""
    from autodev.cli import steer

    steer.notice(release, hold)


@app.command()
def pause():
    """Hold the run at the next turn boundary."""
    from autodev.cli import steer

    steer.control("pause")


@app.command()
def resume():
    """Release a paused run."""
    from autodev.cli import steer

    steer.control("resume")


@app.command()
def stop():
    """End the run after the turn in flight."""
    from autodev.cli import steer

    steer.control("stop")
