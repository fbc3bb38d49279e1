"""A turn's chat messages, in the OpenAI shape litellm takes, as the harness log holds them
(turn_started's messages, a generation's answer, the nudge): TypedDicts, so at run time a message
stays the plain dict that is logged and sent. An assistant message may carry more keys than
declared (thinking blocks, signatures, provider fields): they travel untouched.

`message()` and `assistant()` check a dict into its shape; `Checked` makes them a field's whole
validation, so a record keeps each message as it came (its keys' order and its extra keys), and
writes it back byte for byte."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict, TypeGuard

from pydantic import GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema


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


def message(raw: object) -> Message:
    """A message read back from the harness log, checked into its shape (ValueError if not)."""
    if not _mapping(raw):
        raise ValueError(f"a message is a JSON object, got {type(raw).__name__}")
    if _system(raw) or _user(raw) or _assistant(raw) or _tool(raw):
        return raw
    raise ValueError(f"not a message the turn could have sent: role {raw.get('role')!r}")


def assistant(raw: object) -> AssistantMessage:
    """An assistant message read back from the harness log (ValueError if it is not one)."""
    if _mapping(raw) and _assistant(raw):
        return raw
    raise ValueError("not an assistant message")


def messages(raw: object) -> list[Message]:
    """A turn's messages read back from the harness log, each checked (ValueError if one is not)."""
    if not _list(raw):
        raise ValueError(f"a turn's messages are a JSON array, got {type(raw).__name__}")
    return [message(m) for m in raw]


@dataclass(frozen=True)
class Checked:
    """`Annotated[T, Checked(check)]`: a field validated by `check` alone (it returns the value it
    was given, narrowed) and written back as it is, not rebuilt from T's declared keys."""

    check: Callable[[object], object]

    def __get_pydantic_core_schema__(self, source: object, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(self.check)


def _mapping(value: object) -> TypeGuard[Mapping[str, object]]:
    return isinstance(value, dict)


def _list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


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
    return raw.get("role") == "assistant" and _list(calls) and all(_call(c) for c in calls)


def _call(raw: object) -> bool:
    fn = raw.get("function") if _mapping(raw) else None
    return (
        _mapping(raw) and isinstance(raw.get("id"), str) and _mapping(fn) and isinstance(fn.get("name"), str)
    )
