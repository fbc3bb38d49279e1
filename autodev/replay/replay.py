"""`autodev replay [RUN | BUNDLE] [--tools recorded]`: re-run a recorded run offline and report
"identical" or the first divergence.

The run is re-executed by the real daemon (in this process) on a fresh clone at the run's base
commit, under an AUTODEV_HOME of its own: every generation is answered from the recording
(`recorded.RecordedModel`), the tools run for real (or, with `--tools recorded`, answer with the
recorded results), and the user's input (the objective, later messages, gate decisions, rewinds)
is handed in at the turn boundary where it arrived. Then the two runs are compared turn by turn: who was
scheduled and by which rule, the turn prompt, each tool result, the post and its credit; then
the remaining posts (user, system, audit) and the final state.

What is compared is the text as it is, with two exceptions, both things autodev itself made
different: the repository's path, and commit ids the run made. A recorded commit id is compared
by its mapping: the n-th commit the records name (a turn's start, a post's HEAD, a credit) is
paired with the replay's commit in the same place, and both read `<commit n>` wherever they appear
(an abbreviated id included). Any other text, digits and hex included, is compared as it is: a
command whose output differs from run to run (a clock) diverges. The times `read_thread` shows
are the posts' times, which autodev writes: those are masked in its results only.

Each turn runs with the team in force when it was recorded (the run folder's team history); a
fork is replayed from the post it was made at (its thread, state and commit up to there).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from autodev import records
from autodev.records import AgentStarted, HarnessRecord, Post, TurnStarted
from autodev.records.events import DaemonStartedEvent, Event, ScheduledEvent, TeamReloadedEvent
from autodev.records.state import RunState
from autodev.replay.compare import Divergence, compare
from autodev.replay.recorded import RecordedModel
from autodev.replay.recording import BadLine, Recording, head_of, read
from autodev.replay.refused import ReplayRefused
from autodev.rules.live import rewind_note
from autodev.store.journal import JsonObject
from autodev.store.paths import RunPaths
from autodev.timeline import git

if TYPE_CHECKING:
    from autodev.daemon.handles import Run

__all__ = ["Divergence", "Recording", "compare"]

R = TypeVar("R")


def base_of(harness: list[HarnessRecord], state: RunState) -> str | None:
    first = next((r for r in harness if isinstance(r, TurnStarted) and r.head), None)
    return (first.head if first is not None else None) or state.base_head


def _read(path: Path, parse: Callable[[JsonObject], R]) -> list[R]:
    """A log of the run folder, each line as its record."""
    try:
        return read(path, parse)
    except BadLine as e:
        raise ReplayRefused(f"{path}: {e}", "restore the file from a backup, or replay another run") from None


def from_run(paths: RunPaths) -> Recording:
    """The run of this repository (its run folder and its git objects)."""
    from autodev.store.rebuild import read_state

    if not paths.thread.exists():
        raise ReplayRefused(f"there is no run in {paths.run_dir}", "run `autodev start` first")
    harness = _read(paths.harness_log, records.harness)
    state = read_state(paths)
    base = base_of(harness, state)
    if not base:
        raise ReplayRefused("the run recorded no base commit", "replay a run that made at least one turn")
    config = paths.config_dir if (paths.config_dir / "team.toml").exists() else paths.run_dir / "team"
    return Recording(
        _read(paths.thread, records.post),
        _read(paths.events, _event),
        harness,
        config,
        base,
        paths.repo,
        False,
        str(paths.repo),
        paths.run_dir,
        state.forked_from.seq if state.forked_from else None,
    )


def _event(rec: JsonObject) -> Event:
    return records.event(rec)


# -- running it again ----------------------------------------------------------------------------


@contextmanager
def _env(values: dict[str, str]) -> Generator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _clone(rec: Recording, to: Path) -> None:
    git.clone(rec.source, to)
    git.git(to, "checkout", "-q", "-b", "autodev-replay", start_commit(rec))
    git.git(to, "config", "user.name", "autodev replay")
    git.git(to, "config", "user.email", "replay@autodev.invalid")
    exclude = to / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    # .autodev/ is kept out of git as the recorded repository kept it: when git saw its files
    # there (a team written by hand, not `autodev init`), a `git add -A` commits them here too
    exclude.write_text(("" if _config_seen(rec) else ".autodev/\n") + "__pycache__/\n")


def _config_seen(rec: Recording) -> bool:
    """Did git see .autodev/ in the recorded repository? Its first turn's baseline lists the
    files that differ from HEAD or are untracked, .gitignore and info/exclude respected."""
    first = next((r for r in rec.harness if isinstance(r, TurnStarted)), None)
    return first is not None and any(k.startswith(".autodev/") for k in first.baseline.dirty)


def start_commit(rec: Recording) -> str:
    """Where the replay starts: the base, or a fork's commit (the HEAD of its post)."""
    if rec.forked_at is None:
        return rec.base
    heads = [h for p in rec.posts if p.seq <= rec.forked_at and (h := head_of(p))]
    return heads[-1] if heads else rec.base


class Teams:
    """The team in force at each recorded turn (the run folder's team history, numbered by
    `daemon_started` and `team_reloaded` events), installed into the replay's .autodev/ before
    that turn: the replaying daemon reloads it as the recorded one did. A recording without a
    history (made before autodev kept one) runs every turn with its last team."""

    def __init__(self, rec: Recording, repo: Path):
        from autodev.config.project import team_versions

        self.rec, self.config = rec, repo / ".autodev"
        self.versions = team_versions(rec.run_dir) if rec.run_dir else {}
        self.per_turn: dict[int, int] = {}
        cur = None
        for e in rec.events:
            match e:
                case DaemonStartedEvent() | TeamReloadedEvent():
                    cur = e.team if e.team is not None else cur
                case ScheduledEvent() if e.turn is not None and cur is not None and cur in self.versions:
                    self.per_turn[e.turn] = cur
                case _:
                    pass  # no other kind changes the team
        self.installed: int | None = None

    def install_for(self, turn: int) -> None:
        want = self.per_turn.get(turn)
        if want is None or want == self.installed:
            return
        src = self.versions[want]
        for f in sorted(src.rglob("*")):
            if f.is_file() and not f.is_symlink():
                dest = self.config / f.relative_to(src)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(f.read_bytes())
        if self.rec.untrusted:
            from autodev.timeline.safe import safe_config

            safe_config(self.config)
        self.installed = want


def _config(rec: Recording, repo: Path) -> None:
    from autodev.timeline.safe import install_config, safe_config

    install_config(rec.config_dir, repo / ".autodev")
    if rec.untrusted:
        safe_config(repo / ".autodev")


def _feed(rec: Recording, teams: Teams) -> Callable[[Run], None]:
    """At each turn boundary: the team of the next turn installed, then the user's inputs whose
    seqs come next, put in the inbox in order (each makes one post: a message, a notice's
    answer, a gate's decision); a rewind the user made there is asked of the daemon again (and
    the run resumed, as the recording went on after it)."""
    start = rec.forked_at or 1
    inputs = [
        p
        for p in rec.posts
        if p.seq > start and (p.from_ == "user" or _user_gate(p) or _answer_of(p) or rewind_note(p))
    ]
    last = rec.posts[-1].seq if rec.posts else 0
    # the seq the next input's post takes: after what the daemon posted, and after what the
    # inbox still holds (the objective, queued before the daemon starts, included)
    queued = [start + 1]

    def feed(run: Run) -> None:
        teams.install_for(run.state.read().turn + 1)
        nxt = max(run.thread.last_seq + 1, queued[0])
        while inputs and inputs[0].seq <= nxt:
            p = inputs.pop(0)
            if p.seq != nxt:
                continue  # the replay already went elsewhere: the comparison says where
            if rewind_note(p):
                _rewind_again(run, p, resume=p.seq < last)
                return  # the daemon applies it now; the next input waits for the next boundary
            _hand_in(run, p)
            nxt += 1
            queued[0] = nxt

    return feed


def _hand_in(run: Run, p: Post) -> None:
    """The user's input that made post `p`, put in the inbox as the user put it there."""
    from autodev.user import actions

    # (user/actions answers with a plain dict, its queued message, unused here: "Unknown" to
    # the checker until the inbox's messages are typed there)
    if p.from_ == "user":
        actions.send(run.paths, p.text)
    elif answer := _answer_of(p):
        actions.answer(run.paths, *answer)
    elif p.gate is not None and p.gate.decision == "approved":
        actions.approve(run.paths, p.gate.id)
    elif p.gate is not None:
        actions.deny(run.paths, p.gate.id, p.text)


def _answer_of(p: Post) -> tuple[str, str] | None:
    """(notice id, answer) of the system note of the user's answer to a notice. The note keeps
    the answer's first 300 characters, all a turn prompt is given of it (daemon/notices.py)."""
    n = p.notice
    if p.from_ != "system" or n is None or not n.answered:
        return None
    prefix = f"the user answered notice {n.id} from {n.from_}: "
    return (n.id, p.text.removeprefix(prefix)) if p.text.startswith(prefix) else None


def _rewind_again(run: Run, note: Post, *, resume: bool) -> None:
    """Queue the recorded rewind (or its undo) as `autodev rewind` queues it for a daemon."""
    from autodev.store.queued import now_ns

    rw = note.rewind
    assert rw is not None  # the recording's rewind notes
    undo = bool(rw.undo_of)
    run.state.request("rewind", seq=None if undo else rw.to_seq, undo=undo, at=now_ns())
    if resume:
        run.state.request("resume", at=now_ns())


def _user_gate(p: Post) -> bool:
    g = p.gate
    return (
        p.from_ == "system" and g is not None and g.by == "the user" and g.decision in ("approved", "denied")
    )


def run(rec: Recording, *, recorded_tools: bool = False, keep: Path | None = None) -> Divergence | None:
    """Replay `rec`; None when identical, else the first divergence."""
    agents = sorted({r.agent for r in rec.harness if isinstance(r, AgentStarted)})
    if agents and rec.run_dir is None:
        raise ReplayRefused(
            f"this recording has coding-agent CLI turns ({', '.join(agents)}) but not their raw streams",
            "replay the run itself, or a bundle `autodev runs export` wrote (it keeps them)",
        )
    if rec.untrusted:
        _need_bubblewrap()
    work = Path(tempfile.mkdtemp(prefix="autodev-replay-")) if keep is None else keep
    try:
        repo = work / "repo"
        _clone(rec, repo)
        _config(rec, repo)
        teams = Teams(rec, repo)
        teams.install_for(_first_turn(rec))
        _agents_recorded(rec, repo, teams)
        from autodev.replay import standin

        # Every agent CLI is the stand-in that plays the recorded runs back (SPEC §16's
        # AUTODEV_<NAME>_BIN, where the daemon finds every CLI), a recording with no CLI run
        # included: a replay never starts a real CLI.
        env = {"AUTODEV_HOME": str(work / "home")}
        env |= standin.prepare(rec.harness, rec.posts, rec.run_dir, work / "agents")
        with _env(env):
            return _run_here(rec, repo, recorded_tools, teams)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _need_bubblewrap() -> None:
    """A bundle's commands never run on the host: no working bubblewrap, no replay."""
    from autodev.guard.bwrap import PACKAGE
    from autodev.guard.sandbox import resolve

    box = resolve("auto")
    if not box.active:
        raise ReplayRefused(
            f"a bundle's commands run only in the bubblewrap sandbox, and {box.problem}",
            f"install the `{PACKAGE}` package (e.g. `apt-get install {PACKAGE}`) and replay again",
        )


def _agents_recorded(rec: Recording, repo: Path, teams: Teams) -> None:
    """Refuse a coding-agent CLI participant the recording has no CLI run of, in the team or in
    any team of its history: its turns could only be played by the CLI itself, and a replay
    starts none."""
    from autodev.config import load_team

    files = [
        RunPaths(repo).team_file,
        rec.config_dir / "team.toml",
        *(v / "team.toml" for _, v in sorted(teams.versions.items())),
    ]
    who = {r.turn: r.participant for r in rec.harness if isinstance(r, TurnStarted)}
    ran = {who.get(r.turn) for r in rec.harness if isinstance(r, AgentStarted)}
    everyone = [p for f in files if f.is_file() for p in load_team(f).participants]
    for p in everyone:
        if p.agent and p.name not in ran:
            raise ReplayRefused(
                f'participant "{p.name}" is a {p.agent} CLI with no recorded CLI run in this '
                "recording, and a replay never starts a real CLI",
                "replay a run (or a bundle of one) in which it took its turns",
            )


def _first_turn(rec: Recording) -> int:
    """The first turn the replay runs: 1, or a fork's first turn after its post."""
    if rec.forked_at is None:
        return 1
    turns = [t for p in rec.posts if p.seq <= rec.forked_at and isinstance(t := p.turn, int)]
    return max(turns, default=0) + 1


def _seed_fork(rec: Recording, paths: RunPaths) -> None:
    """A fork's run folder as `autodev fork` made it: the recording's thread, events and
    harness records up to its post (the same prefix the fork copied), its state rebuilt."""
    from autodev.rules.live import Live
    from autodev.timeline.fork import Origin, seed

    at = rec.forked_at or 0
    live = Live.of([rw for p in rec.posts if p.seq <= at and (rw := rewind_note(p))], at)
    origin: Origin = {"run": None, "seq": at, "repo": rec.repo_path}
    # the records as their lines: what the fork copied (a field's default is not written)
    posts, events = [p.dump() for p in rec.posts], [e.dump() for e in rec.events]
    seed(paths, posts, events, [h.dump() for h in rec.harness], at, origin, live)


def _run_here(rec: Recording, repo: Path, recorded_tools: bool, teams: Teams) -> Divergence | None:
    from autodev.daemon.process import Daemon
    from autodev.user import actions

    paths = RunPaths(repo)
    paths.ensure()
    objective = next((p for p in rec.posts if p.from_ == "user"), None)
    if objective is None:
        raise ReplayRefused("the run has no objective", "replay a run that started")
    if rec.forked_at is not None:
        _seed_fork(rec, paths)
    else:
        actions.send(paths, objective.text)
    model = RecordedModel.of(rec.harness, rec.posts, rec.events, recorded_tools=recorded_tools, repo=repo)
    Daemon(repo, until_idle=True, model=model, feed=_feed(rec, teams)).run()
    got = Recording(
        _read(paths.thread, records.post),
        _read(paths.events, _event),
        _read(paths.harness_log, records.harness),
        paths.config_dir,
        rec.base,
        repo,
    )
    return compare(
        rec, got, paths=[rec.repo_path, str(repo)], tools=not recorded_tools, missing=model.missing
    )
