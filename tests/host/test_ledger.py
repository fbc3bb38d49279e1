"""The daemon's ledger of its process groups (host/groups.py, procgroup.reap_ledger): a file per
group while it may run, made before it starts, and what a killed owner left is ended from it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from autodev.host import groups, procgroup, spawn


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(pid: int, within: float = 10) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not running(pid):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def ledger(tmp_path):
    folder = tmp_path / "groups"
    spawn.keep_ledger(folder)
    yield folder
    spawn.keep_ledger(None)


def start_group(seconds: int = 60) -> tuple[spawn.Popen[str], int]:
    """A group whose leader started a `sleep` in it: (leader, the sleep's pid)."""
    p = spawn.popen(
        ["sh", "-c", f"sleep {seconds} & echo $!; exec sleep {seconds}"],
        "user-command",
        start_new_session=True,
        stdout=spawn.PIPE,
        text=True,
    )
    assert p.stdout is not None
    return p, int(p.stdout.readline())


def test_a_group_is_listed_while_it_may_run_and_unlisted_once_ended(ledger):
    p, child = start_group()
    started = procgroup.start_time(p.pid)
    [entry] = list(ledger.iterdir())
    assert entry.name == f"{p.pid}-{int(started or 0)}" and entry.read_text() == "sh"
    assert entry.stat().st_mode & 0o777 == 0o600
    procgroup.kill_group(p.pid)
    p.wait()
    assert list(ledger.iterdir()) == [] and gone(child)


def test_what_a_killed_owner_left_is_ended_by_the_next_one(ledger):
    p, child = start_group()
    spawn.keep_ledger(None)  # the owner is gone without ending its group (as after kill -9)
    p.kill()  # its leader dies with it (die_with_parent); the sleep it started lives on
    p.wait()
    assert running(child) and len(list(ledger.iterdir())) == 1
    (ledger / f"{groups.INTENT}123-abc").write_text("bash")  # killed before its child was named
    assert procgroup.reap_ledger(ledger) == [(p.pid, "sh")]
    assert gone(child) and list(ledger.iterdir()) == []
    assert procgroup.reap_ledger(ledger) == []


def test_a_listed_pid_that_now_names_another_process_is_left_alone(tmp_path):
    folder = tmp_path / "groups"
    folder.mkdir()
    mine = procgroup.start_time(os.getpid())
    assert mine is not None
    (folder / f"{os.getpid()}-{int(mine) - 1}").write_text("bash")  # an older process of that pid
    (folder / "not-a-group").write_text("")
    assert procgroup.reap_ledger(folder) == []
    assert list(folder.iterdir()) == [] and running(os.getpid())


def test_a_group_that_cannot_be_listed_does_not_start(ledger, monkeypatch):
    ledger.rmdir()  # the run folder's ledger gone: its file cannot be made
    before = set(spawn.live_groups())
    started: list[object] = []
    monkeypatch.setattr(spawn.subprocess, "Popen", lambda *a, **k: started.append(a))
    with pytest.raises(FileNotFoundError):
        start_group(4711)
    assert started == [], "the group started before its ledger file was made"
    assert set(spawn.live_groups()) == before


def test_a_group_that_fails_to_start_leaves_no_file(ledger):
    with pytest.raises(FileNotFoundError):
        spawn.popen(["/nonexistent/program"], "user-command", start_new_session=True)
    assert list(ledger.iterdir()) == []
