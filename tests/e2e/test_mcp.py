"""MCP servers through the real CLI and daemon, with a real stdio server (tests/mcp_server.py):
a participant granted the server's capability gets its tools as srv__TOOL, calls them with the
usual harness records, needs an approved gate for a gateRequiredTools tool, loses them while a
notice holds the capability; a turn killed mid-call is resumed by the annotations (a read-only
tool runs again, a destructive one gets the "interrupted" result); `start` names a server that
cannot start; the server stops with the daemon."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from autodev.harness.recovery import INTERRUPTED
from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import (
    ACCEPT,
    call,
    events,
    post,
    records_of,
    requests_of,
    run_until_idle,
    step,
    team_of_one,
    tool_names,
    tool_results,
    turns_of,
    wait_for,
)
from tests.harness.test_mcp import alive, pids

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


def mcp_team(tmp_path: Path) -> str:
    return team_of_one("solo", 'tools = ["srv"]') + (
        f"""
[mcp.srv]
command = {sys.executable!r}
args = [{SERVER!r}]
env = ["MCP_LOG", "MCP_PID_FILE", "MCP_CHILD_FILE", "MCP_RELEASE", "PASSED_ON", "SRV_TOKEN"]
restart_sec = 0.1
"""
    )


@pytest.fixture
def mcp_env(tmp_path, monkeypatch):
    files = {
        "MCP_LOG": tmp_path / "calls.log",
        "MCP_PID_FILE": tmp_path / "pids",
        "MCP_CHILD_FILE": tmp_path / "children",
        "MCP_RELEASE": tmp_path / "release",
    }
    for k, v in files.items():
        monkeypatch.setenv(k, str(v))
    monkeypatch.setenv("PASSED_ON", "yes")
    monkeypatch.setenv(
        "SRV_TOKEN", "srv-token-0123456789"
    )  # a secret: it reaches the server from the key store
    monkeypatch.setenv("NOT_LISTED", "hidden")
    try:
        yield files
    finally:  # a killed daemon leaves its servers behind: take them down with the test
        for pid in pids(files["MCP_PID_FILE"]) + pids(files["MCP_CHILD_FILE"]):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def calls_log(files) -> list[str]:
    p = files["MCP_LOG"]
    return p.read_text().splitlines() if p.exists() else []


def test_tools_calls_gates_and_holds(repo, autodev, mcp_env, tmp_path):
    gate_text = "I need to call srv__delete_item to remove x"
    script = (
        # turn 1: the tools, the env passed, and a gate-required tool refused
        step(
            "solo",
            call("srv__lookup", key="alpha"),
            call("srv__env_seen", name="PASSED_ON"),
            call("srv__env_seen", name="NOT_LISTED"),
            call("srv__env_seen", name="SRV_TOKEN"),
            call("srv__delete_item", key="x"),
        )
        + post("solo", "gate", gate_text)
        # turn 2, after the approval: one call allowed, the next refused; then a hold
        + step("solo", call("srv__delete_item", key="x"))
        + step("solo", call("srv__delete_item", key="y"))
        + step("solo", call("tell_user", text="check the items, please", hold="srv"))
        + post("solo", "say", "waiting on the user about the items")
        # turn 3: the held tools are gone
        + step("solo", call("srv__lookup", key="omega"))
        + post("solo", "done", "looked the items up")
        + ACCEPT
    )
    config = 'gateRequiredTools = ["srv__delete_*"]\ngateAutoApprove = ["*srv__delete_item*"]\n'
    write_team(repo, mcp_team(tmp_path), script, config)
    run_until_idle(autodev, repo, "tidy the items", expect=0)

    t1, t2, t3 = turns_of(repo, "solo")[:3]
    assert {"srv__lookup", "srv__delete_item", "srv__env_seen"} <= tool_names(t1[0])
    spec = next(t for t in t1[0]["body"]["tools"] if t["function"]["name"] == "srv__lookup")
    assert spec["function"]["parameters"]["required"] == ["key"]
    found, passed, hidden, secret, refused = tool_results(t1[1])
    assert (found, passed, hidden) == ("the first letter", "PASSED_ON=set", "NOT_LISTED=unset")
    assert secret == "SRV_TOKEN=set"
    assert refused.startswith("error: Refused: srv__delete_item matches gateRequiredTools")
    assert tool_results(t2[1])[-1] == "deleted x"
    assert "gateRequiredTools" in tool_results(t2[2])[-1]
    assert calls_log(mcp_env) == ["lookup alpha started", "delete x started", "delete x done"]

    assert not any(n.startswith("srv__") for n in tool_names(t3[0])), "the hold did not remove the tools"
    assert "read_file" in tool_names(t3[0])
    held = tool_results(t3[1])[-1]
    assert held.startswith("error: srv__lookup is not available: its capability is held")

    hl = records_of(run_dir(repo) / "harness.jsonl")
    started = {(r["name"], r["replay_safe"]) for r in hl if r["type"] == "tool_started"}
    assert ("srv__lookup", True) in started and ("srv__delete_item", False) in started
    assert [e["server"] for e in events(repo, "mcp_server_started")] == ["srv"]
    assert [e["name"] for e in events(repo, "tool_refused")] == ["srv__delete_item", "srv__delete_item"]
    # the daemon has exited: its server and the server's own child are gone
    server, child = pids(mcp_env["MCP_PID_FILE"])[0], pids(mcp_env["MCP_CHILD_FILE"])[0]
    wait_for("the server group to stop", lambda: not alive(server) and not alive(child), 30)


@pytest.mark.full
@pytest.mark.parametrize(
    "tool,first,expect_rerun",
    [("srv__delete_item", "delete slow started", False), ("srv__lookup", "lookup slow started", True)],
)
def test_a_turn_killed_mid_call_resumes_by_the_annotations(
    repo, autodev, mcp_env, tmp_path, tool, first, expect_rerun
):
    script = step("solo", call(tool, key="slow")) + post("solo", "done", "handled the slow item") + ACCEPT
    write_team(repo, mcp_team(tmp_path), script)
    p = autodev.popen(repo, "start", "--foreground", "--until-idle", "handle the slow item")
    wait_for("the call to start", lambda: first in calls_log(mcp_env), 90)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    # The killed daemon's server is still blocked in the call, its child beside it.
    server, child = pids(mcp_env["MCP_PID_FILE"])[0], pids(mcp_env["MCP_CHILD_FILE"])[0]
    assert alive(child)
    mcp_env["MCP_RELEASE"].write_text("go")

    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    results = tool_results(requests_of(repo, "solo")[-1])
    if expect_rerun:
        assert results == ["no entry for slow"]
        assert calls_log(mcp_env) == [first, first]
    else:
        assert results == [INTERRUPTED]
        # (the killed daemon's server may finish the call it had: that is why it is "interrupted")
        assert [c for c in calls_log(mcp_env) if "started" in c] == [first], "a destructive tool ran twice"
        assert [e["name"] for e in events(repo, "tool_interrupted")] == [tool]
    assert [(x["from"], x["kind"]) for x in thread_of(repo)][-2:] == [("solo", "done"), ("audit", "say")]
    # the next daemon stopped what the killed one left running
    assert [e["server"] for e in events(repo, "mcp_server_reaped")] == ["srv"]
    assert not alive(server) and not alive(child)


def test_start_names_a_server_that_cannot_start(repo, inproc):
    team = team_of_one("solo", 'tools = ["gh"]') + '\n[mcp.gh]\ncommand = "no-such-mcp-server-xyz"\n'
    write_team(repo, team, post("solo", "done", "x") + ACCEPT)
    r = inproc(repo, "start", "go")
    assert r.returncode != 0
    assert "MCP server 'gh': command 'no-such-mcp-server-xyz' was not found on PATH" in r.stderr
    assert "[mcp.gh]" in r.stderr  # the fix


def test_a_server_that_fails_in_the_daemon_is_reported_by_start(repo, autodev):
    """A mistyped argument: the server's own words and its log's path reach the user, exit 2."""
    said = "No such option '--repositry'. Did you mean '--repository'?"
    code = f"import sys; print({said!r}, file=sys.stderr); raise SystemExit(4)"
    args = json.dumps(["-c", code])
    team = (
        team_of_one("solo", 'tools = ["bad"]')
        + f"\n[mcp.bad]\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n"
    )
    write_team(repo, team, post("solo", "done", "x") + ACCEPT)
    r = autodev(repo, "start", "go")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "MCP server 'bad'" in r.stderr and "failed to start" in r.stderr and "SystemExit(4)" in r.stderr
    assert f"its stderr, last lines:\n    {said}" in r.stderr, r.stderr
    assert f"full log: {run_dir(repo) / 'mcp-bad.log'}" in r.stderr
