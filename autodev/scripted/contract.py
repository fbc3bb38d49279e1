"""Provider contract servers: what real providers hold a harness to, over real HTTP (SPEC §13).

They answer from the same TOML scripts as the scripted model (steps per participant, the same
ledger, so a retried or resumed request gets the answer of the request it replaces), but speak
a real provider's wire protocol and refuse what that provider refuses:

- `AnthropicServer` speaks the Anthropic Messages API (POST /v1/messages, `x-api-key`,
  `anthropic-version`). With thinking on, every answer starts with a signed thinking block, and
  a request is refused (400 invalid_request_error, Anthropic's own wording) when an assistant
  message with tool_use does not start with its thinking block, signature intact. It reports
  prompt-cache reads (`cache_read_input_tokens`) for the prefix up to a `cache_control` mark
  that an earlier request marked, as Anthropic does.
- `OpenAIServer` is the scripted OpenAI-compatible server with a context window it enforces
  (400 `context_length_exceeded`, OpenAI's wording) and no key required, like llama.cpp's
  `llama-server` or vLLM. Given `models`, it refuses any other model name with a 400
  `model_not_found`, as gateways do. Given `id_limit`, it refuses a tool-call id longer than
  that (OpenAI allows 40 characters; a Gemini id carrying its thought signature is far longer).

Real clients send no turn header, so the turn of a request is the hash of its first user
message (the turn prompt, unique per turn and stable across retries and resume). Which
participant a request is for comes from its model name (`participants` maps model names to
script participants; unmapped names are taken as the participant's name).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from autodev.scripted import answers
from autodev.scripted.script import Script
from autodev.scripted.server import ScriptedServer, _Handler

SIGNING_KEY = b"autodev-contract"


def sign(thinking: str) -> str:
    return hmac.new(SIGNING_KEY, thinking.encode(), hashlib.sha256).hexdigest()


def _first_user_text(messages: list) -> str:
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return json.dumps([b.get("text") for b in c if isinstance(b, dict)])
            return str(c)
    return ""


class _ContractHandler(_Handler):
    def _default_turn(self, messages: list) -> str:
        return "h" + hashlib.sha1(_first_user_text(messages).encode()).hexdigest()[:12]

    def _participant(self, model: str) -> str:
        srv: Any = self.scripted
        name = model.rsplit("/", 1)[-1]
        return srv.participants.get(name, name)


# -- OpenAI-compatible ---------------------------------------------------------------------------


class _OpenAIHandler(_ContractHandler):
    server_version = "autodev-contract-openai/1"

    def _refuse(self, body: dict) -> tuple[str, str, str] | None:
        srv: Any = self.scripted
        srv.keys_seen.append(self.headers.get("Authorization"))
        long_id = self._long_id(body)
        if long_id:
            srv.refusals += 1
            return long_id, "invalid_request_error", "string_above_max_length"
        if srv.window is None:
            return None
        prompt = answers.tokens(
            len(json.dumps(body.get("messages") or [])) + len(json.dumps(body.get("tools") or []))
        )
        out = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
        if prompt + out <= srv.window:
            return None
        srv.refusals += 1
        return (
            f"This model's maximum context length is {srv.window} tokens. However, you requested "
            f"{prompt + out} tokens ({prompt} in the messages, {out} in the completion). Please "
            "reduce the length of the messages or completion.",
            "invalid_request_error",
            "context_length_exceeded",
        )

    def _long_id(self, body: dict) -> str | None:
        srv: Any = self.scripted
        limit = srv.id_limit
        if limit is None:
            return None
        for i, m in enumerate(body.get("messages") or []):
            ids = [(f"tool_calls[{j}].id", c.get("id")) for j, c in enumerate(m.get("tool_calls") or [])]
            ids.append(("tool_call_id", m.get("tool_call_id")))
            for where, ident in ids:
                if isinstance(ident, str) and len(ident) > limit:
                    return (
                        f"Invalid 'messages[{i}].{where}': string too long. Expected a string with "
                        f"maximum length {limit}, but got a string with length {len(ident)} instead."
                    )
        return None

    def _complete(self, body: dict, body_chars: int) -> None:
        srv: Any = self.scripted
        model = str(body.get("model") or "")
        if srv.models is not None and model not in srv.models:
            # A gateway that answers 400, not 404, for a model it does not serve.
            srv.unknown_models.append(model)
            self._error(
                400,
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            )
            return
        body = {**body, "model": self._participant(model)}
        super()._complete(body, body_chars)


class OpenAIServer(ScriptedServer):
    """The scripted OpenAI-compatible server with a context window and no key required."""

    handler_base = _OpenAIHandler

    def __init__(
        self,
        script: Script,
        ledger_path: Path,
        request_log: Path | None = None,
        *,
        window: int | None = None,
        participants: dict[str, str] | None = None,
        models: set[str] | None = None,
        id_limit: int | None = None,
    ):
        super().__init__(script, ledger_path, request_log)
        self.window = window
        self.id_limit = id_limit  # longest tool-call id accepted (None: any)
        # The model names it serves (None: any); others get 400 model_not_found.
        self.models = set(models) if models is not None else None
        self.unknown_models: list[str] = []  # names refused as unknown, one per request
        self.participants = dict(participants or {})
        self.keys_seen: list[str | None] = []  # the Authorization header of each request
        self.refusals = 0  # requests refused for the window


# -- Anthropic Messages --------------------------------------------------------------------------


def _blocks(content: object) -> list[dict[str, object]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _prefix_units(body: dict) -> list[tuple[str, bool]]:
    """The request as Anthropic caches it: tools, then system, then messages, one unit per
    block, each (canonical text without cache marks, whether it carries a cache mark)."""

    def unit(prefix: str, b: dict) -> tuple[str, bool]:
        marked = "cache_control" in b
        clean = {k: v for k, v in b.items() if k != "cache_control"}
        return prefix + json.dumps(clean, sort_keys=True), marked

    units = [unit("tool:", t) for t in body.get("tools") or []]
    units += [unit("system:", b) for b in _blocks(body.get("system"))]
    for i, m in enumerate(body.get("messages") or []):
        units += [unit(f"{m.get('role')}{i}:", b) for b in _blocks(m.get("content"))]
    return units


class _AnthropicHandler(_ContractHandler):
    server_version = "autodev-contract-anthropic/1"

    def _anthropic_error(self, status: int, type_: str, message: str) -> None:
        self._send_json(status, {"type": "error", "error": {"type": type_, "message": message}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/messages":
            self._anthropic_error(404, "not_found_error", f"no route POST {self.path}; use /v1/messages")
            return
        try:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.loads(raw or b"{}")
        except ValueError as e:
            self._anthropic_error(400, "invalid_request_error", f"request body is not valid JSON: {e}")
            return
        srv: Any = self.scripted
        if not self.headers.get("x-api-key"):
            self._anthropic_error(401, "authentication_error", "x-api-key header is required")
            return
        if not self.headers.get("anthropic-version"):
            self._anthropic_error(400, "invalid_request_error", "anthropic-version header is required")
            return
        problem = self._check(body)
        if problem:
            srv.refusals.append(problem)
            self._anthropic_error(400, "invalid_request_error", problem)
            return
        try:
            self._answer(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _check(self, body: dict) -> str | None:
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens: Field required"
        thinking = (body.get("thinking") or {}).get("type") == "enabled"
        if thinking and body["thinking"].get("budget_tokens", 0) >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
        for i, m in enumerate(body.get("messages") or []):
            if m.get("role") != "assistant":
                continue
            blocks = _blocks(m.get("content"))
            kinds = [b.get("type") for b in blocks]
            has_thinking = any(k in ("thinking", "redacted_thinking") for k in kinds)
            if not thinking and has_thinking:
                return (
                    f"messages.{i}.content: When thinking is disabled, an `assistant` message "
                    "cannot contain `thinking`"
                )
            if thinking and "tool_use" in kinds:
                if kinds[0] not in ("thinking", "redacted_thinking"):
                    return (
                        f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                        f"but found `{kinds[0]}`. When `thinking` is enabled, a final `assistant` "
                        "message must start with a thinking block (preceeding the lastmost set of "
                        "`tool_use` and `tool_result` blocks). To avoid this requirement, disable "
                        "`thinking`."
                    )
                first = blocks[0]
                if first.get("type") == "thinking" and first.get("signature") != sign(
                    str(first.get("thinking", ""))
                ):
                    return f"messages.{i}.content.0: Invalid `signature` in `thinking` block"
        return None

    def _usage(self, body: dict, out_chars: int) -> dict:
        """Token counts with cache reads: the longest prefix (at a block boundary) that an
        earlier request marked with cache_control is read from the cache; this request's own
        marked prefixes are written to it."""
        srv: Any = self.scripted
        units = _prefix_units(body)
        hashes, h = [], hashlib.sha256()
        for text, _ in units:
            h.update(text.encode())
            hashes.append(h.hexdigest())
        sizes, total = [], 0
        for text, _ in units:
            total += len(text)
            sizes.append(total)
        tokens = [answers.tokens(n) for n in sizes]
        with srv._lock:
            read = max((tokens[k] for k in range(len(units)) if hashes[k] in srv.cache), default=0)
            marks = [k for k, (_, marked) in enumerate(units) if marked]
            for k in marks:
                srv.cache.add(hashes[k])
        created = max(0, (tokens[marks[-1]] if marks else 0) - read)
        whole = tokens[-1] if tokens else 1
        return {
            "input_tokens": max(0, whole - read - created),
            "output_tokens": answers.tokens(out_chars),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": created,
        }

    def _answer(self, body: dict) -> None:
        srv: Any = self.scripted
        model = str(body.get("model") or "")
        participant = self._participant(model)
        messages = body.get("messages") or []
        turn = self._default_turn(messages)
        assistants = sum(1 for m in messages if m.get("role") == "assistant")
        with srv._lock:
            index, step = srv.choose(participant, turn, assistants)
            srv.record({"participant": participant, "turn": turn, "index": index, "body": body})
        if step is not None and step.error is not None:
            kinds = {
                429: "rate_limit_error",
                401: "authentication_error",
                403: "permission_error",
                404: "not_found_error",
                400: "invalid_request_error",
                529: "overloaded_error",
            }
            self._anthropic_error(
                step.error,
                kinds.get(step.error, "api_error"),
                f"scripted error {step.error} for {participant} (step index {index})",
            )
            return
        content: list[dict] = []
        if (body.get("thinking") or {}).get("type") == "enabled":
            thought = f"{participant} thinks about step {index} of turn {turn}"
            content.append({"type": "thinking", "thinking": thought, "signature": sign(thought)})
        text = f"(script exhausted for {participant})" if step is None else step.text
        if text:
            content.append({"type": "text", "text": text})
        for j, c in enumerate(step.calls if step else []):
            try:
                args = json.loads(c.arguments())
            except ValueError:
                args = {}
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{answers.safe_id(turn)}_{index}_{j}",
                    "name": c.tool,
                    "input": args if isinstance(args, dict) else {},
                }
            )
        calls = step.calls if step else []
        out_chars = len(json.dumps(content))
        self._send_json(
            200,
            {
                "id": f"msg_{answers.safe_id(participant)}_{answers.safe_id(turn)}_{index}",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": "tool_use" if calls else "end_turn",
                "stop_sequence": None,
                "usage": self._usage(body, out_chars),
            },
        )


class ProviderServer(ScriptedServer):
    """The scripted server speaking one provider's own API (Anthropic's, Gemini's), refusing
    with a 400 what that provider refuses."""

    def __init__(
        self,
        script: Script,
        ledger_path: Path,
        request_log: Path | None = None,
        *,
        participants: dict[str, str] | None = None,
    ):
        super().__init__(script, ledger_path, request_log)
        self.participants = dict(participants or {})
        self.refusals: list[str] = []  # why requests were refused (400), in order


class AnthropicServer(ProviderServer):
    """An Anthropic-Messages-compatible server: point litellm at it with
    `api_base = server.root` and an `anthropic/...` model."""

    handler_base = _AnthropicHandler

    def __init__(
        self,
        script: Script,
        ledger_path: Path,
        request_log: Path | None = None,
        *,
        participants: dict[str, str] | None = None,
    ):
        super().__init__(script, ledger_path, request_log, participants=participants)
        self.cache: set[str] = set()  # prefix hashes written to the prompt cache

    @property
    def root(self) -> str:
        """The base URL without /v1 (litellm's anthropic provider appends /v1/messages)."""
        return self.base_url.removesuffix("/v1")
