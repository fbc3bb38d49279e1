"""What each run of a group shows and what the pick ranks it on, read from the run's own files
(state.json, the thread's tail) and git: no model, no daemon needed."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from autodev.group.record import Group
from autodev.store.journal import JsonObject, is_object, read_tail
from autodev.store.lock import DaemonLock
from autodev.store.runs import last_evidence, usage_of
from autodev.store.state import StateFile


@dataclass
class RunFacts:
    k: int
    run: str | None
    worktree: str
    team: str | None
    state: str  # the run's state; "not started" before its daemon was started
    daemon_pid: int | None
    ended: bool
    turns: int
    tokens: int
    cost: float
    audit: str  # accepted | reopened | none: the last verdict
    evidence: str | None  # the newest done's summary line
    fail_to_pass: int | None  # None: no evidence
    pass_to_fail: int | None
    changed_lines: int | None  # from the base to the kept ref; None until the run ended
    ref: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _audit(thread_tail: list[JsonObject]) -> str:
    for p in reversed(thread_tail):
        if p.get("from") == "audit" and isinstance(p.get("verdict"), str):
            return "accepted" if p["verdict"] == "accept" else "reopened"
    return "none"


def _count(ev: JsonObject | None, key: str) -> int | None:
    counts = ev.get("counts") if ev else None
    if not is_object(counts):
        return None
    v = counts.get(key)
    return v if isinstance(v, int) else None


def of_run(g: Group, k: int, lines: bool = True) -> RunFacts:
    """Run `k`'s facts; `lines`: also the size of its kept work (a git diff)."""
    from autodev.group import worktrees

    m = g.members.get(k)
    path = g.worktree_of(k)
    if m is None or not m.started:
        state = m.ended.state if m and m.ended else "not started"  # "skipped": the cap
        return RunFacts(
            k, None, str(path), m.team if m else None, state, None, bool(m and m.ended), 0, 0, 0.0,
            "none", None, None, None, None, "",
        )  # fmt: skip
    paths = m.paths
    st = StateFile(paths.state).read() if paths.state.exists() else None
    figures = usage_of(st) if st else None
    tail = read_tail(paths.thread, 200) if paths.thread.exists() else []
    ev = last_evidence(paths.run_dir)
    changed = worktrees.changed_lines(g.repo, g.base, m.ref) if m.ref and lines else None
    return RunFacts(
        k=k,
        run=st.run_id if st else None,
        worktree=str(path),
        team=m.team,
        state=st.state if st else "starting",
        daemon_pid=DaemonLock.holder(paths.lock),
        ended=m.ended is not None,
        turns=(figures["turns"] or 0) if figures else 0,
        tokens=(figures["tokens"] or 0) if figures else 0,
        cost=round((figures["cost"] or 0.0) if figures else 0.0, 6),
        audit=_audit(tail),
        evidence=str(ev["summary"]) if ev and isinstance(ev.get("summary"), str) else None,
        fail_to_pass=_count(ev, "fail_to_pass"),
        pass_to_fail=_count(ev, "pass_to_fail"),
        changed_lines=changed,
        ref=m.ref,
    )


def of_group(g: Group, lines: bool = True) -> list[RunFacts]:
    return [of_run(g, k, lines) for k in range(1, g.n + 1)]


def spend(g: Group) -> float:
    """What the group's runs spent so far, in USD (each run's state.json)."""
    total = 0.0
    for m in g.members.values():
        if m.paths.state.exists():
            total += usage_of(StateFile(m.paths.state).read())["cost"] or 0.0
    return total
