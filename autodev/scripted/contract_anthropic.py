"""The Anthropic Messages contract server (SPEC §13): POST /v1/messages with `x-api-key` and
`anthropic-version`, answering from the same TOML scripts and ledger as the scripted model.

With thinking on, every answer starts with a signed thinking block, and a request is refused (400
invalid_request_error, Anthropic's own wording) when an assistant message with tool_use does not
start with its thinking block, signature intact. It reports prompt-cache reads
(`cache_read_input_tokens`) for the prefix up to a `cache_control` mark that an earlier request
marked, as Anthropic does. The turn and participant of a request are found as in
`autodev.scripted.contract`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from autodev.scripted import answers
from autodev.scripted.answers import items, objects
from autodev.scripted.contract import ContractHandler, ProviderServer, sign
from autodev.scripted.script import Script, Step
from autodev.store.journal import JsonObject, is_object


def _blocks(content: object) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return objects(content)


def _prefix_units(body: JsonObject) -> list[tuple[str, bool]]:
    """The request as Anthropic caches it: tools, then system, then messages, one unit per
    block, each (canonical text without cache marks, whether it carries a cache mark)."""

    def unit(prefix: str, b: JsonObject) -> tuple[str, bool]:
        marked = "cache_control" in b
        clean = {k: v for k, v in b.items() if k != "cache_control"}
        return prefix + json.dumps(clean, sort_keys=True), marked

    units = [unit("tool:", t) for t in objects(body.get("tools"))]
    units += [unit("system:", b) for b in _blocks(body.get("system"))]
    for i, m in enumerate(items(body.get("messages"))):
        if is_object(m):
            units += [unit(f"{m.get('role')}{i}:", b) for b in _blocks(m.get("content"))]
    return units


class _AnthropicHandler(ContractHandler):
    server_version = "autodev-contract-anthropic/1"

    @property
    def _server(self) -> AnthropicServer:
        srv = self.scripted
        if not isinstance(srv, AnthropicServer):
            raise TypeError(f"an Anthropic contract handler on a {type(srv).__name__}")
        return srv

    def _anthropic_error(self, status: int, type_: str, message: str) -> None:
        self._send_json(status, {"type": "error", "error": {"type": type_, "message": message}})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/messages":
            self._anthropic_error(404, "not_found_error", f"no route POST {self.path}; use /v1/messages")
            return
        try:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body: object = json.loads(raw or b"{}")
            if not is_object(body):
                raise ValueError("body is not a JSON object")
        except ValueError as e:
            self._anthropic_error(400, "invalid_request_error", f"request body is not valid JSON: {e}")
            return
        srv = self._server
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

    def _check(self, body: JsonObject) -> str | None:
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int):
            return "max_tokens: Field required"
        asked = body.get("thinking")
        thinking = _thinking(body)
        budget = asked.get("budget_tokens", 0) if is_object(asked) else 0
        if thinking and isinstance(budget, (int, float)) and budget >= max_tokens:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
        for i, m in enumerate(items(body.get("messages"))):
            if not is_object(m) or m.get("role") != "assistant":
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
                match first := blocks[0]:
                    case {"type": "thinking"} if first.get("signature") != sign(
                        str(first.get("thinking", ""))
                    ):
                        return f"messages.{i}.content.0: Invalid `signature` in `thinking` block"
                    case _:
                        pass  # a redacted thinking block, or a signed one
        return None

    def _usage(self, body: JsonObject, out_chars: int) -> dict[str, int]:
        """Token counts with cache reads: the longest prefix (at a block boundary) that an
        earlier request marked with cache_control is read from the cache; this request's own
        marked prefixes are written to it."""
        srv = self._server
        units = _prefix_units(body)
        hashes: list[str] = []
        h = hashlib.sha256()
        for text, _ in units:
            h.update(text.encode())
            hashes.append(h.hexdigest())
        sizes: list[int] = []
        total = 0
        for text, _ in units:
            total += len(text)
            sizes.append(total)
        tokens = [answers.tokens(n) for n in sizes]
        with srv.ledger.lock:
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

    def _answer(self, body: JsonObject) -> None:
        srv = self._server
        model = str(body.get("model") or "")
        participant = self._participant(model)
        messages = body.get("messages")
        turn = self._default_turn(messages)
        assistants = sum(1 for m in objects(messages) if m.get("role") == "assistant")
        with srv.ledger.lock:
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
        content = _content(body, participant, turn, index, step)
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


def _thinking(body: JsonObject) -> bool:
    """The request turns extended thinking on (`"thinking": {"type": "enabled", ...}`)."""
    match body.get("thinking"):
        case {"type": "enabled"}:
            return True
        case _:
            return False


def _content(
    body: JsonObject, participant: str, turn: str, index: int, step: Step | None
) -> list[JsonObject]:
    """An answer's content blocks: a signed thinking block when thinking is on, the text, the
    tool calls."""
    content: list[JsonObject] = []
    if _thinking(body):
        thought = f"{participant} thinks about step {index} of turn {turn}"
        content.append({"type": "thinking", "thinking": thought, "signature": sign(thought)})
    text = f"(script exhausted for {participant})" if step is None else step.text
    if text:
        content.append({"type": "text", "text": text})
    for j, c in enumerate(step.calls if step else []):
        try:
            args: object = json.loads(c.arguments())
        except ValueError:
            args = {}
        content.append(
            {
                "type": "tool_use",
                "id": f"toolu_{answers.safe_id(turn)}_{index}_{j}",
                "name": c.tool,
                "input": args if is_object(args) else {},
            }
        )
    return content


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
