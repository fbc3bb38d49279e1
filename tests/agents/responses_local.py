"""A local OpenAI Responses-API server for running the real Codex CLI offline (a model provider
of its own with `base_url` and `wire_api = "responses"`, or the built-in one with
`openai_base_url`): POST /v1/responses, streamed (SSE).

The conversation plays `steps`, one per answer, the n-th when the request's input holds n
answers of the assistant already (messages or function calls; a resumed session's history
counts): `call(name, args)` is a function call, `say(text)` a text that ends Codex's run; after
the last step a short text ends it. A tool's name is matched by its ending (`post` is whatever
name Codex gave autodev's post); a tool offered inside a namespace (Codex 0.171.0 offers an MCP
server's tools as namespace `mcp__autodev`) is called with that `namespace`. GET requests (the
built-in provider's websocket attempts, model lists) get a 404 or an empty list. Every request
body is kept in `requests`."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.local_server import LocalHandler, LocalServer

USAGE = {
    "input_tokens": 200,
    "input_tokens_details": {"cached_tokens": 50},
    "output_tokens": 25,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 225,
}


def call(name: str, args: dict) -> dict:
    return {"call": name, "args": args}


def say(text: str) -> dict:
    return {"say": text}


def _tool_name(body: dict, wanted: str) -> dict:
    """The call's `name` (and `namespace`: Codex 0.171.0 offers an MCP server's tools in one)."""
    names = []
    for t in body.get("tools") or []:
        names.append({"name": t.get("name") or ""})
        names += [
            {"namespace": t.get("name"), "name": x.get("name") or ""}
            for x in t.get("tools") or []
            if isinstance(x, dict)
        ]
    for n in names:
        if n["name"] == wanted or n["name"].endswith("__" + wanted) or n["name"].endswith("." + wanted):
            return n
    return {"name": wanted}


def _items(body: dict, steps: list[dict], n: int) -> list[dict]:
    done = sum(
        1
        for i in body.get("input") or []
        if isinstance(i, dict)
        and (
            i.get("type") == "function_call" or (i.get("type") == "message" and i.get("role") == "assistant")
        )
    )
    step = steps[done] if done < len(steps) else say("Done; my turn is over.")
    if "call" in step:
        return [
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                **_tool_name(body, step["call"]),
                "arguments": json.dumps(step["args"]),
                "status": "completed",
            }
        ]
    return [
        {
            "type": "message",
            "id": f"msg_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": step["say"], "annotations": []}],
        }
    ]


class _Handler(LocalHandler):
    server_version = "autodev-responses-local/1"

    def do_GET(self) -> None:
        if self.path.split("?")[0].endswith("/models"):
            return self._json(200, {"object": "list", "data": [], "models": []})
        self._json(404, {"error": {"message": f"not found: {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        srv: Any = self.server
        path, body = self._request()
        if not path.endswith("/responses"):
            return self.do_GET()
        n = len(srv.requests)
        items = _items(body, srv.steps, n)
        resp = {"id": f"resp_{n}", "object": "response", "status": "in_progress", "model": body.get("model")}
        events = [("response.created", {"response": {**resp, "output": []}})]
        for i, item in enumerate(items):
            events.append(("response.output_item.added", {"output_index": i, "item": item}))
            if item["type"] == "message":
                text = item["content"][0]["text"]
                events.append(
                    (
                        "response.output_text.delta",
                        {"output_index": i, "item_id": item["id"], "content_index": 0, "delta": text},
                    )
                )
            events.append(("response.output_item.done", {"output_index": i, "item": item}))
        done = {**resp, "status": "completed", "output": items, "usage": USAGE}
        events.append(("response.completed", {"response": done}))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for seq, (kind, data) in enumerate(events):
            payload = json.dumps({"type": kind, "sequence_number": seq, **data})
            self.wfile.write(f"event: {kind}\ndata: {payload}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


class ResponsesLocal(LocalServer):
    handler = _Handler
    base_path = "/v1"
