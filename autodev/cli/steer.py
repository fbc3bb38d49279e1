"""What `send`, `approve`, `deny`, `answer`, `notice`, `pause`, `resume`, `stop` and `status` do,
without typer: the Typer commands (send.py, look.py) and the quick path (quick.py) both call
these, so a steering command started from the shell imports neither typer nor pydantic
(issue 33; tests/test_cli_imports.py holds it).

Each action goes through `autodev.user.actions`, the path the panel shares; none needs a daemon.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from autodev.cli.edge import current_paths, run_paths
from autodev.errors import UsageError
from autodev.store.paths import RunPaths
from autodev.user import actions

if TYPE_CHECKING:
    from pathlib import Path

    from autodev.group.facts import RunFacts
    from autodev.group.record import Group


def _if_no_daemon(paths: RunPaths, result: actions.Queued, by: str) -> None:
    """Actions are queued either way; without a daemon nothing applies them until `start`: say
    what is queued now, and what this action replaced."""
    from autodev.store import queued

    if result.cancelled:
        print(queued.replaced_text(result.cancelled, by))
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


def send(text: str | None, file: str | None, to_all: bool = False, run: str | None = None) -> None:
    if (text is None) == (file is None):
        raise UsageError(
            "give the message as an argument, as - (stdin), or with --file, exactly one of them",
            'autodev send "..."  |  autodev send - < notes.txt  |  autodev send --file notes.txt',
        )
    body = _read_text(file if file is not None else "-") if text in (None, "-") else text
    if to_all and run is not None:
        raise UsageError("--all and --run name different runs: give one of them", 'autodev send --all "..."')
    paths = run_paths(run)
    if to_all:
        _send_all(paths, body)
        return
    msg = actions.send(paths, body)
    print(f"sent ({msg.id})")
    _if_no_daemon(paths, msg, "message")


def _send_all(paths: RunPaths, body: str) -> None:
    """The message to every run of the repository's newest best-of group that has begun."""
    from autodev.user.group_view import newest

    g = newest(paths.repo)
    if g is None:
        raise UsageError(
            f"--all sends to every run of a best-of group, and {paths.repo} has none",
            'drop --all, or start a group: autodev start --best-of 3 "..."',
        )
    sent = 0
    for k in range(1, g.n + 1):
        m = g.members.get(k)
        if m is None or not m.started:
            print(f"run {k}: not started yet, nothing sent")
            continue
        msg = actions.send(m.paths, body)
        sent += 1
        print(
            f"run {k}: sent ({msg.id})" + ("" if actions.daemon_running(m.paths) else " (queued: no daemon)")
        )
    if not sent:
        raise UsageError(
            f"no run of group {g.id} has started yet", "wait a moment (`autodev status`), then send again"
        )


def approve(gate_id: str | None) -> None:
    from autodev.guard.display import digest, line, shown

    paths = current_paths()
    gid = actions.require_gate(paths, gate_id, "approve")
    gate = actions.open_gate(paths)
    text = gate.get("text", "") if gate else ""
    # The approval is for this text, shown escaped, and names it by its digest.
    print(f"gate {gid} from {line(gate['declarer'] if gate else '?')} [text sha256 {digest(text)}]:")
    print("  " + shown(text).replace("\n", "\n  "))
    result = actions.approve(paths, gid, digest=digest(text))
    print(f"approval of gate {gid} sent")
    _if_no_daemon(paths, result, "approval")


def deny(gate_id: str | None, reason: str) -> None:
    paths = current_paths()
    gid = actions.require_gate(paths, gate_id, "deny")
    result = actions.deny(paths, gid, reason)
    print(f"denial of gate {gid} sent")
    _if_no_daemon(paths, result, "denial")


def answer(notice_id: str, text: str) -> None:
    if not text.strip():
        raise UsageError("the answer is empty; nothing was sent", f'autodev answer {notice_id} "..."')
    paths = current_paths()
    actions.require_notice(paths, notice_id)
    result = actions.answer(paths, notice_id, text)
    print(f"answer to notice {notice_id} sent")
    _if_no_daemon(paths, result, "answer")


def notice(release: str | None, hold: str | None) -> None:
    if (release is None) == (hold is None):
        raise UsageError("give exactly one of --release ID or --hold ID", "e.g. `autodev notice --release 3`")
    nid, action = (release, "release") if release is not None else (str(hold), "hold")
    paths = current_paths()
    actions.require_notice(paths, nid)
    result = actions.notice(paths, nid, action)
    print(f"{action} of notice {nid} sent")
    _if_no_daemon(paths, actions.Queued(result.id, []), action)


def control(action: str) -> None:
    paths = current_paths()
    result = actions.control(paths, action)
    if actions.daemon_running(paths):
        print(f"{action} requested; the daemon applies it at the next turn boundary")
        return
    print(f"{action} queued")
    _if_no_daemon(paths, result, action)


def status(as_json: bool, run: str | None = None) -> None:
    import json

    from autodev.store.paths import find_repo
    from autodev.user import quickstatus

    # Status works without .autodev/ when a run folder exists: it says what is missing.
    paths = RunPaths(find_repo()) if run is None else run_paths(run)
    if run is None and not paths.team_file.exists() and not paths.run_dir.exists():
        paths = current_paths()  # nothing here at all: the usual "run autodev init"
    # Without pydantic when state.json fits and the status cache knows these team and config
    # files (quickstatus.py); otherwise through the models, which then fill the cache.
    data = quickstatus.gather_json(paths)
    if data is None:
        from autodev.user.status import gather

        data = gather(paths).to_json()
        quickstatus.remember(paths)
    group = _group(paths.repo)
    if as_json:
        if group is not None:
            from autodev.user.group_view import group_json

            data["group"] = group_json(*group)
        print(json.dumps(data, indent=1, default=str))
    else:
        from autodev.user.statustext import MEMO, render

        # a run folder keeps the last renderings; status never makes one
        render(data, kept=paths.run_dir / MEMO if paths.run_dir.is_dir() else None)
        if group is not None:
            from autodev.user.group_view import render_group

            render_group(*group)


def _group(repo: Path) -> tuple[Group, list[RunFacts]] | None:
    """The repository's newest best-of group and its runs' facts, or None (no group: nothing
    of autodev.group is imported)."""
    from autodev.store.paths import autodev_home

    if not (autodev_home() / "groups" / RunPaths(repo).run_dir.name).is_dir():
        return None
    from autodev.group import facts
    from autodev.user.group_view import newest

    g = newest(repo)
    return (g, facts.of_group(g)) if g is not None else None
