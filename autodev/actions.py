"""What the user can do to a run, in one place for the CLI and the panel: every action is an
inbox message (send, answer, approve, deny, notice) or a queued control request (pause, resume,
stop), so the daemon sees no difference between a typed command and a key in the panel.
Nothing here imports more than the inbox and state modules: these paths must start fast.
"""

from __future__ import annotations

from autodev import inbox
from autodev.paths import RunPaths
from autodev.state import StateFile

CONTROLS = ("pause", "resume", "stop")


def send(paths: RunPaths, text: str) -> dict:
    paths.ensure()
    return inbox.drop(paths.inbox, "send", text=text)


def answer(paths: RunPaths, notice_id: str, text: str) -> dict:
    paths.ensure()
    return inbox.drop(paths.inbox, "answer", notice_id=str(notice_id), text=text)


def approve(paths: RunPaths, gate_id: str | None = None) -> dict:
    paths.ensure()
    return inbox.drop(paths.inbox, "approve", gate_id=gate_id)


def deny(paths: RunPaths, gate_id: str | None = None, reason: str = "") -> dict:
    paths.ensure()
    return inbox.drop(paths.inbox, "deny", gate_id=gate_id, reason=reason)


def notice(paths: RunPaths, notice_id: str, action: str) -> dict:
    """`action` is "hold" (pin the hold against user messages) or "release"."""
    if action not in ("hold", "release"):
        raise ValueError(f"notice action must be 'hold' or 'release', not {action!r}")
    paths.ensure()
    return inbox.drop(paths.inbox, "notice", notice_id=str(notice_id), action=action)


def control(paths: RunPaths, action: str) -> dict:
    if action not in CONTROLS:
        raise ValueError(f"control action must be one of {', '.join(CONTROLS)}, not {action!r}")
    paths.ensure()
    return StateFile(paths.state).request(action)
