"""`autodev runs` piped: every cell whole (nothing cut with "…"), unless COLUMNS asks for a width;
`--json` has every field."""

from __future__ import annotations

import json

from autodev.records import RunState
from autodev.store import runs

OBJECTIVE = "make the importer accept every dialect of the CSV files our customers send us"


def test_piped_runs_keep_every_cell_whole(tmp_path, inproc, autodev_home, monkeypatch):
    repo = tmp_path / "a-repository-with-a-long-folder-name"
    st = RunState(objective=OBJECTIVE, state="complete")
    runs.append(runs.start_record("r1", 1, repo, tmp_path / "run", st))
    runs.append(runs.end_record("r1", 1, repo, tmp_path / "run", st))
    monkeypatch.delenv("COLUMNS", raising=False)
    out = inproc(tmp_path, "runs", check=True).stdout
    assert "…" not in out, out
    row = next(line for line in out.splitlines() if OBJECTIVE in line)
    assert row.startswith(repo.name + " ")
    narrow = inproc(tmp_path, "runs", check=True, env={"COLUMNS": "60"}).stdout
    row = next(line for line in narrow.splitlines() if line.startswith("a-repos"))
    assert "…" in row, narrow  # a width asked for is kept
    [r] = json.loads(inproc(tmp_path, "runs", "--json", check=True).stdout)
    assert (r["objective"], r["repo"]) == (OBJECTIVE, str(repo))
