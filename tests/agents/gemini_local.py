"""A local Gemini API server for running the real Gemini CLI offline (GOOGLE_GEMINI_BASE_URL with
GEMINI_API_KEY): `models/M:streamGenerateContent?alt=sse`, `:generateContent`, `:countTokens`.

The conversation (a request with function declarations) plays `steps`, one per answer, the n-th
when the request holds n answers of the model already (a resumed session's history counts):
`call(name, args)` is a function call (the name matched by its ending, so `post` is whatever name
the CLI gave autodev's post), `say(text)` a text that ends the CLI's run; after the last step a
short text ends it. Other requests (the CLI's own side questions) get a short JSON text. Every
request is kept in `requests`."""

from __future__ import annotations

import json
from typing import Any

from tests.agents.local_server import LocalHandler, LocalServer

USAGE = {
    "promptTokenCount": 300,
    "candidatesTokenCount": 40,
    "cachedContentTokenCount": 60,
    "totalTokenCount": 340,
}


def call(name: str, args: dict) -> dict:
    return {"call": name, "args": args}


def say(text: str) -> dict:
    return {"say": text}


def _names(body: dict) -> list[str]:
    return [d.get("name") or "" for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []]


def _parts(body: dict, steps: list[dict]) -> list[dict]:
    names = _names(body)
    if not names:
        return [{"text": json.dumps({"next_speaker": "user", "reasoning": "the model is done"})}]
    done = sum(1 for c in body.get("contents") or [] if c.get("role") == "model")
    step = steps[done] if done < len(steps) else say("Done; my turn is over.")
    if "call" in step:
        want = step["call"]
        name = next(
            (n for n in names if n == want or n.endswith("__" + want) or n.endswith("_" + want)), want
        )
        return [{"functionCall": {"name": name, "args": step["args"]}}]
    return [{"text": step["say"]}]


class _Handler(LocalHandler):
    server_version = "autodev-gemini-local/1"

    def do_GET(self) -> None:
        self._json(404, {"error": {"code": 404, "message": f"not found: {self.path}", "status": "NOT_FOUND"}})

    def do_POST(self) -> None:
        srv: Any = self.server
        path, body = self._request()
        if path.endswith(":countTokens"):
            return self._json(200, {"totalTokens": 100})
        if not (path.endswith(":generateContent") or path.endswith(":streamGenerateContent")):
            return self.do_GET()
        answer = {
            "candidates": [
                {
                    "content": {"role": "model", "parts": _parts(body, srv.steps)},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": USAGE,
            "modelVersion": "gemini-local",
        }
        if path.endswith(":generateContent"):
            return self._json(200, answer)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(f"data: {json.dumps(answer)}\r\n\r\n".encode())
        self.wfile.flush()
        self.close_connection = True


class GeminiLocal(LocalServer):
    handler = _Handler
