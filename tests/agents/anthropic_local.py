"""A local Anthropic-Messages server for running the real Claude Code CLI offline
(ANTHROPIC_BASE_URL): it streams (SSE) or answers in one JSON body, as the request asks.

Claude Code sends its main conversation and a few side requests (a title, a quota probe). The
conversation is a request with tools (Claude Code may defer MCP tools behind its ToolSearch, so
autodev's post need not be among them); it plays `steps`, one per answer, the n-th when the
request holds n answers already (a resumed session's history counts): `post(...)` is a
`mcp__autodev__post` tool_use, `tool(...)` one of the CLI's own, a text alone ends the CLI's
run; after the last step a short text ends it. Side requests get a short text. Every request
body is kept in `requests` (the tests assert what the CLI sent)."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.local_server import LocalHandler, LocalServer

POST_TOOL = "mcp__autodev__post"
USAGE = {
    "input_tokens": 120,
    "output_tokens": 30,
    "cache_read_input_tokens": 40,
    "cache_creation_input_tokens": 0,
}


def post(args: dict) -> list[dict]:
    """A step: say so, then call autodev's post with `args`."""
    return [
        {"type": "text", "text": "I will post now."},
        {"type": "tool_use", "id": "toolu_local_post", "name": POST_TOOL, "input": args},
    ]


def tool(name: str, args: dict, n: int) -> list[dict]:
    """A step: call one of the CLI's own tools."""
    return [{"type": "tool_use", "id": f"toolu_local_{n}", "name": name, "input": args}]


def answer(body: dict, steps: list[list[dict]]) -> list[dict]:
    """The content blocks of the answer to one request: the conversation's n-th step when it
    holds n answers already (a resumed session's history counts), a closing text after the last."""
    if not body.get("tools"):  # a side request (a title, a probe): the conversation has tools
        return [{"type": "text", "text": "ok"}]
    done = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
    if done >= len(steps):
        return [{"type": "text", "text": "Done; my turn is over."}]
    names = [t.get("name") or "" for t in body["tools"] if isinstance(t, dict)]
    return [_named(b, names) for b in steps[done]]


def _named(block: dict, names: list[str]) -> dict:
    """autodev's post under the name this CLI gave it (Copilot CLI: autodev-post), when listed."""
    if block.get("name") != POST_TOOL or POST_TOOL in names:
        return block
    other = [n for n in names if n.startswith("autodev") and n.endswith("post")]
    return {**block, "name": other[0]} if other else block


def _sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Handler(LocalHandler):
    server_version = "autodev-anthropic-local/1"

    def do_GET(self) -> None:
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    do_HEAD = do_GET

    def do_POST(self) -> None:
        srv: Any = self.server
        path, body = self._request()
        if path.endswith("/count_tokens"):
            return self._json(200, {"input_tokens": 100})
        if not path.endswith("/v1/messages"):
            return self.do_GET()
        blocks = answer(body, srv.steps)
        stop = "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn"
        msg = {
            "id": f"msg_local_{len(srv.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "local"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": USAGE,
        }
        if not body.get("stream"):
            return self._json(200, msg)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        out = [
            _sse(
                "message_start",
                {"type": "message_start", "message": {**msg, "content": [], "stop_reason": None}},
            )
        ]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": b["text"]}
            else:
                start = {**b, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(b["input"])}
            out.append(
                _sse(
                    "content_block_start", {"type": "content_block_start", "index": i, "content_block": start}
                )
            )
            out.append(
                _sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            )
            out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
        out.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": USAGE["output_tokens"]},
                },
            )
        )
        out.append(_sse("message_stop", {"type": "message_stop"}))
        self.wfile.write(b"".join(out))
        self.wfile.flush()
        self.close_connection = True


class AnthropicLocal(LocalServer):
    handler = _Handler
