"""group.jsonl's first line is read as its `created` record: any other first line (or none) is a
group that never began; a damaged `created` line names its field."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from autodev.group.record import GroupError, load

CREATED = {"type": "created", "id": "created", "group": "g1", "repo": "/r", "base": "abc", "n": 2, "parallel": 1}


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
    _write(tmp_path / "g", CREATED, {"type": "worktree", "id": "worktree:1", "k": 1, "path": "/w1", "branch": "b1"})
    g = load(tmp_path / "g")
    assert (g.id, g.n, g.base, list(g.members)) == ("g1", 2, "abc", [1])
