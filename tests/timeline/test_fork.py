"""`autodev fork SEQ --into DIR`: a new worktree and run from post SEQ; both runs go on at once,
each with its own daemon; `runs` shows the lineage."""

from __future__ import annotations

import json

import pytest

from autodev.store.paths import RunPaths
from tests.conftest import git, thread_of
from tests.e2e.helpers import wait_for
from tests.timeline.conftest import copy_run


def state_of(repo) -> dict:
    return json.loads(RunPaths(repo).state.read_text())


@pytest.mark.full
def test_fork_then_both_runs_go_on_with_their_own_daemons(recorded_run, tmp_path, autodev, inproc):
    repo = copy_run(recorded_run, tmp_path / "repo")
    original = thread_of(repo)
    into = tmp_path / "fork"
    r = inproc(repo, "fork", "3", "--into", str(into))
    assert r.returncode == 0, r.stdout + r.stderr
    assert git(into, "rev-parse", "HEAD").strip() == original[1]["head"]
    assert not (into / "b.txt").exists() and (into / "a.txt").exists()
    assert thread_of(into) == original[:3]
    st = state_of(into)
    assert st["forked_from"] == {"run": state_of(repo)["run_id"], "seq": 3, "repo": str(repo)}
    assert st["run_id"] != state_of(repo)["run_id"]

    # Both go on at once: the original answers its question, the fork redoes b.
    assert inproc(repo, "send", "go on").returncode == 0
    assert autodev(repo, "start").returncode == 0
    assert autodev(into, "start").returncode == 0
    for where in (repo, into):
        autodev.adopt(wait_for("a daemon", lambda w=where: state_of(w).get("pid")))
    wait_for(
        "both daemons at once", lambda: all(state_of(w).get("daemon") == "running" for w in (repo, into))
    )
    for where in (repo, into):
        wait_for("complete", lambda w=where: state_of(w)["state"] == "complete", timeout=240)
    forked = thread_of(into)
    assert [(p["from"], p["kind"]) for p in forked[3:]] == [
        ("builder", "work_done"),
        ("reviewer", "done"),
        ("audit", "say"),
    ]
    assert (into / "c.txt").exists() and (repo / "b.txt").exists() and not (repo / "c.txt").exists()
    assert thread_of(repo)[:5] == original  # the original run is untouched by the fork

    wait_for("the daemons to end", lambda: all(state_of(w).get("daemon") == "stopped" for w in (repo, into)))
    listing = json.loads(inproc(repo, "runs", "--json", check=True).stdout)
    fork_row = next(r for r in listing if r["run"] == st["run_id"])
    assert fork_row["forked_from"]["seq"] == 3
    shown = inproc(repo, "runs", check=True).stdout
    assert f"fork of {state_of(repo)['run_id']}@3" in shown
