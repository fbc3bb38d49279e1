"""The pick's rules (group/rank.py), in order, and the reason it gives; eval's best-of figures
(eval/bestof.py) from result lines. Pure: no run, no model."""

from __future__ import annotations

from autodev.eval import bestof
from autodev.eval.rows import EvalResult
from autodev.group.rank import Candidate, ranked, reason


def c(k, p2f=0, f2p=0, audit="accepted", lines=10, cost=1.0) -> Candidate:
    return Candidate(k, p2f, f2p, audit, lines, cost)


def test_each_rule_decides_in_its_order():
    # 1. a run that broke a test loses to one that broke none, whatever else it has
    order = ranked([c(1, p2f=1, f2p=5, lines=1, cost=0), c(2, f2p=0)])
    assert [x.k for x in order] == [2, 1]
    assert reason(order) == "run 2 wins on rule 1 (no pass_to_fail): 0 broke against 1 broke for run 1"
    # no evidence sits between a clean run and a breaking one
    assert [x.k for x in ranked([c(1, p2f=2), c(2, p2f=None, f2p=None), c(3)])] == [3, 2, 1]
    # 2. most fail_to_pass
    order = ranked([c(1, f2p=1), c(2, f2p=3, lines=500, cost=9)])
    assert (
        reason(order) == "run 2 wins on rule 2 (most fail_to_pass): 3 now pass against 1 now pass for run 1"
    )
    # 3. audit accepted
    order = ranked([c(1, audit="reopened", lines=1), c(2, audit="accepted")])
    assert reason(order).startswith(
        "run 2 wins on rule 3 (audit accepted): audit accepted against audit reopened"
    )
    # 4. fewest changed lines
    order = ranked([c(1, lines=20, cost=0), c(2, lines=4)])
    assert (
        reason(order)
        == "run 2 wins on rule 4 (fewest changed lines): 4 lines changed against 20 lines changed for run 1"
    )
    # 5. lowest cost
    order = ranked([c(1, cost=2.0), c(2, cost=0.5)])
    assert reason(order) == "run 2 wins on rule 5 (lowest cost): $0.5000 against $2.0000 for run 1"
    # all equal: the lower number, said so
    order = ranked([c(2), c(1)])
    assert [x.k for x in order] == [1, 2]
    assert reason(order) == "runs 1 and 2 are equal on every rule; the lower run number wins"
    assert reason([c(3)]) == "run 3 is the only run that ended" and reason([]) == "no run has ended"


def test_the_ranking_is_deterministic_whatever_the_order_given():
    runs = [c(1, f2p=1, lines=9), c(2, f2p=1, lines=3), c(3, p2f=1, f2p=4), c(4, f2p=1, lines=3, cost=0.2)]
    first = [x.k for x in ranked(runs)]
    assert first == [4, 2, 1, 3]
    assert [x.k for x in ranked(list(reversed(runs)))] == first


def row(task, run, resolved, f2p=0, p2f=0, lines=5, cost=0.1, error=None):
    return EvalResult.model_validate({
        "task": task, "team": "t", "run": run, "resolved": resolved, "audit": "accepted",
        "changed_lines": lines, "cost_usd": cost, "error": error,
        "evidence": {"counts": {"fail_to_pass": f2p, "pass_to_fail": p2f}},
    })  # fmt: skip


def test_eval_best_of_figures():
    results = [
        row("a", 1, False, p2f=1), row("a", 2, True, f2p=1), row("a", 3, False),
        row("b", 1, False, lines=1), row("b", 2, True, lines=4), row("b", 3, False, error="no clone"),
        row("c", 1, False), row("c", 2, False), row("c", 3, False),
    ]  # fmt: skip
    s = bestof.summarize(results, ["t"], 3)
    t = s["teams"]["t"]
    assert (t["tasks"], t["runs"]) == (3, 9)
    assert t["pass_at_1"] == round(2 / 8, 4)  # the run that could not be run is not a try
    assert (t["pick_at_n"], t["oracle_at_n"]) == (round(1 / 3, 4), round(2 / 3, 4))
    assert (t["pick_missed"], t["pick_missed_tasks"]) == (1, ["b"])
    assert s["picks"]["t"]["a"] == {
        "run": 2,
        "resolved": True,
        "reason": "run 2 wins on rule 2 (most fail_to_pass): 1 now pass against 0 now pass for run 3",
    }
    assert s["picks"]["t"]["b"]["run"] == 1
    assert sorted((r.task, r.run) for r in bestof.picked_results(results)) == [
        ("a", 2),
        ("b", 1),
        ("c", 1),
    ]
