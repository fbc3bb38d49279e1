"""A dead daemon's process group, ended on restart (host/procgroup.kill_stale): its leader (an
agent CLI, a command's bash) dies with its daemon (die_with_parent), so the group is often
leaderless by then, and what the leader started in it must still end."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from autodev.host import procgroup


def _gone(pid: int, within: float = 10) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if procgroup.start_time(pid) is None:
            return True
        time.sleep(0.05)
    return False


def _leaderless_group() -> tuple[int, float, int]:
    """A group whose leader started `sleep 60` in it and exited: (leader pid, its start, child)."""
    p = subprocess.Popen(
        ["sh", "-c", "sleep 60 & echo $!"], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    started = procgroup.start_time(p.pid)
    assert started is not None
    child = int(p.stdout.readline()) if p.stdout else 0
    p.wait()
    assert procgroup.start_time(p.pid) is None and procgroup.start_time(child) is not None
    return p.pid, started, child


def test_a_group_left_by_a_dead_cli_is_ended_through_what_it_started():
    leader, started, child = _leaderless_group()
    assert procgroup.kill_stale(leader, started)
    assert _gone(child)
    assert not procgroup.kill_stale(leader, started), "nothing of it is left the second time"


def test_a_group_whose_processes_are_older_than_the_recorded_cli_is_not_ours():
    leader, started, child = _leaderless_group()
    try:
        # recorded as started after everything in the group: the pid would be a later group's
        assert not procgroup.kill_stale(leader, started + 10**6)
        assert procgroup.start_time(child) is not None
    finally:
        procgroup.kill_stale(leader, started)
    assert _gone(child)


def test_a_group_of_a_zombie_leader_alone_is_not_reported_as_ended():
    """A leader that died with its daemon stays a zombie until its reaper (elsewhere) waits for
    it: with nothing else running in its group, nothing of it is left to end."""
    p = subprocess.Popen(["sh", "-c", "exit 0"], start_new_session=True)
    started = procgroup.start_time(p.pid)
    end = time.monotonic() + 10
    while "Z" not in _state(p.pid) and time.monotonic() < end:
        time.sleep(0.02)
    try:
        assert _state(p.pid) == "Z" and procgroup.start_time(p.pid) == started
        assert not procgroup.kill_stale(p.pid, started)
    finally:
        p.wait()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
