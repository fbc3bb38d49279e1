"""A dead daemon's agent CLI group, ended on restart (agents/runner.kill_stale): the CLI itself
dies with its daemon (die_with_parent), so the group is often leaderless by then, and what the
CLI started in it must still end."""

from __future__ import annotations

import subprocess
import time

from autodev.agents import runner


def _gone(pid: int, within: float = 10) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if runner.start_time(pid) is None:
            return True
        time.sleep(0.05)
    return False


def _leaderless_group() -> tuple[int, float, int]:
    """A group whose leader started `sleep 60` in it and exited: (leader pid, its start, child)."""
    p = subprocess.Popen(
        ["sh", "-c", "sleep 60 & echo $!"], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    started = runner.start_time(p.pid)
    assert started is not None
    child = int(p.stdout.readline()) if p.stdout else 0
    p.wait()
    assert runner.start_time(p.pid) is None and runner.start_time(child) is not None
    return p.pid, started, child


def test_a_group_left_by_a_dead_cli_is_ended_through_what_it_started():
    leader, started, child = _leaderless_group()
    assert runner.kill_stale(leader, started)
    assert _gone(child)
    assert not runner.kill_stale(leader, started), "nothing of it is left the second time"


def test_a_group_whose_processes_are_older_than_the_recorded_cli_is_not_ours():
    leader, started, child = _leaderless_group()
    try:
        # recorded as started after everything in the group: the pid would be a later group's
        assert not runner.kill_stale(leader, started + 10**6)
        assert runner.start_time(child) is not None
    finally:
        runner.kill_stale(leader, started)
    assert _gone(child)
