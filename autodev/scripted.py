"""The scripted model: a local OpenAI-compatible chat-completions server (SPEC §11).

It answers from a TOML script, on 127.0.0.1 only, so whole runs can be driven offline through
litellm's real HTTP client. Which step answers a request is derived from the run's state, never
from how many requests were served: a retried or resumed request must get the same answer as the
request it replaces, or crash-recovery would diverge from the original run.

The state is a small ledger, per participant:
  next                 the first step index no turn has used yet
  turns[id].base       the step index where that turn started
  turns[id].errors     error steps already served in that turn
and a request is answered with step  base + (assistant messages in the request) + errors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from autodev.errors import ConfigError

STEP_KEYS = ("participant", "calls", "text", "error", "retry_after")
CALL_KEYS = ("tool", "args", "raw_args")
TURN_HEADER = "X-Autodev-Turn"
NO_TURN = "-"


class ScriptError(ConfigError):
    """A script file is wrong; names the file, the step number, the key and the fix."""

    def __init__(
        self,
        message: str,
        fix: str = "",
        *,
        path: Path | None = None,
        step: int | None = None,
        key: str | None = None,
        line: int | None = None,
    ):
        super().__init__(message, fix)
        self.path = path
        self.step = step
        self.key = key
        self.line = line


@dataclass
class ToolCallSpec:
    tool: str
    args: dict
    raw_args: str | None = None  # sent verbatim instead of args: a model's malformed JSON

    def arguments(self) -> str:
        return self.raw_args if self.raw_args is not None else json.dumps(self.args)


@dataclass
class Step:
    participant: str
    calls: list[ToolCallSpec] = field(default_factory=list)
    text: str | None = None
    error: int | None = None
    retry_after: float | None = None


@dataclass
class Script:
    path: Path
    steps: list[Step]
    price: dict | None = None  # USD per token: {input_per_token, output_per_token}

    def for_participant(self, name: str) -> list[Step]:
        return [s for s in self.steps if s.participant == name]


# ---------------------------------------------------------------- loading the script


def load_script(path: Path) -> Script:
    """Read and check a script file; every problem names the file, step and key."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScriptError(
            f"cannot read script {path}: {e.strerror or e}",
            "check the [scripted] path in the team file",
            path=path,
        ) from e
    try:
        doc = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"at line (\d+)", str(e))
        line = int(m.group(1)) if m else None
        where = f"line {line}" if line else "unknown line"
        shown = ""
        if line and 0 < line <= len(raw.splitlines()):
            shown = f": {raw.splitlines()[line - 1].strip()!r}"
        raise ScriptError(
            f"script {path} is not valid TOML at {where}{shown} ({e})",
            "fix the TOML syntax on that line",
            path=path,
            line=line,
        ) from e

    extra = sorted(set(doc) - {"step", "price"})
    if extra:
        raise ScriptError(
            f"script {path}: unknown top-level key {extra[0]!r}",
            "a script holds [[step]] tables and an optional [price] table",
            path=path,
            key=extra[0],
        )
    price = _check_price(path, doc.get("price"))
    tables = doc.get("step")
    if not isinstance(tables, list) or not tables:
        raise ScriptError(
            f"script {path} has no [[step]] tables",
            "add at least one [[step]] with a participant",
            path=path,
            key="step",
        )
    return Script(path=path, steps=[_check_step(path, n, t) for n, t in enumerate(tables, 1)], price=price)


PRICE_KEYS = ("input_per_token", "output_per_token")


def _check_price(path: Path, t: Any) -> dict | None:
    """The optional [price] table: USD per prompt and per completion token. litellm has no
    price for the scripted model, so the daemon hands these to litellm as custom prices and
    the run's cost (and budgets) work offline exactly as with a priced provider."""
    if t is None:
        return None
    fix = "write\n    [price]\n    input_per_token = 0.000001\n    output_per_token = 0.000002"
    if not isinstance(t, dict):
        raise ScriptError(f"script {path}: price must be a table", fix, path=path, key="price")
    for k, v in t.items():
        if k not in PRICE_KEYS:
            raise ScriptError(
                f"script {path}: price has unknown key {k!r}",
                f"use only {', '.join(PRICE_KEYS)}",
                path=path,
                key=k,
            )
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ScriptError(
                f"script {path}: price.{k} must be a number of dollars, at least 0 (got {v!r})",
                fix,
                path=path,
                key=k,
            )
    return {k: float(t.get(k, 0.0)) for k in PRICE_KEYS}


def _check_step(path: Path, n: int, t: Any) -> Step:
    def bad(msg: str, fix: str, key: str | None = None) -> ScriptError:
        return ScriptError(f"script {path}, step {n}: {msg}", fix, path=path, step=n, key=key)

    if not isinstance(t, dict):
        raise bad("is not a table", "write each step as a [[step]] table")
    for key in t:
        if key not in STEP_KEYS:
            raise bad(f"unknown key {key!r}", f"use only {', '.join(STEP_KEYS)}", key)

    who = t.get("participant")
    if not isinstance(who, str) or not who.strip():
        raise bad(
            "missing participant", 'add participant = "<name>" (a team member or "audit")', "participant"
        )

    text = t.get("text")
    if text is not None and not isinstance(text, str):
        raise bad("text must be a string", 'write text = "..."', "text")

    error = t.get("error")
    if error is not None and (
        isinstance(error, bool) or not isinstance(error, int) or not 400 <= error <= 599
    ):
        raise bad(f"error must be an HTTP status 400-599, not {error!r}", "write e.g. error = 429", "error")

    retry_after = t.get("retry_after")
    if retry_after is not None:
        if error is None:
            raise bad("retry_after without error", "add error = 429 or drop retry_after", "retry_after")
        if isinstance(retry_after, bool) or not isinstance(retry_after, (int, float)) or retry_after < 0:
            raise bad(
                "retry_after must be a number of seconds >= 0", "write e.g. retry_after = 2", "retry_after"
            )

    calls = [_check_call(bad, j, c) for j, c in enumerate(_as_list(bad, t.get("calls")), 1)]

    if error is not None and (calls or text is not None):
        raise bad("error cannot be combined with calls or text", "split it into two steps", "error")
    if error is None and not calls and text is None:
        raise bad("has no response", 'give it calls = [...], text = "..." or error = 429', "calls")
    return Step(
        participant=who.strip(),
        calls=calls,
        text=text,
        error=error,
        retry_after=float(retry_after) if retry_after is not None else None,
    )


def _as_list(bad, calls: Any) -> list:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise bad(
            "calls must be a list of { tool = ..., args = {...} }",
            'write calls = [{ tool = "post", args = { ... } }]',
            "calls",
        )
    return calls


def _check_call(bad, j: int, c: Any) -> ToolCallSpec:
    if not isinstance(c, dict):
        raise bad(f"call {j} is not a table", 'write { tool = "name", args = { ... } }', "calls")
    for key in c:
        if key not in CALL_KEYS:
            raise bad(f"call {j} has unknown key {key!r}", "a call holds only tool, args and raw_args", key)
    tool = c.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise bad(f"call {j} is missing tool", 'add tool = "<tool name>"', "tool")
    args = c.get("args", {})
    if not isinstance(args, dict):
        raise bad(f"call {j} ({tool}): args must be a table", "write args = { key = value }", "args")
    try:
        json.dumps(args)
    except (TypeError, ValueError) as e:
        raise bad(
            f"call {j} ({tool}): args cannot be sent as JSON ({e})",
            "quote TOML dates and times as strings",
            "args",
        ) from e
    raw = c.get("raw_args")
    if raw is not None and (not isinstance(raw, str) or "args" in c):
        raise bad(
            f"call {j} ({tool}): raw_args must be a string, used instead of args",
            'write raw_args = "{not json" (to test malformed arguments)',
            "raw_args",
        )
    return ToolCallSpec(tool=tool.strip(), args=args, raw_args=raw)


# ---------------------------------------------------------------- the ledger


def _read_ledger(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"scripted ledger {path} is unreadable: {e}",
            "delete the file to start the script from its first step",
        ) from e
    if not isinstance(data, dict):
        raise ConfigError(
            f"scripted ledger {path} is not a JSON object",
            "delete the file to start the script from its first step",
        )
    return data


def _write_ledger(path: Path, data: dict) -> None:
    # tmp + fsync + rename: a crash leaves the old ledger or the new one, never half of one.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------- the server


def _tokens(n_chars: int) -> int:
    return max(1, n_chars // 4)


def _safe_id(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", s) or "_"


class ScriptedServer:
    """Serves a Script over HTTP on 127.0.0.1; `with ScriptedServer(...) as s: s.base_url`."""

    handler_base: type | None = None  # another wire protocol (autodev.contract); None: OpenAI's

    def __init__(self, script: Script, ledger_path: Path, request_log: Path | None = None, *, port: int = 0):
        self.script = script
        self.ledger_path = Path(ledger_path)
        self.request_log = Path(request_log) if request_log else None
        self.port = port
        self.requests: list[dict] = []
        self.base_url = ""
        self._lock = threading.Lock()
        self._by_participant: dict[str, list[Step]] = {}
        for s in script.steps:
            self._by_participant.setdefault(s.participant, []).append(s)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        _read_ledger(self.ledger_path)  # a broken ledger fails now, not on the first request

    # -- lifecycle

    def start(self) -> str:
        if self._httpd is not None:
            return self.base_url
        handler = type("_Handler", (self.handler_base or _Handler,), {"scripted": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
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
        ledger = _read_ledger(self.ledger_path)
        mine = ledger.setdefault(participant, {"next": 0, "turns": {}})
        mine.setdefault("next", 0)
        turns = mine.setdefault("turns", {})
        if turn not in turns:
            turns[turn] = {"base": mine["next"], "errors": 0}
        record = turns[turn]
        index = record["base"] + assistant_count + record["errors"]
        mine["next"] = max(mine["next"], index + 1)
        steps = self._by_participant.get(participant, [])
        step = steps[index] if index < len(steps) else None
        if step is not None and step.error is not None:
            # Counted before answering, so the retry of this very request moves on.
            record["errors"] += 1
        _write_ledger(self.ledger_path, ledger)
        return index, step

    def record(self, entry: dict) -> None:
        """Keep a received request in memory and in the request log; called under the lock."""
        self.requests.append(entry)
        if self.request_log is None:
            return
        self.request_log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.request_log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedServer  # set on the per-server subclass
    server_version = "autodev-scripted/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read stderr
        pass

    # -- plumbing

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _error(
        self, status: int, message: str, type_: str, code: Any = None, headers: dict[str, str] | None = None
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
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
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

    def _complete(self, body: dict, body_chars: int) -> None:
        srv = self.scripted
        model = str(body.get("model") or "")
        participant = model.rsplit("/", 1)[-1]  # tolerate a provider prefix left on the name
        messages = body.get("messages") or []
        turn = self.headers.get(TURN_HEADER) or self._default_turn(messages)
        refusal = self._refuse(body)
        if refusal:
            self._error(400, *refusal)
            return
        assistants = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")

        with srv._lock:
            index, step = srv.choose(participant, turn, assistants)
            srv.record({"participant": participant, "turn": turn, "index": index, "body": body})

        if step is not None and step.error is not None:
            self._scripted_error(step, participant, index)
            return

        if step is None:
            text: str | None = f"(script exhausted for {participant})"
            calls: list[ToolCallSpec] = []
        else:
            text, calls = step.text, step.calls
        tool_calls = [
            {
                "id": f"call_{_safe_id(turn)}_{index}_{j}",
                "type": "function",
                "function": {"name": c.tool, "arguments": c.arguments()},
            }
            for j, c in enumerate(calls)
        ]
        out_chars = len(text or "") + sum(len(t["function"]["arguments"]) for t in tool_calls)
        usage = {"prompt_tokens": _tokens(body_chars), "completion_tokens": _tokens(out_chars)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        finish = "tool_calls" if tool_calls else "stop"
        ident = f"chatcmpl-{_safe_id(participant)}-{_safe_id(turn)}-{index}"
        created = int(time.time())

        if body.get("stream"):
            opts = body.get("stream_options") or {}
            self._stream(
                ident, created, model, text, tool_calls, finish, usage if opts.get("include_usage") else None
            )
            return

        message: dict[str, Any] = {"role": "assistant", "content": text}
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

    def _default_turn(self, messages: list) -> str:
        """The turn of a request without the turn header (a real provider's client never sends it)."""
        return NO_TURN

    def _refuse(self, body: dict) -> tuple[str, str, str] | None:
        """(message, type, code) of a contract the request breaks; None when it holds."""
        return None

    def _scripted_error(self, step: Step, participant: str, index: int) -> None:
        status = step.error or 500
        headers: dict[str, str] = {}
        if status == 429 or step.retry_after is not None:
            secs = step.retry_after or 0.0
            headers["Retry-After"] = str(int(secs)) if secs == int(secs) else str(secs)
        kinds = {
            429: "rate_limit_error",
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
        }
        self._error(
            status,
            f"scripted error {status} for {participant} (step index {index})",
            kinds.get(status, "server_error"),
            headers=headers,
        )

    def _stream(
        self,
        ident: str,
        created: int,
        model: str,
        text: str | None,
        tool_calls: list[dict],
        finish: str,
        usage: dict | None,
    ) -> None:
        def chunk(delta: dict, finish_reason: str | None) -> dict:
            return {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }

        events = [chunk({"role": "assistant", "content": text or ""}, None)]
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


# ---------------------------------------------------------------- manual use


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m autodev.scripted", description="Serve a scripted model on 127.0.0.1 until killed."
    )
    p.add_argument("script", type=Path)
    p.add_argument("--port", type=int, default=0, help="port to listen on (default: any free)")
    p.add_argument("--ledger", type=Path, default=None, help="ledger file (default: a fresh temporary file)")
    a = p.parse_args(argv)
    try:
        script = load_script(a.script)
    except ScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    ledger = a.ledger or Path(tempfile.mkdtemp(prefix="autodev-scripted-")) / "ledger.json"
    server = ScriptedServer(script, ledger, port=a.port)
    print(server.start(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
