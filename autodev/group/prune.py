"""`autodev runs prune` for best-of groups: a group's clones and run folders go only
here, when every run has ended and no daemon or driver of it is alive; its refs
(`refs/autodev/best-of/<group>/<k>`) and its record stay."""

from __future__ import annotations

import time
from dataclasses import dataclass

from autodev.group import worktrees
from autodev.group.record import Group, all_groups
from autodev.store.lock import DaemonLock


@dataclass
class Outcome:
    group: Group
    removed: list[str]
    why_not: str = ""


def _last_activity(g: Group) -> float:
    times = [g.record.stat().st_mtime]
    for m in g.members.values():
        for p in (m.paths.events, m.paths.state):
            if p.exists():
                times.append(p.stat().st_mtime)
    return max(times)


def why_kept(g: Group) -> str:
    """Why the group cannot be pruned now ("" when it can)."""
    if g.driver_alive():
        return f"its driver is running (group {g.id}); let it end, or stop its runs first"
    for m in g.members.values():
        pid = DaemonLock.holder(m.paths.lock)
        if pid:
            return f"run {m.k}'s daemon (pid {pid}) is alive; stop it first (`autodev stop` in {m.worktree})"
    if not g.ended:
        return f"not every run has ended; `autodev start --resume-group {g.id}` finishes it"
    return ""


def prune(older_than_sec: float | None, gid: str | None) -> list[Outcome]:
    """Groups older than the age (by their last activity), or the one named."""
    out: list[Outcome] = []
    now = time.time()
    for g in all_groups():
        if g.pruned or (gid is not None and g.id != gid):
            continue
        if gid is None and (older_than_sec is None or now - _last_activity(g) < older_than_sec):
            continue
        why = why_kept(g)
        out.append(Outcome(g, [] if why else worktrees.remove(g), why))
    return out
