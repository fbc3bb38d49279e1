"""The files under --out: a torn last line is cut, damage elsewhere is named; a result's patch is
on disk before its line; predictions.jsonl in SWE-bench's format, one per task × team."""

from __future__ import annotations

import json

import pytest

from autodev.eval.results import EvalDir, EvalFileError


def test_torn_last_line_is_cut_and_damage_elsewhere_is_named(tmp_path):
    d = EvalDir(tmp_path)
    d.record({"task": "t1", "team": "a", "resolved": True}, "diff 1\n")
    with open(d.results.path, "ab") as f:
        f.write(b'{"task": "t2", "te')  # the eval killed mid-append
    assert list(d.finished()) == [("t1", "a")]
    d.record({"task": "t2", "team": "a", "resolved": False}, "")
    assert [json.loads(x)["task"] for x in d.results.path.read_text().splitlines()] == ["t1", "t2"]
    d.results.path.write_text('{"task": "t1", "team": "a"}\nbroken\n{"task": "t2", "team": "a"}\n')
    with pytest.raises(EvalFileError, match=r"results.jsonl:2 is not a JSON line") as e:
        d.finished()
    assert "remove that line" in e.value.fix


def test_predictions_are_swe_bench_shaped_and_the_newest_result_wins(tmp_path):
    d = EvalDir(tmp_path)
    d.record({"task": "t1", "team": "a", "resolved": False}, "old\n")
    d.record({"task": "t1", "team": "a", "resolved": True}, "new\n")
    d.record({"task": "t1", "team": "b", "resolved": False}, "")
    done = d.finished()
    assert done[("t1", "a")]["resolved"] is True
    path = d.write_predictions(list(done.values()))
    preds = [json.loads(x) for x in path.read_text().splitlines()]
    assert preds == [
        {"instance_id": "t1", "model_name_or_path": "a", "model_patch": "new\n"},
        {"instance_id": "t1", "model_name_or_path": "b", "model_patch": ""},
    ]
