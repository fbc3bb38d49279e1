"""host/procgroup: what a process told to end ends (issue 32, item 7), on real processes.

`end_all` kills the groups this process started through the door and did not end itself;
`end_trees` ends an autodev child and everything below it, even what leads a session of its own
and even when the child ignores SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autodev.host import procgroup, spawn


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(check, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return check()


def test_end_all_kills_the_groups_started_and_not_ended(tmp_path):
    pidfile = tmp_path / "bg"
    # A leader with a child in the background: both in the leader's group.
    p = spawn.popen(
        ["sh", "-c", f"sleep 240 & echo $! > {pidfile}; wait"], "user-command", start_new_session=True
    )
    done = spawn.popen(["true"], "user-command", start_new_session=True)
    done.wait()
    ended = spawn.popen(["sleep", "240"], "user-command", start_new_session=True)
    procgroup.kill_group(ended.pid)  # its owner ended it
    ended.wait()
    assert wait_until(lambda: pidfile.exists() and pidfile.read_text().strip())
    bg = int(pidfile.read_text())
    assert spawn.live_groups() == [p.pid]  # neither the waited-for one nor the one ended
    assert procgroup.end_all() == 1
    p.wait(timeout=10)
    assert wait_until(lambda: not running(bg)), "the background child outlived end_all"
    assert p.returncode == -signal.SIGKILL and spawn.live_groups() == []


def test_a_run_in_its_own_group_is_killed_on_timeout_as_subprocess_run_does():
    r = spawn.run(
        [sys.executable, "-c", "print('ok')"], "user-command", start_new_session=True,
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert (r.returncode, r.stdout) == (0, "ok\n") and spawn.live_groups() == []
    with pytest.raises(spawn.TimeoutExpired) as e:
        spawn.run(
            [sys.executable, "-c", "print('hi', flush=True); import time; time.sleep(60)"], "user-command",
            start_new_session=True, capture_output=True, text=True, timeout=2,
        )  # fmt: skip
    assert e.value.stdout == "hi\n" and spawn.live_groups() == []


def test_a_group_that_ended_on_sigterm_is_not_waited_out_for_its_zombie():
    """kill_group's grace ends when nothing in the group runs: a leader that ended on SIGTERM
    stays a zombie until its parent (here, this process) waits for it."""
    p = spawn.popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], "user-command", start_new_session=True
    )
    time.sleep(0.3)  # started (its SIGTERM handler is Python's default: it ends)
    began = time.monotonic()
    assert procgroup.kill_group(p.pid, grace=10) is True
    assert time.monotonic() - began < 5, "the grace was waited out for a zombie"
    assert p.wait(timeout=10) == -signal.SIGTERM
    stubborn = spawn.popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)",
        ],
        "user-command",
        start_new_session=True,
    )
    time.sleep(0.5)
    began = time.monotonic()
    assert procgroup.kill_group(stubborn.pid, grace=1) is True
    assert time.monotonic() - began >= 1  # it ran through the grace: then SIGKILL
    assert stubborn.wait(timeout=10) == -signal.SIGKILL


@pytest.mark.parametrize("own_group", [False, True])
def test_a_timed_run_ends_when_its_command_does_and_is_killed_past_its_timeout(own_group):
    """A timer kills the command past its timeout (not communicate's timed wait, which sleeps in
    steps from 1 ms after every command): the output so far is kept, and nothing outlives it."""
    many = [
        spawn.run([sys.executable, "-c", f"print({i})"], "user-command", start_new_session=own_group,
                  capture_output=True, text=True, timeout=30)
        for i in range(3)
    ]  # fmt: skip
    assert [(r.returncode, r.stdout) for r in many] == [(0, "0\n"), (0, "1\n"), (0, "2\n")]
    began = time.monotonic()
    with pytest.raises(spawn.TimeoutExpired) as e:
        spawn.run(
            [sys.executable, "-c", "import sys, time; sys.stdout.buffer.write(b'so far'); sys.stdout.flush(); time.sleep(60)"],
            "user-command", start_new_session=own_group, capture_output=True, timeout=1,
        )  # fmt: skip
    assert 1 <= time.monotonic() - began < 20
    assert e.value.stdout == b"so far" and e.value.timeout == 1
    assert spawn.live_groups() == []
    with pytest.raises(subprocess.CalledProcessError) as failed:
        spawn.run([sys.executable, "-c", "raise SystemExit(3)"], "user-command", check=True, timeout=30)
    assert failed.value.returncode == 3


def test_input_and_stdin_together_are_refused_as_subprocess_run_refuses_them(tmp_path):
    """`input` needs stdin to be the pipe it writes: a caller's stdin is never silently replaced."""
    given = tmp_path / "in.txt"
    given.write_text("from the file\n")
    argv = [sys.executable, "-c", "import sys; print(sys.stdin.read().strip())"]
    with given.open() as f, pytest.raises(ValueError, match="stdin and input"):
        spawn.run(argv, "user-command", input="from input", stdin=f, capture_output=True, text=True)
    with given.open() as f:
        assert (
            spawn.run(argv, "user-command", stdin=f, capture_output=True, text=True).stdout
            == "from the file\n"
        )
    assert (
        spawn.run(argv, "user-command", input="from input", capture_output=True, text=True).stdout
        == "from input\n"
    )


# A root that leaves a grandchild in a session of its own (as a participant's command is), and
# either ignores SIGTERM (a daemon stuck) or ends at once.
ROOT = """
import os, signal, subprocess, sys, time
if sys.argv[1] == "stuck":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
p = subprocess.Popen(["sleep", "240"], start_new_session=True)
open(sys.argv[2], "w").write(str(p.pid))
time.sleep(240)
"""


def start_root(tmp_path: Path, how: str) -> tuple[spawn.Popen, int]:
    out = tmp_path / f"{how}.pid"
    root = spawn.popen(
        [sys.executable, "-c", ROOT, how, str(out)],
        "user-command",
        start_new_session=True,
    )
    assert wait_until(lambda: out.exists() and out.read_text().strip())
    return root, int(out.read_text())


def test_end_trees_ends_a_stuck_root_and_what_leads_its_own_session_below_it(tmp_path):
    stuck, below_stuck = start_root(tmp_path, "stuck")
    quick, below_quick = start_root(tmp_path, "quick")
    started = time.monotonic()
    procgroup.end_trees([stuck.pid, quick.pid], grace=1.5)
    took = time.monotonic() - started
    stuck.wait(timeout=10)
    quick.wait(timeout=10)
    assert stuck.returncode == -signal.SIGKILL and quick.returncode == -signal.SIGTERM
    assert 1.5 <= took < 10
    for pid in (below_stuck, below_quick):
        assert wait_until(lambda pid=pid: not running(pid)), "a process below the root outlived end_trees"


def test_end_trees_is_quick_when_the_roots_end_on_sigterm(tmp_path):
    quick, below = start_root(tmp_path, "quick")
    started = time.monotonic()
    procgroup.end_trees([quick.pid], grace=30)
    assert time.monotonic() - started < 10
    quick.wait(timeout=10)
    assert wait_until(lambda: not running(below))
