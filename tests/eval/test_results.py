"""The files under --out: a torn last line is cut, damage elsewhere is named; a result's patch is
on disk before its line; predictions/<team>.jsonl in SWE-bench's format, one file per team."""

from __future__ import annotations

import json

import pytest

from autodev.eval.results import EvalDir, EvalFileError, harness_command
from autodev.eval.rows import EvalResult


def test_torn_last_line_is_cut_and_damage_elsewhere_is_named(tmp_path):
    d = EvalDir(tmp_path)
    d.record(EvalResult(task="t1", team="a", resolved=True), "diff 1\n")
    with open(d.results.path, "ab") as f:
        f.write(b'{"task": "t2", "te')  # the eval killed mid-append
    assert list(d.finished()) == [("t1", "a")]
    d.record(EvalResult(task="t2", team="a", resolved=False), "")
    assert [json.loads(x)["task"] for x in d.results.path.read_text().splitlines()] == ["t1", "t2"]
    # a line is the fields the run set, in their order
    assert d.results.path.read_text().splitlines()[0] == '{"task": "t1", "team": "a", "resolved": true}'
    d.results.path.write_text('{"task": "t1", "team": "a"}\nbroken\n{"task": "t2", "team": "a"}\n')
    with pytest.raises(EvalFileError, match=r"results.jsonl:2 is not a JSON line") as e:
        d.finished()
    assert "remove that line" in e.value.fix


def test_predictions_are_one_swe_bench_file_per_team_and_the_newest_result_wins(tmp_path):
    d = EvalDir(tmp_path)
    (tmp_path / "predictions.jsonl").write_text("mixed teams from an older autodev\n")
    d.record(EvalResult(task="t1", team="a", resolved=False), "old\n")
    d.record(EvalResult(task="t1", team="a", resolved=True), "new\n")
    d.record(EvalResult(task="t2", team="a", resolved=False), "two\n")
    d.record(EvalResult(task="t1", team="b", resolved=False), "")
    done = d.finished()
    assert done[("t1", "a")].resolved is True
    paths = d.write_predictions(list(done.values()), ["a", "b", "c"])
    assert paths == {t: tmp_path / "predictions" / f"{t}.jsonl" for t in ("a", "b", "c")}
    preds = {t: [json.loads(x) for x in p.read_text().splitlines()] for t, p in paths.items()}
    # SWE-bench's harness keys a file by instance_id: each file holds each task once.
    assert preds == {
        "a": [
            {"instance_id": "t1", "model_name_or_path": "a", "model_patch": "new\n"},
            {"instance_id": "t2", "model_name_or_path": "a", "model_patch": "two\n"},
        ],
        "b": [{"instance_id": "t1", "model_name_or_path": "b", "model_patch": ""}],
        "c": [],
    }
    assert not (tmp_path / "predictions.jsonl").exists()
    cmd = harness_command(paths["a"], "a")
    assert cmd.startswith("python -m swebench.harness.run_evaluation ")
    assert f"--predictions_path {paths['a']}" in cmd and "--run_id autodev-a" in cmd
