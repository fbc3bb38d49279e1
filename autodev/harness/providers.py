"""The narrow model interface. litellm is the default (and only) backend; the rest of the
harness sees `Target`s and `Generation`s and never knows which provider it talks to.

litellm is imported lazily: commands that never call a model must not pay its import time.

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
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from autodev.errors import ProviderError
from autodev.guard import keys
from autodev.harness.messages import plain, verbatim
from autodev.rules.names import is_scripted

# Sent to endpoints that need no key (llama.cpp, vLLM, Ollama): they ignore it.
PLACEHOLDER_KEY = "no-key-needed"
# Context window assumed for a model litellm does not know and no `context = N` states.
DEFAULT_WINDOW = 32_768
# The scripted model has no window; tests that want one set `context = N`.
SCRIPTED_WINDOW = 1_000_000
# Upper bound of the default output cap: enough for a long tool call, far below any window.
DEFAULT_MAX_OUTPUT = 8192
# Families whose requests get prompt-cache marks (litellm's cache_control injection).
CACHE_MARK_FAMILIES = {"anthropic"}


@dataclass(frozen=True)
class Target:
    """One concrete model a participant can be served by (its model or a failover)."""

    label: str  # what the user wrote in team.toml, e.g. "openai/gpt-5" or "scripted"
    model: str  # the litellm model string
    kwargs: dict = field(default_factory=dict, hash=False, compare=False)
    scripted: bool = False
    window: int = DEFAULT_WINDOW  # context window in tokens (input + output)
    max_output: int = DEFAULT_MAX_OUTPUT  # sent as max_tokens on every request

    @property
    def family(self) -> str:
        """The provider family whose message formats this target accepts verbatim."""
        return family(self.model)


@dataclass
class Generation:
    message: dict  # the provider's assistant message as litellm returns it (model_dump)
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


def family(model: str) -> str:
    """The provider of a litellm model string, by its prefix ("anthropic/...") or litellm's
    own lookup for bare names ("claude-..."); "openai" when unknown (OpenAI-compatible)."""
    if "/" in model:
        return model.split("/", 1)[0]
    try:
        return _litellm().get_llm_provider(model=model)[1]
    except Exception:
        return "openai"


def model_limits(model: str) -> tuple[int | None, int | None]:
    """(context window, max output tokens) litellm knows for `model`; None when unknown."""
    try:
        info = _litellm().get_model_info(model)
    except Exception:
        return None, None
    window = info.get("max_input_tokens") or info.get("max_tokens")
    out = info.get("max_output_tokens")
    return (int(window) if window else None), (int(out) if out else None)


def output_cap(window: int, known_max: int | None, configured: int, explicit: int | None) -> int:
    """The max_tokens sent: a participant's explicit cap as given; else the run's configured cap
    bounded by a quarter of the window (room for the turn's input). Never more than the model
    can produce."""
    cap = explicit or min(configured, max(256, window // 4))
    return min(cap, known_max) if known_max else cap


def targets_for(
    who: str,
    model: str,
    failover: list[str],
    *,
    effort: str | None,
    api_base: str | None,
    api_key_env: str | None,
    scripted_url: str | None,
    scripted_price: dict | None = None,
    context: int | None = None,
    max_output_tokens: int | None = None,
    configured_output: int = DEFAULT_MAX_OUTPUT,
) -> list[Target]:
    """`context` (tokens) states the window where litellm does not know it; `max_output_tokens`
    is the participant's own output cap, `configured_output` the run's (maxOutputTokens). Both
    apply to every model of the participant."""
    out = []
    for m in [model, *failover]:
        if is_scripted(m):
            if not scripted_url:
                raise ProviderError(
                    f"{who} uses the scripted model but no scripted server is running",
                    "add a [scripted] section with a script path to .autodev/team.toml",
                )
            window = context or SCRIPTED_WINDOW
            # The participant's name is the model id: the scripted server serves steps by it.
            kw = {"api_base": scripted_url, "api_key": "scripted"}
            if scripted_price:  # the script's stated prices, as litellm custom pricing
                kw["input_cost_per_token"] = scripted_price["input_per_token"]
                kw["output_cost_per_token"] = scripted_price["output_per_token"]
            out.append(
                Target(
                    m,
                    f"openai/{who}",
                    kw,
                    scripted=True,
                    window=window,
                    max_output=output_cap(window, None, configured_output, max_output_tokens),
                )
            )
            continue
        kw: dict[str, Any] = {}
        if api_base:
            kw["api_base"] = api_base
        if api_key_env:
            kw["api_key"] = keys.get(api_key_env) or ""
        elif api_base:
            kw["api_key"] = PLACEHOLDER_KEY
        else:
            kw.update(keys.litellm_kwargs(m))  # the daemon's environment holds no keys
        if effort:
            kw["reasoning_effort"] = effort
        known_window, known_max = model_limits(m)
        window = context or known_window or DEFAULT_WINDOW
        cap = output_cap(window, known_max, configured_output, max_output_tokens)
        out.append(Target(m, m, kw, window=window, max_output=cap))
    return out


def warm() -> None:
    """Import litellm now (seconds, once per process) rather than inside a turn's first ask."""
    _litellm()


def _litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


def _retry_after(exc: Exception) -> float:
    for src in (getattr(exc, "response", None), exc):
        headers = getattr(src, "headers", None) or getattr(src, "litellm_response_headers", None)
        if headers:
            try:
                return max(0.0, float(headers.get("retry-after") or headers.get("Retry-After") or 0))
            except (TypeError, ValueError):
                return 0.0
    return 0.0


# -- messages across providers -------------------------------------------------------------------


def adapt(messages: list[dict], origins: dict[int, str], target: Target) -> tuple[list[dict], dict]:
    """The turn's messages made valid for `target`, and request options to change.

    `origins` maps the index of each assistant message to the litellm model that wrote it. A
    message of the target's own family goes back verbatim (signatures intact); one of another
    family is reduced to `plain()`. Anthropic with thinking on requires every assistant tool call
    to start with its own thinking block: when some cannot (written by another family), the
    request is sent with thinking off and every message plain, which Anthropic accepts.
    """
    fam = target.family
    out = [plain(m) if i in origins and family(origins[i]) != fam else m for i, m in enumerate(messages)]
    changes: dict = {}
    if fam == "anthropic" and target.kwargs.get("reasoning_effort"):
        missing = any(
            m.get("role") == "assistant" and m.get("tool_calls") and not m.get("thinking_blocks") for m in out
        )
        if missing:
            out = [plain(m) if i in origins else m for i, m in enumerate(out)]
            changes["reasoning_effort"] = None
    return out, changes


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
    messages: list[dict],
    tools: list[dict],
    *,
    turn_id: str,
    timeout: float,
    origins: dict[int, str] | None = None,
) -> Generation:
    litellm = _litellm()
    from litellm import exceptions as llm_errors

    kwargs = dict(target.kwargs)
    if target.scripted:
        kwargs["extra_headers"] = {"X-Autodev-Turn": turn_id}
    send, changes = adapt(messages, origins or {}, target)
    for k, v in changes.items():
        if v is None:
            kwargs.pop(k, None)
        else:
            kwargs[k] = v
    if target.family in CACHE_MARK_FAMILIES:
        # System prompt (and with it the tools before it) plus the newest message: each step
        # then reads the previous step's prefix from the cache.
        kwargs["cache_control_injection_points"] = [
            {"location": "message", "role": "system"},
            {"location": "message", "index": -1},
        ]
    try:
        resp = litellm.completion(
            model=target.model,
            messages=send,
            tools=tools or None,
            timeout=timeout,
            num_retries=0,
            max_retries=0,
            max_tokens=target.max_output,
            **kwargs,
        )
    except llm_errors.ContextWindowExceededError as e:
        raise ContextExceeded(f"{target.label}: {e}") from e
    except llm_errors.RateLimitError as e:
        raise RateLimited(target, _retry_after(e), str(e)) from e
    except (llm_errors.AuthenticationError, llm_errors.PermissionDeniedError) as e:
        raise Refused("auth", f"{type(e).__name__}: {e}") from e
    except llm_errors.NotFoundError as e:
        raise Refused("model", f"{type(e).__name__}: {e}") from e
    except llm_errors.BadRequestError as e:
        status = int(getattr(e, "status_code", 0) or 0)
        said = _EXHAUSTED.search(str(e)) if target.scripted else None
        if said:  # the scripted server: the participant's script has no step left
            raise Refused("script", said[0]) from e
        if status in (401, 403) or _missing_credentials(str(e)):
            kind = "auth"
        else:
            kind = "model" if _unknown_model(str(e)) else "request"
        raise Refused(kind, f"{type(e).__name__}: {e}") from e
    except (
        llm_errors.Timeout,
        llm_errors.APIConnectionError,
        llm_errors.InternalServerError,
        llm_errors.ServiceUnavailableError,
        llm_errors.BadGatewayError,
    ) as e:
        if _missing_credentials(str(e)):
            raise Refused("auth", f"{type(e).__name__}: {e}") from e
        raise Transient(f"{target.label}: {type(e).__name__}: {e}") from e
    except llm_errors.APIError as e:
        status = int(getattr(e, "status_code", 0) or 0)
        if status >= 500:  # 529 overloaded included
            raise Transient(f"{target.label}: {e}") from e
        kind = {401: "auth", 403: "auth", 404: "model"}.get(status, "request")
        if kind == "request" and _unknown_model(str(e)):
            kind = "model"
        raise Refused(kind, f"{type(e).__name__}: {e}") from e
    except llm_errors.OpenAIError as e:
        if _missing_credentials(str(e)):
            raise Refused("auth", f"{type(e).__name__}: {e}") from e
        raise
    # without stream=True completion() returns a ModelResponse; its stubs name every mode's type
    msg = verbatim(resp.choices[0].message)  # pyright: ignore[reportAttributeAccessIssue]
    size = len(json.dumps(msg, default=str))
    if size > MAX_ANSWER_CHARS:
        raise Oversized(
            f"{target.label}: the answer is {size:,} characters, over the {MAX_ANSWER_CHARS:,} cap "
            "(the provider ignored max_tokens); it was dropped, not stored"
        )
    usage = getattr(resp, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or getattr(usage, "cache_read_input_tokens", None) or 0
    cost = (getattr(resp, "_hidden_params", None) or {}).get("response_cost")
    return Generation(
        msg,
        int(getattr(usage, "prompt_tokens", 0) or 0),
        int(getattr(usage, "completion_tokens", 0) or 0),
        float(cost) if cost is not None else None,
        target.label,
        int(cached or 0),
        target.model,
        getattr(resp.choices[0], "finish_reason", None),  # pyright: ignore[reportAttributeAccessIssue]
        getattr(resp, "model", None),
    )


def backoff(attempt: int, first: float, cap: float = 60.0) -> float:
    return min(cap, first * (2 ** max(0, attempt - 1)))


def sleep(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)
