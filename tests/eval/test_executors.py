"""The Ray executor's edges that need no cluster: the missing-Ray error says how to install it; a
head that cannot be reached is refused in seconds, in one line with the fix (a real socket); the
up-front key check as a worker runs it (`team_key_problems`); a resume on another node never kills
a local process whose pid the other node's daemon happened to have (a real process holding a real
daemon lock)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autodev.errors import UsageError
from autodev.eval.executors import make_executor, probe_head
from autodev.eval.runner import reset_folder
from autodev.eval.teams import load_team_spec, team_key_problems


def test_missing_ray_names_what_installs_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # the outermost boundary: Ray not importable
    with pytest.raises(UsageError, match="--executor ray needs Ray, which is not installed") as e:
        make_executor("ray", 1, "127.0.0.1:6379")
    assert "make real-ray" in e.value.fix and "pip install -r evals/ray-requirements.txt" in e.value.fix
    assert "ray-venv" not in e.value.fix and e.value.exit_code == 2


def test_an_unreachable_head_is_refused_in_seconds_with_the_fix():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(UsageError) as e:
        probe_head(f"127.0.0.1:{port}", timeout=2)
    assert time.monotonic() - started < 3
    assert (
        e.value.message
        == f"--address 127.0.0.1:{port}: the Ray head cannot be reached (Connection refused in 2 s)"
    )
    assert "ray start --head --port" in e.value.fix and "on a node of the cluster" in e.value.fix
    assert "\n" not in e.value.message and e.value.exit_code == 2
    with pytest.raises(UsageError, match="Ray Client addresses"):
        probe_head("ray://10.0.0.5:10001")
    with pytest.raises(UsageError, match="is not HOST:PORT"):
        probe_head("head-node")
    with socket.socket() as s:  # a listening head's port passes
        s.bind(("127.0.0.1", 0))
        s.listen()
        probe_head(f"127.0.0.1:{s.getsockname()[1]}")


def test_the_key_check_a_worker_runs(tmp_path, monkeypatch):
    (tmp_path / "gpt.toml").write_text(
        '[[participants]]\nname = "solo"\nmodel = "openai/gpt-5"\nwrite = true\n'
    )
    (tmp_path / "local.toml").write_text(
        '[[participants]]\nname = "solo"\nmodel = "openai/m"\napi_base = "http://127.0.0.1:9/v1"\nwrite = true\n'
    )
    teams = [load_team_spec(tmp_path / "local.toml"), load_team_spec(tmp_path / "gpt.toml")]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    [problem] = team_key_problems(teams)
    assert problem.startswith("team gpt: ") and "OPENAI_API_KEY" in problem
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert team_key_problems(teams) == []


def hold_lock(lock) -> subprocess.Popen:
    """A process that holds a daemon lock as a daemon does (flock, its pid in the file)."""
    lock.parent.mkdir(parents=True)
    p = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "os.write(fd, str(os.getpid()).encode())\n"
         "print('held', flush=True)\n"
         "time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert p.stdout and p.stdout.readline() == "held\n"
    return p


@pytest.mark.parametrize("node, killed", [("another-node", False), (socket.gethostname(), True)])
def test_a_resume_kills_the_old_daemon_only_on_its_own_node(tmp_path, node, killed):
    folder = tmp_path / "runs" / "t1" / "alpha"
    p = hold_lock(folder / "home" / "repo-1234" / "daemon.lock")
    try:
        (folder / "daemon.pid").write_text(f"{p.pid} {node}\n")
        reaper = threading.Thread(target=p.wait)  # an eval's old daemon is no child of the new one
        reaper.start()
        reset_folder(folder)
        assert not folder.exists()
        reaper.join(timeout=0.5)
        assert (p.returncode is not None) is killed
    finally:
        if p.poll() is None:
            os.killpg(p.pid, 9)
        p.wait()


class StandInRay:
    """Ray's cancel and wait as RayExecutor.end uses them (Ray itself: `make real-ray`,
    tests/eval/test_ray.py): `stuck` tasks outlive a cancel without force."""

    def __init__(self, stuck: set[str]):
        self.stuck, self.calls = stuck, []

    def cancel(self, ref, *, force=False):
        self.calls.append(("cancel", ref, force))

    def wait(self, refs, *, num_returns, timeout):
        forced = {r for (_, r, f) in self.calls if f}
        left = [r for r in refs if r in self.stuck and r not in forced]
        self.calls.append(("wait", tuple(refs), timeout))
        return [r for r in refs if r not in left], left


def test_ending_a_ray_eval_cancels_each_task_then_forces_the_ones_left(monkeypatch):
    ray = StandInRay(stuck={"b"})
    monkeypatch.setitem(sys.modules, "ray", ray)
    ex = make_executor("ray", 1, None)
    ex.pending.update({"a": "job a", "b": "job b"})
    assert ex.end() == 2 and ex.pending == {}
    assert ray.calls[:2] == [("cancel", "a", False), ("cancel", "b", False)]
    assert ray.calls[2][:2] == ("wait", ("a", "b")) and ray.calls[2][2] >= 10  # the daemons' grace
    assert ray.calls[3:5] == [("cancel", "b", True), ("wait", ("b",), 10)]
    assert ex.end() == 0  # nothing in flight: nothing to cancel


def test_a_ctrl_c_the_kernel_hands_to_a_worker_thread_still_ends_the_wait(tmp_path):
    """Any thread may receive a signal sent to the process. One that lands on a worker thread
    (here sent to it on purpose with pthread_kill) must still interrupt the main thread's wait
    for the runs: `as_completed` waited without a timeout, and an eval hung for minutes."""
    script = tmp_path / "waiter.py"
    script.write_text(
        "import signal, sys, threading, time\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from autodev.eval.executors import completed\n"
        "stop = threading.Event()\n"
        "pool = ThreadPoolExecutor(max_workers=2)\n"
        "futures = [pool.submit(stop.wait, 30) for _ in range(2)]\n"
        "time.sleep(0.3)\n"
        "worker = next(t for t in threading.enumerate() if t is not threading.main_thread())\n"
        "threading.Timer(0.3, signal.pthread_kill, (worker.ident, signal.SIGINT)).start()\n"
        "t0 = time.monotonic()\n"
        "try:\n"
        "    list(completed(futures))\n"
        "except KeyboardInterrupt:\n"
        "    print(f'interrupted after {time.monotonic() - t0:.1f} s')\n"
        "finally:\n"
        "    stop.set()\n"
    )
    p = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=90,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("interrupted after"), (
        "the wait was not interrupted: it ran until the runs ended"
    )
    took = float(p.stdout.split()[2])
    assert took < 5, p.stdout  # not the 30 s the runs would take
