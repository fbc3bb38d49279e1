"""A turn's messages, in the OpenAI shape litellm takes, and the forms every provider accepts: as
litellm returned them (`verbatim`, sent back unchanged to the same family), reduced to the plain
OpenAI shape (`plain`, for another family after a failover), and the turn's size in tokens,
estimated the same way every time.

The message shapes are TypedDicts, in autodev/records/chat.py (the harness log holds them): at run
time a message stays the plain dict that is logged and sent. `message()` checks a message read back
from the harness log (recovery) into its shape."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict, cast

from autodev.records.chat import (
    AssistantMessage as AssistantMessage,
)
from autodev.records.chat import (
    Function as Function,
)
from autodev.records.chat import (
    Message as Message,
)
from autodev.records.chat import (
    SystemMessage as SystemMessage,
)
from autodev.records.chat import (
    ToolCall as ToolCall,
)
from autodev.records.chat import (
    ToolMessage as ToolMessage,
)
from autodev.records.chat import (
    UserMessage as UserMessage,
)
from autodev.records.chat import (
    assistant as assistant,
)
from autodev.records.chat import (
    message as message,
)


class FunctionSpec(TypedDict):
    name: str
    description: str
    parameters: dict[str, object]


class ToolSpec(TypedDict):
    """A tool as the provider is offered it (OpenAI's function tool)."""

    type: Literal["function"]
    function: FunctionSpec


def calls_of(message: Message) -> list[ToolCall]:
    """The tool calls of an assistant message (none for any other)."""
    if message["role"] != "assistant":
        return []
    return message.get("tool_calls") or []


def arguments(call: ToolCall) -> str:
    """A call's arguments as sent, "{}" when it sent none."""
    return call["function"].get("arguments") or "{}"


def plain(message: AssistantMessage) -> AssistantMessage:
    """An assistant message reduced to the OpenAI shape every provider accepts: role, content and
    tool calls (id, name, arguments). Thinking blocks, signatures and provider fields are dropped."""
    out: AssistantMessage = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls") or []
    if calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": arguments(c)},
            }
            for c in calls
        ]
    if out["content"] is None and not calls:
        out["content"] = ""
    return out


def verbatim(fields: Mapping[str, object]) -> AssistantMessage:
    """litellm's assistant message (its `model_dump()`) as a JSON-ready dict, absent (None)
    fields left out."""
    out = {k: v for k, v in fields.items() if v is not None}
    out["role"] = "assistant"
    out.setdefault("content", None)
    # litellm's Message: role, content (text or None), tool_calls as OpenAI's; its stubs type the
    # dump as a plain dict
    return cast(AssistantMessage, out)


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec] | None = None) -> int:
    """A cheap, provider-independent estimate: one token per 4 characters of the JSON sent.
    Deterministic (resume compacts exactly as the original run did) and fast for 40 steps of
    20,000-character tool results; a provider that counts more answers "context window
    exceeded", which compacts harder."""
    chars = len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(tools or [], ensure_ascii=False))
    return chars // 4 + 1
