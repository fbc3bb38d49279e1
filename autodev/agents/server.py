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
import time
from typing import Literal, NotRequired, TextIO, TypedDict, get_args

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from autodev.agents import bridge
from autodev.records.base import Move
from autodev.store.journal import JsonObject, is_object

# The versions of the protocol this server answers in; a client asking for another gets the newest.
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# ------------------------------------------------------------------ the tools' schemas


class Typed(TypedDict):
    type: str


class Prop(TypedDict):
    """One argument's schema: its type (or `anyOf` a type and null, for an optional one)."""

    title: str
    type: NotRequired[str]
    enum: NotRequired[list[str]]
    anyOf: NotRequired[list[Typed]]
    default: NotRequired[None]


class ObjectSchema(TypedDict):
    properties: dict[str, Prop]
    required: list[str]
    type: Literal["object"]
    title: str


class ResultProp(TypedDict):
    title: str
    type: str


class OutputSchema(TypedDict):
    properties: dict[str, ResultProp]
    required: list[str]
    type: Literal["object"]
    title: str


class Hints(TypedDict, total=False):
    destructiveHint: bool
    readOnlyHint: bool


class Tool(TypedDict):
    annotations: Hints
    description: str
    inputSchema: ObjectSchema
    name: str
    outputSchema: OutputSchema


def _opt(kind: str, title: str) -> Prop:
    return {"anyOf": [{"type": kind}, {"type": "null"}], "default": None, "title": title}


def _tool(name: str, description: str, props: dict[str, Prop], required: list[str], hints: Hints) -> Tool:
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

# ------------------------------------------------------------------ JSON-RPC messages


class Params(BaseModel):
    """The params this server reads (initialize's protocolVersion, tools/call's name and
    arguments); the others are ignored."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    protocolVersion: JsonValue = None  # noqa: N815 - MCP's name
    name: JsonValue = None
    arguments: JsonValue = None


class Request(BaseModel):
    """A message from the client: a request when it has an id and a method (a notification or
    a response otherwise, which get no answer)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    id: JsonValue = None
    method: JsonValue = None
    params: Params | None = None

    @property
    def is_request(self) -> bool:
        return {"id", "method"} <= self.model_fields_set


class Content(TypedDict):
    text: str
    type: Literal["text"]


class StructuredResult(TypedDict):
    result: str


class CallResult(TypedDict):
    content: list[Content]
    isError: bool
    structuredContent: NotRequired[StructuredResult]


class ToolsCapability(TypedDict):
    listChanged: bool


class Capabilities(TypedDict):
    tools: ToolsCapability


class ServerInfo(TypedDict):
    name: str
    version: str


class InitializeResult(TypedDict):
    capabilities: Capabilities
    protocolVersion: str
    serverInfo: ServerInfo


class ToolsList(TypedDict):
    tools: list[Tool]


Result = InitializeResult | ToolsList | CallResult | dict[str, list[str]]


class RpcError(TypedDict):
    code: int
    message: str


class Answer(TypedDict):
    jsonrpc: Literal["2.0"]
    id: JsonValue
    result: Result


class Failure(TypedDict):
    jsonrpc: Literal["2.0"]
    id: JsonValue
    error: RpcError


def _forward(tool: str, args: JsonObject) -> str:
    path, token = os.environ.get("AUTODEV_AGENT_SOCKET"), os.environ.get("AUTODEV_AGENT_TOKEN")
    if not path or not token:
        return "error: this autodev server was started outside a turn (no AUTODEV_AGENT_SOCKET)"
    try:
        return bridge.call(path, token, tool, {k: v for k, v in args.items() if v is not None})
    except OSError as e:
        return f"error: autodev is not reachable ({e}); your turn may have ended"


def check_args(tool: Tool, args: object) -> str | None:
    """Why `args` do not fit the tool's input schema, or None."""
    if not is_object(args):
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
        kind = prop.get("type") or prop.get("anyOf", [{"type": ""}])[0]["type"]
        if not isinstance(value, _TYPES[kind]) or isinstance(value, bool):
            return f"{name}: must be a {kind}"
        enum = prop.get("enum")
        if enum is not None and value not in enum:
            return f"{name}: must be one of {', '.join(enum)}"
    return None


def call_tool(params: Params) -> CallResult:
    """A tools/call's result (a tool error is a result with isError, as MCP says)."""
    tool = _BY_NAME.get(str(params.name))
    if tool is None:
        return _result(f"Unknown tool: {params.name}", error=True)
    args = params.arguments or {}
    why = check_args(tool, args)
    if why is not None or not is_object(args):
        return _result(f"Error executing tool {tool['name']}: {why}", error=True)
    return _result(_forward(tool["name"], args))


def _result(text: str, error: bool = False) -> CallResult:
    out: CallResult = {"content": [{"text": text, "type": "text"}], "isError": error}
    if not error:
        out["structuredContent"] = {"result": text}
    return out


def _initialize(params: Params) -> InitializeResult:
    asked = params.protocolVersion
    return {
        "capabilities": {"tools": {"listChanged": False}},
        "protocolVersion": asked if isinstance(asked, str) and asked in VERSIONS else VERSIONS[-1],
        "serverInfo": {"name": "autodev", "version": ""},
    }


def answer(msg: Request) -> Answer | Failure | None:
    """The response to one message (None for a notification or a response)."""
    if not msg.is_request:
        return None
    method, params = msg.method, msg.params or Params()
    result: Result
    if method == "initialize":
        result = _initialize(params)
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif isinstance(method, str) and method in EMPTY:  # offered by no capability, but asked anyway
        result = {EMPTY[method]: []}
    elif method == "tools/call":
        result = call_tool(params)
    else:
        return {
            "jsonrpc": "2.0",
            "id": msg.id,
            "error": {"code": -32601, "message": f"Method not found: {method}"},
        }
    return {"jsonrpc": "2.0", "id": msg.id, "result": result}


PARSE_ERROR: Failure = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


def serve(inp: TextIO = sys.stdin, out: TextIO = sys.stdout) -> None:
    """Read messages until stdin closes; a tools/call is answered from a thread of its own (it
    waits on the daemon), so pings and other requests are answered meanwhile. A call waits at
    most the bridge's answer timeout."""
    lock = threading.Lock()
    calls: list[threading.Thread] = []

    def send(got: Answer | Failure | None) -> None:
        if got is not None:
            with lock:
                out.write(json.dumps(got) + "\n")
                out.flush()

    def reply(msg: Request) -> None:
        send(answer(msg))

    for line in inp:
        if not line.strip():
            continue
        try:
            raw: object = json.loads(line)
        except json.JSONDecodeError:
            send(PARSE_ERROR)
            continue
        if not is_object(raw):
            continue
        try:
            msg = Request.model_validate(raw)
        except ValidationError:
            continue  # params that are not an object: nothing this server could answer
        if msg.method == "tools/call":
            calls.append(threading.Thread(target=reply, args=(msg,), daemon=True))
            calls[-1].start()
        else:
            reply(msg)
    for t in calls:  # stdin closed: the calls in flight still get their answers
        t.join()


def end_with_parent(every: float = 0.1) -> None:
    """Exit as soon as the CLI that started this server is gone (this process is handed to
    another parent). A CLI killed while a call waits on the daemon leaves this server's stdin open
    when it started it in a session of its own (the MCP SDK's stdio client does): the server
    would live on, holding the CLI's stderr, and the daemon reading that stderr would wait for it.
    Polled rather than PR_SET_PDEATHSIG: that fires when the *thread* that started the child
    ends, and a CLI may start its servers from a worker thread that ends long before it does."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(0)  # the client is gone: nobody reads an answer, nothing is left to flush

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


if __name__ == "__main__":
    from autodev.host import hostproc

    hostproc.harden(None)  # the turn's token is in this process: not readable by others
    end_with_parent()
    serve()
