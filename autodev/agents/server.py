"""autodev's MCP server for an agent CLI (`python -m autodev.agents.server`, started by the CLI
over stdio): `post`, `read_thread` (read-only) and `tell_user`, each forwarded to the daemon over
the turn's socket ($AUTODEV_AGENT_SOCKET) with its token ($AUTODEV_AGENT_TOKEN). The daemon
checks and applies them exactly as for a model's call."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from autodev.agents import bridge
from autodev.records.base import Move

server = MCPServer("autodev")


def _forward(tool: str, args: dict) -> str:
    path, token = os.environ.get("AUTODEV_AGENT_SOCKET"), os.environ.get("AUTODEV_AGENT_TOKEN")
    if not path or not token:
        return "error: this autodev server was started outside a turn (no AUTODEV_AGENT_SOCKET)"
    try:
        return bridge.call(path, token, tool, {k: v for k, v in args.items() if v is not None})
    except OSError as e:
        return f"error: autodev is not reachable ({e}); your turn may have ended"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def post(kind: Move, text: str, handoff: str | None = None) -> str:
    """Make your one move for this turn on the thread (kind: say, work_done, handoff, wait, gate
    or done). Your first accepted post is your move; stop working and exit after it."""
    return _forward("post", {"kind": kind, "text": text, "handoff": handoff})


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def read_thread(from_seq: int, to_seq: int | None = None) -> str:
    """Full text of thread posts from_seq..to_seq (at most 20 per call)."""
    return _forward("read_thread", {"from_seq": from_seq, "to_seq": to_seq})


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
def tell_user(text: str, hold: str | None = None) -> str:
    """Raise a notice for the human (not a move; at most one per turn)."""
    return _forward("tell_user", {"text": text, "hold": hold})


if __name__ == "__main__":
    from autodev.host import hostproc

    hostproc.harden(None)  # the turn's token is in this process: not readable by others
    server.run()
