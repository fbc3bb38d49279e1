"""A recorded run as `replay` and `compare` read it: each log parsed once, where it is read, into
its records (`Post`, the event kinds, the `HarnessRecord` union), and those are what travel.

A line that does not fit its model is `BadLine` (its number and why): a run folder's or a
bundle's reader turns it into its own refusal, naming the file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from autodev.records import HarnessRecord, Post, why
from autodev.records.events import Event
from autodev.store.journal import JsonObject, is_object, iter_records

R = TypeVar("R")


@dataclass
class Recording:
    posts: list[Post]
    events: list[Event]
    harness: list[HarnessRecord]
    config_dir: Path  # team.toml, config.toml, prompts/, a scripted team's script
    base: str
    source: Path  # a git repository, or a git bundle file, holding the base and the run's commits
    untrusted: bool = False  # a bundle: no hooks, MCP servers or agent CLI args; commands sandboxed
    repo_path: str = ""  # where the recorded repository was (masked in comparisons)
    run_dir: Path | None = None  # the run folder: agents/ (CLI runs' raw streams), team-history/
    forked_at: int | None = None  # a fork: the post it was made at (its replay starts there)


class BadLine(ValueError):
    """A line of a log that is not a record autodev wrote."""

    def __init__(self, n: int, reason: str):
        super().__init__(f"line {n} is not a record autodev wrote ({reason})")
        self.n, self.reason = n, reason


def read(path: Path, parse: Callable[[JsonObject], R]) -> list[R]:
    """Every line of the log at `path` as its record (none when there is no such file)."""
    out: list[R] = []
    for n, rec in enumerate(iter_records(path), 1):
        try:
            out.append(parse(rec))
        except ValidationError as e:
            raise BadLine(n, why(e)) from None
    return out


def head_of(p: Post) -> str | None:
    """The repository's HEAD a post recorded (a participant's post, or a rewind note)."""
    head = p.head
    if not head and p.rewind is not None:
        head = p.rewind.head
    return head or None


def extra(p: Post, name: str) -> JsonObject | None:
    """A table a newer field of the post holds (the done's `evidence`), when it is one."""
    value: object = (p.model_extra or {}).get(name)
    return value if is_object(value) else None
