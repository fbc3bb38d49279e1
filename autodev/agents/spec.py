"""What the daemon knows of a participant's agent CLIs for one turn (shared by the turn and its
stream)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autodev.records.harness_log import AgentStarted

__all__ = ["AgentSpec"]


@dataclass
class AgentSpec:
    """What the daemon knows of the participant's agents for this turn."""

    agents: list[str]  # the CLI, then the agents of its failover list, in the order tried
    run_dir: Path  # raw streams go to run_dir/agents/
    model: str | None = None  # the first agent's model
    effort: str | None = None
    extra_args: list[str] = field(default_factory=list)
    gated: bool = True
    key_env: str | None = None  # api_key_env: the CLI's API-key mode
    stale: list[AgentStarted] = field(default_factory=list[AgentStarted])  # of a crashed turn
    redact: Callable[[str], str] = field(default=lambda s: s)  # the run's masker (stream, stderr)
