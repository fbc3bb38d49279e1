"""The narrow model interface. litellm is the default (and only) backend; the rest of the
harness sees `Target`s (`targets`: which models a participant may use) and `Generation`s and
never knows which provider it talks to.

litellm is imported lazily, and read into typed values, in `llm` (its one edge).

What providers hold a harness to (SPEC §13), and where it is kept:
- The assistant message comes back whole (`message.model_dump()`: thinking blocks with their
  signatures, reasoning content, provider-specific fields, tool-call ids) and is sent back
  unchanged to the same provider family. `adapt()` reduces messages of another family to the
  plain OpenAI shape when failover moves a turn mid-way.
- An endpoint (`api_base`) without `api_key_env` needs no key: a placeholder satisfies litellm's
  OpenAI client, which refuses to send a request without one.
- Errors are classified by what fixes them (`Refused`, `Transient`, `RateLimited`,
  `ContextExceeded`).
- Every request carries an output cap; every target knows its context window.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from autodev.errors import ProviderError
from autodev.harness import llm
from autodev.harness.messages import AssistantMessage, Message, ToolSpec, plain
from autodev.harness.targets import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_WINDOW,
    PLACEHOLDER_KEY,
    SCRIPTED_WINDOW,
    Target,
    family,
    model_limits,
    output_cap,
    targets_for,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_WINDOW",
    "PLACEHOLDER_KEY",
    "SCRIPTED_WINDOW",
    "ContextExceeded",
    "Generation",
    "Oversized",
    "RateLimited",
    "Refused",
    "Target",
    "Transient",
    "adapt",
    "backoff",
    "complete",
    "family",
    "model_limits",
    "output_cap",
    "sleep",
    "targets_for",
    "warm",
]

# Families whose requests get prompt-cache marks (litellm's cache_control injection).
CACHE_MARK_FAMILIES = {"anthropic"}


@dataclass
class Generation:
    message: AssistantMessage  # the provider's assistant message as litellm returns it (model_dump)
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    model: str
    cached_tokens: int = 0  # input tokens read from the provider's prompt cache
    source: str = ""  # the litellm model string that wrote the message (its provider family)
    finish_reason: str | None = None  # why the provider stopped ("stop", "tool_calls", "length")
    response_model: str | None = None  # the model the provider says answered


class RateLimited(Exception):
    def __init__(self, target: Target, retry_after: float, detail: str):
        super().__init__(detail)
        self.target, self.retry_after, self.detail = target, retry_after, detail


class Transient(Exception):
    """Timeouts, connection failures, 5xx, overloaded: worth retrying with backoff."""


# The answer is asked for with max_tokens (a few tens of KB of text); a provider that ignores it
# and sends megabytes is broken or hostile: its answer is not journaled, and the ask is retried.
MAX_ANSWER_CHARS = 8 * 1024 * 1024


class Oversized(Transient):
    """An answer over MAX_ANSWER_CHARS: dropped before anything stores it (docs/security.md)."""


class ContextExceeded(Exception):
    """The provider says the request does not fit the model's context window."""


class Refused(Exception):
    """A refusal no retry fixes: `kind` is auth, model or request; `detail` is the raw text."""

    FIXES = {
        "auth": "check the API key it uses (api_key_env in .autodev/team.toml, or the provider's "
        "usual variable), then `autodev resume`",
        "model": "check the model name (and api_base) in .autodev/team.toml, then `autodev resume`",
        "request": "the provider rejected the request as malformed (its text is in events.jsonl); "
        "change the model or endpoint in .autodev/team.toml, then `autodev resume`",
        "script": "add the participant's next steps to the script ([scripted] path in "
        ".autodev/team.toml; docs/scripted.md), then `autodev resume`",
    }
    HEADLINES = {
        "auth": "was refused: authentication failed or credentials are missing",
        "model": "was refused: the provider does not know this model",
        "request": "was refused: the provider rejected the request",
        "script": "ran out of script",
    }

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail

    def to_error(self, who: str, label: str) -> ProviderError:
        if self.kind == "script":  # the sentence is ours (scripted/answers.py): said whole
            return ProviderError(
                f"{who}'s {label} model ran out of script: {self.detail}", self.FIXES["script"]
            )
        return ProviderError(
            f"{who}'s model {label} {self.HEADLINES[self.kind]}", self.FIXES[self.kind], self.detail[:2000]
        )


def warm() -> None:
    """Import litellm now (seconds, once per process) rather than inside a turn's first ask."""
    llm.load()


_litellm = llm.load  # the contract tests' handle on litellm itself


# -- messages across providers -------------------------------------------------------------------


def adapt(
    messages: list[Message], origins: Mapping[int, str], target: Target
) -> tuple[list[Message], dict[str, object]]:
    """The turn's messages made valid for `target`, and request options to change.

    `origins` maps the index of each assistant message to the litellm model that wrote it. A
    message of the target's own family goes back verbatim (signatures intact); one of another
    family is reduced to `plain()`. Anthropic with thinking on requires every assistant tool call
    to start with its own thinking block: when some cannot (written by another family), the
    request is sent with thinking off and every message plain, which Anthropic accepts.
    """
    fam = target.family
    out = [_plain(m) if i in origins and family(origins[i]) != fam else m for i, m in enumerate(messages)]
    changes: dict[str, object] = {}
    if fam == "anthropic" and target.kwargs.get("reasoning_effort"):
        missing = any(
            m["role"] == "assistant" and m.get("tool_calls") and not m.get("thinking_blocks") for m in out
        )
        if missing:
            out = [_plain(m) if i in origins else m for i, m in enumerate(out)]
            changes["reasoning_effort"] = None
    return out, changes


def _plain(m: Message) -> Message:
    return plain(m) if m["role"] == "assistant" else m


# -- one request ---------------------------------------------------------------------------------


# How providers that answer 400 (not 404) word an unknown model: OpenAI-compatible gateways
# ("The model `x` does not exist", code model_not_found), Ollama ("model 'x' not found"),
# Together/OpenRouter ("not a valid model ID", "Unknown model").
_UNKNOWN_MODEL = re.compile(
    r"model_not_found|unknown model|invalid model|not a valid model"
    r"|model\b[^.\n]{0,120}?\b(?:not found|does not exist|doesn't exist|is not supported)",
    re.IGNORECASE,
)


# scripted/answers.exhausted_message, as the scripted server's 400 carries it through litellm.
_EXHAUSTED = re.compile(r"the script for \S+ has no step \d+ \(it has \d+ steps? for \S+\)")


def _unknown_model(text: str) -> bool:
    return bool(_UNKNOWN_MODEL.search(text))


def _missing_credentials(text: str) -> bool:
    t = text.lower()
    return "missing credentials" in t or "api_key client option must be set" in t


def complete(
    target: Target,
    messages: list[Message],
    tools: list[ToolSpec],
    *,
    turn_id: str,
    timeout: float,
    origins: Mapping[int, str] | None = None,
) -> Generation:
    llm.load()
    (send, changes), options = adapt(messages, origins or {}, target), _options(target, turn_id)
    for k, v in changes.items():
        if v is None:
            options.pop(k, None)
        else:
            options[k] = v
    try:
        reply = llm.completion(target.model, send, tools, timeout, target.max_output, options)
    except _caught() as e:  # litellm's errors, read by what fixes them
        err = _error(target, e)
        if err is e:
            raise
        raise err from e
    size = len(json.dumps(reply.message, default=str))
    if size > MAX_ANSWER_CHARS:
        raise Oversized(
            f"{target.label}: the answer is {size:,} characters, over the {MAX_ANSWER_CHARS:,} cap "
            "(the provider ignored max_tokens); it was dropped, not stored"
        )
    return Generation(
        reply.message,
        reply.prompt_tokens,
        reply.completion_tokens,
        reply.cost,
        target.label,
        reply.cached_tokens,
        target.model,
        reply.finish_reason,
        reply.model,
    )


def _options(target: Target, turn_id: str) -> dict[str, object]:
    """The target's litellm options for one request of turn `turn_id`."""
    options = dict(target.kwargs)
    if target.scripted:
        options["extra_headers"] = {"X-Autodev-Turn": turn_id}
    if target.family in CACHE_MARK_FAMILIES:
        # System prompt (and with it the tools before it) plus the newest message: each step
        # then reads the previous step's prefix from the cache.
        options["cache_control_injection_points"] = [
            {"location": "message", "role": "system"},
            {"location": "message", "index": -1},
        ]
    return options


def _error(target: Target, e: Exception) -> Exception:
    """litellm's error as what fixes it: the window, a rate limit, a refusal, or a retry. One
    that none of them names is raised as it came."""
    from litellm import exceptions as llm_errors

    name = f"{type(e).__name__}: {e}"
    if isinstance(e, llm_errors.ContextWindowExceededError):
        return ContextExceeded(f"{target.label}: {e}")
    if isinstance(e, llm_errors.RateLimitError):
        return RateLimited(target, llm.retry_after(e), str(e))
    if isinstance(e, (llm_errors.AuthenticationError, llm_errors.PermissionDeniedError)):
        return Refused("auth", name)
    if isinstance(e, llm_errors.NotFoundError):
        return Refused("model", name)
    if isinstance(e, llm_errors.BadRequestError):
        said = _EXHAUSTED.search(str(e)) if target.scripted else None
        if said:  # the scripted server: the participant's script has no step left
            return Refused("script", said[0])
        if _status(e) in (401, 403) or _missing_credentials(str(e)):
            return Refused("auth", name)
        return Refused("model" if _unknown_model(str(e)) else "request", name)
    if isinstance(e, _transient()):
        if _missing_credentials(str(e)):
            return Refused("auth", name)
        return Transient(f"{target.label}: {name}")
    if isinstance(e, llm_errors.APIError):
        if _status(e) >= 500:  # 529 overloaded included
            return Transient(f"{target.label}: {e}")
        kind = {401: "auth", 403: "auth", 404: "model"}.get(_status(e), "request")
        return Refused("model" if kind == "request" and _unknown_model(str(e)) else kind, name)
    return Refused("auth", name) if _missing_credentials(str(e)) else e


def _status(e: Exception) -> int:
    return int(getattr(e, "status_code", 0) or 0)


def _caught() -> tuple[type[Exception], ...]:
    from litellm import exceptions as llm_errors

    return (
        llm_errors.ContextWindowExceededError,
        llm_errors.RateLimitError,
        llm_errors.AuthenticationError,
        llm_errors.PermissionDeniedError,
        llm_errors.NotFoundError,
        llm_errors.BadRequestError,
        *_transient(),
        llm_errors.APIError,
        llm_errors.OpenAIError,
    )


def _transient() -> tuple[type[Exception], ...]:
    from litellm import exceptions as llm_errors

    return (
        llm_errors.Timeout,
        llm_errors.APIConnectionError,
        llm_errors.InternalServerError,
        llm_errors.ServiceUnavailableError,
        llm_errors.BadGatewayError,
    )


def backoff(attempt: int, first: float, cap: float = 60.0) -> float:
    return min(cap, first * (2 ** max(0, attempt - 1)))


def sleep(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)
