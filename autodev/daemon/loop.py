"""The run loop: open, turn boundary, idle.

`Loop` is the open run. At every turn boundary it re-reads .autodev/ (an edit made during a turn
is refused), applies control requests and the inbox (`inputs`), and then either waits (idle on a
watch of the inbox and state.json, or a wait's timer) or runs one turn: the scheduler picks the
speaker (or the turn a crash left open resumes), `turnsetup` gives it its context, the harness
(or the participant's agent CLI) runs it, and its post's effects (`effects`, with the audit of
`auditing`) or its silence are applied exactly once. Everything it knows lives in the logs and
state.json, so a restart continues (`recovery`).
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack

from autodev import telemetry
from autodev.daemon import auditing, effects, gitwatch, inputs, notices, notify, recovery, turnsetup
from autodev.daemon.effects import Change, Figures, Note
from autodev.daemon.handles import Run, Settings, accepted_prompts
from autodev.daemon.services import Services, hooks_for, save_team
from autodev.errors import AutodevError, ProviderError, RepositoryRefused
from autodev.guard.display import digest
from autodev.guard.redact import Redactor
from autodev.harness import credit
from autodev.host import gitlocks
from autodev.records import check_harness
from autodev.records.base import State
from autodev.records.events import (
    BudgetReachedEvent,
    DaemonStartedEvent,
    ErrorEvent,
    ScheduledEvent,
    SilentTurnEvent,
    StateEvent,
    TurnStoppedEvent,
    WarningEvent,
)
from autodev.records.post import Post
from autodev.records.state import Control, RunState
from autodev.rules import budget, reasons, scheduler
from autodev.rules.reasons import reason
from autodev.store import faults, runs, userfiles
from autodev.store.events import Events
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths, git_head
from autodev.store.state import StateFile
from autodev.store.thread import TAIL, Thread
from autodev.timeline import rewind

IDLE = ("awaiting_user", "gated", "paused")
TELEMETRY_CLOSE_S = 3.0  # what a closing daemon gives its exporter to send what is queued
IDLE_RECHECK_S = 1.0  # longest a change can go unseen if it lands before the watch is armed
EXIT_COMPLETE, EXIT_FAILED, EXIT_NEEDS_USER = 0, 1, 3
Closing = Callable[[RunState], RunState] | None  # a turn's closing change (turnsetup.take)


def _same(s: RunState) -> RunState:
    return s


class Loop:
    """The open run (the daemon holds the lock). Everything it opens is closed by `closing`."""

    def __init__(
        self,
        paths: RunPaths,
        settings: Settings,
        redact: Redactor,
        state: StateFile,
        closing: ExitStack,
        *,
        until_idle: bool = False,
        out=None,
        model=None,
        feed=None,
    ):
        self.paths, self.settings, self.redact, self.state = paths, settings, redact, state
        self.until_idle = until_idle
        self.folder = faults.FolderWatch(paths.run_dir, paths.lock)  # deleted under us: faulted
        faults.keep_reserve(paths.run_dir)
        userfiles.snapshot_prompts(paths.prompt_overrides, accepted_prompts(paths))
        rebuilt = recovery.state_from_logs(paths, state)
        self.run_id: str = state.read().run_id or secrets.token_hex(4)
        thread = Thread(paths.thread, redact=redact)
        closing.callback(thread.close)
        events = Events(paths.events, self.run_id, redact, group=True)
        closing.callback(events.close)
        hlog = Journal(paths.harness_log, redact=redact, schema=check_harness)
        closing.callback(hlog.close)
        # Group commit (issue 33): events and the harness log's records no effect waits for are
        # written at once and fsynced together before each state.json write (and on idle, on close).
        state.sync_first(events.sync, hlog.sync)
        self.run = Run(paths, self.run_id, state, thread, events, hlog, redact, out)
        self.events = events
        if rebuilt:
            events.emit(
                WarningEvent(message="state.json was missing: the run's state was rebuilt from its logs")
            )
        self.services = Services(paths, settings, events, closing)
        self.services.model = model
        self.feed = feed  # replay: the recorded user input, handed in at each turn boundary
        stale = gitlocks.clear_stale(paths.repo)  # left by a git process the crash killed mid-write
        head = git_head(paths.repo)
        branch = credit.current_branch(paths.repo)
        warn: list[str] = []
        st = state.update(
            lambda s: recovery.restarted(
                s,
                run_id=self.run_id,
                head=head,
                pid=os.getpid(),
                stamp=settings.stamp,
                warn=warn,
                branch=branch,
            )
        )
        self.session: int = st.sessions
        self.hooks, self.notifier = hooks_for(paths, settings, self.run_id, events.emit)
        closing.callback(lambda: self.notifier.drain())  # `complete` is still delivered as the daemon exits
        team = save_team(paths, events)
        events.emit(DaemonStartedEvent(pid=os.getpid(), sandbox=settings.sandbox.describe(), team=team))
        for w in [settings.sandbox.warning, stale and gitlocks.report(stale), *dict.fromkeys(warn)]:
            if w:
                events.emit(WarningEvent(message=w))
        self.index(runs.start_record)
        self.telemetry = telemetry.start(
            paths,
            settings.config.telemetry,
            self.run_id,
            lambda m: events.emit(WarningEvent(message=m)),
            redact.text,
        )
        if self.telemetry is not None:
            closing.callback(
                lambda: self.telemetry and self.telemetry.close(self.state.read(), TELEMETRY_CLOSE_S)
            )
            self.telemetry.catch_up(st.turn + 1)
        self.resume = None
        gitwatch.unnamed(self.run)  # a quarantine a crash left unnamed
        rewind.finish_pending(self._timeline())  # a rewind a crash cut short
        self._settle()

    def index(self, make) -> None:
        """One line in $AUTODEV_HOME/index.jsonl; the run goes on without it if it fails."""
        try:
            runs.append(
                make(self.run_id, self.session, self.paths.repo, self.paths.run_dir, self.state.read())
            )
        except (OSError, AutodevError) as e:
            msg = f"could not append to the runs index: {e}"
            print(f"autodev daemon: {msg}", file=sys.stderr)
            try:
                self.events.emit(WarningEvent(message=msg))
            except (OSError, AutodevError):
                pass

    # -- state changes ---------------------------------------------------------------------------

    def _state_event(self, state: str, why: dict | None) -> None:
        """Every state change: its event, the on_state hooks, and a notification when the run
        now needs the human (or is done)."""
        self.events.emit(
            StateEvent.model_validate({"state": state, "reason": why})
        )  # state: a `State`, checked
        data = notify.payload(state, why, str(self.paths.repo), self.run_id)
        self.hooks.on_state(data)
        if state in notify.NOTIFY_STATES:
            self.notifier.fire(data)

    def _set(self, state: State, why: dict | None = None, **extra: object) -> None:
        cur = self.state.read()
        if cur.state == state and (cur.reason.dump() if cur.reason else None) == why and not extra:
            return
        self.state.update(lambda s: s.but(state=state, reason=why, **extra))
        self._state_event(state, why)

    def _emit(self, ch: Change) -> None:
        """A change's notes and events, in order (before its state update: notes are idempotent)."""
        for item in ch.out:
            if isinstance(item, Note):
                self.run.note(item.frm, item.text, item.handoff, **item.extra)
            else:
                self.events.emit(item)

    def _commit(self, ch: Change, change: Callable[[RunState], RunState] | None = None) -> None:
        self._emit(ch)
        self.state.update(change or ch.apply)
        if "state" in ch.state:
            why = ch.state.get("reason")
            self._state_event(str(ch.state["state"]), why if isinstance(why, dict) else None)

    # -- the loop --------------------------------------------------------------------------------

    def loop(self) -> int:
        while True:
            self.folder.check()
            if self.feed is not None:
                self.feed(self.run)  # replay: before the reload, which takes the team it installed
            self._reload_team()
            handlers = {
                "send": lambda m: inputs.send(self.run, m),
                "approve": self._gate_answer,
                "deny": self._gate_answer,
                "answer": lambda m: notices.answer(self.run, m),
                "notice": lambda m: notices.hold(self.run, m),
            }
            # In the order the user asked: messages older than the first control request first.
            first = inputs.first_control_at(self.state.read())
            if first is not None:
                inputs.apply_inbox(self.run, handlers, before=first)
            if inputs.apply_controls(self.run, self._set, self._rewind):
                return EXIT_COMPLETE
            inputs.apply_inbox(self.run, handlers)
            st = self.state.read()
            state = st.state
            if state == "running" and self.run.thread.last_seq == 0:
                self._set("awaiting_user", reason("no_objective"))
                continue
            if state == "complete":
                # The daemon's work is done; a later `send` waits in the inbox for `start`.
                return EXIT_COMPLETE
            if state in IDLE:
                if self.until_idle:
                    return EXIT_NEEDS_USER
                self._idle(None)
                continue
            if state == "waiting":
                due = (st.wait.due if st.wait else None) or 0
                if time.time() < due:
                    self._idle(due - time.time())
                    continue
                self._set("running", None, wait=None)
                continue
            if state == "faulted":
                return EXIT_FAILED
            try:
                if st.audit_pending:
                    self._pending_audit(st)
                    continue
                self._one_turn(st)
            except RepositoryRefused as e:
                self._refused(e)

    def _refused(self, e: RepositoryRefused) -> None:
        """The repository would make autodev run a program on the host (its .git is not the one
        the run started with, a CLI's settings were planted): nothing more runs until the user
        has looked. What git would run or follow is moved out first: the user's own git is
        next to look at the repository."""
        self.events.emit(ErrorEvent(message=str(e)))
        fix = e.fix
        st = self.state.read()
        try:
            if moved := gitwatch.quarantine(self.run, st.speaking, st.turn):
                fix = (
                    f"autodev moved {', '.join(moved)} out of the repository (the thread says where); "
                    "look at the repository, then `autodev resume`"
                )
        except RepositoryRefused as err:
            self.events.emit(ErrorEvent(message=str(err)))
        self._settle()
        self._set("paused", reason("refused", error=e.message, fix=fix), speaking=None)

    def _idle(self, timeout: float | None) -> None:
        """Sleep until the inbox or state.json changes (or `timeout` passes): no busy loop.

        The watch is re-armed every IDLE_RECHECK_S and the queue re-checked, because a change
        made after the check but before the watcher is registered would otherwise be missed
        (a lost wake-up: a `resume` that sits unread for an hour)."""
        from watchfiles import watch

        self.events.sync()  # the group commit's end: nothing written stays unsynced while idle
        self.run.hlog.sync()

        def relevant(_change, path: str) -> bool:
            return path.endswith(".json") and ("/inbox/" in path or path.endswith("/state.json"))

        end = time.monotonic() + (timeout if timeout is not None else 3600)
        while not inputs.pending(self.state.read(), self.paths.inbox):
            left = end - time.monotonic()
            if left <= 0:
                return
            changed = next(
                watch(
                    self.paths.run_dir,
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

    def _timeline(self) -> rewind.Handles:
        run = self.run
        return rewind.Handles(run.paths, run.thread, run.state, run.hlog, run.events, daemon=True)

    def _rewind(self, request: Control) -> None:
        """`autodev rewind` asked of the running daemon (between turns): done here, its outcome
        in state (`rewind_result`) for the waiting CLI."""
        try:
            done = rewind.perform(self._timeline(), request.seq, undo=request.undo)
            result = {"n": request.n, "ok": True, "note_seq": done.note_seq, "to_seq": done.to_seq}
        except AutodevError as e:
            result = {"n": request.n, "ok": False, "error": e.message, "fix": e.fix}
            self.events.emit(WarningEvent(message=f"rewind refused: {e.message}"))
        else:
            self.resume = None  # the open turn (if any) was closed by the rewind
            why = self.state.read().reason
            self._state_event("paused", why.dump() if why else None)
            self._plan_next()
        self.state.update(lambda s: s.but(rewind_result=result))

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

    # -- a turn ----------------------------------------------------------------------------------

    def _one_turn(self, st: RunState) -> None:
        from autodev.harness.turn import AllModelsLimited, TurnStopped

        team, run = self.settings.team, self.run
        resume, self.resume = self.resume, None
        if resume and resume.participant not in team.names():
            run.hlog.append(
                {
                    "type": "turn_finished",
                    "run": self.run_id,
                    "turn": resume.turn,
                    "ts": time.time(),
                    "seq": None,
                    "reason": "its participant left the team",
                }
            )
            resume = None
        if resume:
            p, turn_no, why = team.get(resume.participant), resume.turn, None
            if self._budget_reached(p.name):
                self.resume = resume  # the open turn continues once the cap is raised
                return
            self.state.update(lambda s: s.but(speaking=p.name, next=None), durable=False)
        else:
            decision = scheduler.next_speaker(team.names(), run.thread.tail(TAIL), run.thread.last_spoke)
            p, why = team.get(decision.speaker), decision.why
            if self._budget_reached(p.name):
                return
            for w in decision.warnings:
                self.events.emit(WarningEvent(message=w))
            turn_no = st.turn + 1
            warnings = list(decision.warnings)
            # Not made durable on its own: a power cut that loses it leaves the turn's number in
            # the harness log's turn_started, which recovery takes back (`recovery.settle`).
            self.state.update(
                lambda s: s.but(turn=turn_no, speaking=p.name, next=None, warnings=warnings), durable=False
            )
            self.events.emit(ScheduledEvent(participant=p.name, rule=decision.rule, why=why, turn=turn_no))
        before = userfiles.stamp(self.paths.config_dir)
        try:
            result, close = turnsetup.take(
                self.run,
                self.settings,
                self.services,
                p,
                turn_no,
                st,
                why=why,
                resume=resume,
                stopping=self._stop_requested,
                hooks=self.hooks,
            )
        except ProviderError as e:
            # The turn stays open: `resume` continues it from the same step, with fresh retries.
            run.hlog.append(
                {
                    "type": "generation_failed",
                    "run": self.run_id,
                    "turn": turn_no,
                    "ts": time.time(),
                    "error": str(e)[:500],
                }
            )
            self.events.emit(
                ErrorEvent(participant=p.name, message=str(e), detail=getattr(e, "detail", None))
            )
            self._settle()
            self._set("paused", reasons.provider(e), speaking=None)
            return
        except TurnStopped:
            # Left open at a step boundary: the stop applies now; `start` continues the turn.
            self.events.emit(TurnStoppedEvent(participant=p.name, turn=turn_no))
            self._settle()
            return
        except AllModelsLimited as e:
            self._settle()
            why_wait = reason("usage_limit", text=e.detail)
            self._set(
                "waiting",
                why_wait,
                wait={"author": p.name, "due": e.reset_at, "usage_limit": True},
                speaking=None,
            )
            return
        inputs.refuse_turn_edits(self.run, p.name, turn_no, before)
        # The turn's close (its cursor, no one speaking) and who speaks next are written in the
        # same state update as the turn's outcome (the group commit at the turn boundary).
        planned = (
            self.after_post(result.post, p.name, turn_no, result, close)
            if result.post
            else self.silent(p.name, result.reason, turn_no, result, close)
        )
        if self.telemetry is not None:
            self.telemetry.turn_done(turn_no)
        if not planned:
            self.state.update(lambda s: self._with_next(close(s)))

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
        return auditing.audit(
            post,
            st,
            run=self.run,
            config=self.settings.config,
            team=self.settings.team,
            secret_env=self.settings.secret_env,
            room=turnsetup.room(self.run, self.settings.config, self.settings),
            scripted=self.services.scripted,
            model=self.services.model,
            set_state=self._set,
            stopping=self._stop_requested,
        )

    def _pending_audit(self, st: RunState) -> None:
        """Audit a done post whose audit failed on its provider (the run was paused, then
        resumed): before any turn, as if it had just been posted."""
        seq = st.audit_pending
        [post] = (self.run.thread.read(seq, seq, 1) if seq else None) or [None]
        if post is None or post.kind != "done":
            self.state.update(lambda s: s.but(audit_pending=None))
            return
        self._commit(self._audit(post, st))

    def _gate_answer(self, msg: dict) -> None:
        """`autodev approve` / `deny` of the open gate."""
        st = self.state.read()
        gate = st.gate
        if not gate or (msg.get("gate_id") and msg["gate_id"] != gate.id):
            self.events.emit(
                WarningEvent(message=f"no open gate {msg.get('gate_id') or ''} to {msg['kind']}")
            )
            return
        approved = msg["kind"] == "approve"
        if approved and msg.get("digest") and msg["digest"] != digest(gate.text):
            self.events.emit(
                WarningEvent(
                    message=f"approval of gate {gate.id} refused: it was given for a text with sha256 "
                    f"{msg['digest']}, and the gate's text has {digest(gate.text)}; "
                    f"read the gate again with `autodev status`"
                )
            )
            return
        self._commit(
            effects.gate_decision(gate, approved, "the user", msg.get("reason") or "", st, self.run_id)
        )

    def _plan_next(self) -> None:
        self.state.update(self._with_next)

    def _with_next(self, s: RunState) -> RunState:
        """`s` with who speaks next (for status and the panel), from the thread as it is now."""
        thread = self.run.thread
        return s.but(
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
                self.telemetry.turn_done(int(recs[0]["turn"]))  # a turn settled here (the cursor dedups)
