"""What `autodev eval` prints while it runs and at the end: after a resume the count covers every
run of the plan (as "resolved" does); piped, a line per finished run with the bar's figures and
tables with every cell whole; a tokens column. Real evals whose tasks' setups fail (each run is an
`error` at once, no daemon), through the real driver."""

from __future__ import annotations

import io
import json
import re

from rich.console import Console

from autodev.eval.driver import load_plan, run_eval
from autodev.eval.tasks import Selection
from autodev.eval.teams import RunSettings
from tests.conftest import git
from tests.eval.smoke import scripted_team

TEAM = "a-team-with-a-rather-long-name-for-any-table"


def setup(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    line = {"repo": str(repo), "base_commit": "main", "problem_statement": "p", "test_command": "true",
            "setup": "exit 3"}  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": f"task-{n}", **line}) + "\n" for n in (1, 2, 3)))
    return tasks, scripted_team(tmp_path / "teams", TEAM, {}, True)


def run(tasks, team, out, terminal: bool, limit: int | None = None) -> str:
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=terminal, width=120 if terminal else None)
    plan = load_plan(tasks, [team], out, RunSettings(), selection=Selection(limit=limit))
    assert run_eval(plan, console=con) == 1  # every run an error
    return buf.getvalue()


def test_piped_a_line_per_run_counted_over_the_whole_plan_and_whole_cells(tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    tasks, team = setup(tmp_path)
    first = run(tasks, team, tmp_path / "out", terminal=False, limit=1)
    assert f"[1/1] ! task-1 · {TEAM} · not run: the setup command exited 3" in first
    out = run(tasks, team, tmp_path / "out", terminal=False)
    assert "1 already finished" in out and f"3 tasks × 1 team ({TEAM})" in out
    done = re.findall(r"^\[(\d)/(\d)\] ! (task-\d) · ", out, re.M)
    assert done == [("2", "3", "task-2"), ("3", "3", "task-3")], out
    assert out.count("(so far 0 resolved · $0.0000 spent)") == 2
    # The table, piped: every cell whole, a tokens column.
    assert "…" not in out, out
    header = next(line for line in out.splitlines() if "cost/resolved" in line)
    assert "tokens" in header and "median wall" in header and "audit false acc." in header
    assert re.search(rf"│ {TEAM} +│ 0/0 \(3 not run\) │", out), out


def test_on_a_terminal_the_bar_counts_what_an_earlier_run_finished(tmp_path):
    tasks, team = setup(tmp_path)
    run(tasks, team, tmp_path / "out", terminal=True, limit=1)
    out = run(tasks, team, tmp_path / "out", terminal=True)
    assert "3/3" in out and "2/2" not in out
    assert "[2/3] ! task-2" in out and "[3/3] ! task-3" in out
