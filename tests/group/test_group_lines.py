"""group.jsonl's bytes: each kind of line, as main wrote it (its writers' dicts, then `ts`), is
written from its model byte for byte, key order included, and read back into its model."""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

from pydantic import TypeAdapter

from autodev.group.record import append
from autodev.records.group import (
    Applied,
    ApplyStarted,
    BudgetReached,
    Created,
    Ended,
    GroupEnded,
    GroupRecord,
    Made,
    MadeAt,
    Pruned,
    RunStarted,
)

TS = '"ts":"2026-12-05T12:00:00.000Z"'
# As main (8bd0d8a) wrote them, and the model each writer now builds for it.
LINES: list[tuple[str, GroupRecord]] = [
    (
        '{"id":"created","type":"created","group":"a1b2c3","repo":"/r/p","objective":"fix it","base":"'
        + "b" * 40
        + '","branch":"main","n":3,"parallel":2,"max_cost_usd":1.5,"teams":["model=x","model=y"],'
        + TS
        + "}",
        Created(
            id="created",
            type="created",
            group="a1b2c3",
            repo="/r/p",
            objective="fix it",
            base="b" * 40,
            branch="main",
            n=3,
            parallel=2,
            max_cost_usd=1.5,
            teams=["model=x", "model=y"],
        ),
    ),
    (
        '{"id":"created","type":"created","group":"a1b2c3","repo":"/r/p","objective":"","base":"c","branch":null,"n":2,"parallel":2,"max_cost_usd":null,"teams":[],'
        + TS
        + "}",
        Created(
            id="created",
            type="created",
            group="a1b2c3",
            repo="/r/p",
            objective="",
            base="c",
            branch=None,
            n=2,
            parallel=2,
            max_cost_usd=None,
            teams=[],
        ),
    ),
    (
        '{"id":"worktree:1","type":"worktree","k":1,"path":"/g/p-1","branch":"autodev-best-of-a1b2c3-1",'
        + TS
        + "}",
        MadeAt(id="worktree:1", type="worktree", k=1, path="/g/p-1", branch="autodev-best-of-a1b2c3-1"),
    ),
    ('{"id":"made:1","type":"made","k":1,' + TS + "}", Made(id="made:1", type="made", k=1)),
    ('{"id":"started:1","type":"started","k":1,' + TS + "}", RunStarted(id="started:1", type="started", k=1)),
    (
        '{"id":"ended:1","type":"ended","k":1,"state":"complete","ref":"refs/autodev/best-of/a1b2c3/1","head":"'
        + "d" * 40
        + '",'
        + TS
        + "}",
        Ended(
            id="ended:1",
            type="ended",
            k=1,
            state="complete",
            ref="refs/autodev/best-of/a1b2c3/1",
            head="d" * 40,
        ),
    ),
    (
        '{"id":"ended:2","type":"ended","k":2,"state":"skipped","ref":"",' + TS + "}",
        Ended(id="ended:2", type="ended", k=2, state="skipped", ref=""),
    ),
    (
        '{"id":"budget","type":"budget","spent":1.75,"cap":1.5,' + TS + "}",
        BudgetReached(id="budget", type="budget", spent=1.75, cap=1.5),
    ),
    ('{"id":"ended","type":"group_ended",' + TS + "}", GroupEnded(id="ended", type="group_ended")),
    (
        '{"id":"apply:1","type":"apply","k":1,"branch":"main","sha":"' + "d" * 40 + '",' + TS + "}",
        ApplyStarted(id="apply:1", type="apply", k=1, branch="main", sha="d" * 40),
    ),
    (
        '{"id":"applied","type":"applied","k":1,"branch":"main","how":"fast-forward","head":"'
        + "d" * 40
        + '",'
        + TS
        + "}",
        Applied(id="applied", type="applied", k=1, branch="main", how="fast-forward", head="d" * 40),
    ),
    ('{"id":"pruned","type":"pruned",' + TS + "}", Pruned(id="pruned", type="pruned")),
]


def test_each_kind_is_written_as_main_wrote_it(tmp_path: Path) -> None:
    for i, (text, rec) in enumerate(LINES):
        folder = tmp_path / str(i)
        folder.mkdir()
        append(folder, rec)
        append(folder, rec)  # once per id
        written = (folder / "group.jsonl").read_text()
        assert re.sub(r'"ts":"[^"]*"', TS, written) == text + "\n"


def test_each_line_main_wrote_reads_into_its_model_and_back() -> None:
    adapter: TypeAdapter[GroupRecord] = TypeAdapter(GroupRecord)
    for text, rec in LINES:
        read = adapter.validate_python(json.loads(text))
        assert type(read) is type(rec)
        assert json.dumps(read.dump(), ensure_ascii=False, separators=(",", ":")) == text


def test_the_lines_cover_every_kind() -> None:
    kinds = typing.get_args(typing.get_args(GroupRecord)[0])
    assert {type(rec) for _, rec in LINES} == set(kinds)
