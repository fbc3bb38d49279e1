"""`--executor ray` for real: a Ray head started on 127.0.0.1 (`ray start --head`), the smoke
suite's subset run through it with a scripted team, each task a Ray task; results stream back into
--out, and a second run over the same --out resumes (nothing run again). Opt-in: `make real-ray`
installs Ray into .venv-ray and runs this; without Ray importable it is skipped."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.eval.smoke import CONFIG, SUBSET, grade_flags, scripted_team, subset

pytestmark = pytest.mark.e2e

ray = pytest.importorskip("ray", reason="Ray is opt-in: make real-ray")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_head(tmp_path):
    """`ray start --head` on 127.0.0.1, stopped (with its processes) on teardown."""
    bin_dir = Path(sys.executable).parent
    ray_cli = str(bin_dir / "ray") if (bin_dir / "ray").exists() else shutil.which("ray")
    assert ray_cli, "the ray command is missing from this venv"
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("OPENAI_API_KEY", None)  # the workers' environment: the key check below finds it missing
    temp = Path("/tmp") / f"ray-{tmp_path.name[:20]}"  # Ray's socket paths must stay short
    start = subprocess.run(
        [ray_cli, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
         "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", str(temp)],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert start.returncode == 0, start.stdout + start.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.timeout(1200)
def test_eval_through_a_ray_cluster_streams_back_and_resumes(suite, tmp_path, autodev, ray_head):
    tasks_file, solutions = suite
    ids = SUBSET[:3]
    tasks = subset(tasks_file, ids, tasks_file.parent / f"ray-{tmp_path.name}.jsonl")
    solved = ids[:2]
    team = scripted_team(
        tmp_path / "teams", "alpha", {i: (solutions / f"{i}.diff").read_text() for i in solved}, True
    )
    (tmp_path / "config.toml").write_text(CONFIG)
    out = tmp_path / "out"
    args = ["eval", str(tasks), "--team", str(team), "--out", str(out), "--config", str(tmp_path / "config.toml"),
            "--executor", "ray", "--address", ray_head, *grade_flags()]  # fmt: skip
    r = autodev(tmp_path, *args, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(x["task"] for x in results) == sorted(ids)
    for x in results:
        assert x["resolved"] is (x["task"] in solved) and x["error"] is None, x
        assert (x["state"], x["audit"]) == ("complete", "accepted")
        assert f"{'✓' if x['resolved'] else '✗'} {x['task']} · alpha · " in r.stdout
    preds = [json.loads(x) for x in (out / "predictions" / "alpha.jsonl").read_text().splitlines()]
    assert {p["instance_id"]: bool(p["model_patch"]) for p in preds} == {i: i in solved for i in ids}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["teams"]["alpha"]["resolved"] == len(solved)

    again = autodev(tmp_path, *args, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"{len(ids)} already finished" in again.stdout
    assert len((out / "results.jsonl").read_text().splitlines()) == len(ids)


@pytest.mark.timeout(600)
def test_keys_are_checked_on_a_worker_and_an_unreachable_head_is_one_line(suite, tmp_path, autodev, ray_head):
    tasks_file, _ = suite
    tasks = subset(tasks_file, SUBSET[:1], tasks_file.parent / f"ray-keys-{tmp_path.name}.jsonl")
    team = tmp_path / "gpt.toml"
    team.write_text('[[participants]]\nname = "solo"\nmodel = "openai/gpt-5"\nwrite = true\n')
    args = ["eval", str(tasks), "--team", str(team), "--out", str(tmp_path / "out"), "--executor", "ray"]
    # The driver has the key, the workers do not: the check runs on a worker.
    r = autodev(tmp_path, *args, "--address", ray_head, env={"OPENAI_API_KEY": "sk-driver-only"}, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "on a Ray worker, a team's provider is missing" in r.stderr and "OPENAI_API_KEY" in r.stderr
    assert "before `ray start`" in r.stderr and not (tmp_path / "out" / "results.jsonl").exists()

    r = autodev(tmp_path, *args, "--address", f"127.0.0.1:{free_port()}", timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "the Ray head cannot be reached" in r.stderr.splitlines()[0]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("way", ["ctrl-c", "kill-9"])
def test_ending_the_eval_ends_its_ray_tasks_and_every_process_below_them(
    suite, tmp_path, autodev, ray_head, way
):
    """Ctrl-C: the driver cancels each task, whose worker ends the run's daemon whole (SIGTERM, then
    SIGKILL to it and all below it). kill -9: Ray ends the dead driver's workers, and each daemon,
    which ends with its parent, ends its own command. Either way no `sleep 240` is left."""
    from tests.e2e.helpers import running, sleepers
    from tests.eval.test_interrupt import sleeping_team

    tasks_file, _ = suite
    tasks = subset(tasks_file, SUBSET[:2], tasks_file.parent / f"ray-end-{tmp_path.name}.jsonl")
    marker = f"ray-{way}-{secrets.token_hex(6)}"
    team = sleeping_team(tmp_path / "teams", marker)
    (tmp_path / "config.toml").write_text(CONFIG)
    out = tmp_path / "out"
    p = autodev.popen(
        tmp_path, "eval", str(tasks), "--team", str(team), "--out", str(out),
        "--config", str(tmp_path / "config.toml"), "--executor", "ray", "--address", ray_head, *grade_flags(),
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while len(sleepers(marker)) < 2 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.2)
    assert len(sleepers(marker)) == 2, (p.poll(), p.stderr.read() if p.poll() is not None else "")
    daemons = [int(f.read_text().split()[0]) for f in out.glob("runs/*/*/daemon.pid")]
    for pid in daemons:
        autodev.adopt(pid)
    os.kill(p.pid, signal.SIGINT if way == "ctrl-c" else signal.SIGKILL)
    p.wait(timeout=120)
    if way == "ctrl-c":
        said = p.stdout.read()
        assert p.returncode == 130 and "interrupted: 2 run(s) in flight ended" in said, said + p.stderr.read()
    deadline = time.monotonic() + 60
    while (sleepers(marker) or any(running(d) for d in daemons)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = sleepers(marker)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"the participants' `sleep 240` outlived the eval on Ray ({way})"
    assert not [d for d in daemons if running(d)], "a run's daemon outlived the eval on Ray"


@pytest.mark.timeout(1200)
def test_eval_best_of_three_through_a_ray_cluster_picks_as_the_local_one(suite, tmp_path, autodev, ray_head):
    """`eval --best-of 3 --executor ray` (issue 34 item 4): each run a Ray task with its run
    number, and the same picks as the local executor's (tests/eval/test_best_of_eval.py)."""
    from tests.eval.test_best_of_eval import TASKS, best_of_team, write_config

    tasks_file, solutions = suite
    tasks = subset(tasks_file, TASKS, tasks_file.parent / f"ray-best-of-{tmp_path.name}.jsonl")
    team = best_of_team(tmp_path / "teams", solutions)
    write_config(tmp_path)
    out = tmp_path / "out"
    args = ["eval", str(tasks), "--team", str(team), "--out", str(out), "--best-of", "3",
            "--config", str(tmp_path / "config.toml"), "--max-cost-usd", "5",
            "--executor", "ray", "--address", ray_head]  # fmt: skip
    r = autodev(tmp_path, *args, timeout=1000)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    results = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    got = {(x["task"], x["run"]): x["resolved"] for x in results}
    assert got == {(t, k): k == 2 for t in TASKS for k in (1, 2, 3)}
    b = json.loads((out / "summary.json").read_text())["best_of"]
    assert (b["teams"]["varied"]["pick_at_n"], b["teams"]["varied"]["pass_at_1"]) == (0.5, 0.3333)
    assert b["picks"]["varied"]["wordcount-spaces"]["run"] == 2
