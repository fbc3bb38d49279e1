"""How a crash is recovered: everything a restart does, in one place.

Whatever stopped the daemon (`kill -9`, a power cut, a usage limit, exhausted retries, `stop`),
the logs are the record and a restart continues from them:

1. The logs are opened by `Journal`, which validates the newest 256 KiB of each (a torn final
   line is dropped, corruption is refused with its line).
2. A lost state.json is rebuilt from thread, events and harness logs (`state_from_logs`, which
   calls `autodev/store/rebuild.py`; readers such as `status` call it too, without writing).
3. The state a restart starts in (`restarted`): a new session, the question or gate the run left
   open is still open, everything else runs again.
4. The newest turn of the harness log is settled (`settle`): a turn that never finished and
   whose post is not on the thread is rebuilt by `harness/recovery.rebuild` (known answers and
   tool results reused, replay-safe tools run again, unsafe ones answered "interrupted") and
   continues under the same turn id at the next turn boundary; a turn whose post was committed
   is closed. A closed turn whose effects or figures never reached state.json gets them now,
   exactly once: they are written in the one state update that carries `applied_seq` /
   `accounted_turn`.
5. A coding-agent CLI left running by a dead daemon is killed by pid and start time when its
   turn resumes (`agents/runner`, given the turn's `agent_started` records by `last_turn_records`).

The same `settle` runs after a turn the daemon left open itself (a provider pause, a usage limit,
a stop at a step boundary), so that turn resumes exactly as after a crash.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from autodev.daemon.handles import Run
from autodev.harness.recovery import Resume, rebuild
from autodev.records import harness as read_harness
from autodev.records.events import EffectsRecoveredEvent, ToolCrashedEvent, TurnRecoveredEvent
from autodev.records.harness_log import HarnessRecord, TurnFinished, TurnStarted
from autodev.records.post import Post
from autodev.records.state import RunState, StateChange
from autodev.store import rebuild as rebuildmod
from autodev.store.journal import JsonObject, iter_records_reverse
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import now_ts


def state_from_logs(paths: RunPaths, state: StateFile) -> bool:
    """When state.json is lost but the run left a thread, write what the logs say it was.
    True when it was rebuilt (never a silent fresh run)."""
    if not rebuildmod.missing(paths):
        return False
    rebuilt = rebuildmod.rebuild(paths)
    # the whole rebuilt state (not a change of fields): its set fields, in the version of the file
    state.update(lambda s: s.but(**{**rebuilt.set_fields(), "version": s.version}))
    return True


def restarted(
    s: RunState,
    *,
    run_id: str,
    head: str | None,
    pid: int,
    stamp: str,
    warn: list[str],
    branch: str | None = None,
) -> RunState:
    """The state a (re)start begins in (pure). A state written by an older version gets its
    defaults (written out); a stopped or faulted run picks up where it was. `branch`: the run's
    branch (the one credit counts commits on), kept from the first start."""
    was = s.model_fields_set
    changes: StateChange = {}
    if "run_id" not in was:
        changes["run_id"] = run_id
    if "started_at" not in was:
        changes["started_at"] = now_ts()
    if "base_head" not in was:
        changes["base_head"] = head
    if not s.branch:
        changes["branch"] = branch
    # a state without them gets them written, as they default
    changes.update(
        turn=s.turn,
        cursors=s.cursors,
        participants=s.participants,
        talk_turns=s.talk_turns,
        audits=s.audits,
        user_messages=s.user_messages,
        objective=s.objective,
    )
    # A state written before turns were accounted by number: its turns are all counted.
    changes["accounted_turn"] = s.accounted_turn if "accounted_turn" in was else s.turn
    changes.update(
        pid=pid, daemon="running", sessions=s.sessions + 1, team_error=None
    )  # the team just loaded
    if s.config_refused is not None and s.config_refused.stamp == stamp:
        # A restart is the user's doing: the files as they are now apply.
        warn.append("starting with a change to .autodev/ that was refused during a turn")
    if s.state in ("stopped", "faulted"):
        # Pick up where the run was: a question or a gate it left open is still open.
        back = s.paused_from
        if back and back.state in ("awaiting_user", "gated"):
            changes.update(state=back.state, reason=back.reason)
        else:
            changes.update(state="running", reason=None)
        changes["paused_from"] = None
    return s.changed(**changes).without("config_refused")


def last_turn_records(harness_log: Path) -> tuple[list[JsonObject], bool]:
    """The newest turn's harness records, oldest first, and whether it finished (read
    backwards, bounded by the size of that one turn). As lines: the harness rebuilds its turn
    from them (`harness.recovery.rebuild`, an agent CLI's `Seat.resumed`)."""
    recs: list[JsonObject] = []
    newest: HarnessRecord | None = None
    for rec in iter_records_reverse(harness_log):
        recs.append(rec)
        read = read_harness(rec)
        if newest is None:
            newest = read
        if isinstance(read, TurnStarted):
            recs.reverse()
            return recs, isinstance(newest, TurnFinished)
    return [], False


def _resumed(run: Run, recs: list[JsonObject], turn: int, who: str) -> Resume:
    """The open turn rebuilt to continue, its tools that were running when the daemon died
    named (`tool_crashed`)."""
    resume = rebuild(recs)
    for call, began in resume.pending:
        if began is not None:  # it was running when the daemon died: say so
            run.events.emit(
                ToolCrashedEvent(
                    turn=turn,
                    participant=who,
                    name=began.started.name,
                    call_id=call["id"],
                    crashes=began.crashes,
                    replay_safe=began.started.replay_safe,
                )
            )
    run.events.emit(TurnRecoveredEvent(turn=turn, participant=who, step=resume.steps, posted=None))
    run.state.update(lambda s: s.changed(recovered_turn=turn, turn=max(s.turn, turn)))
    return resume


def settle(
    run: Run,
    members: list[str],
    after_post: Callable[[Post, str, int, Resume], object],
    silent: Callable[[str, str, int, Resume], object],
) -> tuple[Resume | None, bool]:
    """Settle the newest turn of `run`'s harness log. Returns the turn to
    resume (or None) and whether effects or figures were applied now (then who speaks next
    changed). `after_post` / `silent` apply a closed turn's outcome exactly once; `members` are
    the team's names (a silent turn of someone who left is not counted). A committed post is
    never made twice: its id is provisioned from the turn number."""
    recs, finished = last_turn_records(run.paths.harness_log)
    if not recs:
        return None, False
    start = TurnStarted.model_validate(recs[0])
    turn, who = start.turn, start.participant
    post = run.thread.seen(f"{run.run_id}:t{turn}:post")
    if not finished and post is None:
        return _resumed(run, recs, turn, who), False
    if not finished and post is not None:
        run.record(
            TurnFinished(
                type="turn_finished",
                run=run.run_id,
                turn=turn,
                ts=time.time(),
                seq=post.seq,
                reason="recovered: its post was committed",
            )
        )
        run.events.emit(TurnRecoveredEvent(turn=turn, participant=who, posted=post.seq))
    st = run.state.read()
    if st.turn < turn:
        # The turn's scheduling write is not durable on its own (the group commit): a power cut
        # lost it, and the next turn must not take this one's number (its post id) again.
        st = run.state.update(lambda s: s.changed(turn=max(s.turn, turn)))
    if post and post.seq > st.applied_seq:
        run.events.emit(EffectsRecoveredEvent(seq=post.seq))
        after_post(post, who, turn, rebuild(recs))
    elif (
        not post
        and (st.accounted_turn if "accounted_turn" in st.model_fields_set else turn) < turn
        and who in members
    ):
        run.events.emit(EffectsRecoveredEvent(turn=turn))
        last = TurnFinished.model_validate(recs[-1])
        silent(who, last.reason or "", turn, rebuild(recs))
    else:
        return None, False
    return None, True
