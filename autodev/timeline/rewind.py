"""`autodev rewind SEQ` and `--undo`: the run continues as if post SEQ were the last.

Nothing is deleted. One rewind, each step idempotent and after an intent record, so a `kill -9`
anywhere leaves the old position (no intent yet) or a rewind that the next owner of the run
(`autodev start`, `autodev rewind`) finishes (`finish_pending`):

1. intent: `rewind_started` in `rewinds.jsonl` (the target commit, the head before, the refs);
2. refs: uncommitted work as a commit on `refs/autodev/rewound/<n>-worktree`, the head before
   on `refs/autodev/rewound/<n>` (created once, never moved);
3. reset: the branch and working tree at the commit of SEQ (`timeline.git.reset_to`);
4. turn: a turn the harness log left open is closed (`turn_finished`, reason `rewound`), so a
   restart never resumes it;
5. note: the `system` rewind note on the thread (id `rewind-<n>`): from here the later posts are
   superseded (`rules.live`);
6. state: the run's state as it was at SEQ (`timeline.prefix`), spend kept, marked
   `rewind_applied = n`;
7. done: `rewind_finished`.

An undo is a rewind to the post just before the newest rewind note, whose commit is that
rewind's saved head, with its saved uncommitted work put back in the working tree.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from autodev.errors import UsageError
from autodev.host import gitlocks
from autodev.records import RewindFinished, RewindRecord, RewindStarted
from autodev.records import harness as read_harness
from autodev.records import rewind as read_rewind
from autodev.records.events import RewindEvent, WarningEvent
from autodev.records.harness_log import TurnFinished, TurnStarted
from autodev.records.harness_log import line as harness_line
from autodev.records.post import Post
from autodev.records.state import RewindDenied, RunState
from autodev.rules.live import rewind_of
from autodev.store.events import Events
from autodev.store.journal import Journal, JsonObject, iter_records, iter_records_reverse
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import Thread, head_of, now_ts, seq_of
from autodev.timeline import git, prefix

STEPS = ("intent", "refs", "reset", "turn", "note", "state", "done")
KILL_AT = "AUTODEV_REWIND_KILL_AT"  # tests: kill -9 this process right after the named step
REF = "refs/autodev/rewound/{n}"


class RewindRefused(UsageError):
    """A rewind that cannot be done as asked (exit 2)."""


@dataclass
class Handles:
    """The run's files a rewind writes: opened by the daemon, or by the CLI under the daemon
    lock when no daemon runs."""

    paths: RunPaths
    thread: Thread
    state: StateFile
    hlog: Journal
    events: Events | None = None
    daemon: bool = False  # the running daemon does it (the run is then left paused)


@dataclass(frozen=True)
class Rewound:
    """A rewind done: its number, the post the run continues from, the rewind note and the ref
    that keeps the head before."""

    n: int
    to_seq: int
    note_seq: int
    ref: str


class Answer(TypedDict):
    """What `request` reports (done here or by the daemon)."""

    ok: bool
    note_seq: int
    to_seq: int


def log_path(paths: RunPaths) -> Path:
    return paths.run_dir / "rewinds.jsonl"


def _checkpoint(step: str) -> None:
    if os.environ.get(KILL_AT) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def records(paths: RunPaths) -> list[JsonObject]:
    return list(iter_records(log_path(paths))) if log_path(paths).exists() else []


def _log(paths: RunPaths) -> list[RewindRecord]:
    return [read_rewind(r) for r in records(paths)]


def pending(paths: RunPaths) -> RewindStarted | None:
    """The rewind whose intent is logged but which never finished, if any."""
    logged = _log(paths)
    done = {r.n for r in logged if isinstance(r, RewindFinished)}
    started = [r for r in logged if isinstance(r, RewindStarted) and r.n not in done]
    return started[-1] if started else None


def commit_at(h: Handles, seq: int) -> str:
    """The repository's HEAD when post `seq` was the newest live post: the `head` the newest
    live post at or before it recorded, else the run's base commit."""
    live = h.thread.live
    for rec in iter_records_reverse(h.paths.thread):
        if seq_of(rec) > seq or not live.is_live(seq_of(rec)):
            continue
        if head := head_of(rec):
            return head
    base = h.state.read().base_head
    if not base:
        for r in iter_records(h.paths.harness_log):
            if isinstance(rec := read_harness(r), TurnStarted) and rec.head:
                base = rec.head
                break
    if not base:
        raise RewindRefused(
            f"no commit is known for post {seq}: the run recorded no HEAD up to it",
            "rewind to a later post, or reset the repository by hand",
        )
    return base


def plan(h: Handles, seq: int | None, *, undo: bool) -> RewindStarted:
    """The intent of the next rewind (checked, nothing written)."""
    thread = h.thread
    started = [r for r in _log(h.paths) if isinstance(r, RewindStarted)]
    n = 1 + len(started)
    head_before = git.head(h.paths.repo)
    branch = git.git(h.paths.repo, "symbolic-ref", "-q", "HEAD", check=False) or None
    ts = now_ts()

    def intent(to_seq: int, target: str, restore: str | None, undo_of: int | None) -> RewindStarted:
        return RewindStarted(
            type="rewind_started",
            id=f"rewind-{n}",
            n=n,
            last_seq=thread.last_seq,
            head_before=head_before,
            branch=branch,
            ts=ts,
            to_seq=to_seq,
            target=target,
            restore=restore,
            undo_of=undo_of,
        )

    if undo:
        notes = [rw for rw in thread.rewinds if thread.live.is_live(rw[0])]
        if not notes:
            raise RewindRefused("there is no rewind to undo", "`autodev thread` shows the run's posts")
        note_seq = notes[-1][0]
        [note] = thread.read(note_seq, note_seq, 1)
        assert note.rewind is not None  # thread.rewinds are the rewind notes
        undone = note.rewind.n
        target = next(r for r in started if r.n == undone).head_before
        if target is None:
            raise RewindRefused(
                f"rewind {undone} was made while the branch had no commit: there is no head to go back to",
                "check out a commit by hand",
            )
        restore = git.ref(h.paths.repo, REF.format(n=undone) + "-worktree")
        return intent(note_seq - 1, target, restore, undone)
    assert seq is not None
    if not 1 <= seq <= thread.last_seq:
        raise RewindRefused(
            f"there is no post {seq} (the thread has posts 1 to {thread.last_seq})",
            "pick a seq `autodev thread` shows",
        )
    if not thread.live.is_live(seq):
        raise RewindRefused(
            f"post {seq} was superseded by an earlier rewind",
            "rewind to a live post, or `autodev rewind --undo` first",
        )
    live_last = thread.live.newest_live_at_or_before(thread.last_seq)
    if seq == live_last:
        raise RewindRefused(f"post {seq} is already the newest post", "pick an earlier seq")
    return intent(seq, commit_at(h, seq), None, None)


def perform(h: Handles, seq: int | None, *, undo: bool = False) -> Rewound:
    """Rewind (or undo the newest rewind); returns what was done."""
    stale = gitlocks.clear_stale(h.paths.repo)  # a git write killed mid-way would refuse every step
    if stale and h.events is not None:
        h.events.emit(WarningEvent(message=gitlocks.report(stale)))
    finish_pending(h)
    intent = plan(h, seq, undo=undo)
    _checkpoint("planned")
    with Journal(log_path(h.paths)) as log:
        log.append(intent.dump())
    _checkpoint("intent")
    return _carry_out(h, intent)


def _secret_files(paths: RunPaths) -> list[str]:
    """The run's secretFiles (a broken config.toml stops the rewind with its ConfigError: the
    snapshot must not be taken with a guessed list)."""
    from autodev.config import load_config

    return load_config(paths.config_file).secret_files


def finish_pending(h: Handles) -> Rewound | None:
    """Finish a rewind a crash cut short (every step again; each is idempotent)."""
    intent = pending(h.paths)
    return _carry_out(h, intent) if intent else None


def _carry_out(h: Handles, intent: RewindStarted) -> Rewound:
    repo, n = h.paths.repo, intent.n
    ref = REF.format(n=n)
    if git.ref(repo, ref) is None:  # before the reset: the tree is still the old one
        before = intent.head_before
        snap = git.snapshot(repo, before, _secret_files(h.paths))
        if snap:
            git.set_ref_once(repo, ref + "-worktree", snap)
        if before:
            git.set_ref_once(repo, ref, before)
    _checkpoint("refs")
    git.reset_to(repo, intent.target, _secret_files(h.paths))
    if intent.restore:
        git.checkout(repo, intent.restore)
        git.git(repo, "reset", "-q")
    _checkpoint("reset")
    _close_open_turn(h, n)
    _checkpoint("turn")
    note = _note(h, intent)
    _checkpoint("note")
    to_seq = intent.to_seq

    def change(s: RunState) -> RunState:
        if s.rewind_applied >= n:
            return s
        return prefix.rewound_state(s, h.paths, h.thread, to_seq, note.seq, n, daemon=h.daemon)

    h.state.update(change)
    _checkpoint("state")
    done = RewindFinished(type="rewind_finished", id=f"rewind-{n}:done", n=n, note_seq=note.seq, ts=now_ts())
    with Journal(log_path(h.paths)) as log:
        log.append(done.dump())
    if h.events is not None:
        h.events.emit(RewindEvent(n=n, to_seq=to_seq, seq=note.seq, undo_of=intent.undo_of))
    _checkpoint("done")
    return Rewound(n=n, to_seq=to_seq, note_seq=note.seq, ref=ref)


def _close_open_turn(h: Handles, n: int) -> None:
    for line in iter_records_reverse(h.paths.harness_log):
        match read_harness(line):
            case TurnFinished():
                return
            case TurnStarted() as started:
                _finish(h, started)
                return
            case _:
                pass  # a record inside the turn: its start is further back


def _finish(h: Handles, started: TurnStarted) -> None:
    """The open turn `started` ended by the rewind, as a `turn_finished` record."""
    h.hlog.append(harness_line(TurnFinished(run=started.run, turn=started.turn, seq=None, reason="rewound")))
    h.state.update(lambda s, t=started.turn: s.but(accounted_turn=max(s.accounted_turn, t)))


def _note(h: Handles, intent: RewindStarted) -> Post:
    n, to, last = intent.n, intent.to_seq, intent.last_seq
    ref = REF.format(n=n)
    if intent.undo_of:
        text = f"rewind {intent.undo_of} undone: the run continues from post {to}"
    else:
        text = f"rewound to post {to}: posts {to + 1} to {last} are superseded"
    text += f" (the work they left is kept on {ref})"
    rewind: JsonObject = {"n": n, "to_seq": to, "from_seq": last, "head": intent.target, "ref": ref}
    if intent.undo_of:
        rewind["undo_of"] = intent.undo_of
    post = h.thread.append(Post.draft("system", "say", text, id=f"rewind-{n}", rewind=rewind))
    assert rewind_of(post.dump())
    if h.events is not None:
        h.events.posted(post)
    return post


class TurnRunning(UsageError):
    """A rewind asked while a turn may be running (exit 2)."""


def request(paths: RunPaths, seq: int | None, *, undo: bool = False, wait_s: float = 60.0) -> Answer:
    """`autodev rewind` (and the panel's key): done by the running daemon between turns, or here
    under the daemon lock when no daemon runs. Refused while a turn may be running."""
    from autodev.store.lock import DaemonLock
    from autodev.store.rebuild import read_state

    if DaemonLock.holder(paths.lock):
        st = read_state(paths)
        if st.state in ("running", "auditing") or st.speaking:
            raise TurnRunning(
                f"the run is {st.state}: a turn may be running, and a rewind never cuts one",
                "`autodev pause`, wait for status to say paused, then rewind",
            )
        return _ask_daemon(paths, seq, undo, wait_s)
    lock = DaemonLock(paths.lock)
    lock.acquire()
    try:
        return _here(paths, seq, undo)
    finally:
        lock.release()


def _ask_daemon(paths: RunPaths, seq: int | None, undo: bool, wait_s: float) -> Answer:
    import time

    from autodev.store.queued import now_ns

    state = StateFile(paths.state)
    n = state.request("rewind", seq=seq, undo=undo, at=now_ns()).control_seq
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        result = state.read().rewind_result
        if result is not None and result.n == n:
            if isinstance(result, RewindDenied):
                raise RewindRefused(result.error or "the daemon refused the rewind", result.fix)
            return {"ok": True, "note_seq": result.note_seq, "to_seq": result.to_seq}
        done = _if_daemon_left(paths, state, n, seq, undo)
        if done is not None:
            return done
        time.sleep(0.05)
    raise RewindRefused(
        f"the daemon did not apply the rewind within {wait_s:.0f} s",
        "it stays queued and applies at the daemon's next turn boundary; see `autodev status`",
    )


def _if_daemon_left(paths: RunPaths, state: StateFile, n: int, seq: int | None, undo: bool) -> Answer | None:
    """The daemon asked may have been on its way out (the run ended, or it was stopped) and never
    read the request. Once its lock is free, the request is withdrawn and the rewind done here,
    under the lock, so no later daemon applies it a second time. None while a daemon holds it."""
    from autodev.errors import DaemonRunningError
    from autodev.store.lock import DaemonLock

    if DaemonLock.holder(paths.lock):
        return None
    lock = DaemonLock(paths.lock)
    try:
        lock.acquire()
    except DaemonRunningError:
        return None  # a daemon started meanwhile: it reads the queue on its way in
    try:
        st = state.read()
        if st.rewind_result is not None and st.rewind_result.n == n:
            return None  # it answered just before it let go: the caller reads the answer
        if not any(c.n == n for c in st.controls):
            raise RewindRefused(
                "the daemon took the rewind and stopped before it answered",
                "see `autodev thread` for a rewind note, then `autodev rewind` again if there is none",
            )
        state.update(lambda s: s.but(controls=[c for c in s.controls if c.n != n]))
        return _here(paths, seq, undo)
    finally:
        lock.release()


def _here(paths: RunPaths, seq: int | None, undo: bool) -> Answer:
    from contextlib import closing

    from autodev.records import check_harness
    from autodev.store.rebuild import missing, rebuild

    state = StateFile(paths.state)
    if missing(paths):  # as the daemon would on open: never rewind from a blank state
        rebuilt = rebuild(paths)
        state.update(lambda s: s.but(**{**rebuilt.set_fields(), "version": s.version}))
    run_id = str(state.read().run_id or "run")
    with (
        Journal(paths.harness_log, schema=check_harness) as hlog,
        closing(Thread(paths.thread)) as thread,
        closing(Events(paths.events, run_id)) as events,
    ):
        done = perform(Handles(paths, thread, state, hlog, events), seq, undo=undo)
    return {"ok": True, "note_seq": done.note_seq, "to_seq": done.to_seq}
