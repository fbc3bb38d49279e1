"""Budgets with the scripted model's stated prices: a cap pauses the run at the next turn
boundary (reason `budget`, naming the cap and the spend), a message does not reset the spend,
a raised cap continues; two capped runs at once, one killed, leave a consistent index."""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.conftest import thread_of, write_team
from tests.e2e.helpers import (
    BUILDER_REVIEWER,
    SOLO,
    call,
    done_accepted,
    events,
    post,
    records_of,
    run_until_idle,
    start_detached,
    state_of,
    status_json,
    status_text,
    step,
    stop_daemon,
    wait_for,
)
from tests.e2e.test_runs import make_repo, runs_json

# $0.001 per prompt token: a first turn (a system prompt of a few thousand characters) costs
# well over a cent.
PRICE = "[price]\ninput_per_token = 0.001\noutput_per_token = 0.002\n"


@pytest.mark.full
def test_run_cap_pauses_at_the_boundary_and_a_raised_cap_continues(repo, autodev, inproc):
    script = PRICE + post("solo", "say", "step one") + post("solo", "say", "step two") + done_accepted("solo")
    write_team(repo, SOLO, script, config="maxCostUsd = 0.01\n")
    run_until_idle(autodev, repo, "two steps", expect=3)
    st = status_json(inproc, repo)
    assert st["state"] == "paused" and st["reason"]["code"] == "budget"
    spent = st["budget"]["cost"]
    assert spent > 0.01 and st["budget"]["max_cost_usd"] == 0.01
    assert (
        "maxCostUsd ($0.0100) is reached" in st["reason"]["text"] and f"${spent:.4f}" in st["reason"]["text"]
    )
    assert "raise maxCostUsd" in st["reason"]["continue"]
    # the first turn ran whole (its post is on the thread); the second never started
    assert [p["text"] for p in thread_of(repo)] == ["two steps", "step one"]
    gens = events(repo, "generation")
    assert spent == round(sum(g["cost"] for g in gens), 6)  # litellm priced each generation
    assert f"spend ${spent:.4f} of $0.0100 (maxCostUsd)" in status_text(inproc, repo)

    # A message reaches the thread but does not reset the spend: still paused, same spend.
    assert inproc(repo, "send", "keep going").returncode == 0
    run_until_idle(autodev, repo, expect=3)
    st = status_json(inproc, repo)
    assert (st["state"], st["reason"]["code"], st["budget"]["cost"]) == ("paused", "budget", spent)
    assert [p["text"] for p in thread_of(repo)][-1] == "keep going"

    # A raised cap and `resume`: the run continues to the end.
    (repo / ".autodev" / "config.toml").write_text("maxCostUsd = 100.0\n")
    assert inproc(repo, "resume").returncode == 0
    run_until_idle(autodev, repo, expect=0)
    st = status_json(inproc, repo)
    assert st["state"] == "complete" and st["budget"]["cost"] > spent
    assert [p["text"] for p in thread_of(repo)][-3:-1] == ["step two", "finished"]


SLOW = step("solo", call("run_command", command="sleep 30"))


@pytest.mark.full
def test_two_capped_runs_at_once_one_killed_leave_a_consistent_index(tmp_path, autodev, inproc, autodev_home):
    one, two = make_repo(tmp_path, "one"), make_repo(tmp_path, "two")
    # one: a run token cap; two: builder's own cap, and a slow first turn to be killed in.
    write_team(one, SOLO, PRICE + post("solo", "say", "a") + done_accepted("solo"), config="maxTokens = 10\n")
    two_script = (
        PRICE
        + step("builder", call("run_command", command="sleep 30"))
        + post("builder", "say", "slept", handoff="reviewer")
        + post("reviewer", "say", "fine", handoff="builder")
        + done_accepted("builder")
    )
    write_team(two, BUILDER_REVIEWER.replace("write = true", "write = true\nmax_tokens = 10"), two_script)
    start_detached(autodev, one, "one")
    pid_two = start_detached(autodev, two, "two")

    wait_for("one's budget pause", lambda: (state_of(one).get("reason") or {}).get("code") == "budget", 60)
    wait_for("two's slow command", lambda: any(e["name"] == "run_command" for e in events(two, "tool")), 60)
    os.killpg(pid_two, signal.SIGKILL)
    wait_for("two's daemon to die", lambda: status_json(inproc, two)["daemon_pid"] is None)
    assert "maxTokens (10) is reached" in state_of(one)["reason"]["text"]

    rows = {r["repo"]: r for r in runs_json(autodev, tmp_path)}
    assert rows[str(one)]["state"] == "paused" and rows[str(one)]["daemon_pid"]
    assert rows[str(two)]["state"] == "running (daemon died)" and not rows[str(two)]["daemon_pid"]
    stop_daemon(autodev, one)

    # two resumes its interrupted turn, then builder's own cap pauses it before its next turn.
    (two / ".autodev" / "script.toml").write_text(two_script.replace("sleep 30", "true"))
    run_until_idle(autodev, two, expect=3)
    st = state_of(two)
    assert st["reason"]["code"] == "budget" and "builder's max_tokens (10) is reached" in st["reason"]["text"]
    assert [p["text"] for p in thread_of(two)] == ["two", "slept", "fine"]

    index = records_of(autodev_home / "index.jsonl")
    raw = (autodev_home / "index.jsonl").read_text()
    assert raw.endswith("\n") and all(json.loads(line) for line in raw.splitlines())
    assert len({r["id"] for r in index}) == len(index)
    lines = [(r["repo"], r["type"], r["session"]) for r in index]
    for repo, sessions in ((str(one), [1]), (str(two), [1, 2])):
        starts = [s for (rp, t, s) in lines if rp == repo and t == "start"]
        ends = [s for (rp, t, s) in lines if rp == repo and t == "end"]
        assert starts == sessions
        # the killed session of two wrote no end line; every other session did
        assert ends == ([1] if repo == str(one) else [2])
    ends = {r["repo"]: r for r in index if r["type"] == "end"}
    assert ends[str(one)]["state"] == "stopped" and ends[str(one)]["tokens"] >= 10  # `autodev stop`
    assert ends[str(two)]["reason"] == "budget" and ends[str(two)]["tokens"] > 10
    rows = {r["repo"]: r for r in runs_json(autodev, tmp_path)}
    assert rows[str(two)]["state"] == "paused" and rows[str(two)]["turns"] == 2
