"""A Gemini generateContent contract server: Gemini 3's thought-signature rule over real HTTP
(SPEC §13), answering from the same TOML scripts and ledger as the scripted model.

litellm's gemini provider reaches it with `api_base = server.root` and a `gemini/...` model
(it posts to `{api_base}/models/{model}:generateContent` with an `x-goog-api-key` header). Like
Gemini, it signs the first functionCall part of each answer (`thoughtSignature`), and refuses
a request (400 INVALID_ARGUMENT) whose model turn carries a function call without the signature
it was given:

- missing: Gemini 3's own wording ("Function call is missing a thought_signature ...");
- different from the one it gave: "Corrupted thought signature." (AI Studio's wording). That
  includes Google's documented skip-validator placeholder, which litellm puts in when a harness
  lost the real one: Gemini accepts it at the cost of the model's reasoning, this server does
  not, since the contract is that the signature goes back verbatim. A call this server did not
  sign (written by another provider before a failover) may carry the placeholder, as on Gemini.

The turn of a request is the hash of its first user text (the turn prompt), as in
`autodev.scripted.contract`; the participant comes from the model name in the path (`participants`
maps model names to script participants).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from pathlib import Path

from autodev.scripted import answers
from autodev.scripted.answers import items, objects
from autodev.scripted.contract import SIGNING_KEY, ContractHandler, ProviderServer
from autodev.scripted.script import Script
from autodev.store.journal import JsonObject, is_object

_ROUTE = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent)$")
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


# Google's documented value that skips validation, for history written by other models.
SKIP_SIGNATURE = base64.b64encode(b"skip_thought_signature_validator").decode()


def signature(call: JsonObject) -> str:
    """The thoughtSignature of a functionCall: an HMAC of its name and arguments."""
    canon = json.dumps({"name": call.get("name"), "args": call.get("args") or {}}, sort_keys=True)
    return hmac.new(SIGNING_KEY, b"gemini:" + canon.encode(), hashlib.sha256).hexdigest()


def _first_user_text(contents: object) -> str:
    for c in objects(contents):
        if c.get("role", "user") == "user":
            return json.dumps([p.get("text") for p in objects(c.get("parts"))])
    return ""


def _call(part: JsonObject) -> JsonObject | None:
    call = part.get("functionCall") or part.get("function_call")
    return call if is_object(call) else None


class _GeminiHandler(ContractHandler):
    server_version = "autodev-contract-gemini/1"

    @property
    def _server(self) -> GeminiServer:
        srv = self.scripted
        if not isinstance(srv, GeminiServer):
            raise TypeError(f"a Gemini contract handler on a {type(srv).__name__}")
        return srv

    def _google_error(self, status: int, message: str) -> None:
        self._send_json(
            status, {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}
        )

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        route = _ROUTE.search(path)
        if route is None:
            self._google_error(404, f"no route POST {self.path}; use .../models/MODEL:generateContent")
            return
        if route.group(2) != "generateContent":
            self._google_error(400, "this contract server answers generateContent only (no streaming)")
            return
        if not (self.headers.get("x-goog-api-key") or "key=" in self.path):
            self._google_error(401, "API key not valid. Please pass a valid API key.")
            return
        try:
            body: object = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not is_object(body):
                raise ValueError("the payload is not a JSON object")
        except ValueError as e:
            self._google_error(400, f"Invalid JSON payload received. {e}")
            return
        srv = self._server
        problem = self._check(body)
        if problem:
            srv.refusals.append(problem)
            self._google_error(400, problem)
            return
        try:
            self._answer(route.group(1), body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _check(self, body: JsonObject) -> str | None:
        """Gemini 3's rule: the first function call of every model turn carries its signature."""
        for i, content in enumerate(items(body.get("contents"))):
            if not is_object(content) or content.get("role") != "model":
                continue
            # The API takes either spelling of a field (protobuf JSON); litellm sends snake_case.
            signed = [(p, c) for p in objects(content.get("parts")) if (c := _call(p)) is not None]
            if not signed:
                continue
            part, first = signed[0]
            name = first.get("name")
            given = part.get("thoughtSignature") or part.get("thought_signature")
            if not given:
                return (
                    "Function call is missing a thought_signature in functionCall parts. This is "
                    "required for tools to work correctly, and missing thought_signature may lead to "
                    f"degraded model performance. Additional data, function call `default_api:{name}` "
                    f", position {i + 1}."
                )
            ours = signature(first)
            if given != ours and (ours in self._server.issued or given != SKIP_SIGNATURE):
                return "Corrupted thought signature."
        return None

    def _answer(self, model: str, body: JsonObject) -> None:
        srv = self._server
        participant = self._participant(model)
        contents = body.get("contents")
        turn = "h" + hashlib.sha1(_first_user_text(contents).encode()).hexdigest()[:12]
        assistants = sum(1 for c in objects(contents) if c.get("role") == "model")
        with srv.ledger.lock:
            index, step = srv.choose(participant, turn, assistants)
            srv.record({"participant": participant, "turn": turn, "index": index, "body": body})
        if step is not None and step.error is not None:
            self._google_error(
                step.error, f"scripted error {step.error} for {participant} (step index {index})"
            )
            return
        text = f"(script exhausted for {participant})" if step is None else step.text
        parts: list[JsonObject] = []
        if _thoughts_asked(body):
            parts.append({"text": f"{participant} thinks about step {index} of turn {turn}", "thought": True})
        if text:
            parts.append({"text": text})
        for c in step.calls if step else []:
            try:
                args: object = json.loads(c.arguments())
            except ValueError:
                args = {}
            call: JsonObject = {"name": c.tool, "args": args if is_object(args) else {}}
            part: JsonObject = {"functionCall": call}
            if not any("functionCall" in p for p in parts):  # Gemini signs the first call only
                signed = signature(call)
                part["thoughtSignature"] = signed
                with srv.ledger.lock:
                    srv.issued.add(signed)
            parts.append(part)
        prompt = answers.tokens(len(json.dumps(body)))
        out = answers.tokens(len(json.dumps(parts)))
        self._send_json(
            200,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
                ],
                "usageMetadata": {
                    "promptTokenCount": prompt,
                    "candidatesTokenCount": out,
                    "totalTokenCount": prompt + out,
                },
                "modelVersion": model,
                "responseId": f"{answers.safe_id(participant)}-{answers.safe_id(turn)}-{index}",
            },
        )


def _thoughts_asked(body: JsonObject) -> bool:
    """generationConfig.thinkingConfig.includeThoughts, either missing level taken as empty."""
    config = body.get("generationConfig")
    thinking = config.get("thinkingConfig") if is_object(config) else None
    return is_object(thinking) and bool(thinking.get("includeThoughts"))


class GeminiServer(ProviderServer):
    """A Gemini-generateContent-compatible server: point litellm at it with
    `api_base = server.root` and a `gemini/...` model."""

    handler_base = _GeminiHandler

    def __init__(
        self,
        script: Script,
        ledger_path: Path,
        request_log: Path | None = None,
        *,
        participants: dict[str, str] | None = None,
    ):
        super().__init__(script, ledger_path, request_log, participants=participants)
        self.issued: set[str] = set()  # signatures given, one per answer with function calls

    @property
    def root(self) -> str:
        """The API base litellm's gemini provider appends `/models/{model}:generateContent` to."""
        return self.base_url.removesuffix("/v1") + "/v1beta"
