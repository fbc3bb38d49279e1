"""What the user sends to a run: `send`, `approve`, `deny`, `answer`, `notice`, `pause`, `resume`, `stop`.

Each goes through `autodev.user.actions`, the path the panel shares; none of them needs a daemon.
"""

from __future__ import annotations

import sys

import typer

from autodev.cli.root import _paths, app
from autodev.errors import UsageError
from autodev.guard.display import digest, line, shown
from autodev.store.paths import RunPaths
from autodev.user import actions


def _if_no_daemon(paths: RunPaths, result: dict, by: str) -> None:
    """Actions are queued either way; without a daemon nothing applies them until `start`: say
    what is queued now, and what this action replaced."""
    from autodev.store import queued

    if result.get("cancelled"):
        print(queued.replaced_text(result["cancelled"], by))
    if actions.daemon_running(paths):
        return
    queue = queued.items(paths)
    then = (
        "; the queued stop then ends the run again"
        if any(i.kind == "stop" for i in queue)
        else ", and continues the run"
    )
    print(
        "no daemon is running: the next `autodev start` applies what is queued, in order "
        f"({queued.summary(queue)}){then}"
    )


def _read_text(source: str) -> str:
    """A message from stdin (`-`) or a file, whatever its bytes: invalid UTF-8 is kept visible
    as escapes instead of failing."""
    from autodev.store.journal import safe_text

    try:
        raw = sys.stdin.buffer.read() if source == "-" else open(source, "rb").read()
    except OSError as e:
        raise UsageError(f"cannot read {source}: {e.strerror or e}", "give a readable file") from None
    return safe_text(raw.decode("utf-8", errors="surrogateescape"))


@app.command()
def send(
    text: str | None = typer.Argument(None, help="Your message to the team; - reads it from stdin."),
    file: str | None = typer.Option(None, "--file", "-f", help="Read the message from this file."),
):
    """Send a message to the run (queued; a daemon, or the next `autodev start`, applies it)."""
    if (text is None) == (file is None):
        raise UsageError(
            "give the message as an argument, as - (stdin), or with --file, exactly one of them",
            'autodev send "..."  |  autodev send - < notes.txt  |  autodev send --file notes.txt',
        )
    body = _read_text(file if file is not None else "-") if text in (None, "-") else text
    paths = _paths()
    msg = actions.send(paths, body)
    print(f"sent ({msg['id']})")
    _if_no_daemon(paths, msg, "message")


@app.command()
def approve(gate_id: str | None = typer.Argument(None, help="The gate's id (default: the open gate).")):
    """Approve the open gate."""
    paths = _paths()
    gid = actions.require_gate(paths, gate_id, "approve")
    gate = actions.open_gate(paths)
    text = gate.text if gate else ""
    # The approval is for this text, shown escaped, and names it by its digest.
    print(f"gate {gid} from {line(gate.declarer if gate else '?')} [text sha256 {digest(text)}]:")
    print("  " + shown(text).replace("\n", "\n  "))
    result = actions.approve(paths, gid, digest=digest(text))
    print(f"approval of gate {gid} sent")
    _if_no_daemon(paths, result, "approval")


@app.command()
def deny(
    gate_id: str | None = typer.Argument(None, help="The gate's id (default: the open gate)."),
    reason: str = typer.Option("", "--reason", help="Why, for the declarer."),
):
    """Deny the open gate."""
    paths = _paths()
    gid = actions.require_gate(paths, gate_id, "deny")
    result = actions.deny(paths, gid, reason)
    print(f"denial of gate {gid} sent")
    _if_no_daemon(paths, result, "denial")


@app.command()
def answer(
    notice_id: str = typer.Argument(..., help="The notice's id (see `autodev status`)."),
    text: str = typer.Argument(..., help="Your answer."),
):
    """Answer a participant's notice; the answer reaches it in its next turn."""
    if not text.strip():
        raise UsageError("the answer is empty; nothing was sent", f'autodev answer {notice_id} "..."')
    paths = _paths()
    actions.require_notice(paths, notice_id)
    result = actions.answer(paths, notice_id, text)
    print(f"answer to notice {notice_id} sent")
    _if_no_daemon(paths, result, "answer")


@app.command()
def notice(
    release: str | None = typer.Option(None, "--release", help="Release the hold of notice ID."),
    hold: str | None = typer.Option(
        None, "--hold", help="Pin the hold of notice ID (user messages no longer release it)."
    ),
):
    """Pin or release the capability a notice holds."""
    if (release is None) == (hold is None):
        raise UsageError("give exactly one of --release ID or --hold ID", "e.g. `autodev notice --release 3`")
    nid, action = (release, "release") if release is not None else (str(hold), "hold")
    paths = _paths()
    actions.require_notice(paths, nid)
    result = actions.notice(paths, nid, action)
    print(f"{action} of notice {nid} sent")
    _if_no_daemon(paths, {**result, "cancelled": []}, action)


def _control(action: str) -> None:
    paths = _paths()
    result = actions.control(paths, action)
    if actions.daemon_running(paths):
        print(f"{action} requested; the daemon applies it at the next turn boundary")
        return
    print(f"{action} queued")
    _if_no_daemon(paths, result, action)


@app.command()
def pause():
    """Hold the run at the next turn boundary."""
    _control("pause")


@app.command()
def resume():
    """Release a paused run."""
    _control("resume")


@app.command()
def stop():
    """End the run after the turn in flight."""
    _control("stop")
