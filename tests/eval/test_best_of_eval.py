"""`autodev eval --best-of 3` on the smoke suite (issue 34 item 4), with a scripted team whose
runs differ by run index (`runs = [...]` steps; AUTODEV_RUN_INDEX): run 1 breaks the project, run
2 applies the reference fix, with a regression test where it has one, run 3 writes a note and
changes nothing that matters. Every run, and every test run, in the sandbox.

- wordcount-spaces: run 2's regression test makes the evidence separate the runs: the pick is
  run 2, which resolved it (pick = oracle).
- roman-parse: run 2 fixes it without a test, so the evidence cannot tell its fix from run 3's
  note; the smaller diff wins and the pick misses the resolved run (counted).

pick@3 = 1/2 > pass@1 = 2/6; oracle@3 = 2/2; one pick missed. docs/eval.md has the table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from autodev.guard import sandbox
from tests.eval.smoke import PRICE, TEAM, subset

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap"),
]

TASKS = ["wordcount-spaces", "roman-parse"]


def hidden_test(task: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "evals"))
    try:
        from smoke_tasks import TASKS as ALL
    finally:
        sys.path.pop(0)
    [t] = [t for t in ALL if t["id"] == task]
    [text] = t["hidden"].values()
    return text


def best_of_team(folder: Path, solutions: Path) -> Path:
    sol = folder / "best-of-solutions"
    sol.mkdir(parents=True)
    for task in TASKS:
        (sol / f"{task}.diff").write_text((solutions / f"{task}.diff").read_text())
    (sol / "wordcount-spaces.test.py").write_text(hidden_test("wordcount-spaces"))
    fix = (
        f'for p in {sol}/*.diff; do if git apply --check "$p" 2>/dev/null; then git apply "$p"; '
        f't="${{p%.diff}}.test.py"; if [ -f "$t" ]; then cp "$t" tests/test_regression.py; fi; fi; done'
    )
    commit = "; git add -A && git commit -qm work || true"
    scripts = {
        1: "for f in *.py; do echo 'raise SystemExit(1)' >> \"$f\"; done",  # breaks every test
        2: fix,
        3: "echo 'looked at it' > NOTES.md",
    }
    steps = "".join(
        f"""
[[step]]
participant = "builder"
runs = [{k}]
calls = [{{ tool = "run_command", args = {{ command = {json.dumps(cmd + commit)} }} }}]
"""
        for k, cmd in scripts.items()
    )
    script = (
        PRICE
        + steps
        + """
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "done", text = "the task is done" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""
    )
    (folder / "varied.script.toml").write_text(script)
    team = folder / "varied.toml"
    team.write_text(TEAM.format(script="varied.script.toml"))
    return team


def write_config(tmp_path: Path) -> None:
    """The eval's config.toml: every run and test run in bubblewrap, this Python and the team's
    files shown to it, pytest as the evidence's command."""
    read = json.dumps(sorted({sys.prefix, sys.base_prefix, str(tmp_path / "teams")}))
    (tmp_path / "config.toml").write_text(
        f'sandbox = "bwrap"\nsandboxRead = {read}\ntestCommand = "{sys.executable} -m pytest -q"\n'
        "waitFirstSec = 0.1\nwaitCapSec = 0.2\n"
    )


@pytest.mark.timeout(900)
def test_eval_best_of_three_reports_pick_pass_and_oracle(suite, tmp_path, autodev):
    tasks_file, solutions = suite
    tasks = subset(tasks_file, TASKS, tasks_file.parent / f"best-of-{tmp_path.name}.jsonl")
    team = best_of_team(tmp_path / "teams", solutions)
    write_config(tmp_path)
    out = tmp_path / "out"
    args = ["eval", str(tasks), "--team", str(team), "--out", str(out), "--best-of", "3",
            "--config", str(tmp_path / "config.toml"), "--parallel", "2", "--max-cost-usd", "5"]  # fmt: skip
    r = autodev(tmp_path, *args, timeout=800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    got = {(x["task"], x["run"]): x for x in results}
    assert sorted(got) == sorted((t, k) for t in TASKS for k in (1, 2, 3))
    for t in TASKS:
        assert [got[(t, k)]["resolved"] for k in (1, 2, 3)] == [False, True, False], t
        assert got[(t, 1)]["evidence"]["counts"]["pass_to_fail"] > 0
        assert got[(t, 3)]["changed_lines"] == 1
    assert got[("wordcount-spaces", 2)]["evidence"]["counts"]["fail_to_pass"] == 2
    assert got[("roman-parse", 2)]["evidence"]["counts"]["fail_to_pass"] == 0
    assert (out / "runs" / "roman-parse" / "varied@2" / "repo").is_dir()
    assert (out / "patches" / "roman-parse__varied@3.diff").read_text().count("+looked at it") == 1

    summary = json.loads((out / "summary.json").read_text())
    b = summary["best_of"]["teams"]["varied"]
    assert (b["tasks"], b["runs"]) == (2, 6)
    assert (b["pick_at_n"], b["pass_at_1"], b["oracle_at_n"]) == (0.5, 0.3333, 1.0)
    assert b["pick_at_n"] > b["pass_at_1"]
    assert (b["pick_missed"], b["pick_missed_tasks"]) == (1, ["roman-parse"])
    picks = summary["best_of"]["picks"]["varied"]
    assert picks["wordcount-spaces"]["run"] == 2 and picks["wordcount-spaces"]["resolved"]
    assert picks["wordcount-spaces"]["reason"].startswith("run 2 wins on rule 2 (most fail_to_pass)")
    assert picks["roman-parse"]["run"] == 3
    assert picks["roman-parse"]["reason"].startswith("run 3 wins on rule 4 (fewest changed lines)")
    assert "best of 3" in r.stdout and "pick@N" in r.stdout and "#2" in r.stdout
    # predictions: one line per instance, the picked run's patch
    preds = [json.loads(x) for x in (out / "predictions" / "varied.jsonl").read_text().splitlines()]
    assert sorted(p["instance_id"] for p in preds) == sorted(TASKS)
    [notes] = [p for p in preds if p["instance_id"] == "roman-parse"]
    assert "NOTES.md" in notes["model_patch"]

    # the same command again resumes: nothing runs twice
    again = autodev(tmp_path, *args, timeout=300)
    assert again.returncode == 0 and "6 already finished" in again.stdout
    assert (out / "results.jsonl").read_text().count("\n") == 6
