"""The run at its turn boundary: what the loop changes in state.json and how, shared by the
loop's steps (`Loop` is a `Boundary`).

Every state change goes through `_set` (a state, its reason and the fields it changes) or
`_commit` (a `Change` of `effects`): its notes and events first, then one state.json update,
then the state's event, hooks and notification. A turn's outcome (`after_post`, `silent`) is
applied exactly once, with who speaks next in the same update; `_settle` applies the outcome of
the newest turn of the harness log (`recovery.settle`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Unpack

from autodev.daemon import auditing, effects, inputs, notify, recovery, turnsetup
from autodev.daemon.effects import Change, Figures, Note
from autodev.daemon.handles import Run, Settings
from autodev.daemon.inputs import Why
from autodev.daemon.services import Services, hooks_for
from autodev.errors import AutodevError
from autodev.harness.hooks import Hooks
from autodev.harness.recovery import Resume
from autodev.records.base import State
from autodev.records.events import BudgetReachedEvent, SilentTurnEvent, StateEvent
from autodev.records.harness_log import TurnStarted
from autodev.records.post import Post
from autodev.records.state import Reason, RunState, StateChange
from autodev.rules import budget
from autodev.store import faults
from autodev.store.thread import TAIL
from autodev.timeline import rewind

if TYPE_CHECKING:
    from autodev.telemetry.process import Exporter

Closing = Callable[[RunState], RunState] | None  # a turn's closing change (turnsetup.take)


def _same(s: RunState) -> RunState:
    return s


Feed = Callable[[Run], None]  # replay: the recorded user input, handed in at each turn boundary


class Boundary:
    """The open run's parts and its state changes (the daemon holds the lock; `opening.open_loop`
    opens it). Everything it opens is closed by `closing`."""

    def __init__(
        self,
        run: Run,
        settings: Settings,
        services: Services,
        folder: faults.FolderWatch,
        closing: ExitStack,
        hooks: Hooks,
        notifier: notify.Notifier,
        *,
        until_idle: bool = False,
        feed: Feed | None = None,
    ):
        self.run, self.settings, self.services, self.folder, self.closing = (
            run,
            settings,
            services,
            folder,
            closing,
        )
        self.paths, self.state, self.events, self.redact = run.paths, run.state, run.events, run.redact
        self.run_id = run.run_id
        self.hooks, self.notifier = hooks, notifier
        self.until_idle = until_idle
        self.feed = feed  # replay: the recorded user input, handed in at each turn boundary
        self.session = 0  # this daemon's session of the run (`opening.start_session`)
        self.telemetry: Exporter | None = None  # `opening.start_telemetry`
        self.resume: Resume | None = None  # the open turn to continue, once settled

    # -- state changes ---------------------------------------------------------------------------

    def _state_event(self, state: State, why: Why) -> None:
        """Every state change: its event, the on_state hooks, and a notification when the run
        now needs the human (or is done)."""
        self.events.emit(
            StateEvent.model_validate({"state": state, "reason": why})
        )  # state: a `State`, checked
        data = notify.payload(state, why, str(self.paths.repo), self.run_id)
        self.hooks.on_state(data)
        if state in notify.NOTIFY_STATES:
            self.notifier.fire(data)

    def _set(self, state: State, why: Why = None, /, **extra: Unpack[StateChange]) -> None:
        cur = self.state.read()
        if cur.state == state and (cur.reason.dump() if cur.reason else None) == why and not extra:
            return
        change: StateChange = {**extra, "state": state, "reason": why}
        self.state.update(lambda s: s.changed(**change))
        self._state_event(state, why)

    def _emit(self, ch: Change) -> None:
        """A change's notes and events, in order (before its state update: notes are idempotent)."""
        for item in ch.out:
            if isinstance(item, Note):
                self.run.note(item.frm, item.text, item.handoff, id=item.id, **item.extra)
            else:
                self.events.emit(item)

    def _commit(self, ch: Change, change: Callable[[RunState], RunState] | None = None) -> None:
        self._emit(ch)
        self.state.update(change or ch.apply)
        if "state" in ch.state:
            why = ch.state.get("reason")
            self._state_event(ch.state["state"], why.dump() if isinstance(why, Reason) else why)

    # -- between turns ----------------------------------------------------------------------------

    def _timeline(self) -> rewind.Handles:
        run = self.run
        return rewind.Handles(run.paths, run.thread, run.state, run.hlog, run.events, daemon=True)

    def _stop_requested(self) -> bool:
        try:
            return inputs.stop_requested(self.state.read())
        except AutodevError:
            return False

    def _reload_team(self) -> None:
        settings = inputs.reload(self.run, self.settings)
        if settings is not None:
            self.settings = settings
            self.hooks, self.notifier = hooks_for(self.paths, settings, self.run_id, self.events.emit)

    def _budget_reached(self, speaker: str) -> bool:
        """At a turn boundary: pause (reason `budget`) when a cap of the run or of the next
        speaker is reached. Spend is never reset; a raised cap lets the next check pass."""
        why = budget.reached(self.settings.config, self.settings.team, self.state.read(), speaker)
        if why is None:
            return False
        self.events.emit(BudgetReachedEvent(participant=speaker, text=why["text"]))
        self._set("paused", why, speaking=None, paused_from=None)
        return True

    # -- a turn's outcome ------------------------------------------------------------------------

    def after_post(self, post: Post, author: str, turn: int, figures: Figures, close: Closing = None) -> bool:
        """Apply a post's effects exactly once: its state change, the turn's figures and who
        speaks next are written in one update together with `applied_seq` and `accounted_turn`
        (and the turn's `close`). False when they were applied before (nothing written)."""
        st = self.state.read()
        if post.seq <= st.applied_seq:
            return False
        if close is not None and post.kind == "done":
            st = self.state.update(close)  # the audit runs next: no one is speaking while it does
            close = None
        cfg = self.settings
        ch = effects.post_change(
            post,
            author,
            st,
            config=cfg.config,
            team=cfg.team,
            tail=self.run.thread.tail(TAIL),
            audit=self._audit,
            run_id=self.run_id,
            now=time.time(),
        )
        shut = close or _same
        self._commit(
            ch, lambda s: self._with_next(effects.account(ch.apply(shut(s)), author, turn, figures, post))
        )
        return True

    def silent(self, name: str, why: str, turn: int, figures: Figures, close: Closing = None) -> bool:
        """A turn that ended without a post: figures, streak, pause rule, who speaks next (and
        the turn's `close`) in one update (True: next is planned)."""
        paused = None
        shut = close or _same

        def change(s: RunState) -> RunState:
            nonlocal paused
            s, paused = effects.silent(shut(s), name, turn, figures, self.settings.config.max_silent_turns)
            return self._with_next(s)

        st = self.state.update(change)
        mine = st.participants.get(name)
        n = mine.silent_streak if mine else 0
        self.events.emit(SilentTurnEvent(participant=name, reason=why, streak=n))
        if paused:
            self._state_event("paused", paused)
        return True

    def _audit(self, post: Post, st: RunState) -> Change:
        call = auditing.AuditCall(
            run=self.run,
            config=self.settings.config,
            team=self.settings.team,
            secret_env=self.settings.secret_env,
            room=turnsetup.room(self.run, self.settings.config, self.settings),
            scripted=self.services.scripted,
            set_state=self._set,
            stopping=self._stop_requested,
            model=self.services.model,
        )
        return auditing.audit(post, st, call)

    def _pending_audit(self, st: RunState) -> None:
        """Audit a done post whose audit failed on its provider (the run was paused, then
        resumed): before any turn, as if it had just been posted."""
        seq = st.audit_pending
        [post] = (self.run.thread.read(seq, seq, 1) if seq else None) or [None]
        if post is None or post.kind != "done":
            self.state.update(lambda s: s.changed(audit_pending=None))
            return
        self._commit(self._audit(post, st))

    def _plan_next(self) -> None:
        self.state.update(self._with_next)

    def _with_next(self, s: RunState) -> RunState:
        """`s` with who speaks next (for status and the panel), from the thread as it is now."""
        thread = self.run.thread
        return s.changed(
            next=effects.plan_next(s, self.settings.team.names(), thread.tail(TAIL), thread.last_spoke)
        )

    def _settle(self) -> None:
        """Settle the newest turn of the harness log (`recovery.settle`)."""
        self.resume, applied = recovery.settle(
            self.run, self.settings.team.names(), self.after_post, self.silent
        )
        if applied:
            self._plan_next()
        if self.telemetry is not None and self.resume is None:
            recs, finished = recovery.last_turn_records(self.paths.harness_log)
            if finished and recs:
                self.telemetry.turn_done(
                    TurnStarted.model_validate(recs[0]).turn
                )  # a turn settled here (the cursor dedups)
