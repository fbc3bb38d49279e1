"""summary.json from the results (pure): per team the resolved share with a 95% Wilson interval,
cost per resolved task, median wall time, the audit's false accepts and false reopens; and for each
pair of teams the paired table over the tasks both ran (only A, only B, both, neither) with an
exact McNemar test on the tasks where they differ."""

from __future__ import annotations

import math
from itertools import combinations
from statistics import median
from typing import NotRequired, TypedDict

from autodev.eval.rows import EvalResult

Z95 = 1.959963984540054


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials (good at small n and near 0 or 1)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: are b (only A) and c (only B) unlike a fair coin's split?"""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


class TeamSummary(TypedDict):
    """summary.json's figures of one team."""

    tasks: int
    graded: int
    errors: int
    resolved: int
    resolved_share: float | None
    resolved_ci95: list[float]
    cost_usd: float
    tokens: int
    cost_per_resolved_usd: float | None
    median_wall_s: float | None
    audit_accepted: int
    audit_reopened: int
    audit_false_accepts: int
    audit_false_reopens: int
    audit_false_accept_rate: float | None
    audit_false_reopen_rate: float | None
    states: dict[str, int]


class Paired(TypedDict):
    """Two teams over the tasks both ran and were graded on: who solved what."""

    a: str
    b: str
    tasks: int
    only_a: int
    only_b: int
    both: int
    neither: int
    mcnemar_p: float
    only_a_tasks: list[str]
    only_b_tasks: list[str]


class RunCount(TypedDict):
    expected: int
    finished: int


class BestOfTeam(TypedDict):
    """A team's figures under --best-of (eval/bestof.py)."""

    tasks: int
    runs: int
    pick_at_n: float | None
    pass_at_1: float | None
    oracle_at_n: float | None
    picked_resolved: int
    oracle_resolved: int
    pick_missed: int
    pick_missed_tasks: list[str]
    cost_usd: float
    cost_per_task_usd: float | None


class PickSaid(TypedDict):
    run: int | None
    resolved: bool
    reason: str


class BestOf(TypedDict):
    n: int
    teams: dict[str, BestOfTeam]
    picks: dict[str, dict[str, PickSaid]]


class Summary(TypedDict):
    """summary.json, in its keys' order: the teams, the pairs, then what `eval` adds at the end."""

    teams: dict[str, TeamSummary]
    paired: list[Paired]
    generated: NotRequired[str]
    runs: NotRequired[RunCount]
    best_of: NotRequired[BestOf]


def team_summary(rows: list[EvalResult]) -> TeamSummary:
    graded = [r for r in rows if r.graded]
    resolved = [r for r in graded if r.resolved]
    lo, hi = wilson(len(resolved), len(graded))
    cost = sum(r.cost_usd or 0.0 for r in rows)
    accepted = [r for r in graded if r.audit == "accepted"]
    reopened = [r for r in graded if r.audit == "reopened"]
    false_accepts = sum(1 for r in accepted if not r.resolved)
    false_reopens = sum(1 for r in reopened if r.resolved)
    walls = [r.wall_s for r in graded]
    states: dict[str, int] = {}
    for r in graded:
        states[r.state or "none"] = states.get(r.state or "none", 0) + 1
    return {
        "tasks": len(rows),
        "graded": len(graded),
        "errors": len(rows) - len(graded),
        "resolved": len(resolved),
        "resolved_share": round(len(resolved) / len(graded), 4) if graded else None,
        "resolved_ci95": [round(lo, 4), round(hi, 4)],
        "cost_usd": round(cost, 6),
        "tokens": sum(r.tokens or 0 for r in rows),
        "cost_per_resolved_usd": round(cost / len(resolved), 6) if resolved else None,
        "median_wall_s": round(median(walls), 3) if walls else None,
        "audit_accepted": len(accepted),
        "audit_reopened": len(reopened),
        "audit_false_accepts": false_accepts,
        "audit_false_reopens": false_reopens,
        "audit_false_accept_rate": round(false_accepts / len(accepted), 4) if accepted else None,
        # of the runs the audit (or the evidence gate) reopened, the share that were resolved
        "audit_false_reopen_rate": round(false_reopens / len(reopened), 4) if reopened else None,
        "states": states,
    }


def paired(a: str, b: str, by_task: dict[str, dict[str, EvalResult]]) -> Paired:
    """Tasks both teams ran and were graded on: who solved what."""
    only_a: list[str] = []
    only_b: list[str] = []
    both: list[str] = []
    neither: list[str] = []
    for task, teams in sorted(by_task.items()):
        ra, rb = teams.get(a), teams.get(b)
        if not ra or not rb or not ra.graded or not rb.graded:
            continue
        {
            (True, False): only_a,
            (False, True): only_b,
            (True, True): both,
            (False, False): neither,
        }[(bool(ra.resolved), bool(rb.resolved))].append(task)
    return {
        "a": a,
        "b": b,
        "tasks": len(only_a) + len(only_b) + len(both) + len(neither),
        "only_a": len(only_a),
        "only_b": len(only_b),
        "both": len(both),
        "neither": len(neither),
        "mcnemar_p": round(mcnemar_exact(len(only_a), len(only_b)), 4),
        "only_a_tasks": only_a,
        "only_b_tasks": only_b,
    }


def summarize(results: list[EvalResult], teams: list[str]) -> Summary:
    """summary.json: `teams` in the order given on the command line."""
    by_task: dict[str, dict[str, EvalResult]] = {}
    for r in results:
        by_task.setdefault(r.task, {})[r.team] = r
    return {
        "teams": {t: team_summary([r for r in results if r.team == t]) for t in teams},
        "paired": [paired(a, b, by_task) for a, b in combinations(teams, 2)],
    }
