"""autodev's MCP server for agent CLIs, spoken to as a CLI does: a real process over stdio
(initialize, tools/list, tools/call on the turn's real bridge socket), and the answers the MCP
SDK gave for the same tools (the CLIs were checked against those: make real-agents)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys

from autodev.agents import server
from autodev.agents.bridge import Bridge
from autodev.agents.events import Arrival, ToolCall
from autodev.host.hostproc import PYTHON_SAFE


def _talk(messages: list[dict], env: dict) -> list[dict]:
    p = subprocess.run(
        [sys.executable, *PYTHON_SAFE, "-m", "autodev.agents.server"],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    return sorted((json.loads(x) for x in p.stdout.splitlines()), key=lambda r: r["id"])


def test_a_cli_lists_the_tools_and_a_post_reaches_the_daemon_through_the_bridge(tmp_path):
    events: queue.Queue[Arrival] = queue.Queue()
    bridge = Bridge(events)
    seen: list = []

    def daemon() -> None:  # the daemon's side of the bridge: take the call, answer it
        call = events.get(timeout=60)
        assert isinstance(call, ToolCall)
        seen.append((call.tool, call.args))
        call.reply.put("posted as #1; your turn is over")

    import threading

    threading.Thread(target=daemon, daemon=True).start()
    try:
        env = {
            "AUTODEV_AGENT_SOCKET": str(bridge.path),
            "AUTODEV_AGENT_TOKEN": bridge.token,
            "PYTHONSAFEPATH": "1",
        }
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        got = _talk(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                {
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "tools/call",
                    "params": {"name": "post", "arguments": {"kind": "yell", "text": "x"}},
                },
                {"jsonrpc": "2.0", "id": 5, "method": "nope"},
                {
                    "jsonrpc": "2.0",
                    "id": 6,
                    "method": "tools/call",
                    "params": {"name": "post", "arguments": {"kind": "say", "text": "hi"}},
                },
            ],
            env,
        )
    finally:
        bridge.close()
    init, listed, ping, refused, unknown, posted = got
    assert init["result"]["protocolVersion"] == "2025-06-18" and "tools" in init["result"]["capabilities"]
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    assert list(tools) == ["post", "read_thread", "tell_user"]
    post = tools["post"]["inputSchema"]
    assert post["required"] == ["kind", "text"]
    assert post["properties"]["kind"]["enum"] == ["say", "work_done", "handoff", "wait", "gate", "done"]
    assert tools["read_thread"]["annotations"] == {"readOnlyHint": True}
    assert ping["result"] == {}
    assert refused["result"]["isError"] and "kind: must be one of" in refused["result"]["content"][0]["text"]
    assert unknown["error"]["code"] == -32601
    assert posted["result"] == {
        "content": [{"text": "posted as #1; your turn is over", "type": "text"}],
        "isError": False,
        "structuredContent": {"result": "posted as #1; your turn is over"},
    }
    assert seen == [("post", {"kind": "say", "text": "hi"})]


def test_arguments_are_checked_against_the_schema():
    post = server._BY_NAME["post"]
    assert server.check_args(post, {"kind": "say", "text": "hi"}) is None
    assert server.check_args(post, {"kind": "say", "text": "hi", "handoff": None}) is None
    assert server.check_args(post, {"kind": "say"}) == "text: field required"
    assert server.check_args(post, {"kind": "say", "text": 3}) == "text: must be a string"
    assert server.check_args(post, {"kind": "say", "text": "x", "extra": 1}) == "extra: unexpected argument"
    assert (
        server.check_args(server._BY_NAME["read_thread"], {"from_seq": True}) == "from_seq: must be a integer"
    )
    note = server.Request.model_validate({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert server.answer(note) is None
    old = server.answer(
        server.Request.model_validate(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}
        )
    )
    assert old is not None and "result" in old and old["result"] == server._initialize(server.Params())
    assert server._initialize(server.Params())["protocolVersion"] == server.VERSIONS[-1]


def test_the_server_ends_when_its_cli_is_killed_even_with_its_stdin_still_open(tmp_path):
    """A CLI killed mid-call (kill -9) that had started the server in a session of its own: the
    server's stdin is still open (here the test holds the pipe's other end), yet it exits, so it
    stops holding the CLI's stderr, which the daemon reads to the end."""
    import os
    import signal
    import time

    r, w = os.pipe()
    cli = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; "
            f"p = subprocess.Popen([sys.executable, *{PYTHON_SAFE!r}, '-m', 'autodev.agents.server'], "
            f"stdin={r}, stdout=subprocess.DEVNULL, start_new_session=True); "
            "print(p.pid, flush=True); p.wait()",
        ],
        pass_fds=(r,),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONSAFEPATH": "1"},
    )
    os.close(r)
    try:
        assert cli.stdout is not None
        pid = int(cli.stdout.readline())
        time.sleep(0.5)  # the server is up, reading its stdin
        os.kill(pid, 0)
        cli.kill()
        cli.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError("the server outlived its CLI")
        assert cli.stderr is not None and cli.stderr.read() == ""  # the CLI's stderr was let go: EOF
    finally:
        os.close(w)
