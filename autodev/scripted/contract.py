"""Provider contract servers: what real providers hold a harness to, over real HTTP (SPEC §13).

They answer from the same TOML scripts as the scripted model (steps per participant, the same
ledger, so a retried or resumed request gets the answer of the request it replaces), but speak
a real provider's wire protocol and refuse what that provider refuses:

- `AnthropicServer` (`contract_anthropic`) speaks the Anthropic Messages API (POST /v1/messages, `x-api-key`,
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

from autodev.scripted import answers
from autodev.scripted.answers import is_list, items, objects
from autodev.scripted.script import Script
from autodev.scripted.server import ChatHandler, ScriptedServer
from autodev.store.journal import JsonObject, is_object

SIGNING_KEY = b"autodev-contract"


def sign(thinking: str) -> str:
    return hmac.new(SIGNING_KEY, thinking.encode(), hashlib.sha256).hexdigest()


def _first_user_text(messages: object) -> str:
    for m in objects(messages):
        if m.get("role") == "user":
            c = m.get("content")
            if is_list(c):
                return json.dumps([b.get("text") for b in objects(c)])
            return str(c)
    return ""


def _as_int(value: object) -> int:
    """A request's number as `int()` reads it (a JSON number or numeric string)."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"not a number: {value!r}")


class ContractHandler(ChatHandler):
    """What the contract servers' handlers share: the turn and participant of a request."""

    def _default_turn(self, messages: object) -> str:
        return "h" + hashlib.sha1(_first_user_text(messages).encode()).hexdigest()[:12]

    def _participant(self, model: str) -> str:
        srv = self.scripted
        names = srv.participants if isinstance(srv, (OpenAIServer, ProviderServer)) else {}
        name = model.rsplit("/", 1)[-1]
        return names.get(name, name)


# -- OpenAI-compatible ---------------------------------------------------------------------------


class _OpenAIHandler(ContractHandler):
    server_version = "autodev-contract-openai/1"

    @property
    def _server(self) -> OpenAIServer:
        srv = self.scripted
        if not isinstance(srv, OpenAIServer):
            raise TypeError(f"an OpenAI contract handler on a {type(srv).__name__}")
        return srv

    def _refuse(self, body: JsonObject) -> tuple[str, str, str] | None:
        srv = self._server
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
        out = _as_int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
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

    def _long_id(self, body: JsonObject) -> str | None:
        limit = self._server.id_limit
        if limit is None:
            return None
        for i, m in enumerate(items(body.get("messages"))):
            if not is_object(m):
                continue
            calls = items(m.get("tool_calls"))
            ids = [(f"tool_calls[{j}].id", c.get("id")) for j, c in enumerate(calls) if is_object(c)]
            ids.append(("tool_call_id", m.get("tool_call_id")))
            for where, ident in ids:
                if isinstance(ident, str) and len(ident) > limit:
                    return (
                        f"Invalid 'messages[{i}].{where}': string too long. Expected a string with "
                        f"maximum length {limit}, but got a string with length {len(ident)} instead."
                    )
        return None

    def _complete(self, body: JsonObject, body_chars: int) -> None:
        srv = self._server
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
