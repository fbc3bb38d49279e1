"""What the turn loop needs from a model: one call that answers the turn's messages.

The turn (``turn.py``) holds a `Model` and never knows which one. `LitellmModel`, the default,
sends the request through litellm to the target's provider (``providers.complete``); the
scripted model in-process (``autodev.scripted.model.ScriptedModel``) answers from a TOML script,
the same scripts the scripted HTTP server serves, so the turn loop is tested in milliseconds.

A model raises the errors of ``providers`` (`RateLimited`, `Transient`, `ContextExceeded`,
`Refused`); the turn decides what each means (failover, backoff, compaction, a pause).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from autodev.harness import providers
from autodev.harness.messages import Message, ToolSpec


class Model(Protocol):
    def complete(
        self,
        target: providers.Target,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        turn_id: str,
        timeout: float,
        origins: Mapping[int, str] | None = None,
    ) -> providers.Generation:
        """One request for `target`: the assistant message and its usage. `turn_id` is stable
        across retries and resume; `origins` maps assistant message indexes to the model that
        wrote each (for their adaptation to `target`'s family)."""
        ...


class LitellmModel:
    """Every provider litellm speaks (and the scripted HTTP server, through litellm's client)."""

    def complete(
        self,
        target: providers.Target,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        turn_id: str,
        timeout: float,
        origins: Mapping[int, str] | None = None,
    ) -> providers.Generation:
        return providers.complete(target, messages, tools, turn_id=turn_id, timeout=timeout, origins=origins)
