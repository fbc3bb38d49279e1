"""`autodev fork SEQ --into DIR`: a new git repository at the commit of post SEQ and a new run
whose thread is this run's up to SEQ, with `forked_from` (run, seq) in its state and in the runs
index. The original run is untouched (its daemon may keep running); each goes on with its own
daemon, since a run folder belongs to one repository path.

The repository is a clone of its own (`--no-local`), not a `git worktree`: a worktree's git
folder is the original's `.git`, which the fork's sandbox leaves writable for commits, so the
fork's participants could move the user's branches (best-of's clones are made so for the same
reason, group/worktrees.py). Nothing of the fork reaches the user's repository but what the user
fetches from it.

The copy: thread lines up to SEQ as they are (superseded posts and rewind notes included, so
seq stays contiguous and the live line is the same), the events up to SEQ's effects and the
harness records of the turns up to SEQ's (`prefix.prefix_records`), the scripted model's ledger,
and `.autodev/` when the clone does not bring it. The state is rebuilt from that prefix under
a new run id; turn numbers carry on from the copied turns.
"""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path
from typing import TypedDict

from autodev.config.project import HISTORY
from autodev.errors import UsageError
from autodev.records.state import PausedFrom, RunState
from autodev.rules.live import Live
from autodev.rules.reasons import reason
from autodev.store.journal import JsonObject, iter_records
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import head_of, read_live, seq_of
from autodev.timeline import git, prefix
from autodev.timeline.safe import install_config


class ForkRefused(UsageError):
    """A fork that cannot be made as asked (exit 2)."""


class Origin(TypedDict):
    """Where a fork was made from: its state's and the runs index's `forked_from`."""

    run: str | None
    seq: int
    repo: str


class Forked(TypedDict):
    """A fork made: its repository, branch and commit, and the new run's id."""

    into: str
    branch: str
    commit: str
    run: str | None
    forked_from: Origin


def commit_at(paths: RunPaths, seq: int) -> str:
    """The commit of post `seq` (see `rewind.commit_at`), for a reader of the run."""
    from autodev.store.rebuild import read_state

    live = read_live(paths.thread)
    best = None
    for rec in iter_records(paths.thread):
        if seq_of(rec) > seq:
            break
        if live.is_live(seq_of(rec)):
            best = head_of(rec) or best
    best = best or read_state(paths).base_head
    if not best:
        raise ForkRefused(f"no commit is known for post {seq}", "fork at a later post")
    return best


def fork(paths: RunPaths, seq: int, into: Path) -> Forked:
    from autodev.store.rebuild import read_state

    into = into.resolve()
    if into.exists() and any(into.iterdir()):
        raise ForkRefused(f"{into} exists and is not empty", "give a new folder to --into")
    posts = list(iter_records(paths.thread)) if paths.thread.exists() else []
    last = seq_of(posts[-1]) if posts else 0
    if not 1 <= seq <= last:
        raise ForkRefused(
            f"there is no post {seq} (the thread has posts 1 to {last})", "pick a seq `autodev thread` shows"
        )
    live = read_live(paths.thread)
    if not live.is_live(seq):
        raise ForkRefused(f"post {seq} was superseded by a rewind", "fork at a live post")
    src = read_state(paths)
    commit = commit_at(paths, seq)
    branch = f"autodev-fork-{secrets.token_hex(3)}"
    _clone(paths.repo, into, branch, commit)
    new = RunPaths(into)
    # the run's own config, never the one the commit at SEQ may hold (timeline/safe.py)
    config = paths.config_dir if (paths.config_dir / "team.toml").exists() else paths.run_dir / "team"
    install_config(config, new.config_dir)
    new.ensure()
    if paths.scripted_ledger.exists():
        shutil.copy2(paths.scripted_ledger, new.scripted_ledger)
    if (history := paths.run_dir / HISTORY).is_dir():  # the copied events number their teams there
        shutil.copytree(history, new.run_dir / HISTORY)
    origin: Origin = {"run": src.run_id, "seq": seq, "repo": str(paths.repo)}
    harness = list(iter_records(paths.harness_log)) if paths.harness_log.exists() else []
    events = list(iter_records(paths.events)) if paths.events.exists() else []
    st = seed(new, posts, events, harness, seq, origin, live)
    return {"into": str(into), "branch": branch, "commit": commit, "run": st.run_id, "forked_from": origin}


def _clone(repo: Path, into: Path, branch: str, commit: str) -> None:
    """`into`: a clone of `repo` with objects and refs of its own, on `branch` at `commit`, with
    no remote back to `repo`; the identity and the excludes the original's own config gave."""
    from autodev.config.project import exclude_from_git

    into.parent.mkdir(parents=True, exist_ok=True)
    try:
        git.clone(repo, into)
        if git.ref(into, commit) is None:  # a commit no branch or tag reaches (a detached HEAD)
            allow = "uploadpack.allowAnySHA1InWant=true"
            git.git(into, "-c", allow, "fetch", "-q", "--no-tags", "--no-write-fetch-head", str(repo), commit)
    except git.GitError as e:
        raise git.GitError(f"could not clone {repo} for the fork: {e.message}", git.FIX) from None
    git.git(into, "remote", "remove", "origin", check=False)
    git.git(into, "checkout", "-q", "-b", branch, commit)
    for key in ("user.name", "user.email"):
        if value := git.git(repo, "config", "--local", "--get", key, check=False):
            git.git(into, "config", key, value)
    src = git.git(repo, "rev-parse", "--git-path", "info/exclude", check=False)
    mine = into / ".git" / "info" / "exclude"
    if src and (found := repo / src).is_file():
        mine.parent.mkdir(parents=True, exist_ok=True)
        mine.write_text(found.read_text())
    exclude_from_git(into)  # the fork's .autodev/ is the run's copy, never its work


def seed(
    new: RunPaths,
    posts: list[JsonObject],
    events: list[JsonObject],
    harness: list[JsonObject],
    seq: int,
    origin: Origin,
    live: Live,
) -> RunState:
    """The run folder `new` holding the run up to post `seq`, stopped: the fork's start, and a
    replay's of a fork (the same prefix, from its recording)."""
    from autodev.store.rebuild import from_records

    kept = [p for p in posts if seq_of(p) <= seq]
    turns = [t for p in kept if isinstance(t := p.get("turn"), int)]
    upto = max(turns, default=0)
    events = prefix.events_upto(events, seq)
    harness = [r for r in harness if isinstance(t := r.get("turn", 0), int) and t <= upto]
    _write(new.thread, kept)
    _write(new.events, events)
    _write(new.harness_log, harness)
    st = from_records([p for p in kept if live.is_live(seq_of(p))], events, harness)
    at = PausedFrom(state="running", reason=None)
    if st.state in ("awaiting_user", "gated"):
        at = PausedFrom(state=st.state, reason=st.reason)
    st = st.without("rebuilt_from_logs").but(
        run_id=secrets.token_hex(4),
        turn=upto,
        accounted_turn=upto,
        applied_seq=seq,
        warnings=[],
        forked_from=origin,
        state="stopped",
        reason=reason("forked", run=origin["run"], seq=seq),
        paused_from=at,
    )
    StateFile(new.state).update(lambda s: st.but(version=s.version))
    return st


def _write(path: Path, records: list[JsonObject]) -> None:
    """A whole new log, durable before the fork is reported."""
    import os

    tmp = path.with_name(f".{path.name}.tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
