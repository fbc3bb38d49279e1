"""Every tool is cut by `stop` and the turn's deadline: the file tools (a FIFO, a huge file, a
folder walk), an MCP tool that never answers, and a browser page that never loads. Each stuck
call runs in a thread with a bound, so a regression fails here instead of hanging the suite."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from autodev.config import McpServer
from autodev.errors import ToolError
from autodev.harness import browser, browser_tools
from autodev.harness.context import Logs, Models, Toolbox, TurnContext, TurnResult, TurnToolEnv, Who
from autodev.harness.mcp import McpHub
from autodev.harness.registry import ToolEnv
from autodev.harness.tools import Workspace
from autodev.store.events import Events
from autodev.store.journal import Journal
from autodev.store.thread import Thread

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


def ws(repo: Path) -> Workspace:
    return Workspace(repo, write=True, command_timeout=20)


def with_browser(w: Workspace, b: browser.Browser, tmp: Path) -> TurnToolEnv:
    """A turn's tool call whose participant was granted the browser `b`."""
    ctx = TurnContext(
        Who("r1", 1, "builder", can_write=True, team_writers={"builder": True}, repo=w.repo),
        Logs(
            Thread(tmp / "thread.jsonl"), Events(tmp / "events.jsonl", "r1"), Journal(tmp / "harness.jsonl")
        ),
        Models([], "", ""),
        Toolbox(w, browser=b),
    )
    return TurnToolEnv(workspace=w, turn=ctx, result=TurnResult(None))


def within(seconds: float, fn, *args) -> str:
    """fn(*args) as text (a ToolError's message too), or fail when it takes over `seconds`."""
    got: dict = {}

    def work() -> None:
        try:
            got["out"] = fn(*args)
        except ToolError as e:
            got["out"] = f"ToolError: {e}"

    t = threading.Thread(target=work, daemon=True)
    began = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn} was not cut within {seconds} s"
    got["seconds"] = time.monotonic() - began
    return got["out"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


# ---------------------------------------------------------------- the file tools


def test_no_file_tool_waits_on_a_fifo(repo):
    os.mkfifo(repo / "pipe")
    w = ws(repo)
    for name, args in [
        ("read_file", {"path": "pipe"}),
        ("write_file", {"path": "pipe", "content": "x"}),  # open() for writing waited for a reader
        ("edit_file", {"path": "pipe", "old": "a", "new": "b"}),
    ]:
        out = within(5, w.call, name, args)
        assert out.startswith(f"ToolError: {name}:"), out
        assert "regular file" in out or "does not exist" in out


def test_a_huge_file_is_read_in_chunks_that_stop_and_the_deadline_cut(repo):
    (repo / "big.log").write_bytes(b"".join(b"%07d " % i + b"x" * 92 + b"\n" for i in range(60_000)))
    w = ws(repo)
    out = within(20, w.call, "read_file", {"path": "big.log", "offset": 59_999, "limit": 5})
    assert out.startswith("big.log: 60000 lines; showing 59999-60000")
    assert "59998 " in out and "59999 " in out

    w.limit(None, lambda: True)
    assert within(5, w.call, "read_file", {"path": "big.log"}) == (
        "ToolError: read_file: stopped: the user is stopping the run"
    )
    w = ws(repo)
    w.limit(time.monotonic() - 1)
    out = within(5, w.call, "read_file", {"path": "big.log"})
    assert out == "ToolError: read_file: stopped: the turn's time (turnTimeoutMin) ran out"


def test_a_line_of_megabytes_shows_its_head_and_length(repo):
    (repo / "one.txt").write_text("é" * 3_000_000 + "\nshort\r\n")
    out = ws(repo).call("read_file", {"path": "one.txt"})
    first, second = out.splitlines()[1:3]
    assert first == "1\t" + "é" * 2000 + " [... line cut; 3000000 characters]"
    assert second == "2\tshort"


def test_edit_file_refuses_a_file_too_big_to_hold(repo):
    with open(repo / "huge.txt", "wb") as f:
        f.truncate(40 << 20)  # sparse: costs no disk
    out = within(5, ws(repo).call, "edit_file", {"path": "huge.txt", "old": "a", "new": "b"})
    assert "larger than 32 MiB" in out and "run_command" in out


def test_a_folder_walk_is_cut(repo):
    for i in range(30):
        (repo / f"d{i}").mkdir()
    w = ws(repo)
    assert "30 entries" in w.call("list_files", {"depth": 1})
    w.limit(None, lambda: True)
    out = within(5, w.call, "list_files", {})
    assert out.startswith("ToolError: list_files: stopped")


# ---------------------------------------------------------------- MCP and the browser


@pytest.mark.e2e
def test_an_mcp_tool_that_never_answers_is_cut(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("MCP_RELEASE", str(tmp_path / "never"))  # `slow` waits for this file
    monkeypatch.setenv("MCP_PID_FILE", str(tmp_path / "pids"))
    cfg = McpServer(
        command=sys.executable, args=[SERVER], env=["MCP_RELEASE", "MCP_PID_FILE"], timeout_sec=300
    )
    hub = McpHub({"srv": cfg}, repo=repo, ping_sec=0.1)
    try:
        hub.start()
        (lookup,) = [t for t in hub.tools() if t.name == "srv__lookup"]
        w = ws(repo)
        asked = time.monotonic()
        w.limit(None, lambda: time.monotonic() - asked > 0.5)
        out = within(10, lookup.call, ToolEnv(workspace=w), {"key": "slow"})
        assert out == "ToolError: srv__lookup: stopped: the user is stopping the run"
        w = ws(repo)
        w.limit(time.monotonic() + 0.5)
        out = within(10, lookup.call, ToolEnv(workspace=w), {"key": "slow"})
        assert out.startswith("ToolError: srv__lookup: no answer within 0.")
        assert lookup.call(ToolEnv(workspace=ws(repo)), {"key": "alpha"}) == "the first letter"  # still up
    finally:
        hub.stop()
        for pid in (tmp_path / "pids").read_text().split() if (tmp_path / "pids").exists() else []:
            try:
                os.killpg(int(pid), 9)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture
def silent_server():
    """A TCP server that accepts connections and never answers: a page that never loads."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            accepted.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/", accepted
    finally:
        sock.close()
        for c in accepted:
            c.close()


@pytest.mark.e2e
def test_a_page_that_never_loads_is_cut_and_the_browser_starts_afresh(repo, tmp_path, silent_server):
    why = browser.missing()
    if why:
        pytest.skip(f"needs a browser: {why}; {browser.INSTALL_HINT}")
    url, accepted = silent_server
    b = browser.Browser(tmp_path / "shots", timeout_sec=120)
    (open_tool,) = [t for t in browser_tools.BROWSER_TOOLS if t.name == "browser_open"]
    try:
        w = ws(repo)
        w.limit(None, lambda: bool(accepted))  # `stop` once the page is loading
        out = within(30, open_tool.call, with_browser(w, b, tmp_path), {"url": url})
        assert out.startswith("ToolError: browser_open: stopped: the run is stopping; the browser was closed")
        assert b._page is None
        w = ws(repo)
        w.limit(time.monotonic() + 3)  # the deadline: Playwright's own wait gets the time left
        out = within(30, open_tool.call, with_browser(w, b, tmp_path), {"url": url})
        assert out.startswith("ToolError: browser_open: "), out
    finally:
        b.close()
