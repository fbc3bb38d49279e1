"""summary.json's figures (pure): Wilson intervals, costs, the audit's false accepts and reopens,
and the paired table with its exact McNemar test."""

from __future__ import annotations

import pytest

from autodev.eval.rows import EvalResult
from autodev.eval.summary import mcnemar_exact, summarize, wilson


def test_wilson_interval_matches_the_textbook_values():
    assert wilson(2, 3) == pytest.approx((0.2077, 0.9385), abs=1e-4)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(10, 10) == pytest.approx((0.7225, 1.0), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_mcnemar_exact():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert mcnemar_exact(3, 3) == 1.0


def row(task, team, resolved, audit="none", cost=0.0, wall=1.0, error=None, state="complete"):
    return EvalResult(task=task, team=team, resolved=resolved, audit=audit, cost_usd=cost,
                      wall_s=wall, error=error, state=state, tokens=10)  # fmt: skip


def test_summary_per_team_and_paired():
    results = [
        row("t1", "a", True, "accepted", 0.5, 2.0),
        row("t2", "a", False, "accepted", 0.5, 4.0),  # a false accept
        row("t3", "a", False, "none", 0.5, 9.0, state="paused"),
        row("t4", "a", False, error="setup failed", state=None),  # not graded, not in the paired table
        row("t1", "b", True, "reopened", 1.0),  # a false reopen
        row("t2", "b", True, "accepted", 1.0),
        row("t3", "b", False, "reopened", 1.0),
        row("t4", "b", False, "none", 1.0),
    ]
    s = summarize(results, ["a", "b"])
    a, b = s["teams"]["a"], s["teams"]["b"]
    assert (a["tasks"], a["graded"], a["errors"], a["resolved"]) == (4, 3, 1, 1)
    assert a["resolved_share"] == pytest.approx(1 / 3, abs=1e-4)
    assert a["cost_per_resolved_usd"] == 1.5 and a["median_wall_s"] == 4.0
    assert (a["audit_false_accepts"], a["audit_false_accept_rate"], a["states"]) == (
        1, 0.5, {"complete": 2, "paused": 1}
    )  # fmt: skip
    assert (b["audit_false_reopens"], b["audit_false_accepts"], b["cost_per_resolved_usd"]) == (1, 0, 2.0)
    assert (b["audit_false_reopen_rate"], a["audit_false_reopen_rate"]) == (
        0.5,
        None,
    )  # 1 of 2; none reopened
    [p] = s["paired"]
    assert (p["a"], p["b"], p["tasks"], p["only_a"], p["only_b"], p["both"], p["neither"]) == (
        "a",
        "b",
        3,
        0,
        1,
        1,
        1,
    )
    assert p["only_b_tasks"] == ["t2"]


def test_no_resolved_task_has_no_cost_per_resolved():
    s = summarize([row("t1", "a", False, cost=0.2)], ["a", "b"])
    assert s["teams"]["a"]["cost_per_resolved_usd"] is None
    assert s["teams"]["b"]["tasks"] == 0 and s["teams"]["b"]["resolved_share"] is None
    assert s["paired"][0]["tasks"] == 0
