"""A real stdio MCP server for the tests, written with the official SDK.

Run as ``python tests/mcp_server.py``. Its tools:
- ``lookup(key)``: readOnlyHint; answers from a fixed table.
- ``delete_item(key)``: destructiveHint.
Both append a line to $MCP_LOG when they start, and when key is "slow" wait until the file named
by $MCP_RELEASE exists (so a test can kill a call mid-way).
- ``env_seen(name)``: whether the variable reached the server.
- ``fetch(url)``: an HTTP GET, answering the status or why it failed (the network confinement).
It appends its pid to $MCP_PID_FILE at each start, and starts a child (`sleep`) in its process
group whose pid it appends to $MCP_CHILD_FILE, so a test can check that stopping it stops the group.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("testsrv")
TABLE = {"alpha": "the first letter", "omega": "the last letter"}


def _log(line: str) -> None:
    if os.environ.get("MCP_LOG"):
        with open(os.environ["MCP_LOG"], "a") as f:
            f.write(line + "\n")


def _hold_if_slow(key: str) -> None:
    if key == "slow":
        release = Path(os.environ["MCP_RELEASE"])
        while not release.exists():
            time.sleep(0.05)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """Look a key up in the table."""
    _log(f"lookup {key} started")
    _hold_if_slow(key)
    return TABLE.get(key, f"no entry for {key}")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_item(key: str) -> str:
    """Delete an item (destructive)."""
    _log(f"delete {key} started")
    _hold_if_slow(key)
    _log(f"delete {key} done")
    return f"deleted {key}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def env_seen(name: str) -> str:
    """Whether an environment variable reached the server."""
    return f"{name}={'set' if name in os.environ else 'unset'}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def fetch(url: str) -> str:
    """GET a URL; the status, or the error that stopped it."""
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return f"HTTP {r.status}"
    except OSError as e:
        return f"failed: {e}"


if __name__ == "__main__":
    if os.environ.get("MCP_PID_FILE"):
        with open(os.environ["MCP_PID_FILE"], "a") as f:
            f.write(f"{os.getpid()}\n")
    if os.environ.get("MCP_CHILD_FILE"):
        child = subprocess.Popen(["sleep", "300"])
        with open(os.environ["MCP_CHILD_FILE"], "a") as f:
            f.write(f"{child.pid}\n")
    server.run()
