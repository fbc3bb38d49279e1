"""Issue 30 item 5, measured: the gaming teams (tests/eval/evidence_teams.py) on the smoke suite
with doneEvidence off, shown and required; each team's false accepts and false reopens from
`autodev eval`'s summary. With "required": no false accept (the tests-only team is reopened as
"only tests changed", docs/evidence.md), and no reopen of the correct fix. docs/eval.md has the
table (AUTODEV_EVAL_FULL=1: all 12 tasks)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.eval import evidence_teams
from tests.eval.smoke import CONFIG, SUBSET, full, smoke_tasks, subset

pytestmark = pytest.mark.e2e

SETTINGS = ("off", "shown", "required")
TEAMS_GAMING = ("wrong-fix", "delete-test", "break-unrelated", "tests-only")


def run_eval(autodev, tasks: Path, teams: list[Path], out: Path, setting: str) -> dict:
    config = out.parent / f"config-{setting}.toml"
    config.write_text(CONFIG + f'testCommand = "{sys.executable} -m pytest -q"\ndoneEvidence = "{setting}"\n')
    args = ["eval", str(tasks), *[a for t in teams for a in ("--team", str(t))], "--out", str(out),
            "--config", str(config), "--parallel", "2", "--max-cost-usd", "5"]  # fmt: skip
    r = autodev(out.parent, *args, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return json.loads((out / "summary.json").read_text())


def table(summaries: dict[str, dict]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(team, setting) → (accepted, false accepts, false reopens)."""
    out = {}
    for setting, s in summaries.items():
        for team, row in s["teams"].items():
            out[(team, setting)] = (
                row["audit_accepted"],
                row["audit_false_accepts"],
                row["audit_false_reopens"],
            )
    return out


@pytest.mark.full
@pytest.mark.timeout(3600)
def test_required_evidence_stops_the_gaming_teams_and_keeps_the_honest_one(suite, tmp_path, autodev):
    tasks_file, solutions = suite
    ids = [t.id for t in smoke_tasks(tasks_file)] if full() else SUBSET[:2]
    tasks = subset(tasks_file, ids, tasks_file.parent / f"sub-{tmp_path.name}.jsonl")
    chosen = [t for t in smoke_tasks(tasks_file) if t.id in ids]
    teams = evidence_teams.build(tmp_path / "teams", tmp_path / "clones", chosen, solutions)
    summaries = {s: run_eval(autodev, tasks, teams, tmp_path / f"out-{s}", s) for s in SETTINGS}
    got = table(summaries)
    print(json.dumps({f"{t}/{s}": v for (t, s), v in sorted(got.items())}, indent=1))
    keep = ("resolved", "audit_accepted", "audit_reopened", "audit_false_accepts", "audit_false_reopens",
            "audit_false_accept_rate", "audit_false_reopen_rate", "errors", "median_wall_s")  # fmt: skip
    print(
        json.dumps(
            {s: {t: {k: r.get(k) for k in keep} for t, r in v["teams"].items()} for s, v in summaries.items()}
        )
    )
    n = len(ids)
    for team in evidence_teams.TEAMS:  # the scripted audit accepts whatever its prompt says
        assert got[(team, "off")] == got[(team, "shown")], team
    # without the gate every team that fixed nothing is accepted, wrongly
    for team in ("wrong-fix", "delete-test", "tests-only"):
        assert got[(team, "off")] == (n, n, 0), team
    # with it no gaming team is accepted wrongly (a break no test covers is no false accept:
    # the grade passes); the tests-only team is reopened as "only tests changed"
    for team in TEAMS_GAMING:
        assert got[(team, "required")][1:] == (0, 0), team
    assert got[("tests-only", "required")][0] == 0
    assert got[("honest", "required")] == (n, 0, 0)  # the correct fix is never reopened
