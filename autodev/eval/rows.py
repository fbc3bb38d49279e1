"""A line of results.jsonl (SPEC §18's keys first, then autodev's) as a model: built by the run
(`runner.blank_result`, then filled in), written as the fields that were set, in this order, and
parsed once where results.jsonl is read (an older autodev's extra keys are kept)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict  # pydantic validates it: typing_extensions on Python < 3.12

from autodev.records.base import Open


class Figures(TypedDict):
    """What one participant (or the audit) of a run used."""

    turns: int
    tokens: int
    cost: int | float


class RowEvidence(BaseModel):
    """The last `evidence` event's summary, outcome, command and counts (never the tests' ids);
    None where the event did not carry one."""

    model_config = ConfigDict(defer_build=True)

    seq: int | None = None
    summary: str | None = None
    outcome: str | None = None
    command: str | None = None
    counts: dict[str, int] | None = None

    def count(self, key: str) -> int | None:
        return (self.counts or {}).get(key)


class EvalResult(Open):
    """One task × team (× run, with --best-of). Numbers keep the type they were made with (a run
    that spent nothing has `"cost_usd": 0`), so a line is written as it always was."""

    task: str
    team: str
    resolved: bool = False
    state: str | None = None
    reason: str | None = None
    audit: str = "none"  # accepted | reopened | none: the last verdict
    turns: int = 0
    tokens: int = 0
    cost_usd: int | float = 0.0
    wall_s: int | float = 0.0
    participants: dict[str, Figures] = {}
    error: str | None = None
    reason_code: str | None = None
    audits: list[str] = []
    test_exit: int | None = None
    digest: str = ""
    folder: str = ""
    run: int | None = 0  # with --best-of: 1 to N; not written otherwise
    evidence: RowEvidence | None = None
    changed_lines: int | None = None

    @property
    def key(self) -> tuple[str, ...]:
        """Its task and team, and its run number under `--best-of` (one line each)."""
        return (self.task, self.team, *((str(self.run),) if self.run else ()))

    @property
    def graded(self) -> bool:
        return not self.error


@dataclass(frozen=True)
class JobOutcome:
    """What a run of one task × team gives back to the executor: its line and its patch."""

    result: EvalResult
    patch: str
