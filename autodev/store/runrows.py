"""The shapes `autodev runs` lists: a run's row and figures, the stats over the rows, and what
a prune removed, found missing or refused (the `--json` output of each, in this key order)."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from autodev.store.journal import JsonObject


class RunFigures(TypedDict):
    """A run's figures: from its state.json, or the end line of a run whose folder is gone (None:
    the line does not have it)."""

    turns: int | None
    credited: int | None
    tokens: int | None
    cost: float | None
    models: JsonObject | None  # usage per model label (a `ModelUsage` as state.json has it)


class Row(TypedDict):
    """One run as `autodev runs --json` lists it."""

    run: str | None
    repo: str | None
    run_dir: str
    objective: str
    state: str
    missing: bool
    daemon_pid: int | None
    started: str | None
    duration_sec: float | None
    last_activity: float | None
    turns: int | None
    credited: int | None
    tokens: int | None
    cost: float | None
    models: JsonObject
    forked_from: JsonObject | None
    evidence: NotRequired[str]  # the newest done's test evidence, one line (SPEC §22), when it had one


class Stats(TypedDict):
    """`autodev runs stats --json`: totals over the listed runs, and usage per model label."""

    runs: int
    missing: int
    turns: int
    credited: int
    tokens: int
    cost: float
    models: dict[str, dict[str, int | float]]


class Refused(Row):
    why: str


class Pruned(TypedDict):
    removed: list[Row]
    missing: list[Row]
    refused: list[Refused]
