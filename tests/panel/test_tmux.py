"""The panel as a person uses it: in a real terminal (a detached tmux session), keys sent with
send-keys, the screen read back with capture-pane."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

from tests.conftest import thread_of, write_team
from tests.e2e.helpers import GATE_SCRIPT, PAIR, start_detached, state_of, wait_for

TMUX = shutil.which("tmux")


@pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux)")
def test_approve_a_gate_in_tmux_and_see_the_run_continue(repo, autodev, tmp_path):
    write_team(repo, PAIR, GATE_SCRIPT, 'gateMode = "gated"\n')
    start_detached(autodev, repo, "push it")
    wait_for("gated", lambda: state_of(repo).get("state") == "gated")

    sock = str(tmp_path / "tmux.sock")  # a private tmux server: nobody else's sessions
    env = {k: os.environ[k] for k in ("AUTODEV_HOME", "PYTHONPATH", "PATH", "HOME") if k in os.environ}
    cmd = " ".join(
        [
            "env",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            "TERM=xterm-256color",
            shlex.quote(sys.executable),
            "-m",
            "autodev",
            "panel",
        ]
    )

    def tmux(*args: str) -> str:
        return subprocess.run(
            [TMUX, "-S", sock, *args], check=True, capture_output=True, text=True, timeout=10
        ).stdout

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "panel")

    try:
        tmux("new-session", "-d", "-s", "panel", "-x", "150", "-y", "45", "-c", str(repo), cmd)
        wait_for(
            "the panel showing the gate",
            lambda: "gate 2 from alice" in screen() and "approve" in screen(),
            timeout=30,
        )
        before = screen()
        assert "gated" in before and "git push origin main" in before
        tmux("send-keys", "-t", "panel", "a")
        wait_for(
            "the run to continue and complete on screen",
            lambda: "pushed after the gate" in screen() and "complete" in screen(),
            timeout=30,
        )
        after = screen()
        assert "nothing needs you" in after
        tmux("send-keys", "-t", "panel", "q")
        # The session ends with the panel, and the private server with its last session.
        wait_for("the panel to quit", lambda: "panel" not in _sessions(tmux), timeout=10)
    finally:
        subprocess.run([TMUX, "-S", sock, "kill-server"], capture_output=True, timeout=10)
    assert [p["from"] for p in thread_of(repo)][-3:] == ["system", "alice", "audit"]
    assert state_of(repo)["state"] == "complete"


def _sessions(tmux) -> str:
    """The session names, or "" once the server has exited (no sessions left)."""
    try:
        return tmux("list-sessions", "-F", "#S")
    except subprocess.CalledProcessError:
        return ""
