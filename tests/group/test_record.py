"""group.jsonl's first line is read as its `created` record: any other first line (or none) is a
group that never began; a damaged `created` line names its field."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from autodev.group.record import GroupError, load

CREATED = {
    "type": "created",
    "id": "created",
    "group": "g1",
    "repo": "/r",
    "base": "abc",
    "n": 2,
    "parallel": 1,
}


def _write(folder, *lines) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "group.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def test_a_group_without_its_created_line_never_began(tmp_path):
    for first in ([], [{"type": "budget", "k": 1}], [{**CREATED, "type": "ended"}]):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        _write(folder, *first)
        with pytest.raises(GroupError, match="has no `created` line"):
            load(folder)


def test_a_damaged_created_line_names_its_field(tmp_path):
    _write(tmp_path / "g", {**CREATED, "n": "two"})
    with pytest.raises(ValidationError, match="n\n"):
        load(tmp_path / "g")


def test_a_group_loads_from_its_created_line(tmp_path):
    _write(
        tmp_path / "g",
        CREATED,
        {"type": "worktree", "id": "worktree:1", "k": 1, "path": "/w1", "branch": "b1"},
    )
    g = load(tmp_path / "g")
    assert (g.id, g.n, g.base, list(g.members)) == ("g1", 2, "abc", [1])


def test_each_later_line_folds_as_its_record(tmp_path):
    _write(
        tmp_path / "g",
        CREATED,
        {"type": "worktree", "id": "worktree:1", "k": 1, "path": "/w1", "branch": "b1"},
        {"type": "made", "id": "made:1", "k": 1},
        {"type": "started", "id": "started:1", "k": 1},
        {"type": "ended", "id": "ended:1", "k": 1, "state": "complete", "ref": "refs/x/1", "head": "c0ffee"},
        {"type": "started", "id": "started:2", "k": 2},  # no worktree line for run 2: nothing to fold into
        {"type": "budget", "id": "budget", "spent": 1.5, "cap": 1.0},
        {
            "type": "applied",
            "id": "applied",
            "k": 1,
            "branch": "main",
            "how": "merge",
            "head": "beef",
            "ts": "t",
        },
        {"type": "pruned", "id": "pruned"},
    )
    g = load(tmp_path / "g")
    m = g.members[1]
    assert (m.made, m.started, m.ref, list(g.members)) == (True, True, "refs/x/1", [1])
    assert g.budget is not None and g.budget.spent == 1.5
    assert g.applied is not None and (g.applied.k, g.applied.how) == (1, "merge")
    assert g.applied.dump()["ts"] == "t"  # the line as written, for `pick --json`
    assert g.pruned


def test_a_line_of_a_newer_kind_is_passed_over_and_a_damaged_one_is_named(tmp_path):
    _write(tmp_path / "new", CREATED, {"type": "rehearsed", "id": "r", "k": 1})
    assert load(tmp_path / "new").members == {}
    _write(
        tmp_path / "bad",
        CREATED,
        {"type": "worktree", "id": "worktree:1", "k": "one", "path": "/w", "branch": "b"},
    )
    with pytest.raises(GroupError, match=r"bad/group.jsonl: a line cannot be read") as e:
        load(tmp_path / "bad")
    assert "restore the line" in str(e.value.fix)
