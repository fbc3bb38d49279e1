"""`autodev eval` end to end: the real command, the real daemon per run, scripted teams that solve
some smoke tasks and fail others; every grade, the audit's false accepts and reopens, the paired
table, predictions/<team>.jsonl, report.png, and resume after the eval is killed with -9 mid-way.

`make test` runs 3 tasks × 2 teams at --parallel 2 (tests/eval/smoke.py: SUBSET);
AUTODEV_EVAL_FULL=1 (`make eval-smoke`) runs all 12 × 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.eval.smoke import CONFIG, SUBSET, full, grade_flags, scripted_team, smoke_tasks, subset

pytestmark = pytest.mark.e2e


def wrong_fix(task, tmp: Path) -> str:
    """A change that applies and that the audit accepts, but that does not fix the bug."""
    repo = tmp / f"wrong-{task.id}"
    subprocess.run(["git", "clone", "-q", task.repo, str(repo)], check=True)
    f = repo / "versions.py"
    f.write_text(f.read_text().replace("return a > b", "return a >= b"))
    return subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True, check=True).stdout


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


# Eight daemon runs (six, and those the kill cut): about 90 s on two idle cores, far more on a busy machine.
@pytest.mark.full
@pytest.mark.timeout(900)
def test_eval_grades_compares_and_resumes_after_kill_9(suite, tmp_path, autodev):
    tasks_file, solutions = suite
    ids = [t.id for t in smoke_tasks(tasks_file)] if full() else SUBSET[:2] + ["semver-compare"]
    tasks = subset(tasks_file, ids, tasks_file.parent / f"sub-{tmp_path.name}.jsonl")
    by_id = {t.id: t for t in smoke_tasks(tasks_file)}
    half = len(ids) // 2 + 1
    alpha_solves = [i for i in ids[:half] if i != "semver-compare"]
    beta_solves = [i for i in ids[1:] if i != "semver-compare"]
    diffs = lambda solved: {i: (solutions / f"{i}.diff").read_text() for i in solved}  # noqa: E731
    teams = tmp_path / "teams"
    alpha = scripted_team(teams, "alpha", diffs(alpha_solves), audit_accepts=True)
    beta = scripted_team(
        teams, "beta", {**diffs(beta_solves), "semver-compare": wrong_fix(by_id["semver-compare"], tmp_path)},
        audit_accepts=False,
    )  # fmt: skip
    (tmp_path / "config.toml").write_text(CONFIG)
    out = tmp_path / "out"
    args = ["eval", str(tasks), "--team", str(alpha), "--team", str(beta), "--out", str(out),
            "--config", str(tmp_path / "config.toml"), "--parallel", "2", "--max-cost-usd", "5", *grade_flags()]  # fmt: skip

    # First attempt: killed with -9 once a result is in, with runs still in flight.
    p = autodev.popen(tmp_path, *args)
    deadline = time.monotonic() + 240
    while not lines(out / "results.jsonl") and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.1)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    first = (out / "results.jsonl").read_text()
    assert first, p.stderr.read() if p.stderr else ""
    for pid_file in (out / "runs").glob("*/*/daemon.pid"):
        autodev.adopt(
            int(pid_file.read_text().split()[0])
        )  # orphaned daemons die on teardown, whatever happens

    # The same command again: finished runs kept, interrupted ones run again, every run once.
    r = autodev(tmp_path, *args, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "already finished" in r.stdout
    results = lines(out / "results.jsonl")
    assert (out / "results.jsonl").read_text().startswith(first)
    assert sorted((x["task"], x["team"]) for x in results) == sorted(
        (i, t) for i in ids for t in ("alpha", "beta")
    )

    got = {(x["task"], x["team"]): x for x in results}
    for i in ids:
        a, b = got[(i, "alpha")], got[(i, "beta")]
        assert (a["resolved"], b["resolved"]) == (i in alpha_solves, i in beta_solves), (i, a, b)
        assert a["error"] is None and b["error"] is None
        assert (a["state"], a["reason_code"], a["audit"]) == ("complete", "complete", "accepted")
        assert (b["state"], b["reason_code"], b["audit"]) == ("awaiting_user", "question", "reopened")
        assert a["turns"] >= 2 and a["tokens"] > 0 and a["cost_usd"] > 0 and a["wall_s"] > 0
        assert set(a["participants"]) == {"builder", "audit"}
        assert a["cost_usd"] == pytest.approx(sum(p["cost"] for p in a["participants"].values()), abs=1e-5)
    for x in results[len(first.splitlines()) :]:  # one line per run finished by this attempt
        assert f"{'✓' if x['resolved'] else '✗'} {x['task']} · {x['team']} · " in r.stdout

    config = (out / "runs" / ids[0] / "alpha" / "repo" / ".autodev" / "config.toml").read_text()
    assert "maxCostUsd = 5.0" in config and 'sandbox = "off"' in config

    summary = json.loads((out / "summary.json").read_text())
    sa, sb = summary["teams"]["alpha"], summary["teams"]["beta"]
    assert (sa["resolved"], sa["graded"]) == (len(alpha_solves), len(ids))
    assert sa["audit_false_accepts"] == len(ids) - len(alpha_solves)  # accepted every time
    assert (sb["audit_false_accepts"], sb["audit_false_reopens"]) == (0, len(beta_solves))
    lo, hi = sa["resolved_ci95"]
    assert lo < sa["resolved_share"] < hi
    [pair] = summary["paired"]
    assert (pair["only_a"], pair["only_b"], pair["both"], pair["neither"]) == (
        len(set(alpha_solves) - set(beta_solves)),
        len(set(beta_solves) - set(alpha_solves)),
        len(set(alpha_solves) & set(beta_solves)),
        len(set(ids) - set(alpha_solves) - set(beta_solves)),
    )
    assert "paired: alpha vs beta" in r.stdout

    preds = {
        (x["instance_id"], x["model_name_or_path"]): x["model_patch"]
        for team in ("alpha", "beta")
        for x in lines(out / "predictions" / f"{team}.jsonl")
    }
    for team in ("alpha", "beta"):
        assert (
            f"--predictions_path {out / 'predictions' / f'{team}.jsonl'} --run_id autodev-{team}" in r.stdout
        )
    assert len(preds) == 2 * len(ids)
    for i in ids:
        assert preds[(i, "alpha")] == (diffs([i])[i] if i in alpha_solves else "")
    assert "a >= b" in preds[("semver-compare", "beta")]
    assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.timeout(600)
def test_the_wall_cap_stops_a_run_and_it_is_graded_on_what_it_left(suite, tmp_path, autodev):
    tasks_file, solutions = suite
    tasks = subset(tasks_file, ["wordcount-spaces"], tasks_file.parent / f"one-{tmp_path.name}.jsonl")
    teams = tmp_path / "teams"
    teams.mkdir()
    (teams / "slow.script.toml").write_text(
        '[[step]]\nparticipant = "builder"\ncalls = [\n'
        f'  {{ tool = "run_command", args = {{ command = "git apply {solutions}/wordcount-spaces.diff" }} }},\n'
        '  { tool = "run_command", args = { command = "sleep 120" } },\n]\n'
    )
    (teams / "slow.toml").write_text(
        '[[participants]]\nname = "builder"\nmodel = "scripted"\nwrite = true\n\n'
        '[audit]\nmodel = "scripted"\n\n[scripted]\npath = "slow.script.toml"\n'
    )
    (tmp_path / "config.toml").write_text(CONFIG)
    out = tmp_path / "out"
    r = autodev(
        tmp_path, "eval", str(tasks), "--team", str(teams / "slow.toml"), "--out", str(out),
        "--config", str(tmp_path / "config.toml"), "--max-wall-min", "0.15", "--stop-grace-sec", "30", *grade_flags(),
        timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    [x] = lines(out / "results.jsonl")
    assert x["reason_code"] == "wall" and "wall-time cap (0.15 min)" in x["reason"]
    assert x["error"] is None and x["state"] is not None
    assert 9 <= x["wall_s"] < 120
    # graded on what it left: the fix, if its first call ran before the cap (on a loaded machine the
    # daemon may still be starting when the stop comes), else nothing
    patch = (out / "patches" / "wordcount-spaces__slow.diff").read_text()
    assert x["test_exit"] is not None and x["resolved"] is bool(patch) and x["audit"] == "none"
    assert not patch or "text.split()" in patch
