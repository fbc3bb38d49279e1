"""group.jsonl: a best-of-N group's journal of intents and effects (autodev/group/record.py), a
union on `type`. Each line is written from its model: the fields that were set, in the order
declared here, then `ts` (the group's writer adds it); a test pins each kind's bytes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from autodev.records.base import Open


class _Line(Open):
    id: str  # a line is written once per id, whoever appends it


class Created(_Line):
    """The group's first line: what it was made with."""

    type: Literal["created"]
    group: str
    repo: str
    objective: str | None = ""
    base: str
    branch: str | None = None
    n: int
    parallel: int
    max_cost_usd: float | None = None
    teams: list[str] = Field(
        default_factory=list[str]
    )  # the --vary variants' names, run k cycling through them
    ts: str = ""


class MadeAt(_Line):
    """A run's `worktree:K` line (the intent): where its clone goes, on which branch."""

    type: Literal["worktree"]
    k: int
    path: str
    branch: str


class Made(_Line):
    """`made:K`: the run's clone exists."""

    type: Literal["made"]
    k: int


class RunStarted(_Line):
    """`started:K`: the run's daemon was asked to start."""

    type: Literal["started"]
    k: int


class Ended(_Line):
    """A run's `ended:K` line: its end state ("skipped": the group's cap came first), the ref
    that keeps its work and the commit on it."""

    type: Literal["ended"]
    k: int
    state: str = "not started"
    ref: str = ""
    head: str | None = None


class BudgetReached(_Line):
    """The group's cap was reached: what its runs had spent."""

    type: Literal["budget"]
    spent: float
    cap: float | None = None


class GroupEnded(_Line):
    type: Literal["group_ended"]


class ApplyStarted(_Line):
    """`pick --apply`'s intent: run K's commit into the user's branch."""

    type: Literal["apply"]
    k: int
    branch: str
    sha: str


class Applied(_Line):
    """What `pick --apply` did ("already in", "fast-forward" or "merge") and the branch's head."""

    type: Literal["applied"]
    k: int
    branch: str
    how: str
    head: str


class Pruned(_Line):
    type: Literal["pruned"]


GroupRecord = Annotated[
    Created
    | MadeAt
    | Made
    | RunStarted
    | Ended
    | BudgetReached
    | GroupEnded
    | ApplyStarted
    | Applied
    | Pruned,
    Field(discriminator="type"),
]
