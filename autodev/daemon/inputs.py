"""What the user asks between turns: control requests, the inbox, and edits of .autodev/.

Control requests (pause, resume, stop) wait in state.json's queue, applied in the order they were
made; `controls_applied` says how far. Inbox messages (send, answer, approve, deny, notice) are one
file each, consumed exactly once: a `send` becomes a `user` post (idempotent by the message's id).
What a request does to the state is decided by pure functions (`after_control`, `after_stop`,
`user_message`); `apply_controls` and `apply_inbox` read the queue and hand each item on.
An edit of .autodev/ applies at the next turn boundary (`reload`); one made while a turn ran is
refused at the turn's end (`refuse_turn_edits`), since only the user may edit the team, config
and prompts and during a turn we cannot tell who did.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol, Unpack

from autodev import records
from autodev.daemon import effects
from autodev.daemon.effects import Change
from autodev.daemon.handles import Run, Settings, accepted_prompts
from autodev.daemon.services import save_team
from autodev.errors import ConfigError
from autodev.guard import keys
from autodev.guard.display import digest
from autodev.records.base import State
from autodev.records.events import ConfigRefusedEvent, ControlEvent, TeamReloadedEvent, WarningEvent
from autodev.records.messages import AnyInbox, ApproveMessage, DenyMessage, SendMessage
from autodev.records.state import ConfigRefused, Control, PausedFrom, RunState, StateChange
from autodev.rules.reasons import reason
from autodev.store import inbox, queued, userfiles

USER_KEEP = 10  # user messages kept in state for the audit's view of the objective
IDLE_RECHECK_S = 1.0  # longest a change can go unseen if it lands before the watch is armed
Why = Mapping[str, object] | None  # a reason in its plain form, as `rules.reasons.reason` makes it


class SetState(Protocol):
    """A state change and its event: (state, reason, the other fields it changes)."""

    def __call__(self, state: State, why: Why, /, **extra: Unpack[StateChange]) -> None: ...


def todo(st: RunState) -> list[Control]:
    """Control requests not yet applied, oldest first."""
    return queued.controls(st)


def first_control_at(st: RunState) -> int | None:
    """When the oldest unapplied control request was made (ns; 0 when it predates the time
    stamp), or None when there is none."""
    queue = todo(st)
    return queue[0].at if queue else None


def stop_requested(st: RunState) -> bool:
    """A `stop` the user asked for and the daemon has not applied yet."""
    return any(c.action == "stop" for c in todo(st))


def pending(st: RunState, inbox_dir: Path) -> bool:
    """Anything for the daemon to apply: an inbox message or a control request."""
    return bool(inbox.pending(inbox_dir)) or bool(todo(st))


def after_control(cur: RunState, action: str) -> tuple[State, Why, StateChange] | None:
    """The state a pause or resume leads to from `cur` (pure): (state, reason, extra), or None
    when it changes nothing. A pause remembers what it interrupted: an open question or gate
    comes back on resume."""
    if action == "pause" and cur.state not in ("complete", "paused"):
        return "paused", reason("user"), {"paused_from": PausedFrom(state=cur.state, reason=cur.reason)}
    if action == "resume" and cur.state == "paused":
        back = cur.paused_from
        if back and back.state in ("awaiting_user", "gated"):
            return back.state, back.reason.dump() if back.reason else None, {"paused_from": None}
        return "running", None, {"paused_from": None}
    if action == "resume" and cur.state == "waiting":
        return "running", None, {"wait": None}
    return None


def after_stop(cur: RunState) -> tuple[State, Why, StateChange]:
    """The state `stop` leaves (pure): what was going on is kept for `start` to pick up."""
    back = cur.paused_from if cur.state == "paused" else PausedFrom(state=cur.state, reason=cur.reason)
    why = reason("stopped")
    return "stopped", why, {"paused_from": back}


def apply_controls(run: Run, set_state: SetState, rewind: Callable[[Control], None] | None = None) -> bool:
    """Pause, resume, stop and rewind requests, in the order they were made. True = stop now."""
    queue = todo(run.state.read())
    stop = False
    for c in queue:
        if c.action == "stop":
            stop = True
        elif c.action == "rewind":
            if rewind is not None:
                rewind(c)
        else:
            step = after_control(run.state.read(), c.action)
            if step:
                set_state(step[0], step[1], **step[2])
        run.events.emit(ControlEvent(action=c.action))
    if queue:
        last = queue[-1].n
        run.state.update(
            lambda s: s.changed(controls_applied=last, controls=[c for c in s.controls if c.n > last])
        )
    if stop:
        state, why, extra = after_stop(run.state.read())
        set_state(state, why, **extra)
    return stop


def user_message(s: RunState, text: str) -> RunState:
    """What a user message does to the state (pure): the talk and audit counts start again, the
    run runs (an open gate stays open and approvable; its declarer gets the message, rule 1),
    the open question is answered, and unpinned holds are released."""
    changes: StateChange = {
        "talk_turns": 0,
        "audits": 0,
        "user_messages": [*s.user_messages, text[:4000]][-USER_KEEP:],
    }
    if not s.objective:
        changes["objective"] = text
    if s.state in ("awaiting_user", "paused", "complete", "waiting", "gated"):
        changes.update(state="running", reason=None, wait=None)
    changes.update(question=None, last_wait=None)
    if "notices" in s.model_fields_set:
        changes["notices"] = {
            nid: n.but(hold=None, released="a user message") if n.hold and not n.pinned else n
            for nid, n in s.notices.items()
        }
    return s.changed(**changes)


def send(run: Run, msg: SendMessage) -> None:
    """`autodev send`: the message on the thread as a `user` post, then its state change."""
    text = msg.text
    run.note("user", text, id=msg.id)
    run.state.update(lambda s: user_message(s, text))


def apply_inbox(run: Run, handle: Callable[[AnyInbox], None], before: int | None = None) -> None:
    """Each inbox message, parsed into its kind, to `handle`, exactly once (with `before`, only
    those written before that time, ns). `inbox.pending` has set aside what is not a message of
    a kind this version knows (`.bad`), never dropped."""

    def set_aside(path: Path, why: str) -> None:
        run.events.emit(WarningEvent(message=f"inbox file {path.name} set aside: {why}"))

    for path, msg in inbox.pending(run.paths.inbox, set_aside):
        if before is not None and queued.message_at(path) >= before:
            break
        handle(records.inbox_message(msg))
        inbox.done(path)


def gate_answer(run: Run, msg: ApproveMessage | DenyMessage) -> Change | None:
    """`autodev approve` / `deny` of the open gate: its decision, or None (and a warning) when
    the gate is not open or the approval was given for another text."""
    st = run.state.read()
    gate = st.gate
    if not gate or (msg.gate_id and msg.gate_id != gate.id):
        run.events.emit(WarningEvent(message=f"no open gate {msg.gate_id or ''} to {msg.kind}"))
        return None
    if isinstance(msg, ApproveMessage) and msg.digest and msg.digest != digest(gate.text):
        run.events.emit(
            WarningEvent(
                message=f"approval of gate {gate.id} refused: it was given for a text with sha256 "
                f"{msg.digest}, and the gate's text has {digest(gate.text)}; "
                f"read the gate again with `autodev status`"
            )
        )
        return None
    approved = isinstance(msg, ApproveMessage)
    why = (msg.reason if isinstance(msg, DenyMessage) else None) or ""
    return effects.gate_decision(gate, approved, "the user", why, st, run.run_id)


def idle(run: Run, timeout: float | None) -> None:
    """Sleep until the inbox or state.json changes (or `timeout` passes): no busy loop.

    The watch is re-armed every IDLE_RECHECK_S and the queue re-checked, because a change
    made after the check but before the watcher is registered would otherwise be missed
    (a lost wake-up: a `resume` that sits unread for an hour)."""
    from watchfiles import Change as Changed
    from watchfiles import watch

    run.events.sync()  # the group commit's end: nothing written stays unsynced while idle
    run.hlog.sync()

    def relevant(_change: Changed, path: str) -> bool:
        return path.endswith(".json") and ("/inbox/" in path or path.endswith("/state.json"))

    end = time.monotonic() + (timeout if timeout is not None else 3600)
    while not pending(run.state.read(), run.paths.inbox):
        left = end - time.monotonic()
        if left <= 0:
            return
        changed = next(
            watch(
                run.paths.run_dir,
                watch_filter=relevant,
                rust_timeout=int(max(0.01, min(left, IDLE_RECHECK_S)) * 1000),
                yield_on_timeout=True,
                debounce=50,
                step=20,
                recursive=True,
            )
        )
        if changed:
            return


def reload(run: Run, settings: Settings) -> Settings | None:
    """The settings from an edit of .autodev/ made between turns, or None when there is none to
    apply (no change, the change refused during a turn, or a file that does not load: then the
    old team stays and status shows why)."""
    cur = userfiles.stamp(run.paths.config_dir)
    if cur == settings.stamp:
        return None
    refused = run.state.read().config_refused
    if refused is not None and cur == refused.stamp:
        return None
    settings.stamp = cur  # the same broken edit is not reported again
    try:
        new = Settings.load(run.paths)
    except ConfigError as e:
        problem = str(e)
        run.events.emit(WarningEvent(message=f"team edit rejected, keeping the old team: {problem}"))
        run.state.update(lambda s: s.changed(team_error=problem, config_refused=None))
        return None
    userfiles.snapshot_prompts(run.paths.prompt_overrides, accepted_prompts(run.paths))
    run.redact.learn(v for k in new.secret_env if (v := keys.get(k)))
    run.state.update(lambda s: s.changed(team_error=None, config_refused=None))
    version = save_team(run.paths, run.events)
    run.events.emit(TeamReloadedEvent(participants=new.team.names(), team=version))
    return new


def refuse_turn_edits(run: Run, name: str, turn: int, before: str) -> None:
    """A change to .autodev/ while `name`'s turn ran (`before`: the stamp at its start): kept
    out, and said so in state and events."""
    after = userfiles.stamp(run.paths.config_dir)
    if after == before:
        return
    text = (
        f".autodev/ changed during turn {turn} ({name} was speaking); the change is not "
        "applied and the previous team, config and prompts stay in use. If you made it: "
        "`autodev pause`, save the file again, then `autodev resume`"
    )
    refused = ConfigRefused(turn=turn, participant=name, stamp=after, text=text)
    run.state.update(lambda s: s.changed(config_refused=refused))
    run.events.emit(ConfigRefusedEvent(participant=name, turn=turn, message=text))
