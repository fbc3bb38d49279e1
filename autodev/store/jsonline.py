"""What a JSONL line holds once read (`JsonObject`), and its text made safe to write: undecodable
bytes and lone surrogates become visible escapes, so no write of a line can fail on them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeAlias, TypeGuard, TypeVar, overload

_SURROGATE = re.compile("[\ud800-\udfff]")

JsonObject: TypeAlias = dict[str, object]
"""One line of a JSONL log as read: a JSON object (its keys are strings, its values any JSON)."""


def is_object(value: object) -> TypeGuard[JsonObject]:
    """`value`, parsed from JSON, is an object (JSON has no other keys than strings)."""
    return isinstance(value, dict)


def _escape_surrogate(m: re.Match[str]) -> str:
    c = ord(m.group())
    # U+DC80..U+DCFF is how Python carries an undecodable byte (surrogateescape): show the byte.
    return f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else f"\\u{c:04x}"


K = TypeVar("K")


def safe_text(text: str) -> str:
    """`text` as valid UTF-8: undecodable bytes (file names, argv) and lone surrogates (a model's
    JSON may carry them) become visible escapes such as `\\xff`, so no write of it can fail."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape_surrogate, text)


@overload
def safe(obj: str) -> str: ...
@overload
def safe(obj: Mapping[K, object]) -> dict[K, object]: ...  # a key stays a key of its type
@overload
def safe(obj: list[object] | tuple[object, ...]) -> list[object]: ...
@overload
def safe(obj: object) -> object: ...
def safe(obj: object) -> object:
    """`obj` with every string (keys included) passed through `safe_text`."""
    if isinstance(obj, str):
        return safe_text(obj)
    if _is_dict(obj):
        return {safe(k): safe(v) for k, v in obj.items()}
    if _is_sequence(obj):
        return [safe(v) for v in obj]
    return obj


# `safe` only reads what it walks: to it any dict holds objects, and so does any list or tuple.
def _is_dict(obj: object) -> TypeGuard[dict[object, object]]:
    return isinstance(obj, dict)


def _is_sequence(obj: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return isinstance(obj, (list, tuple))
