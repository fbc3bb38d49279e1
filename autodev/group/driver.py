"""The group's driver: a detached process (`python -P -m autodev.group FOLDER`) that makes the
worktrees, starts up to `parallel` runs at once (each by `autodev start` in its worktree: the
same checks, its own detached daemon), notices each daemon's end and keeps the run's work on its
ref, and holds the group's cost cap. It holds `driver.lock` while it lives.

Nothing it knows lives only in memory: every step is on `group.jsonl` before (intent) and after
(effect) it is taken, and each step is idempotent. A driver killed with -9 loses nothing: the
runs' daemons are sessions of their own and go on; `autodev start --resume-group ID` starts a new
driver, which redoes an unfinished step, starts again a run whose daemon died before the run
ended (as `autodev start` resumes any run), and carries on."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from autodev.group import facts, worktrees
from autodev.group.record import Group, Member, append, load
from autodev.guard import keys
from autodev.host import spawn
from autodev.host.hostproc import PYTHON_SAFE
from autodev.records.group import BudgetReached, Ended, GroupEnded, RunStarted
from autodev.rules.names import RUN_INDEX
from autodev.store.lock import DaemonLock
from autodev.store.state import StateFile

FINAL = ("complete", "stopped", "faulted")
POLL_SEC = 0.5


def start_run(g: Group, m: Member, key_names: list[str]) -> int:
    """`autodev start [OBJECTIVE]` in the run's worktree (the objective only for a run whose
    thread is still empty); its exit code. The keys go over a pipe, never the environment."""
    append(g.folder, RunStarted(id=f"started:{m.k}", type="started", k=m.k))
    fresh = not m.paths.thread.exists() or m.paths.thread.stat().st_size == 0
    env, fd = keys.handover(key_names, base={**os.environ, **keys.all_keys(key_names)})
    env[RUN_INDEX] = str(m.k)  # a scripted team's steps may differ by run (`runs = [...]`)
    argv = [sys.executable, *PYTHON_SAFE, "-m", "autodev", "start", *([g.objective] if fresh else [])]
    try:
        with open(g.log, "ab") as log:
            log.write(f"run {m.k}: autodev start in {m.worktree}\n".encode())
            log.flush()
            try:
                r = spawn.run(
                    argv, "autodev", cwd=m.worktree, env=env, pass_fds=(fd,), stdin=spawn.DEVNULL,
                    stdout=log, stderr=log, timeout=120,
                )  # fmt: skip
            except spawn.TimeoutExpired:
                # `start` waits for its daemon; one slow to come up is seen on a later pass (its
                # lock), or started once more if it never did
                log.write(f"run {m.k}: autodev start did not return in 120 s\n".encode())
                return 0
    finally:
        os.close(fd)
    return r.returncode


def _state(m: Member) -> str:
    return StateFile(m.paths.state).read().state if m.paths.state.exists() else "not started"


def end_run(g: Group, m: Member, state: str) -> None:
    ref = worktrees.keep(g, m.k)
    append(
        g.folder,
        Ended(id=f"ended:{m.k}", type="ended", k=m.k, state=state, ref=g.ref_of(m.k), head=ref),
    )


def key_names(g: Group) -> list[str]:
    """The secret variables the runs' teams name (the repository's team and each variant)."""
    from autodev.config import load_team

    names: set[str] = set()
    for team in [g.config / "team.toml", *sorted(g.config.glob("team-variant-*.toml"))]:
        if team.exists():
            names |= set(load_team(team).key_names())
    return sorted(names)


def step(g: Group, restarted: set[int], key_names: list[str]) -> bool:
    """One pass; True when the whole group has ended."""
    for k in range(1, g.n + 1):
        if k not in g.members or not g.members[k].made:
            worktrees.make(g, k)
    g = load(g.folder)
    running = 0
    for m in g.members.values():
        if m.ended or not m.started:
            continue
        if DaemonLock.holder(m.paths.lock):
            running += 1
            continue
        state = _state(m)
        if state in FINAL or m.k in restarted:
            end_run(g, m, state)
        else:  # its daemon died (or never came up) before the run ended: start it again, once
            restarted.add(m.k)
            if start_run(g, m, key_names) == 0:
                running += 1
    g = load(g.folder)
    if g.max_cost_usd is not None and g.budget is None and facts.spend(g) >= g.max_cost_usd:
        spent = facts.spend(g)
        append(g.folder, BudgetReached(id="budget", type="budget", spent=spent, cap=g.max_cost_usd))
        for m in g.members.values():
            if m.started and not m.ended:
                StateFile(m.paths.state).request_plain("stop", at=time.time_ns())
        g = load(g.folder)
    for m in sorted(g.members.values(), key=lambda m: m.k):
        if m.started or m.ended:
            continue
        if g.budget is not None:
            append(g.folder, Ended(id=f"ended:{m.k}", type="ended", k=m.k, state="skipped", ref=""))
        elif running < g.parallel:
            if start_run(g, m, key_names) == 0:
                running += 1
            else:  # refused at start (its reason is in driver.log): ended, never retried
                restarted.add(m.k)
    return load(g.folder).ended


def drive(folder: Path) -> int:
    g = load(folder)
    with open(g.lock, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"group {g.id}: another driver holds {g.lock}", file=sys.stderr)
            return 0
        lock.truncate(0)
        lock.write(str(os.getpid()))
        lock.flush()
        restarted: set[int] = set()
        names = key_names(g)
        while True:
            if step(g, restarted, names):
                append(folder, GroupEnded(id="ended", type="group_ended"))
                return 0
            g = load(folder)
            time.sleep(POLL_SEC)
