"""The lines of each agent CLI's JSON stream, as the adapters read them: one lenient model per CLI
(fields it does not use are ignored, a field it uses is typed), parsed once where the line is read
(`load`). A line that is not JSON, not an object, or whose used fields have other types than
these is not the CLI's known shape: it yields nothing (it is still in the raw stream kept in the
run folder). Versions: docs/agents.md ("Versions")."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

Number = int | float | None


class Line(BaseModel):
    """A stream line's fields that an adapter uses; the rest are dropped when read."""

    # defer_build: a class costs its schema only when it first validates (cold commands stay fast)
    model_config = ConfigDict(extra="ignore", defer_build=True)


L = TypeVar("L", bound=Line)


def load(model: type[L], line: str) -> L | None:
    """`line` parsed into `model`, or None when it is not that CLI's known shape."""
    try:
        return model.model_validate_json(line)
    except ValidationError:
        return None  # progress text some CLIs print among their JSON lines, or another shape


# ------------------------------------------------------------------ Claude Code (2.1.332)


class ClaudeUsage(Line):
    input_tokens: Number = None
    output_tokens: Number = None
    cache_creation_input_tokens: Number = None
    cache_read_input_tokens: Number = None


class ClaudeBlock(Line):
    type: str | None = None
    text: str | None = None
    name: str | None = None


class ClaudeMessage(Line):
    id: str | None = None
    usage: ClaudeUsage | None = None
    content: list[ClaudeBlock] | None = None


class ClaudeRateLimit(Line):
    status: str | None = None
    resetsAt: Number = None  # noqa: N815 - the CLI's name
    rateLimitType: str = "unknown window"  # noqa: N815


class ClaudeLine(Line):
    type: str | None = None
    subtype: str | None = None
    session_id: str | None = None
    message: ClaudeMessage | None = None  # "assistant"
    rate_limit_info: ClaudeRateLimit | None = None  # "rate_limit_event"
    total_cost_usd: Number = None  # "result", from here on
    usage: ClaudeUsage | None = None
    result: str | None = None
    is_error: bool | None = None


# ------------------------------------------------------------------ Codex (0.171.0)


class CodexItem(Line):
    type: str | None = None
    text: str | None = None
    server: str | None = None
    tool: str | None = ""


class CodexUsage(Line):
    input_tokens: Number = None
    output_tokens: Number = None
    cached_input_tokens: Number = None


class CodexError(Line):
    message: str | None = None


class CodexLine(Line):
    type: str | None = None
    thread_id: str | None = None
    item: CodexItem | None = None
    usage: CodexUsage | None = None
    error: CodexError | None = None  # "turn.failed"
    message: str | None = None  # "error"


# ------------------------------------------------------------------ Copilot CLI (1.0.102)


class CopilotUsage(Line):
    inputTokens: Number = None  # noqa: N815 - the CLI's names
    outputTokens: Number = None  # noqa: N815
    cacheReadTokens: Number = None  # noqa: N815

    @property
    def has_tokens(self) -> bool:
        return bool({"inputTokens", "outputTokens"} & self.model_fields_set)


class CopilotData(CopilotUsage):
    """An event's `data` (older versions put its fields on the line itself)."""

    sessionId: str | None = None  # noqa: N815
    session_id: str | None = None
    content: str | None = None
    toolName: str | None = None  # noqa: N815
    name: str | None = None
    usage: CopilotUsage | None = None
    message: str | None = None
    errorType: str | None = None  # noqa: N815


class CopilotLine(CopilotData):
    type: str | None = None
    data: CopilotData | None = None

    @property
    def fields(self) -> CopilotData:
        return self.data if self.data is not None else self


# ------------------------------------------------------------------ Gemini CLI (0.61.0)


class GeminiStats(Line):
    input_tokens: Number = None
    output_tokens: Number = None
    cached: Number = None


class GeminiError(Line):
    model_config = ConfigDict(extra="allow")  # shown whole when it has no message

    message: str | None = None


class GeminiLine(Line):
    type: str | None = None
    session_id: str | None = None
    sessionId: str | None = None  # noqa: N815 - the CLI's name
    role: str | None = None
    content: str | None = None
    tool_name: str | None = None
    name: str | None = None
    message: str | None = None
    stats: GeminiStats | None = None
    status: str | None = None
    error: GeminiError | None = None
