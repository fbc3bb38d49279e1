"""The common event of every agent CLI's stream: what an adapter turns one JSON line into."""

from __future__ import annotations

import queue
from dataclasses import dataclass
from typing import Literal

from autodev.store.journal import JsonObject

Kind = Literal["text", "tool", "usage", "step", "session", "limit", "final", "error"]


@dataclass(frozen=True)
class AgentEvent:
    """One thing the CLI reported. `text`: what it said (or an error's message); `name`: the tool
    it called; `session`: its session id (resume uses it); `reset_at`: when a usage limit ends
    (epoch seconds; 0: unknown); usage figures are the CLI's own. A "usage" event is a run's
    final figure; a "step" event is one model answer's usage as the CLI reports it on the way
    (`key`: the answer's id, repeated lines of one answer replace each other), counted only for a
    run that was killed before its final figure."""

    kind: Kind
    text: str = ""
    name: str = ""
    session: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    reset_at: float = 0.0
    is_error: bool = False
    key: str = ""


# What reaches a turn's loop while its CLI runs, in arrival order (autodev/agents/stream.py).


@dataclass(frozen=True)
class StreamLine:
    """A line the CLI printed (masked), from its reader thread (autodev/agents/runner.py)."""

    text: str


@dataclass(frozen=True)
class StreamEnd:
    """The CLI exited: its stream has no more lines."""

    exit_code: int


@dataclass(frozen=True)
class ToolCall:
    """A thread tool the CLI called through autodev's MCP server (autodev/agents/bridge.py); the
    answer goes back on `reply`."""

    tool: str
    args: JsonObject
    reply: queue.Queue[str]


Arrival = StreamLine | StreamEnd | ToolCall
