"""What the user asked for that no daemon has applied yet, in the order it was asked: control
requests (pause, resume, stop: state.json's queue) and inbox messages (send, answer, approve,
deny, notice). `status` and the panel list them ("queued: stop, approve 2, 1 message"); the
next `start` applies them in that order.

A later request that contradicts a queued one replaces it, and says so (docs/DECISIONS.md,
"Queued actions"): with no daemon running, a message (send, answer, approve, deny) or a
`resume` asks the run to go on, so it cancels a queued `stop` or `pause`.
Nothing here imports more than the inbox and state modules: `send` and `status` start fast.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, cast

from autodev.store import inbox
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile

if TYPE_CHECKING:
    from autodev.records.state import Control, RunState

CONTINUING = ("send", "answer", "approve", "deny", "resume")  # requests that ask the run to go on
CANCELLED_BY_CONTINUING = ("stop", "pause")


class Item(NamedTuple):  # not a dataclass: see store/paths.RunPaths
    at: int  # when it was asked (ns since the epoch; 0 for a request older than this field)
    kind: str  # pause | resume | stop | send | answer | approve | deny | notice
    label: str  # how status names it: "stop", "approve 2", "answer 3", "hold 4"


def now_ns() -> int:
    return time.time_ns()


def controls(st: RunState) -> list[Control]:
    """Control requests the daemon has not applied, oldest first."""
    return [c for c in st.controls if c.n > st.controls_applied]


def message_at(path: Path) -> int:
    """When an inbox message was written: its file name starts with the time in ns."""
    head = path.name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


def items(paths: RunPaths, st: RunState | None = None) -> list[Item]:
    """Everything queued, in the order it was asked."""
    if st is None:
        out = [
            Item(at, action, action) for at, action in _plain_controls(StateFile(paths.state).read_plain())
        ]
    else:
        out = [Item(c.at, c.action, c.action) for c in controls(st)]
    for path, msg in inbox.pending(paths.inbox):
        kind = str(msg["kind"])
        if kind in ("approve", "deny"):
            label = f"{kind} {msg['gate_id']}" if msg.get("gate_id") else kind
        elif kind == "answer":
            label = f"answer {msg['notice_id']}"
        elif kind == "notice":
            label = f"{msg['action']} {msg['notice_id']}"
        else:
            label = "message"
        out.append(Item(message_at(path), kind, label))
    return sorted(out, key=lambda i: i.at)


def _plain_controls(st: dict[str, object]) -> list[tuple[int, str]]:
    """`controls` of a plain state (StateFile.read_plain): (at, action) of each not applied."""
    applied = st.get("controls_applied", 0)
    assert isinstance(applied, int)
    out: list[tuple[int, str]] = []
    for c in _control_dicts(st):
        n, at = c["n"], c.get("at", 0)
        assert isinstance(n, int) and isinstance(at, int)  # read_plain checked them
        if n > applied:
            out.append((at, str(c["action"])))
    return out


def _control_dicts(st: dict[str, object]) -> list[dict[str, object]]:
    controls = st["controls"]
    assert isinstance(controls, list)  # read_plain checked it: a list of Control objects
    return [cast("dict[str, object]", c) for c in cast("list[object]", controls) if isinstance(c, dict)]


def summary(queue: list[Item]) -> str:
    """ "stop, approve 2, 1 message": each request in order; messages counted where the first is."""
    labels: list[str] = []
    sends = sum(1 for i in queue if i.kind == "send")
    for i in queue:
        if i.kind != "send":
            labels.append(i.label)
        elif "#messages" not in labels:
            labels.append("#messages")
    counted = f"{sends} message" + ("s" if sends != 1 else "")
    return ", ".join(counted if x == "#messages" else x for x in labels)


def queued_line(queue: list[Item], daemon: bool) -> str:
    """status's and the panel's line: "queued: stop, approve 2, 1 message (...)"; "" for none."""
    if not queue:
        return ""
    line = f"queued: {summary(queue)}"
    if not daemon:
        line += " (no daemon is running: `autodev start` applies them in order)"
    return line


def cancel_for(paths: RunPaths, kind: str) -> list[str]:
    """With no daemon running, what a new request of `kind` replaces in the queue: a request that
    asks the run to go on removes the queued stop and pause requests. Returns what it removed."""
    if kind not in CONTINUING:
        return []
    removed: list[str] = []

    def drop(s: dict[str, object]) -> dict[str, object]:
        removed.clear()
        keep: list[dict[str, object]] = []
        applied = s.get("controls_applied", 0)
        assert isinstance(applied, int)
        for c in _control_dicts(s):
            n = c["n"]
            if isinstance(n, int) and n > applied and c["action"] in CANCELLED_BY_CONTINUING:
                removed.append(str(c["action"]))
            else:
                keep.append(c)
        cancelled = s.get("controls_cancelled", 0)
        assert isinstance(cancelled, int)
        return {**s, "controls": keep, "controls_cancelled": cancelled + len(removed)}

    # Plain JSON (StateFile.read_plain): the state the model would write, without building it.
    state = StateFile(paths.state)
    if any(action in CANCELLED_BY_CONTINUING for _, action in _plain_controls(state.read_plain())):
        state.update_plain(drop)
    return removed


def replaced_text(removed: list[str], by: str, when: str = "at the next `autodev start`") -> str:
    """The line that says what a request replaced."""
    what = " and ".join(f"the queued {r}" for r in dict.fromkeys(removed))
    return (
        f"this {by} cancels {what}: the run continues {when} (`autodev {removed[-1]}` again if you meant it)"
    )
