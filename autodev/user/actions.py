"""What the user can do to a run, in one place for the CLI and the panel: every action is an
inbox message (send, answer, approve, deny, notice) or a queued control request (pause, resume,
stop), so the daemon sees no difference between a typed command and a key in the panel.
With no daemon running, a request that asks the run to go on replaces a queued stop or pause
(`queued.cancel_for`); each action's answer says so under "cancelled".
Nothing here imports more than the inbox and state modules, nor pydantic: these paths must start
fast (issue 33), so they read state.json as plain JSON (`StateFile.read_plain`).
"""

from __future__ import annotations

from typing import NamedTuple

from autodev.errors import UsageError
from autodev.store import inbox, queued
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile, lost
from autodev.user.plainstate import PlainGate, PlainNotice, PlainState, fits_state

CONTROLS = ("pause", "resume", "stop")


class Queued(NamedTuple):  # not a dataclass: see store/paths.RunPaths
    """What an action left for the daemon: the inbox message's id (None for a control request,
    which state.json holds), and the names of the queued requests it replaced (`cancel_for`)."""

    id: str | None
    cancelled: list[str]


def daemon_running(paths: RunPaths) -> bool:
    from autodev.store.lock import DaemonLock

    return bool(DaemonLock.holder(paths.lock))


def _queue(paths: RunPaths, kind: str, **payload: object) -> Queued:
    """One inbox message; with no daemon, the queued requests it replaces are removed first
    (an instant later, a daemon starting would read them in the wrong order)."""
    paths.ensure()
    cancelled = [] if daemon_running(paths) else queued.cancel_for(paths, kind)
    return Queued(str(inbox.drop(paths.inbox, kind, **payload)["id"]), cancelled)


def send(paths: RunPaths, text: str) -> Queued:
    if not text.strip():
        # An empty message would still count as the answer to an open question.
        raise UsageError("the message is empty; nothing was sent", 'give the text: autodev send "..."')
    return _queue(paths, "send", text=text)


# -- what exists: an answer, a decision or a hold for something that is not there is refused
# here, where the user can still fix it, instead of being dropped by the daemon later.


def _state(paths: RunPaths) -> PlainState:
    """state.json as plain JSON (`read_state(paths).dump()`); a lost one is rebuilt from the logs."""
    if lost(paths.state, paths.thread):
        from autodev.store.rebuild import read_state

        st = read_state(paths).dump()
    else:
        st = StateFile(paths.state).read_plain()
    assert fits_state(st)  # read_plain gives a file the model takes as it is; dump() is the model's
    return st


def _notices(st: PlainState) -> dict[str, PlainNotice]:
    return st.get("notices", {})


def open_notices(st: PlainState) -> list[str]:
    """Notices that still need the user: unanswered, or holding a capability."""
    return [
        nid
        for nid, n in sorted(_notices(st).items(), key=lambda kv: int(kv[0]))
        if n.get("answer") is None or n.get("hold")
    ]


def require_notice(paths: RunPaths, notice_id: str) -> None:
    st = _state(paths)
    if str(notice_id) in _notices(st):
        return
    ids = open_notices(st)
    raise UsageError(
        f"there is no notice {notice_id}; "
        + (f"open notices: {', '.join(ids)}" if ids else "no notice is open"),
        "see `autodev status` for the notices and their ids",
    )


def require_gate(paths: RunPaths, gate_id: str | None, verb: str) -> str:
    """The id of the open gate that `gate_id` (default: the open one) names."""
    gate = open_gate(paths)
    if not gate:
        raise UsageError(f"no gate is open; nothing to {verb}", "see `autodev status` for what needs you")
    gid = gate["id"]
    if gate_id is not None and str(gate_id) != gid:
        raise UsageError(
            f"gate {gate_id} is not open; the open gate is {gid}",
            f"autodev {verb} {gid}",
        )
    return gid


def answer(paths: RunPaths, notice_id: str, text: str) -> Queued:
    return _queue(paths, "answer", notice_id=str(notice_id), text=text)


def open_gate(paths: RunPaths) -> PlainGate | None:
    """The open gate as state.json holds it (records.Gate: id, declarer, text), or None."""
    return _state(paths).get("gate")


def approve(paths: RunPaths, gate_id: str | None = None, digest: str | None = None) -> Queued:
    """`digest` (display.digest of the gate's text as the user was shown it) binds the approval
    to that text: the daemon refuses it for a gate whose text has another digest."""
    return _queue(paths, "approve", gate_id=gate_id, digest=digest)


def deny(paths: RunPaths, gate_id: str | None = None, reason: str = "") -> Queued:
    return _queue(paths, "deny", gate_id=gate_id, reason=reason)


def notice(paths: RunPaths, notice_id: str, action: str) -> Queued:
    """`action` is "hold" (pin the hold against user messages) or "release"."""
    if action not in ("hold", "release"):
        raise ValueError(f"notice action must be 'hold' or 'release', not {action!r}")
    return _queue(paths, "notice", notice_id=str(notice_id), action=action)


def control(paths: RunPaths, action: str) -> Queued:
    if action not in CONTROLS:
        raise ValueError(f"control action must be one of {', '.join(CONTROLS)}, not {action!r}")
    paths.ensure()
    cancelled = [] if daemon_running(paths) else queued.cancel_for(paths, action)
    StateFile(paths.state).request_plain(action, at=queued.now_ns())
    return Queued(None, cancelled)
