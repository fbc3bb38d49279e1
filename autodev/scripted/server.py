"""The scripted model over HTTP: a local OpenAI-compatible chat-completions server (SPEC §11).

It answers from a TOML script (`script.py`), on 127.0.0.1 only, so whole runs can be driven
offline through litellm's real HTTP client. Which step answers a request comes from the ledger
(`answers.py`), keyed by the turn header the harness sends.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from autodev.scripted.answers import (
    ERROR_TYPES,
    EXHAUSTED_CODE,
    Ledger,
    ToolCall,
    assistants,
    error_message,
    exhausted_message,
    output_chars,
    reply,
    safe_id,
    tokens,
)
from autodev.scripted.script import Script, Step
from autodev.store.journal import JsonObject, is_object

TURN_HEADER = "X-Autodev-Turn"
NO_TURN = "-"


class ScriptedServer:
    """Serves a Script over HTTP on 127.0.0.1; `with ScriptedServer(...) as s: s.base_url`."""

    handler_base: type[ChatHandler] | None = (
        None  # another wire protocol (autodev.scripted.contract); None: OpenAI's
    )

    def __init__(self, script: Script, ledger_path: Path, request_log: Path | None = None, *, port: int = 0):
        self.script = script
        self.ledger_path = Path(ledger_path)
        self.request_log = Path(request_log) if request_log else None
        self.port = port
        self.requests: list[JsonObject] = []
        self.base_url = ""
        self.ledger = Ledger(script, self.ledger_path)  # a broken ledger fails now
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> str:
        if self._httpd is not None:
            return self.base_url
        served = self

        class Handler(self.handler_base or ChatHandler):  # this server's own: the handler finds it here
            scripted = served

        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        # A short poll keeps stop() quick: shutdown() waits for the loop's next poll.
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), name="scripted-server", daemon=True
        )
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        return self.base_url

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- choosing a step

    def choose(self, participant: str, turn: str, assistant_count: int) -> tuple[int, Step | None]:
        """Pick the step for a request and persist the ledger; called under the lock."""
        return self.ledger.choose(participant, turn, assistant_count)

    def record(self, entry: JsonObject) -> None:
        """Keep a received request in memory and in the request log; called under the lock."""
        self.requests.append(entry)
        if self.request_log is None:
            return
        self.request_log.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Private like every run-folder file: the requests hold the participants' prompts.
        fd = os.open(self.request_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as f:
            if os.fstat(fd).st_mode & 0o077:
                os.fchmod(fd, 0o600)  # a log an older autodev left readable to others
            f.write(json.dumps(entry, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())


class ChatHandler(BaseHTTPRequestHandler):
    """OpenAI's chat completions over HTTP; the contract servers' handlers change what differs."""

    scripted: ScriptedServer  # set on the per-server subclass
    server_version = "autodev-scripted/1"

    def log_message(self, format: str, *args: object) -> None:  # quiet: tests read stderr
        pass

    # -- plumbing

    def _send_json(
        self, status: int, payload: Mapping[str, object], headers: dict[str, str] | None = None
    ) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(
        self,
        status: int,
        message: str,
        type_: str,
        code: int | str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self._send_json(
            status,
            {"error": {"message": message, "type": type_, "code": code if code is not None else status}},
            headers,
        )

    # -- routes

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            names = sorted({s.participant for s in self.scripted.script.steps})
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": n, "object": "model", "created": 0, "owned_by": "scripted"} for n in names
                    ],
                },
            )
        elif path in ("/health", "/v1/health"):
            self._send_json(200, {"ok": True})
        else:
            self._error(404, f"no route GET {self.path}", "not_found_error")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route POST {self.path}; use /v1/chat/completions", "not_found_error")
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            body: object = json.loads(raw or b"{}")
            if not is_object(body):
                raise ValueError("body is not a JSON object")
        except ValueError as e:
            self._error(400, f"request body is not valid JSON: {e}", "invalid_request_error")
            return
        try:
            self._complete(body, len(raw))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away; nothing to answer
        except Exception as e:  # a bug here must reach the client, not vanish into a thread
            try:
                self._error(500, f"scripted server failed: {type(e).__name__}: {e}", "server_error")
            except OSError:
                pass

    def _complete(self, body: JsonObject, body_chars: int) -> None:
        srv = self.scripted
        model = str(body.get("model") or "")
        participant = model.rsplit("/", 1)[-1]  # tolerate a provider prefix left on the name
        messages: object = body.get("messages") or []
        turn = self.headers.get(TURN_HEADER) or self._default_turn(messages)
        refusal = self._refuse(body)
        if refusal:
            self._error(400, *refusal)
            return
        with srv.ledger.lock:
            index, step = srv.choose(participant, turn, assistants(messages))
            srv.record({"participant": participant, "turn": turn, "index": index, "body": body})
            delay = srv.ledger.delay(participant, turn, index, step)
        time.sleep(delay)  # outside the lock: other participants' requests are not held up

        if step is not None and step.error is not None:
            self._scripted_error(step, participant, index)
            return
        if step is None:
            steps = len(srv.ledger.by_participant.get(participant, []))
            self._error(
                400, exhausted_message(participant, index, steps), "invalid_request_error", EXHAUSTED_CODE
            )
            return

        text, tool_calls = reply(participant, turn, index, step)
        out_chars = output_chars(text, tool_calls)
        usage: dict[str, int] = {"prompt_tokens": tokens(body_chars), "completion_tokens": tokens(out_chars)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        finish = "tool_calls" if tool_calls else "stop"
        ident = f"chatcmpl-{safe_id(participant)}-{safe_id(turn)}-{index}"
        created = int(time.time())

        if body.get("stream"):
            opts = body.get("stream_options")
            include = is_object(opts) and opts.get("include_usage")
            self._stream(ident, created, model, text, tool_calls, finish, usage if include else None)
            return

        message: JsonObject = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        self._send_json(
            200,
            {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            },
        )

    def _default_turn(self, messages: object) -> str:
        """The turn of a request without the turn header (a real provider's client never sends it)."""
        return NO_TURN

    def _refuse(self, body: JsonObject) -> tuple[str, str, str] | None:
        """(message, type, code) of a contract the request breaks; None when it holds."""
        return None

    def _scripted_error(self, step: Step, participant: str, index: int) -> None:
        status = step.error or 500
        headers: dict[str, str] = {}
        if status == 429 or step.retry_after is not None:
            secs = step.retry_after or 0.0
            headers["Retry-After"] = str(int(secs)) if secs == int(secs) else str(secs)
        self._error(
            status,
            error_message(step, participant, index),
            ERROR_TYPES.get(status, "server_error"),
            headers=headers,
        )

    def _stream(
        self,
        ident: str,
        created: int,
        model: str,
        text: str | None,
        tool_calls: list[ToolCall],
        finish: str,
        usage: dict[str, int] | None,
    ) -> None:
        def chunk(delta: Mapping[str, object], finish_reason: str | None) -> JsonObject:
            return {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }

        events: list[JsonObject] = [chunk({"role": "assistant", "content": text or ""}, None)]
        for j, t in enumerate(tool_calls):
            events.append(chunk({"tool_calls": [{"index": j, **t}]}, None))
        events.append(chunk({}, finish))
        if usage is not None:
            events.append(
                {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )

        # No Content-Length: the stream ends when the connection closes (HTTP/1.0 handler).
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for e in events:
            self.wfile.write(f"data: {json.dumps(e)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
