"""The narrow model interface. litellm is the default (and only) backend; the rest of the
harness sees `Target`s and `Generation`s and never knows which provider it talks to.

litellm is imported lazily: commands that never call a model must not pay its import time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from autodev.errors import ProviderError
from autodev.names import is_scripted


@dataclass(frozen=True)
class Target:
    """One concrete model a participant can be served by (its model or a failover)."""

    label: str  # what the user wrote in team.toml, e.g. "openai/gpt-5" or "scripted"
    model: str  # the litellm model string
    kwargs: dict = field(default_factory=dict, hash=False, compare=False)
    scripted: bool = False


@dataclass
class Generation:
    message: dict  # an OpenAI-style assistant message (role, content, tool_calls)
    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    model: str


class RateLimited(Exception):
    def __init__(self, target: Target, retry_after: float, detail: str):
        super().__init__(detail)
        self.target, self.retry_after, self.detail = target, retry_after, detail


class Transient(Exception):
    """Timeouts, connection failures, 5xx: worth retrying with backoff."""


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
) -> list[Target]:
    out = []
    for m in [model, *failover]:
        if is_scripted(m):
            if not scripted_url:
                raise ProviderError(
                    f"{who} uses the scripted model but no scripted server is running",
                    "add a [scripted] section with a script path to .autodev/team.toml",
                )
            # The participant's name is the model id: the scripted server serves steps by it.
            kw = {"api_base": scripted_url, "api_key": "scripted"}
            if scripted_price:  # the script's stated prices, as litellm custom pricing
                kw["input_cost_per_token"] = scripted_price["input_per_token"]
                kw["output_cost_per_token"] = scripted_price["output_per_token"]
            out.append(Target(m, f"openai/{who}", kw, scripted=True))
            continue
        kw: dict[str, Any] = {}
        if api_base:
            kw["api_base"] = api_base
        if api_key_env:
            kw["api_key"] = os.environ.get(api_key_env, "")
        if effort:
            kw["reasoning_effort"] = effort
        out.append(Target(m, m, kw))
    return out


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


def complete(
    target: Target, messages: list[dict], tools: list[dict], *, turn_id: str, timeout: float
) -> Generation:
    litellm = _litellm()
    kwargs = dict(target.kwargs)
    if target.scripted:
        kwargs["extra_headers"] = {"X-Autodev-Turn": turn_id}
    try:
        resp = litellm.completion(
            model=target.model,
            messages=messages,
            tools=tools or None,
            timeout=timeout,
            num_retries=0,
            max_retries=0,
            **kwargs,
        )
    except litellm.RateLimitError as e:
        raise RateLimited(target, _retry_after(e), str(e)) from e
    except (
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    ) as e:
        raise Transient(f"{target.label}: {type(e).__name__}: {e}") from e
    except (litellm.AuthenticationError, litellm.BadRequestError, litellm.NotFoundError) as e:
        raise ProviderError(
            f"{target.label} refused the request: {type(e).__name__}: {e}",
            "check the model name, the API key and the endpoint in .autodev/team.toml",
        ) from e
    except litellm.APIError as e:
        if int(getattr(e, "status_code", 0) or 0) >= 500:
            raise Transient(f"{target.label}: {e}") from e
        raise ProviderError(
            f"{target.label} failed: {e}",
            "check the model name, the API key and the endpoint in .autodev/team.toml",
        ) from e
    choice = resp.choices[0].message
    msg: dict[str, Any] = {"role": "assistant", "content": choice.content}
    calls = getattr(choice, "tool_calls", None) or []
    if calls:
        msg["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments or "{}"},
            }
            for c in calls
        ]
    usage = getattr(resp, "usage", None)
    cost = (getattr(resp, "_hidden_params", None) or {}).get("response_cost")
    return Generation(
        msg,
        int(getattr(usage, "prompt_tokens", 0) or 0),
        int(getattr(usage, "completion_tokens", 0) or 0),
        float(cost) if cost is not None else None,
        target.label,
    )


def backoff(attempt: int, first: float, cap: float = 60.0) -> float:
    return min(cap, first * (2 ** max(0, attempt - 1)))


def sleep(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)
