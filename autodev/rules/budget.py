"""Spending caps (pure): maxCostUsd / maxTokens per run, max_cost_usd / max_tokens per
participant. The daemon asks before every turn; a cap reached pauses the run with reason
`budget`, so a turn in flight always finishes (never cut mid-tool). Spend is the sum of what
the run's generations cost (litellm's prices; the scripted model's stated ones in tests),
audits included, and nothing resets it: a raised cap is the way on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypedDict

if TYPE_CHECKING:
    from autodev.records.state import RunState


class RunCaps(Protocol):
    """The run's caps (config.toml's maxCostUsd, maxTokens; 0 is no cap)."""

    @property
    def max_cost_usd(self) -> float: ...
    @property
    def max_tokens(self) -> int: ...


class SeatCaps(Protocol):
    """A participant's caps (team.toml's max_cost_usd, max_tokens; None is no cap)."""

    @property
    def max_cost_usd(self) -> float | None: ...
    @property
    def max_tokens(self) -> int | None: ...


class Roster(Protocol):
    """The team, as far as caps go (the rules sit below config/, so they name what they use)."""

    def names(self) -> list[str]: ...
    def get(self, name: str) -> SeatCaps: ...


class Spend(TypedDict):
    cost: float  # USD, rounded to 6 places
    tokens: int


def run_spend(st: RunState) -> Spend:
    """Cost (USD) and tokens of the whole run so far, audits included."""
    from autodev.records.state import Usage

    used: list[Usage] = [p.usage() for p in st.participants.values()]
    if st.audit_usage is not None:
        used.append(st.audit_usage)
    if not used:  # nothing spent yet: an int 0, as status --json and the runs index have it
        return {"cost": 0, "tokens": 0}
    total = sum(used, Usage())
    return {"cost": round(total.cost, 6), "tokens": total.prompt_tokens + total.completion_tokens}


def participant_spend(st: RunState, name: str) -> Spend:
    p = st.participants.get(name)
    if p is None:
        return {"cost": 0.0, "tokens": 0}
    return {"cost": round(p.cost, 6), "tokens": p.prompt_tokens + p.completion_tokens}


def reached(config: RunCaps, team: Roster, st: RunState, speaker: str | None) -> dict[str, str] | None:
    """The `budget` reason when a cap of the run, or of `speaker`, is reached; else None."""
    spent = run_spend(st)
    if config.max_cost_usd and spent["cost"] >= config.max_cost_usd:
        return _reason(
            f"the run's maxCostUsd (${config.max_cost_usd:.4f}) is reached: spent ${spent['cost']:.4f}",
            "raise maxCostUsd in .autodev/config.toml, then autodev resume",
        )
    if config.max_tokens and spent["tokens"] >= config.max_tokens:
        return _reason(
            f"the run's maxTokens ({config.max_tokens:,}) is reached: used {spent['tokens']:,} tokens",
            "raise maxTokens in .autodev/config.toml, then autodev resume",
        )
    if speaker is None or speaker not in team.names():
        return None
    p = team.get(speaker)
    mine = participant_spend(st, speaker)
    if p.max_cost_usd is not None and mine["cost"] >= p.max_cost_usd:
        return _reason(
            f"{speaker}'s max_cost_usd (${p.max_cost_usd:.4f}) is reached: {speaker} spent ${mine['cost']:.4f}",
            f"raise max_cost_usd of {speaker} in .autodev/team.toml, then autodev resume",
        )
    if p.max_tokens is not None and mine["tokens"] >= p.max_tokens:
        return _reason(
            f"{speaker}'s max_tokens ({p.max_tokens:,}) is reached: {speaker} used {mine['tokens']:,} tokens",
            f"raise max_tokens of {speaker} in .autodev/team.toml, then autodev resume",
        )
    return None


def _reason(text: str, cont: str) -> dict[str, str]:
    from autodev.rules.reasons import reason

    return {**reason("budget", text=text), "continue": cont}
