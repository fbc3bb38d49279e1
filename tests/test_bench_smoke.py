"""The benchmarks at tiny sizes, so their code cannot rot unnoticed. Shapes only: nothing
here looks at a timing (a slow machine must not fail `make test`)."""

from __future__ import annotations

import json

import pytest

from bench import run as bench_run
from bench.commands import bench_commands
from bench.flat import bench_prompt, bench_scheduler
from bench.runs import bench_daemon, bench_restore, bench_routing

KEYS = {"name", "compare", "detail", "unit", "ratio", "target", "holds"}


@pytest.fixture(autouse=True)
def small_cache(tmp_path, monkeypatch):
    """Generated logs go to this test's folder, not the shared cache under /tmp."""
    monkeypatch.setenv("AUTODEV_BENCH_CACHE", str(tmp_path / "cache"))


def check_row(r: dict) -> None:
    assert KEYS <= set(r), f"{r.get('name')}: missing {KEYS - set(r)}"
    assert isinstance(r["name"], str) and r["name"].strip()
    assert isinstance(r["detail"], dict) and r["detail"]
    assert isinstance(r["ratio"], (int, float))
    assert r["holds"] in (True, False, None)
    assert (r["holds"] is None) == (r["target"] == "—")
    for sub in r.get("also", []):
        check_row(sub)
    json.dumps(r)  # results.json must be able to hold it


def test_flat_cost_benchmarks():
    sched = bench_scheduler(sizes=(10, 50), reps=3)
    check_row(sched)
    assert set(sched["detail"]) == {"10", "50"}
    assert sched["also"][0]["name"] == "scheduler peak memory"
    prompt = bench_prompt(sizes=(10, 40))
    check_row(prompt)
    # The token counts are real: the full-history prompt of 40 posts outweighs ours of 10.
    assert prompt["also"][0]["detail"]["40"] > 0 and prompt["detail"]["10"] > 0


def test_scripted_run_benchmarks():
    routing = bench_routing(turns=4)
    check_row(routing)
    assert routing["detail"]["turns"] == 4
    assert routing["detail"]["routing calls"] == 0  # a count, not a timing: routing never calls
    assert routing["detail"]["audit requests"] == 1
    daemon = bench_daemon(turns=4, rss_sizes=(5, 10), chats=1)
    check_row(daemon)
    assert [a["name"] for a in daemon["also"]] == ["daemon time outside model", "daemon peak RSS"]
    assert all(v > 0 for v in daemon["also"][1]["detail"].values())


def test_restore_benchmark():
    r = bench_restore(sizes=(10, 30), cycles=1)
    check_row(r)
    assert set(r["detail"]) == {"10", "30"}


def test_command_benchmark():
    r = bench_commands(reps=1, litellm_baseline=False, posts=10)
    check_row(r)
    assert {"send", "status", "thread", "python -c pass"} <= set(r["detail"])


def test_table_and_markdown_render_every_row():
    row = {"name": "x", "compare": "2 vs 1", "detail": {"1": 1.0}, "unit": "s", "ratio": 1.0,
           "target": "≤ 2", "holds": True,
           "also": [{"name": "y", "compare": "c", "detail": {"a": 1}, "unit": "u", "ratio": 3,
                     "target": "—", "holds": None}]}
    text = bench_run.table([row])
    assert "holds" in text and "y" in text
    md = bench_run.markdown([row], bench_run.machine())
    assert md.count("\n| ") == 3  # header and one line per row (sub-rows included)
