"""`$AUTODEV_HOME/index.jsonl` and `autodev runs`: real runs in two repositories, a folder
deleted by hand, prune refusing a live daemon."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import git, run_dir, write_team
from tests.e2e.helpers import (
    PAIR,
    QUESTION_SCRIPT,
    SOLO,
    call,
    done_accepted,
    records_of,
    run_until_idle,
    start_detached,
    state_of,
    step,
    stop_daemon,
    wait_for,
)

WORK = step(
    "solo",
    call("write_file", path="a.txt", content="a\n"),
    call("run_command", command="git add -A && git commit -qm a"),
) + step("solo", call("post", kind="work_done", text="a added"))


def make_repo(root, name: str):
    r = root / name
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    (r / "README.md").write_text("# test repo\n")
    (r / ".git" / "info" / "exclude").write_text(".autodev/\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "start")
    return r


def runs_json(run, cwd, *args) -> list | dict:
    r = run(cwd, "runs", *args, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.mark.full
def test_index_lists_runs_across_repositories_then_prunes(tmp_path, autodev, inproc, autodev_home):
    one, two = make_repo(tmp_path, "one"), make_repo(tmp_path, "two")
    write_team(one, SOLO, WORK + done_accepted("solo"))
    write_team(two, SOLO, done_accepted("solo", "nothing to do"))
    run_until_idle(autodev, one, "add a.txt", expect=0)
    run_until_idle(autodev, two, "check it", expect=0)

    index = records_of(autodev_home / "index.jsonl")
    assert [(r["type"], r["repo"]) for r in index] == [
        ("start", str(one)),
        ("end", str(one)),
        ("start", str(two)),
        ("end", str(two)),
    ]
    assert len({r["id"] for r in index}) == 4
    assert index[1]["state"] == "complete" and index[1]["credited"] == 1

    rows = runs_json(inproc, tmp_path)  # outside any repository
    assert [r["repo"] for r in rows] == [str(two), str(one)]  # newest first
    assert [r["objective"] for r in rows] == ["check it", "add a.txt"]
    assert all(r["state"] == "complete" and not r["missing"] for r in rows)
    assert [r["turns"] for r in rows] == [1, 2] and [r["credited"] for r in rows] == [0, 1]
    assert all(r["tokens"] > 0 and r["duration_sec"] is not None for r in rows)
    text = inproc(tmp_path, "runs", check=True, env={"COLUMNS": "240"}).stdout
    assert "add a.txt" in text and "complete" in text
    narrow = inproc(tmp_path, "runs", check=True, env={"COLUMNS": "80"}).stdout
    assert all(len(line) <= 80 for line in narrow.splitlines()), narrow
    assert "add a.txt" in narrow and "complete" in narrow and "\none " in narrow, narrow

    stats = runs_json(inproc, tmp_path, "stats")
    assert stats["runs"] == 2 and stats["turns"] == 3 and stats["credited"] == 1
    assert stats["tokens"] == sum(r["tokens"] for r in rows)
    # every generation of both runs, the audits' included, is counted under its model
    assert stats["models"]["scripted"]["generations"] == 6
    assert (
        sum(m["prompt_tokens"] + m["completion_tokens"] for m in stats["models"].values()) == stats["tokens"]
    )

    shutil.rmtree(run_dir(two))  # deleted by hand
    rows = runs_json(inproc, tmp_path)
    assert [(r["repo"], r["state"], r["missing"]) for r in rows] == [
        (str(two), "missing", True),
        (str(one), "complete", False),
    ]
    assert rows[0]["turns"] == 1  # from its last end line

    r = inproc(tmp_path, "runs", "prune", "--older-than", "30d", check=True)
    assert "forgot" in r.stdout and str(run_dir(two)) in r.stdout
    assert [r["repo"] for r in runs_json(inproc, tmp_path)] == [str(one)]
    assert run_dir(one).exists()  # not old enough

    r = inproc(tmp_path, "runs", "prune", "--older-than", "0m", check=True)
    assert "removed" in r.stdout and not run_dir(one).exists()
    assert runs_json(inproc, tmp_path) == []
    assert records_of(autodev_home / "index.jsonl") == []


@pytest.mark.full
def test_prune_refuses_a_live_daemon_and_bad_ages(repo, autodev, inproc):
    write_team(repo, PAIR, QUESTION_SCRIPT)
    start_detached(autodev, repo, "pick a colour")
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user", timeout=60)
    r = inproc(repo, "runs", "prune", "--older-than", "0m")
    assert r.returncode == 1 and "is alive" in r.stderr, r.stdout + r.stderr
    assert run_dir(repo).exists()
    rows = runs_json(inproc, repo)
    assert rows[0]["state"] == "awaiting_user" and rows[0]["daemon_pid"]

    r = inproc(repo, "runs", "prune", "--older-than", "soon")
    assert r.returncode == 2 and "--older-than" in r.stderr and "30d" in r.stderr
    stop_daemon(autodev, repo)
