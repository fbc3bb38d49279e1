"""Participant kinds: the one place a participant's turn is given to the runner of its kind.

A kind is a name, a `TurnRunner` (`harness/context`) and which configured participants it
takes. Kinds are asked newest first, so a kind registered later (a test's, a new one) is
asked before the built-in ones: `agent` (a participant with `agent`: its coding-agent CLI,
`agents/turn.AgentTurn`) and `model` (every other participant: the tool loop through litellm,
`harness/turn.ModelTurn`). What every kind's turn shares is `harness/policy`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass

from autodev.agents.turn import AgentTurn
from autodev.config import Participant
from autodev.errors import ConfigError
from autodev.harness.context import TurnRunner
from autodev.harness.turn import ModelTurn

__all__ = ["Kind", "kind_of", "register", "registered"]


@dataclass(frozen=True)
class Kind:
    """One participant kind."""

    name: str
    runner: TurnRunner
    takes: Callable[[Participant], bool]  # whether a configured participant is of this kind


_KINDS: dict[str, Kind] = {}


def register(kind: Kind) -> None:
    """Add `kind` (or replace the one of its name); it is asked before those registered earlier."""
    _KINDS.pop(kind.name, None)
    _KINDS[kind.name] = kind


@contextmanager
def registered(kind: Kind) -> Generator[Kind, None, None]:
    """`kind` registered for the duration (the kind it replaced, if any, comes back after)."""
    before = _KINDS.get(kind.name)
    register(kind)
    try:
        yield kind
    finally:
        _KINDS.pop(kind.name, None)
        if before is not None:
            register(before)


def kind_of(p: Participant) -> Kind:
    """The kind whose runner takes `p`'s turns."""
    for kind in reversed(_KINDS.values()):
        if kind.takes(p):
            return kind
    raise ConfigError(
        f"team.toml: participant {p.name!r} is of no known kind ({', '.join(_KINDS)})",
        "give it a model, or an agent (see docs/CONFIG.md)",
    )


register(Kind("model", ModelTurn(), lambda p: p.agent is None))
register(Kind("agent", AgentTurn(), lambda p: p.agent is not None))
