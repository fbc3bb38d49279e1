"""The team's MCP servers through the real SDK and a real stdio server (tests/mcp_server.py):
listing with annotations, calling, only the listed variables passed, restart after the server
is killed (its tools answer "unavailable" meanwhile), and stopping its whole process group."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from autodev.config import McpServer
from autodev.errors import ToolError, ToolSetupError
from autodev.harness.mcp import McpHub, start_problem, tool_name
from autodev.harness.registry import ToolEnv

# These tests start programs as subprocesses (see the e2e marker in pyproject.toml).
pytestmark = pytest.mark.e2e

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def pids(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def wait_until(what: str, check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_PID_FILE", str(tmp_path / "pids"))
    monkeypatch.setenv("MCP_CHILD_FILE", str(tmp_path / "children"))
    monkeypatch.setenv("PASSED_ON", "yes")
    monkeypatch.setenv("NOT_LISTED", "secret-value")
    cfg = McpServer(
        command=sys.executable,
        args=[SERVER],
        env=["MCP_PID_FILE", "MCP_CHILD_FILE", "PASSED_ON"],
        restart_sec=0.1,
    )
    h = McpHub({"srv": cfg}, repo=tmp_path, ping_sec=0.1)
    try:
        yield h
    finally:
        h.stop()
        for pid in pids(tmp_path / "pids") + pids(tmp_path / "children"):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_tools_are_listed_with_their_annotations_and_called(hub, tmp_path):
    hub.start()
    tools = {t.name: t for t in hub.tools()}
    assert set(tools) == {"srv__lookup", "srv__delete_item", "srv__env_seen", "srv__fetch"}
    assert tools["srv__lookup"].replay_safe and not tools["srv__delete_item"].replay_safe
    assert {t.capability for t in tools.values()} == {"srv"}
    params = tools["srv__lookup"].spec()["function"]["parameters"]
    assert params["required"] == ["key"] and params["properties"]["key"]["type"] == "string"
    assert tools["srv__lookup"].call(ToolEnv(), {"key": "alpha"}) == "the first letter"
    # only the variables the team lists reach the server
    assert hub.call("srv", "env_seen", {"name": "PASSED_ON"}) == "PASSED_ON=set"
    assert hub.call("srv", "env_seen", {"name": "NOT_LISTED"}) == "NOT_LISTED=unset"
    # a failing call is an error the model reads, naming the tool
    with pytest.raises(ToolError, match="srv__lookup"):
        hub.call("srv", "lookup", {})
    assert [e.type for e in hub.drain()] == ["mcp_server_started"]


def test_a_killed_server_is_unavailable_then_restarted(hub, tmp_path):
    hub.start()
    first = pids(tmp_path / "pids")[0]
    os.kill(first, signal.SIGKILL)
    with pytest.raises(ToolError, match="srv__lookup is unavailable: its MCP server 'srv'"):
        wait_until("the death to be seen", lambda: hub.call("srv", "lookup", {"key": "alpha"}) and None, 5)
    wait_until("a second server", lambda: len(pids(tmp_path / "pids")) == 2)
    assert wait_until("the restarted server to answer", lambda: _try(hub)) == "the last letter"
    kinds = [e.type for e in hub.drain()]
    assert (
        kinds[0] == "mcp_server_started"
        and "mcp_server_down" in kinds
        and kinds[-1] == "mcp_server_restarted"
    )


def _try(hub):
    try:
        return hub.call("srv", "lookup", {"key": "omega"})
    except ToolError:
        return None


def test_stop_ends_the_server_and_its_process_group(hub, tmp_path):
    hub.start()
    server, child = pids(tmp_path / "pids")[0], pids(tmp_path / "children")[0]
    assert alive(server) and alive(child)
    hub.stop()
    wait_until(
        "the server and its child to be gone", lambda: not alive(server) and not alive(child), 30
    )  # generous: seen slow on a loaded 2-core machine


def test_a_server_that_cannot_start_is_named_with_its_command_and_fix(tmp_path):
    cfg = McpServer(
        command=sys.executable, args=["-c", "import sys; print('bad flag', file=sys.stderr); sys.exit(3)"]
    )
    h = McpHub({"broken": cfg}, repo=tmp_path, log_dir=tmp_path)
    with pytest.raises(ToolSetupError) as e:
        h.start(timeout=20)
    msg = str(e.value)
    assert "MCP server 'broken'" in msg and "sys.exit(3)" in msg and "failed to start" in msg
    assert (
        "its stderr, last lines:\n    bad flag" in msg and f"full log: {tmp_path / 'mcp-broken.log'}" in msg
    )
    assert e.value.exit_code == 2
    assert "fix:" in msg and "[mcp.broken]" in msg
    assert start_problem("gh", "no-such-mcp-server-xyz", tmp_path) == (
        "MCP server 'gh': command 'no-such-mcp-server-xyz' was not found on PATH"
    )
    assert start_problem("gh", sys.executable, tmp_path) is None


def test_tool_names_are_prefixed_and_safe_for_providers():
    assert tool_name("github", "merge_pull_request") == "github__merge_pull_request"
    assert tool_name("fs", "read.file/v2") == "fs__read_file_v2"


def test_without_the_network_a_server_reaches_no_address(tmp_path):
    """commandNetwork = false (issue 20, item 7): a server the team starts runs in a network
    namespace of its own, so a tool cannot reach even a port on the host's loopback; a server
    whose config says network = true (or a config with commandNetwork = true) reaches it."""
    import http.server
    import threading

    from autodev.guard import sandbox

    box = sandbox.resolve("auto")
    if not box.active:
        pytest.skip(f"no sandbox here: {box.problem}")

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ok)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_port}/"
    servers = {
        "closed": McpServer(command=sys.executable, args=[SERVER]),
        "open": McpServer(command=sys.executable, args=[SERVER], network=True),
    }
    hub = McpHub(servers, repo=tmp_path, network=False, offline=box.offline)
    try:
        hub.start()
        assert hub.call("open", "fetch", {"url": url}) == "HTTP 204"
        closed = hub.call("closed", "fetch", {"url": url})
        assert closed.startswith("failed:"), closed
    finally:
        hub.stop()
    both_open = McpHub({"closed": servers["closed"]}, repo=tmp_path, network=True, offline=box.offline)
    try:
        both_open.start()
        assert both_open.call("closed", "fetch", {"url": url}) == "HTTP 204"
    finally:
        both_open.stop()
        srv.shutdown()
