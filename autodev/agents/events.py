"""The common event of every agent CLI's stream: what an adapter turns one JSON line into."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["text", "tool", "usage", "session", "limit", "final", "error"]


@dataclass(frozen=True)
class AgentEvent:
    """One thing the CLI reported. `text`: what it said (or an error's message); `name`: the tool
    it called; `session`: its session id (resume uses it); `reset_at`: when a usage limit ends
    (epoch seconds; 0: unknown); usage figures are the CLI's own."""

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
