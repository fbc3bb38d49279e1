"""What a person reads is what it is: text that came from a participant or a provider, shown
with every character that could change what the terminal shows escaped.

A post, a gate, a notice, a provider's error message can carry terminal control sequences
(ESC `[`... cursor moves and colours, OSC 52 clipboard writes, window titles), a carriage
return that overwrites the start of the line, bidi overrides that reorder it, zero-width and
tag characters that hide text, and newlines that start a line looking like a thread header
(`#99 user say`). `shown` writes each of those as an escape (`\\x1b`, `\\r`, `\\u202e`), so
status, thread, the panel, notifications and the gate prompt show the text as it is stored.
Where a line is expected (`lines=False`) a newline is escaped too; in a post's body each line
is indented under its header, so no line of a body can pass for a header.

A gate is approved for exactly the text shown: `digest` names the stored text, the approval
carries it, and the daemon refuses an approval whose digest is not the open gate's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeGuard, TypeVar, overload

from autodev.host.sha import sha256

K = TypeVar("K")  # the keys of a mapping, kept as they are

# C0 and C1 controls and DEL (newline and tab are decided by the caller), Unicode format
# characters (bidi embeddings, overrides and isolates, marks, zero-width characters, the
# byte-order mark, interlinear annotations, tag characters), line and paragraph separators,
# and lone surrogates.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f\ud800-\udfff]"
)
_LINE_BREAKS = re.compile("[\n\t]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    if c == 0x0A:
        return "\\n"
    if c == 0x09:
        return "\\t"
    if c == 0x0D:
        return "\\r"
    if c < 0x100:
        return f"\\x{c:02x}"
    if c < 0x10000:
        return f"\\u{c:04x}"
    return f"\\U{c:08x}"


def shown(text: object, *, lines: bool = True) -> str:
    """`text` as it may be written to a terminal: control and invisible characters escaped;
    newlines and tabs kept when `lines`, escaped when one line is expected."""
    s = _UNSAFE.sub(_escape, str(text))
    return s if lines else _LINE_BREAKS.sub(_escape, s)


def line(text: object) -> str:
    """`shown` where a single line is expected."""
    return shown(text, lines=False)


@overload
def clean(value: str) -> str: ...
@overload
def clean(value: Mapping[K, object]) -> dict[K, object]: ...
@overload
def clean(value: list[object] | tuple[object, ...]) -> list[object]: ...
@overload
def clean(value: object) -> object: ...
def clean(value: object) -> object:
    """Every string in a JSON-like value (dicts, lists) made safe to show on one line."""
    if isinstance(value, str):
        return line(value)
    if _is_dict(value):
        return {k: clean(v) for k, v in value.items()}
    if _is_sequence(value):
        return [clean(v) for v in value]
    return value


# `clean` only reads what it walks: to it any dict holds objects, and so does any list or tuple.
def _is_dict(value: object) -> TypeGuard[dict[object, object]]:
    return isinstance(value, dict)


def _is_sequence(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return isinstance(value, (list, tuple))


def digest(text: str) -> str:
    """What an approval names: the first 12 hex digits of the SHA-256 of the stored text."""
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
