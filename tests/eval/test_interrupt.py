"""An eval ended from outside leaves nothing running (issue 32, item 7): each run's daemon, its
turn and the participant's command (its own process group, in bubblewrap or not) all end when the
eval is interrupted with Ctrl-C (SIGINT), killed (SIGTERM), or killed with -9 (the daemons learn
of their parent's death). The command is a real `sleep 240`, found in /proc by a marker in its
environment."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.helpers import running, sleepers
from tests.eval.smoke import grade_flags, subset

pytestmark = pytest.mark.e2e


def sleeping_team(folder: Path, marker: str) -> Path:
    """A team whose builder's first command is `sleep 240` (it never gets further)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sleepy.script.toml").write_text(
        '[[step]]\nparticipant = "builder"\n'
        f'calls = [{{ tool = "run_command", args = {{ command = "ORPHAN_MARK={marker} sleep 240" }} }}]\n'
    )
    team = folder / "sleepy.toml"
    team.write_text(
        '[[participants]]\nname = "builder"\nmodel = "scripted"\nwrite = true\n\n'
        '[audit]\nmodel = "scripted"\n\n[scripted]\npath = "sleepy.script.toml"\n'
    )
    return team


def _wait_or_tell(p: subprocess.Popen, timeout: float) -> None:
    """p.wait(timeout); past it, the eval's threads' stacks (SIGABRT with PYTHONFAULTHANDLER)
    and what it printed, so that a hang says where it hangs."""
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        tree = subprocess.run(
            ["ps", "-o", "pid,ppid,pgid,stat,etime,args", "-g", str(p.pid)], capture_output=True, text=True
        )
        os.kill(p.pid, signal.SIGABRT)
        out, err = p.communicate(timeout=30)
        pytest.fail(
            f"the eval did not end {timeout:g} s after the signal\n{tree.stdout}\nstdout:\n{out[-3000:]}\nstderr:\n{err[-6000:]}"
        )


def bwrap_works() -> bool:
    from autodev.guard.sandbox import resolve

    return resolve("auto").active


WAYS = {"ctrl-c": signal.SIGINT, "kill": signal.SIGTERM, "kill-9": signal.SIGKILL}
# `make test` runs Ctrl-C without a sandbox (the daemon's SIGTERM ends the command) and kill -9
# in bubblewrap (the daemons end with their parent); `make test-all` every way in both.
CASES = [(way, box) for way in WAYS for box in ("off", "bwrap")]
LIGHT = {("ctrl-c", "off"), ("kill-9", "bwrap")}


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("way", "sandbox"), [c if c in LIGHT else pytest.param(*c, marks=pytest.mark.full) for c in CASES]
)
def test_ending_the_eval_ends_every_process_of_its_runs(suite, tmp_path, autodev, way, sandbox):
    if sandbox == "bwrap" and not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    tasks_file, _ = suite
    tasks = subset(
        tasks_file, ["wordcount-spaces", "roman-parse"], tasks_file.parent / f"i-{tmp_path.name}.jsonl"
    )
    marker = f"{way}-{sandbox}-{secrets.token_hex(6)}"
    team = sleeping_team(tmp_path / "teams", marker)
    (tmp_path / "config.toml").write_text(f'sandbox = "{sandbox}"\n')
    out = tmp_path / "out"
    p = autodev.popen(
        tmp_path, "eval", str(tasks), "--team", str(team), "--out", str(out),
        "--config", str(tmp_path / "config.toml"), "--parallel", "2", *grade_flags(),
        env={"PYTHONFAULTHANDLER": "1"},  # SIGABRT then prints every thread's stack (see _wait_or_tell)
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while len(sleepers(marker)) < 2 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.2)
    assert len(sleepers(marker)) == 2, (p.poll(), p.stderr.read() if p.poll() is not None else "")
    daemons = [int(f.read_text().split()[0]) for f in out.glob("runs/*/*/daemon.pid")]
    for pid in daemons:
        autodev.adopt(pid)  # whatever happens, teardown ends them
    os.kill(p.pid, WAYS[way])
    _wait_or_tell(p, 120)
    if way == "ctrl-c":
        assert p.returncode == 130, p.stdout.read() + p.stderr.read()
        assert "interrupted: 2 run(s) in flight ended" in p.stdout.read()
    deadline = time.monotonic() + 30
    while (sleepers(marker) or any(running(d) for d in daemons)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = sleepers(marker)
    for pid in left:  # not to leave them to the machine
        os.kill(pid, signal.SIGKILL)
    assert left == [], f"the participants' `sleep 240` outlived the eval ({way}, sandbox {sandbox})"
    assert not [d for d in daemons if running(d)], "a run's daemon outlived the eval"
