"""A turn's messages, in the OpenAI shape litellm takes, and the forms every provider accepts: as
litellm returned them (`verbatim`, sent back unchanged to the same family), reduced to the plain
OpenAI shape (`plain`, for another family after a failover), and the turn's size in tokens,
estimated the same way every time.

The shapes are TypedDicts: at run time a message stays the plain dict the harness log holds, so
what is logged and sent does not change. An assistant message may carry more keys than declared
(thinking blocks, signatures, provider fields): they travel untouched. `message()` checks a
message read back from the harness log (recovery) into its shape."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Literal, NotRequired, TypedDict, TypeGuard, cast

from autodev.store.journal import is_object


class Function(TypedDict):
    name: str
    arguments: NotRequired[str | None]  # a JSON object as text; litellm may leave it out


class ToolCall(TypedDict):
    id: str
    type: NotRequired[str]
    function: Function


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: str


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[ToolCall]]
    thinking_blocks: NotRequired[list[dict[str, object]]]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: str


Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage


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


def message(raw: Mapping[str, object]) -> Message:
    """A message read back from the harness log, checked into its shape (ValueError if not)."""
    if _system(raw) or _user(raw) or _assistant(raw) or _tool(raw):
        return raw
    raise ValueError(f"not a message the turn could have sent: role {raw.get('role')!r}")


def assistant(raw: Mapping[str, object]) -> AssistantMessage:
    """An assistant message read back from the harness log (ValueError if it is not one)."""
    if _assistant(raw):
        return raw
    raise ValueError("not an assistant message")


def _system(raw: Mapping[str, object]) -> TypeGuard[SystemMessage]:
    return raw.get("role") == "system" and isinstance(raw.get("content"), str)


def _user(raw: Mapping[str, object]) -> TypeGuard[UserMessage]:
    return raw.get("role") == "user" and isinstance(raw.get("content"), str)


def _tool(raw: Mapping[str, object]) -> TypeGuard[ToolMessage]:
    return (
        raw.get("role") == "tool"
        and isinstance(raw.get("tool_call_id"), str)
        and isinstance(raw.get("content"), str)
    )


def _assistant(raw: Mapping[str, object]) -> TypeGuard[AssistantMessage]:
    calls = raw.get("tool_calls", [])
    return raw.get("role") == "assistant" and _is_list(calls) and all(_call(c) for c in calls)


def _call(raw: object) -> bool:
    fn = raw.get("function") if is_object(raw) else None
    return (
        is_object(raw)
        and isinstance(raw.get("id"), str)
        and is_object(fn)
        and isinstance(fn.get("name"), str)
    )


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def estimate_tokens(messages: Sequence[Message], tools: Sequence[ToolSpec] | None = None) -> int:
    """A cheap, provider-independent estimate: one token per 4 characters of the JSON sent.
    Deterministic (resume compacts exactly as the original run did) and fast for 40 steps of
    20,000-character tool results; a provider that counts more answers "context window
    exceeded", which compacts harder."""
    chars = len(json.dumps(messages, ensure_ascii=False)) + len(json.dumps(tools or [], ensure_ascii=False))
    return chars // 4 + 1
