"""litellm, the one third-party edge a model request crosses: imported lazily (commands that never
call a model must not pay its import time), and read into plain typed values here so the rest of
the harness never touches its loosely typed response objects.

litellm's stubs type `completion()`'s answer as a union of every mode (stream, async) and leave
usage, cost and headers as attributes its classes set at run time: they are read with `getattr`
here, once.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TypeGuard

from autodev.harness.messages import AssistantMessage, Message, ToolSpec, verbatim
from autodev.store.journal import is_object


def load() -> ModuleType:
    """litellm, imported and set up (no debug banners, unsupported parameters dropped)."""
    if "litellm" not in sys.modules:
        _import_litellm()
    import litellm

    litellm.suppress_debug_info = True
    litellm.drop_params = True
    return litellm


def _import_litellm() -> None:
    """The first import: most of a daemon's CPU (thousands of modules and pydantic classes).
    Nothing it builds is garbage, yet the cyclic collector walks that growing heap again and
    again while it is built, and once more at the interpreter's exit: the collector stays off
    during the import, and `gc.freeze()` then takes what exists out of every later collection
    (refcounting still frees it). Measured on an idle 2-core machine: import and exit took
    3.7 s of CPU, now 2.1 s; a scripted run of three turns, 4.6 s, now 2.9 s."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    was_on = gc.isenabled()
    gc.disable()
    try:
        importlib.import_module("litellm")
    finally:
        if was_on:
            gc.enable()
    gc.freeze()


@dataclass(frozen=True)
class Reply:
    """What a completion answered, read off litellm's ModelResponse."""

    message: AssistantMessage
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    cost: float | None
    finish_reason: str | None
    model: str | None


def completion(
    model: str,
    messages: list[Message],
    tools: list[ToolSpec],
    timeout: float,
    max_tokens: int,
    options: Mapping[str, object],
) -> Reply:
    """One non-streaming request; litellm's own retries off (the turn retries, and logs each)."""
    load()  # first: it sets litellm's environment before the import
    import litellm

    resp = litellm.completion(
        model=model,
        messages=messages,
        tools=tools or None,
        timeout=timeout,
        num_retries=0,
        max_retries=0,
        max_tokens=max_tokens,
        **options,
    )
    # without stream=True (or acompletion) completion() returns a ModelResponse
    assert isinstance(resp, litellm.ModelResponse)
    choice = resp.choices[0]
    usage: object = getattr(resp, "usage", None)
    details: object = getattr(usage, "prompt_tokens_details", None)
    cached: object = getattr(details, "cached_tokens", None) or getattr(
        usage, "cache_read_input_tokens", None
    )
    hidden: object = getattr(resp, "_hidden_params", None)
    cost = hidden.get("response_cost") if is_object(hidden) else None
    return Reply(
        verbatim(choice.message.model_dump()),
        _int(getattr(usage, "prompt_tokens", 0)),
        _int(getattr(usage, "completion_tokens", 0)),
        _int(cached),
        float(cost) if isinstance(cost, (int, float)) else None,
        getattr(choice, "finish_reason", None),
        resp.model,
    )


def _mapping(value: object) -> TypeGuard[Mapping[str, object]]:
    # HTTP headers (httpx's, or the dict litellm keeps): names are strings
    return isinstance(value, Mapping)


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) else 0


def provider_of(model: str) -> str:
    """litellm's provider for a bare model name ("claude-..." -> "anthropic"); raises if unknown."""
    return load().get_llm_provider(model=model)[1]


def limits(model: str) -> tuple[int | None, int | None]:
    """(context window, max output tokens) litellm knows for `model`; raises if it knows none."""
    info = load().get_model_info(model)
    window = info.get("max_input_tokens") or info.get("max_tokens")
    out = info.get("max_output_tokens")
    return (int(window) if window else None), (int(out) if out else None)


def retry_after(exc: Exception) -> float:
    """The seconds a rate-limit error's headers ask to wait (0 when they say nothing)."""
    for src in (getattr(exc, "response", None), exc):
        headers: object = getattr(src, "headers", None) or getattr(src, "litellm_response_headers", None)
        if _mapping(headers) and headers:
            said = headers.get("retry-after") or headers.get("Retry-After") or 0
            try:
                return max(0.0, float(str(said)))
            except (TypeError, ValueError):
                return 0.0
    return 0.0
