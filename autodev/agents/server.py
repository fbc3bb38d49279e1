"""autodev's MCP server for an agent CLI (`python -m autodev.agents.server`, started by the CLI
over stdio): `post`, `read_thread` (read-only) and `tell_user`, each forwarded to the daemon over
the turn's socket ($AUTODEV_AGENT_SOCKET) with its token ($AUTODEV_AGENT_TOKEN). The daemon
checks and applies them exactly as for a model's call.

It speaks MCP's stdio transport itself (JSON-RPC, one message a line: initialize, ping,
tools/list, tools/call) instead of importing the MCP SDK: the SDK took seconds to import, and a
CLI that does not wait that long for its servers (Codex in exec mode) asked its model before
`post` was listed, so the move was an "unsupported call". The answers are the ones the SDK gave
for these three tools (tests/agents/test_server.py keeps them so).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any, get_args

from autodev.agents import bridge
from autodev.records.base import Move

# The versions of the protocol this server answers in; a client asking for another gets the newest.
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def _opt(kind: str, title: str) -> dict:
    return {"anyOf": [{"type": kind}, {"type": "null"}], "default": None, "title": title}


def _tool(name: str, description: str, props: dict, required: list[str], hints: dict) -> dict:
    return {
        "annotations": hints,
        "description": description,
        "inputSchema": {
            "properties": props,
            "required": required,
            "type": "object",
            "title": f"{name}Arguments",
        },
        "name": name,
        "outputSchema": {
            "properties": {"result": {"title": "Result", "type": "string"}},
            "required": ["result"],
            "type": "object",
            "title": f"{name}Output",
        },
    }


TOOLS = [
    _tool(
        "post",
        "Make your one move for this turn on the thread (kind: say, work_done, handoff, wait, gate\n"
        "    or done). Your first accepted post is your move; stop working and exit after it.",
        {
            "kind": {"enum": list(get_args(Move)), "title": "Kind", "type": "string"},
            "text": {"title": "Text", "type": "string"},
            "handoff": _opt("string", "Handoff"),
        },
        ["kind", "text"],
        {"destructiveHint": False, "readOnlyHint": False},
    ),
    _tool(
        "read_thread",
        "Full text of thread posts from_seq..to_seq (at most 20 per call).",
        {"from_seq": {"title": "From Seq", "type": "integer"}, "to_seq": _opt("integer", "To Seq")},
        ["from_seq"],
        {"readOnlyHint": True},
    ),
    _tool(
        "tell_user",
        "Raise a notice for the human (not a move; at most one per turn).",
        {"text": {"title": "Text", "type": "string"}, "hold": _opt("string", "Hold")},
        ["text"],
        {"destructiveHint": False, "readOnlyHint": False},
    ),
]
_BY_NAME = {t["name"]: t for t in TOOLS}
EMPTY = {
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}
_TYPES: dict[str, type | tuple[type, ...]] = {"string": str, "integer": int}


def _forward(tool: str, args: dict) -> str:
    path, token = os.environ.get("AUTODEV_AGENT_SOCKET"), os.environ.get("AUTODEV_AGENT_TOKEN")
    if not path or not token:
        return "error: this autodev server was started outside a turn (no AUTODEV_AGENT_SOCKET)"
    try:
        return bridge.call(path, token, tool, {k: v for k, v in args.items() if v is not None})
    except OSError as e:
        return f"error: autodev is not reachable ({e}); your turn may have ended"


def check_args(tool: dict[str, Any], args: object) -> str | None:
    """Why `args` do not fit the tool's input schema, or None."""
    if not isinstance(args, dict):
        return "arguments must be an object"
    schema = tool["inputSchema"]
    for name in schema["required"]:
        if args.get(name) is None:
            return f"{name}: field required"
    for name, value in args.items():
        prop = schema["properties"].get(name)
        if prop is None:
            return f"{name}: unexpected argument"
        if value is None:
            continue
        kind = prop.get("type") or prop["anyOf"][0]["type"]
        if not isinstance(value, _TYPES[kind]) or isinstance(value, bool):
            return f"{name}: must be a {kind}"
        if "enum" in prop and value not in prop["enum"]:
            return f"{name}: must be one of {', '.join(prop['enum'])}"
    return None


def call_tool(params: dict) -> dict:
    """A tools/call's result (a tool error is a result with isError, as MCP says)."""
    tool = _BY_NAME.get(str(params.get("name")))
    if tool is None:
        return _result(f"Unknown tool: {params.get('name')}", error=True)
    args = params.get("arguments") or {}
    why = check_args(tool, args)
    if why is not None:
        return _result(f"Error executing tool {tool['name']}: {why}", error=True)
    return _result(_forward(tool["name"], args))


def _result(text: str, error: bool = False) -> dict:
    out: dict[str, Any] = {"content": [{"text": text, "type": "text"}], "isError": error}
    if not error:
        out["structuredContent"] = {"result": text}
    return out


def answer(msg: dict) -> dict | None:
    """The response to one message (None for a notification or a response)."""
    if "id" not in msg or "method" not in msg:
        return None
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        result: dict = {
            "capabilities": {"tools": {"listChanged": False}},
            "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
            "serverInfo": {"name": "autodev", "version": ""},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method in EMPTY:  # offered by no capability, but asked by some clients anyway
        result = {EMPTY[method]: []}
    elif method == "tools/call":
        result = call_tool(params)
    else:
        return {
            "jsonrpc": "2.0",
            "id": msg["id"],
            "error": {"code": -32601, "message": f"Method not found: {method}"},
        }
    return {"jsonrpc": "2.0", "id": msg["id"], "result": result}


def serve(inp=sys.stdin, out=sys.stdout) -> None:
    """Read messages until stdin closes; a tools/call is answered from a thread of its own (it
    waits on the daemon), so pings and other requests are answered meanwhile. A call waits at
    most the bridge's answer timeout."""
    lock = threading.Lock()
    calls: list[threading.Thread] = []

    def reply(msg: dict) -> None:
        got = answer(msg)
        if got is not None:
            with lock:
                out.write(json.dumps(got) + "\n")
                out.flush()

    for line in inp:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            with lock:
                out.write(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
                    )
                    + "\n"
                )
                out.flush()
            continue
        if isinstance(msg, dict) and msg.get("method") == "tools/call":
            calls.append(threading.Thread(target=reply, args=(msg,), daemon=True))
            calls[-1].start()
        elif isinstance(msg, dict):
            reply(msg)
    for t in calls:  # stdin closed: the calls in flight still get their answers
        t.join()


if __name__ == "__main__":
    from autodev.host import hostproc

    hostproc.harden(None)  # the turn's token is in this process: not readable by others
    serve()
