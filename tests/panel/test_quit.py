"""`q` gives the terminal back at once: the real `autodev panel` in a pseudo-terminal, on a run
whose daemon is busy, exits soon after the key (the interpreter's teardown of the Textual app,
most of the wait, is skipped: nothing in it needs waiting for)."""

from __future__ import annotations

import os
import pty
import select
import sys
import time

import pytest

from tests.conftest import write_team
from tests.e2e.helpers import SOLO, call, start_detached, step

pytestmark = pytest.mark.e2e

BUSY = step("solo", call("run_command", command="for i in $(seq 1 300); do echo $i; sleep 0.1; done"))


def read_for(fd: int, seconds: float, until: bytes | None = None) -> bytes:
    """What the terminal shows within `seconds`, or as soon as it has shown `until`."""
    out, end = b"", time.monotonic() + seconds
    while time.monotonic() < end and (until is None or until not in out):
        if select.select([fd], [], [], 0.05)[0]:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out


def test_q_quits_at_once(repo, autodev):
    write_team(repo, SOLO, BUSY, config='sandbox = "off"\n')
    autodev.adopt(start_detached(autodev, repo, "count"))
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real CLI on a terminal
        os.chdir(repo)
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        os.execve(sys.executable, [sys.executable, "-m", "autodev", "panel"], env)
    try:
        shown = read_for(fd, 20, until=b"Feed")
        assert b"Feed" in shown, shown[-500:]
        sent = time.monotonic()
        os.write(fd, b"q")
        while not os.waitpid(pid, os.WNOHANG)[0]:
            read_for(fd, 0.02)
            assert time.monotonic() - sent < 10, "the panel did not quit"
        took = time.monotonic() - sent
    finally:
        try:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(fd)
    # About 0.2 s here (it was about 1 s under the same load, most of it the interpreter's teardown).
    assert took < 0.75, f"q took {took:.2f} s"
