"""The benchmarks at tiny sizes, so their code cannot rot unnoticed. Shapes and counts only:
nothing here looks at a timing (a slow machine must not fail `make test`).

Most of the cost is child processes importing litellm for their first model request, so the
benchmarks that spawn children run side by side in threads."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench import run as bench_run
from bench import runs as bench_runs
from bench.commands import bench_commands
from bench.flat import bench_prompt, bench_scheduler
from bench.runs import bench_daemon, bench_restore, bench_routing, rss_run

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
    assert (r["holds"] is None) == (r["target"] == "—"), r["name"]
    for sub in r.get("also", []):
        check_row(sub)
    json.dumps(r)  # results.json must be able to hold it


def _scripted_runs() -> tuple[dict, dict]:
    # Sequential on purpose: the daemon benchmark reuses the routing benchmark's run (and its
    # memory runs are skipped here: rss_run runs beside them instead).
    return bench_routing(turns=4), bench_daemon(turns=4, rss_sizes=())


@pytest.mark.full
@pytest.mark.e2e  # scripted runs: daemons as processes of their own
def test_every_benchmark_at_tiny_sizes():
    sched = bench_scheduler(sizes=(10, 50), reps=3)  # first, alone: tracemalloc is per process
    with ThreadPoolExecutor(max_workers=5) as pool:
        runs = pool.submit(_scripted_runs)
        restore = pool.submit(bench_restore, sizes=(10, 30), cycles=1)
        commands = pool.submit(bench_commands, reps=1, litellm_baseline=False, posts=10)
        prompt = pool.submit(bench_prompt, sizes=(10, 40))
        memory = pool.submit(rss_run, 5, 1)
        routing, daemon = runs.result()
        restore, commands, prompt = restore.result(), commands.result(), prompt.result()
        peak_kb, exit_kb = memory.result()

    check_row(sched)
    assert set(sched["detail"]) == {"10", "50"}
    assert sched["also"][0]["name"] == "scheduler peak memory"

    check_row(prompt)
    # Real token counts: 40 posts in full outweigh the bounded prompt on 10.
    assert prompt["also"][0]["detail"]["40"] > prompt["also"][0]["detail"]["10"] > 0

    check_row(routing)
    assert routing["detail"]["turns"] == 4
    assert routing["detail"]["audit requests"] == 1
    assert routing["detail"]["routing calls"] == 0  # a count, not a timing

    check_row(daemon)
    assert [a["name"] for a in daemon["also"]] == ["daemon time outside model"]
    assert peak_kb >= exit_kb > 0  # the daemon's own memory was really sampled from /proc
    check_row(bench_runs._rss_row({5: (peak_kb, exit_kb), 10: (peak_kb, exit_kb)}, 1))

    check_row(restore)
    assert set(restore["detail"]) == {"10", "30"}

    check_row(commands)
    assert {"send", "status", "thread", "python -c pass"} <= set(commands["detail"])


def test_table_and_markdown_show_every_row():
    row = {
        "name": "x",
        "compare": "2 vs 1",
        "detail": {"1": 1.0},
        "unit": "s",
        "ratio": 1.0,
        "target": "≤ 2",
        "holds": False,
        "also": [
            {
                "name": "y",
                "compare": "c",
                "detail": {"a": 1},
                "unit": "u",
                "ratio": 3,
                "target": "—",
                "holds": None,
            }
        ],
    }
    text = bench_run.table([row])
    assert "FAIL" in text and "\ny " in text
    md = bench_run.markdown([row], bench_run.machine())
    assert md.count("\n| ") == 3  # the header and one line per row, sub-rows included
    assert "✘ FAIL" in md


def test_peers_skip_without_the_peer_venv(tmp_path, monkeypatch):
    """`make test` never installs the peer: with no venv, the row says why and holds no figure."""
    from bench.peers import bench_peers

    monkeypatch.setenv("AUTODEV_PEER_VENV", str(tmp_path / "no-venv"))
    r = bench_peers(install=False)
    assert r["skipped"] and "make bench-peers" in r["skipped"]
    assert r["ratio"] is None and r["holds"] is None
    assert "skipped" in bench_run.table([r])
    json.dumps(r)


def test_results_file_keeps_the_benchmarks_not_rerun(tmp_path):
    path = tmp_path / "results.json"
    old = [{"bench": "scheduler", "name": "old scheduler"}, {"bench": "peers", "name": "old peers"}]
    path.write_text(json.dumps({"results": old}))
    kept = bench_run.merged(path, [{"bench": "peers", "name": "new peers"}])
    assert [r["name"] for r in kept] == ["old scheduler", "new peers"]


def _peer_python():
    from bench.peers import peer_python

    py, why = peer_python(install=False)
    if py is None:
        pytest.skip(f"peer benchmark not checked: {why}")
    return py


def test_peers_side_by_side_at_tiny_sizes():
    """Both sides on a 4- and 8-post workload: real scripted runs and the real AutoGen teams."""
    _peer_python()
    from bench.peers import bench_peers

    r = bench_peers(sizes=(4, 8), our_sizes=(4, 8), selector_sizes=(4,), install=False)
    check_row(r)
    rows = {x["name"].strip(): x for x in bench_run.rows([r])}
    assert r["versions"]["autogen-agentchat"] == "0.7.5"
    # Counts, not timings: the same canned replies reach both sides' prompts.
    routing = rows["side by side: routing calls per turn"]["detail"]
    assert routing["autodev"] == 0
    assert routing["SelectorGroupChat"] == 1.0
    assert routing["SelectorGroupChat, selector wrong once per turn"] == 2.0
    prompt = r["detail"]
    assert prompt["AutoGen default 8"] > prompt["AutoGen default 4"] > 0
    assert prompt["autodev 8"] > 0
    seen = rows["AutoGen buffered(8): what the model sees"]["detail"]
    assert seen["messages stored by its agent"] >= seen["messages in the last request"]


def test_profile_sorts_loop_samples_by_cause():
    """Frames as py-spy names them in today's daemon (seen in a real `bench/profile.py` run)."""
    from bench.profile import categorize

    loop = (
        "start (autodev/cli/start.py:96);Daemon.run (autodev/daemon/process.py:95);"
        "Loop.loop (autodev/daemon/loop.py:236);Loop._one_turn (autodev/daemon/loop.py:348)"
    )
    ask = f"{loop};run_turn (autodev/daemon/turnsetup.py:179);_ask (autodev/harness/generation.py:150)"
    raw = "\n".join(
        [
            f"{loop};StateFile._write (autodev/store/state.py:102);fsync_dir (autodev/store/journal.py:69) 4",
            f"{loop};run (autodev/host/hostgit.py:341);Popen._execute_child (subprocess.py:1883) 3",
            f"{ask};Event.wait (threading.py:629);Condition.wait (threading.py:331) 50",
            f"{ask};_tool_specs (autodev/harness/generation.py:42) 2",
            f"{loop};warm (autodev/harness/providers.py:1);_litellm (autodev/harness/providers.py:2) 7",
            f"{loop};context (autodev/daemon/turnsetup.py:1);_find_and_load (<frozen>:1) 9",
            "main (autodev/cli/root.py:83);_find_and_load (<frozen>:1) 5",
        ]
    )
    total, cats = categorize(raw)
    assert total == 9  # waiting for the model's answer and the imports are not the daemon's own time
    assert {k.split()[0]: v for k, v in cats.items()} == {"fsync": 4, "git": 3, "python": 2}


def test_cache_bench_reports_a_share_and_both_costs():
    from bench.cache import bench_cache

    r = bench_cache()
    check_row(r)
    assert 0 < r["ratio"] < 1 and r["detail"]["from cache"] > 0
    [cost] = r["also"]
    assert cost["ratio"] is not None and cost["holds"]


def test_a_missed_target_fails_the_run_and_each_row_says_when_and_where(tmp_path, monkeypatch, capsys):
    """A row that does not hold is reported (FAIL, exit 1), and every row keeps its date, the
    load average around it and the commit (issue 33)."""
    row = {
        "name": "x",
        "compare": "c",
        "detail": {"a": 1},
        "unit": "s",
        "ratio": 2.0,
        "target": "≤ 1",
        "holds": False,
    }
    monkeypatch.setattr(bench_run, "BENCHES", {"fake": lambda: dict(row)})
    monkeypatch.setattr(bench_run, "RESULTS", tmp_path / "results.json")
    assert bench_run.main(["fake"]) == 1
    assert "FAIL: x: 2.0 against ≤ 1" in capsys.readouterr().err
    data = json.loads((tmp_path / "results.json").read_text())
    measured = data["results"][0]["measured"]
    assert measured["commit"] == data["commit"] and len(measured["commit"]) >= 12
    assert len(measured["load"]) == 2 and data["date"][:4].isdigit()
    assert "load" in bench_run.markdown(data["results"], data["machine"])
    monkeypatch.setattr(bench_run, "BENCHES", {"fake": lambda: {**row, "holds": True, "ratio": 0.5}})
    assert bench_run.main(["fake"]) == 0
