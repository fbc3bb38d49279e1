"""Prompt caching on a 10-step turn: the share of input tokens the provider serves from its cache,
and the cost of the turn with and without the cache marks, at litellm's list prices.

The turn runs through the real provider layer (`providers.complete`, litellm's anthropic
provider, real HTTP) against the Anthropic contract server (autodev.scripted.contract), which reports
cache reads and writes as Anthropic does: the prefix up to a `cache_control` mark an earlier
request wrote is read. Each step reads a 2,000-character file, as a working turn does."""

from __future__ import annotations

import tempfile
from pathlib import Path

MODEL = "anthropic/claude-sonnet-4-5"
STEPS = 10


def _turn(marks: bool) -> tuple[int, int, float]:
    """(prompt tokens, cached tokens, cost in USD) of one 10-step turn."""
    from autodev.harness import providers
    from autodev.harness.tools import WORKSPACE_TOOLS
    from autodev.scripted import load_script
    from autodev.scripted.contract_anthropic import AnthropicServer

    d = Path(tempfile.mkdtemp(prefix="autodev-bench-cache-"))
    steps = "".join(
        f'[[step]]\nparticipant = "builder"\ncalls = [{{ tool = "read_file", args = {{ path = "f{i}.py" }} }}]\n'
        for i in range(STEPS)
    )
    (d / "script.toml").write_text(steps)
    tools = [t.spec() for t in WORKSPACE_TOOLS]
    system = "You are builder, a participant of an autodev team. " + "Rules of the team. " * 300
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "turn 1: your move"}]
    saved = set(providers.CACHE_MARK_FAMILIES)
    if not marks:
        providers.CACHE_MARK_FAMILIES.clear()
    prompt = cached = 0
    cost = 0.0
    try:
        with AnthropicServer(
            load_script(d / "script.toml"), d / "ledger.json", participants={"claude-sonnet-4-5": "builder"}
        ) as srv:
            [t] = providers.targets_for(
                "builder", MODEL, [], effort=None, api_base=srv.root, api_key_env=None, scripted_url=None
            )
            origins: dict[int, str] = {}
            for i in range(STEPS):
                gen = providers.complete(t, messages, tools, turn_id="bench", timeout=60, origins=origins)
                prompt, cached, cost = (
                    prompt + gen.prompt_tokens,
                    cached + gen.cached_tokens,
                    cost + (gen.cost or 0),
                )
                messages.append(gen.message)
                origins[len(messages) - 1] = gen.source
                cid = gen.message["tool_calls"][0]["id"]
                messages.append(
                    {"role": "tool", "tool_call_id": cid, "content": f"# file {i}\n" + "x = 1\n" * 330}
                )
    finally:
        providers.CACHE_MARK_FAMILIES.clear()
        providers.CACHE_MARK_FAMILIES.update(saved)
    return prompt, cached, cost


def bench_cache() -> dict:
    prompt, cached, with_cache = _turn(marks=True)
    _, _, without = _turn(marks=False)
    share = cached / prompt if prompt else 0.0
    return {
        "name": "prompt cache share",
        "compare": f"{STEPS}-step turn, {MODEL}",
        "detail": {"input tokens": prompt, "from cache": cached},
        "unit": "tokens (contract server, Anthropic's cache rules)",
        "ratio": round(share, 2),
        "target": "≥ 0.5",
        "holds": share >= 0.5,
        "method": "providers.complete through litellm's anthropic provider against autodev.scripted.contract."
        "AnthropicServer; cache marks on the system prompt and the newest message",
        "also": [
            {
                "name": "  cost per turn",
                "compare": "with / without cache marks",
                "detail": {"with": f"${with_cache:.4f}", "without": f"${without:.4f}"},
                "unit": "USD at litellm's list prices",
                "ratio": round(with_cache / without, 2) if without else None,
                "target": "< 1",
                "holds": bool(without) and with_cache < without,
            }
        ],
    }
