"""Assistant messages in forms every provider accepts: as litellm returned them (`verbatim`,
sent back unchanged to the same family), reduced to the plain OpenAI shape (`plain`, for another
family after a failover), and the turn's size in tokens, estimated the same way every time."""

from __future__ import annotations

import json
from typing import Any


def plain(message: dict) -> dict:
    """An assistant message reduced to the OpenAI shape every provider accepts: role, content and
    tool calls (id, name, arguments). Thinking blocks, signatures and provider fields are dropped."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["function"]["name"],
                    "arguments": c["function"].get("arguments") or "{}",
                },
            }
            for c in calls
        ]
    if out["content"] is None and not calls:
        out["content"] = ""
    return out


def verbatim(message: Any) -> dict:
    """litellm's assistant message as a JSON-ready dict, absent (None) fields left out."""
    dumped = message.model_dump() if hasattr(message, "model_dump") else dict(message)
    out = {k: v for k, v in dumped.items() if v is not None}
    out["role"] = "assistant"
    out.setdefault("content", None)
    return out


def estimate_tokens(messages: list[dict], tools: list[dict] | None = None) -> int:
    """A cheap, provider-independent estimate: one token per 4 characters of the JSON sent.
    Deterministic (resume compacts exactly as the original run did) and fast for 40 steps of
    20,000-character tool results; a provider that counts more answers "context window
    exceeded", which compacts harder."""
    chars = len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(tools or [], ensure_ascii=False))
    return chars // 4 + 1
