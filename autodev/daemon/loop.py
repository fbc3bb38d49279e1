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

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, assert_never

from autodev.config import Participant
from autodev.daemon import gitwatch, inputs, notices, turnsetup
from autodev.daemon.boundary import Boundary
from autodev.errors import AutodevError, ProviderError, RepositoryRefused
from autodev.harness import credit
from autodev.harness.context import TurnResult
from autodev.harness.recovery import Resume
from autodev.records.events import (
    ErrorEvent,
    ScheduledEvent,
    TurnStoppedEvent,
    WarningEvent,
)
from autodev.records.harness_log import GenerationFailed, TurnFinished
from autodev.records.messages import (
    AnswerMessage,
    AnyInbox,
    ApproveMessage,
    DenyMessage,
    NoticeMessage,
    SendMessage,
)
from autodev.records.state import Control, RunState, Wait
from autodev.rules import reasons, scheduler
from autodev.rules.reasons import reason
from autodev.store import userfiles
from autodev.store.thread import TAIL
from autodev.timeline import rewind

if TYPE_CHECKING:
    pass


IDLE = ("awaiting_user", "gated", "paused")
TELEMETRY_CLOSE_S = 3.0  # what a closing daemon gives its exporter to send what is queued
EXIT_COMPLETE, EXIT_FAILED, EXIT_NEEDS_USER = 0, 1, 3


@dataclass
class Speaker:
    """Who speaks this turn: the scheduler's pick, or the participant of the turn a crash (or
    a pause) left open (`resume`)."""

    participant: Participant
    turn: int
    why: str | None
    resume: Resume | None


class Loop(Boundary):
    """The open run's loop: a turn boundary after another, until the run needs the user, is
    complete, stopped or faulted."""

    def recover(self) -> None:
        """What a crash left half done, finished before the first turn: a quarantine left
        unnamed, a rewind cut short, the newest turn of the harness log (`_settle`)."""
        gitwatch.unnamed(self.run)
        rewind.finish_pending(self._timeline())
        self._settle()

    # -- the loop --------------------------------------------------------------------------------

    def loop(self) -> int:
        while True:
            self.folder.check()
            if self.feed is not None:
                self.feed(self.run)  # replay: before the reload, which takes the team it installed
            self._reload_team()
            # In the order the user asked: messages older than the first control request first.
            first = inputs.first_control_at(self.state.read())
            if first is not None:
                inputs.apply_inbox(self.run, self._message, before=first)
            if inputs.apply_controls(self.run, self._set, self._rewind):
                return EXIT_COMPLETE
            inputs.apply_inbox(self.run, self._message)
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
                inputs.idle(self.run, None)
                continue
            if state == "waiting":
                due = (st.wait.due if st.wait else None) or 0
                if time.time() < due:
                    inputs.idle(self.run, due - time.time())
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
        self.state.update(lambda s: s.changed(rewind_result=result))

    # -- a turn ----------------------------------------------------------------------------------

    def _one_turn(self, st: RunState) -> None:
        # The turn's baseline `git status` runs while the speaker is picked and the prompt built.
        credit.prefetch(self.paths.repo)
        try:
            self._turn(st)
        finally:
            credit.discard()  # not read: a resumed turn, or no turn (a budget reached)

    def _turn(self, st: RunState) -> None:
        who = self._speaker(st)
        if who is None:
            return
        p, turn_no = who.participant, who.turn
        before = userfiles.stamp(self.paths.config_dir)
        taken = self._take(who, st)
        if taken is None:
            return
        result, close = taken
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

    def _speaker(self, st: RunState) -> Speaker | None:
        """Who speaks now (its turn scheduled: state and event), or None when a budget stops it."""
        team, run = self.settings.team, self.run
        resume, self.resume = self.resume, None
        if resume and resume.participant not in team.names():
            run.record(
                TurnFinished(
                    type="turn_finished",
                    run=self.run_id,
                    turn=resume.turn,
                    ts=time.time(),
                    seq=None,
                    reason="its participant left the team",
                )
            )
            resume = None
        if resume:
            p = team.get(resume.participant)
            if self._budget_reached(p.name):
                self.resume = resume  # the open turn continues once the cap is raised
                return None
            self.state.update(lambda s: s.changed(speaking=p.name, next=None), durable=False)
            return Speaker(p, resume.turn, None, resume)
        decision = scheduler.next_speaker(team.names(), run.thread.tail(TAIL), run.thread.last_spoke)
        p = team.get(decision.speaker)
        if self._budget_reached(p.name):
            return None
        for w in decision.warnings:
            self.events.emit(WarningEvent(message=w))
        turn_no = st.turn + 1
        warnings = list(decision.warnings)
        # Not made durable on its own: a power cut that loses it leaves the turn's number in
        # the harness log's turn_started, which recovery takes back (`recovery.settle`).
        self.state.update(
            lambda s: s.changed(turn=turn_no, speaking=p.name, next=None, warnings=warnings), durable=False
        )
        self.events.emit(
            ScheduledEvent(participant=p.name, rule=decision.rule, why=decision.why, turn=turn_no)
        )
        return Speaker(p, turn_no, decision.why, None)

    def _take(self, who: Speaker, st: RunState) -> tuple[TurnResult, Callable[[RunState], RunState]] | None:
        """Run the turn; None when it ended open (a provider error, a stop, every model limited)."""
        from autodev.harness.turn import AllModelsLimited, TurnStopped

        p, turn_no = who.participant, who.turn
        try:
            return turnsetup.take(
                self.run,
                self.settings,
                self.services,
                p,
                turn_no,
                st,
                why=who.why,
                resume=who.resume,
                stopping=self._stop_requested,
                hooks=self.hooks,
            )
        except ProviderError as e:
            # The turn stays open: `resume` continues it from the same step, with fresh retries.
            self.run.record(
                GenerationFailed(
                    type="generation_failed",
                    run=self.run_id,
                    turn=turn_no,
                    ts=time.time(),
                    error=str(e)[:500],
                )
            )
            self.events.emit(ErrorEvent(participant=p.name, message=str(e), detail=e.detail))
            self._settle()
            self._set("paused", reasons.provider(e), speaking=None)
        except TurnStopped:
            # Left open at a step boundary: the stop applies now; `start` continues the turn.
            self.events.emit(TurnStoppedEvent(participant=p.name, turn=turn_no))
            self._settle()
        except AllModelsLimited as e:
            self._settle()
            why_wait = reason("usage_limit", text=e.detail)
            self._set(
                "waiting", why_wait, wait=Wait(author=p.name, due=e.reset_at, usage_limit=True), speaking=None
            )
        return None

    def _message(self, msg: AnyInbox) -> None:
        """One inbox message, by its kind."""
        match msg:
            case SendMessage():
                inputs.send(self.run, msg)
            case ApproveMessage() | DenyMessage():
                if ch := inputs.gate_answer(self.run, msg):
                    self._commit(ch)
            case AnswerMessage():
                notices.answer(self.run, msg)
            case NoticeMessage():
                notices.hold(self.run, msg)
            case _:
                assert_never(msg)
