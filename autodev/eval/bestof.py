"""`autodev eval --best-of N` (SPEC §23; docs/eval.md): each task × team runs N times, and the
group's own pick (`group.rank`: the repository's tests as the run's `done` evidence saw them,
the audit, the diff's size, the cost; never the hidden tests) chooses one run per task. Pure:
results in, figures out.

- pick@N: the share of tasks whose picked run resolved the task;
- pass@1: the share of runs that resolved their task (one try's chance);
- oracle@N: the share of tasks some run resolved (what a perfect pick would get);
- pick missed: tasks some run resolved but the picked one did not."""

from __future__ import annotations

from autodev.group.rank import Candidate, ranked, reason


def _count(r: dict, key: str) -> int | None:
    ev = r.get("evidence")
    counts = ev.get("counts") if isinstance(ev, dict) else None
    v = counts.get(key) if isinstance(counts, dict) else None
    return v if isinstance(v, int) else None


def candidate(r: dict) -> Candidate:
    return Candidate(
        k=int(r.get("run") or 0),
        pass_to_fail=_count(r, "pass_to_fail"),
        fail_to_pass=_count(r, "fail_to_pass"),
        audit=str(r.get("audit") or "none"),
        changed_lines=r.get("changed_lines"),
        cost=float(r.get("cost_usd") or 0.0),
    )


def picks(results: list[dict]) -> dict[tuple[str, str], tuple[dict, str]]:
    """(task, team) → (the picked run's result, why), over the runs that could be run."""
    groups: dict[tuple[str, str], dict[int, dict]] = {}
    for r in results:
        if not r.get("error"):
            groups.setdefault((r["task"], r["team"]), {})[int(r.get("run") or 0)] = r
    out: dict[tuple[str, str], tuple[dict, str]] = {}
    for key, runs in groups.items():
        order = ranked([candidate(r) for r in runs.values()])
        out[key] = (runs[order[0].k], reason(order))
    return out


def summarize(results: list[dict], teams: list[str], n: int) -> dict:
    chosen = picks(results)
    out: dict[str, object] = {"n": n, "teams": {}, "picks": {}}
    for team in teams:
        rows = [r for r in results if r["team"] == team]
        graded = [r for r in rows if not r.get("error")]
        tasks = sorted({r["task"] for r in rows})
        solved = {r["task"] for r in graded if r["resolved"]}
        mine = {task: chosen[(task, team)] for task in tasks if (task, team) in chosen}
        picked = {task for task, (r, _) in mine.items() if r["resolved"]}
        missed = sorted(solved - picked)
        cost = sum(r.get("cost_usd") or 0.0 for r in rows)
        out["teams"][team] = {  # type: ignore[index]
            "tasks": len(tasks),
            "runs": len(rows),
            "pick_at_n": round(len(picked) / len(tasks), 4) if tasks else None,
            "pass_at_1": round(sum(1 for r in graded if r["resolved"]) / len(graded), 4) if graded else None,
            "oracle_at_n": round(len(solved) / len(tasks), 4) if tasks else None,
            "picked_resolved": len(picked),
            "oracle_resolved": len(solved),
            "pick_missed": len(missed),
            "pick_missed_tasks": missed,
            "cost_usd": round(cost, 6),
            "cost_per_task_usd": round(cost / len(tasks), 6) if tasks else None,
        }
        out["picks"][team] = {  # type: ignore[index]
            task: {"run": r.get("run"), "resolved": bool(r["resolved"]), "reason": why}
            for task, (r, why) in sorted(mine.items())
        }
    return out


def picked_results(results: list[dict]) -> list[dict]:
    """The picked run of each task and team (predictions/<team>.jsonl: one line per instance)."""
    return [r for r, _ in picks(results).values()]
