"""`autodev eval --best-of N` (SPEC §23; docs/eval.md): each task × team runs N times, and the
group's own pick (`group.rank`: the repository's tests as the run's `done` evidence saw them,
the audit, the diff's size, the cost; never the hidden tests) chooses one run per task. Pure:
results in, figures out.

- pick@N: the share of tasks whose picked run resolved the task;
- pass@1: the share of runs that resolved their task (one try's chance);
- oracle@N: the share of tasks some run resolved (what a perfect pick would get);
- pick missed: tasks some run resolved but the picked one did not."""

from __future__ import annotations

from autodev.eval.rows import EvalResult
from autodev.eval.summary import BestOf, BestOfTeam, PickSaid
from autodev.group.rank import Candidate, ranked, reason

Picked = dict[tuple[str, str], tuple[EvalResult, str]]


def candidate(r: EvalResult) -> Candidate:
    ev = r.evidence
    return Candidate(
        k=int(r.run or 0),
        pass_to_fail=ev.count("pass_to_fail") if ev else None,
        fail_to_pass=ev.count("fail_to_pass") if ev else None,
        audit=str(r.audit or "none"),
        changed_lines=r.changed_lines,
        cost=float(r.cost_usd or 0.0),
    )


def picks(results: list[EvalResult]) -> Picked:
    """(task, team) → (the picked run's result, why), over the runs that could be run."""
    groups: dict[tuple[str, str], dict[int, EvalResult]] = {}
    for r in results:
        if r.graded:
            groups.setdefault((r.task, r.team), {})[int(r.run or 0)] = r
    out: Picked = {}
    for key, runs in groups.items():
        order = ranked([candidate(r) for r in runs.values()])
        out[key] = (runs[order[0].k], reason(order))
    return out


def team_figures(rows: list[EvalResult], mine: dict[str, tuple[EvalResult, str]]) -> BestOfTeam:
    """One team's figures: `rows` its results, `mine` its pick per task."""
    graded = [r for r in rows if r.graded]
    tasks = sorted({r.task for r in rows})
    solved = {r.task for r in graded if r.resolved}
    picked = {task for task, (r, _) in mine.items() if r.resolved}
    missed = sorted(solved - picked)
    cost = sum(r.cost_usd or 0.0 for r in rows)
    return {
        "tasks": len(tasks),
        "runs": len(rows),
        "pick_at_n": round(len(picked) / len(tasks), 4) if tasks else None,
        "pass_at_1": round(sum(1 for r in graded if r.resolved) / len(graded), 4) if graded else None,
        "oracle_at_n": round(len(solved) / len(tasks), 4) if tasks else None,
        "picked_resolved": len(picked),
        "oracle_resolved": len(solved),
        "pick_missed": len(missed),
        "pick_missed_tasks": missed,
        "cost_usd": round(cost, 6),
        "cost_per_task_usd": round(cost / len(tasks), 6) if tasks else None,
    }


def summarize(results: list[EvalResult], teams: list[str], n: int) -> BestOf:
    chosen = picks(results)
    out: BestOf = {"n": n, "teams": {}, "picks": {}}
    for team in teams:
        rows = [r for r in results if r.team == team]
        tasks = sorted({r.task for r in rows})
        mine = {task: chosen[(task, team)] for task in tasks if (task, team) in chosen}
        out["teams"][team] = team_figures(rows, mine)
        said: dict[str, PickSaid] = {
            task: {
                "run": r.run if "run" in r.model_fields_set else None,
                "resolved": r.resolved,
                "reason": why,
            }
            for task, (r, why) in sorted(mine.items())
        }
        out["picks"][team] = said
    return out


def picked_results(results: list[EvalResult]) -> list[EvalResult]:
    """The picked run of each task and team (predictions/<team>.jsonl: one line per instance)."""
    return [r for r, _ in picks(results).values()]
