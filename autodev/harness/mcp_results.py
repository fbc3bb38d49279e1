"""What an MCP server gives back, as text: a tool call's result, and a server's failure."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from mcp.types import CallToolResult


def text_of(result: CallToolResult) -> str:
    """A tool call's result as the text the model reads (what cannot be shown is named)."""
    parts: list[str] = []
    for block in result.content or []:
        if block.type == "text":
            parts.append(block.text)
        elif block.type == "image" or block.type == "audio":
            parts.append(f"[{block.type} ({block.mime_type}) not shown]")
        elif block.type == "resource_link":
            parts.append(f"[resource {block.uri}]")
        elif block.type == "resource":
            res = block.resource
            parts.append(getattr(res, "text", None) or f"[resource {res.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts) if parts else "(no output)"


def _group(e: BaseException) -> TypeGuard[BaseExceptionGroup[BaseException]]:
    return isinstance(e, BaseExceptionGroup)


def describe(e: BaseException) -> str:
    """Why a server failed, as one line (each failure of a group, joined)."""
    if _group(e):
        return "; ".join(describe(x) for x in e.exceptions)
    if isinstance(e, FileNotFoundError):
        return f"command not found ({e.filename or e})"
    text = str(e) or type(e).__name__
    return f"{type(e).__name__}: {text}" if text != type(e).__name__ else text
