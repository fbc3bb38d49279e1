"""The models a participant can be served by: its model and failovers as `Target`s, each with
its provider family, context window and output cap (what litellm knows of the model, or what
team.toml states)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from autodev.errors import ProviderError
from autodev.guard import keys
from autodev.harness import llm
from autodev.rules.names import is_scripted

# Sent to endpoints that need no key (llama.cpp, vLLM, Ollama): they ignore it.
PLACEHOLDER_KEY = "no-key-needed"
# Context window assumed for a model litellm does not know and no `context = N` states.
DEFAULT_WINDOW = 32_768
# The scripted model has no window; tests that want one set `context = N`.
SCRIPTED_WINDOW = 1_000_000
# Upper bound of the default output cap: enough for a long tool call, far below any window.
DEFAULT_MAX_OUTPUT = 8192


@dataclass(frozen=True)
class Target:
    """One concrete model a participant can be served by (its model or a failover)."""

    label: str  # what the user wrote in team.toml, e.g. "openai/gpt-5" or "scripted"
    model: str  # the litellm model string
    kwargs: dict[str, object] = field(default_factory=dict[str, object], hash=False, compare=False)
    scripted: bool = False
    window: int = DEFAULT_WINDOW  # context window in tokens (input + output)
    max_output: int = DEFAULT_MAX_OUTPUT  # sent as max_tokens on every request

    @property
    def family(self) -> str:
        """The provider family whose message formats this target accepts verbatim."""
        return family(self.model)


def family(model: str) -> str:
    """The provider of a litellm model string, by its prefix ("anthropic/...") or litellm's
    own lookup for bare names ("claude-..."); "openai" when unknown (OpenAI-compatible)."""
    if "/" in model:
        return model.split("/", 1)[0]
    try:
        return llm.provider_of(model)
    except Exception:
        return "openai"


def model_limits(model: str) -> tuple[int | None, int | None]:
    """(context window, max output tokens) litellm knows for `model`; None when unknown."""
    try:
        return llm.limits(model)
    except Exception:
        return None, None


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
    scripted_price: Mapping[str, float] | None = None,
    context: int | None = None,
    max_output_tokens: int | None = None,
    configured_output: int = DEFAULT_MAX_OUTPUT,
) -> list[Target]:
    """`context` (tokens) states the window where litellm does not know it; `max_output_tokens`
    is the participant's own output cap, `configured_output` the run's (maxOutputTokens). Both
    apply to every model of the participant."""
    out: list[Target] = []
    for m in [model, *failover]:
        if is_scripted(m):
            if not scripted_url:
                raise ProviderError(
                    f"{who} uses the scripted model but no scripted server is running",
                    "add a [scripted] section with a script path to .autodev/team.toml",
                )
            window = context or SCRIPTED_WINDOW
            # The participant's name is the model id: the scripted server serves steps by it.
            kw: dict[str, object] = {"api_base": scripted_url, "api_key": "scripted"}
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
        kw = {}
        if api_base:
            kw["api_base"] = api_base
        if api_key_env:
            kw["api_key"] = keys.get(api_key_env) or ""
        elif api_base:
            kw["api_key"] = PLACEHOLDER_KEY
        else:
            llm.load()  # before keys imports it: the import goes one way (llm._import_litellm)
            kw.update(keys.litellm_kwargs(m))  # the daemon's environment holds no keys
        if effort:
            kw["reasoning_effort"] = effort
        known_window, known_max = model_limits(m)
        window = context or known_window or DEFAULT_WINDOW
        cap = output_cap(window, known_max, configured_output, max_output_tokens)
        out.append(Target(m, m, kw, window=window, max_output=cap))
    return out
