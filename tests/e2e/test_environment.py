"""Faults of the machine, through the real CLI and daemon: a read-only or missing AUTODEV_HOME, a
full disk before a run and one that fills during it (a real tmpfs of a few hundred KB, mounted in
a user and mount namespace of the test's own), and a run folder deleted under a running daemon.
Before a run: one line naming the path and the fix, exit 2, no traceback. During one: `faulted`
with that line as the reason."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_dir, write_team
from tests.e2e.helpers import (
    BUILDER,
    call,
    done_accepted,
    post,
    start_detached,
    status_json,
    step,
    wait_for,
)


def _can_mount() -> bool:
    if not shutil.which("unshare"):
        return False
    r = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True
    )
    return r.returncode == 0


needs_mount = pytest.mark.skipif(not _can_mount(), reason="no user+mount namespaces to mount a small tmpfs")
AUTODEV = f"{shlex.quote(sys.executable)} -m autodev"


def confined(repo: Path, home: Path, script: str, *, options: str, timeout: float = 120) -> str:
    """Run `script` (sh) in `repo` with `home` (AUTODEV_HOME) a fresh tmpfs mounted with `options`."""
    home.mkdir(exist_ok=True)
    setup = f"mount -t tmpfs -o {options} tmpfs {shlex.quote(str(home))}"
    r = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"{setup} || exit 99\n{script}"],
        cwd=repo,
        env={**os.environ, "AUTODEV_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )
    assert r.returncode != 99, r.stderr
    return r.stdout + r.stderr


def one_fault_line(out: str, name: str) -> str:
    """The `autodev: ...` line and its fix of command `name`; no traceback anywhere."""
    assert "Traceback" not in out, out
    lines = out.splitlines()
    i = lines.index(f"== {name}")
    body = lines[i + 1 : i + 4]
    assert body[0].startswith("autodev: ") and body[1].startswith("  fix: "), out
    assert body[2] == f"exit {2}", out
    return "\n".join(body[:2])


def commands(*names: str) -> str:
    runs = {
        "send": f"{AUTODEV} send hello",
        "start": f"{AUTODEV} start --foreground --until-idle go",
        "detached": f"{AUTODEV} start go",
    }
    return "\n".join(f'echo "== {n}"; {runs[n]} 2>&1; echo "exit $?"' for n in names)


@needs_mount
def test_a_read_only_or_missing_home_is_one_line_with_the_fix_before_a_run(repo, tmp_path):
    write_team(repo, BUILDER, done_accepted("builder"))
    home = tmp_path / "home"
    out = confined(
        repo,
        home,
        f"{AUTODEV} doctor; echo doctor=$?\n" + commands("send", "start", "detached"),
        options="ro,size=1m",
    )
    assert "doctor=2" in out, out
    assert "FAIL  run folder" in out and f"cannot write {home}" in out, out
    for name in ("send", "start", "detached"):
        line = one_fault_line(out, name)
        assert str(home) in line and "Read-only file system" in line, line
        assert "set AUTODEV_HOME to a writable folder" in line, line
    # Missing, under a read-only folder: named the same way.
    out = confined(
        repo,
        home,
        f"export AUTODEV_HOME={home}/not/there\n" + commands("send", "start"),
        options="ro,size=1m",
    )
    for name in ("send", "start"):
        line = one_fault_line(out, name)
        assert f"{home}/not" in line and "AUTODEV_HOME" in line, line


@needs_mount
def test_a_full_disk_is_one_line_with_the_fix_before_a_run(repo, tmp_path):
    write_team(repo, BUILDER, done_accepted("builder"))
    home = tmp_path / "home"
    fill = f"head -c 300k /dev/zero > {home}/filler 2>/dev/null\n"
    out = confined(repo, home, fill + commands("send", "start", "detached"), options="size=256k")
    for name in ("send", "start", "detached"):
        line = one_fault_line(out, name)
        assert "no space left on the disk holding" in line and str(home) in line, line
        assert "free some space there, or set AUTODEV_HOME" in line, line


@pytest.mark.full
@needs_mount
def test_a_disk_that_fills_during_the_run_faults_it_with_the_reason(repo, tmp_path):
    home = tmp_path / "home"
    filler = home / "filler"
    script = (
        step("builder", call("run_command", command=f"head -c 20M /dev/zero > {filler}; echo filled"))
        + post("builder", "say", "the disk is full now")
        + done_accepted("builder")
    )
    write_team(repo, BUILDER, script, 'sandbox = "off"\n')
    status = tmp_path / "status.json"
    out = confined(
        repo,
        home,
        f"{AUTODEV} start --foreground --until-idle go; echo start=$?\n{AUTODEV} status --json > {status}\n"
        f"{AUTODEV} status; echo status=$?",
        options="size=3m",
    )
    assert "start=1" in out and "status=0" in out, out
    assert "Traceback" not in out, out
    st = json.loads(status.read_text())
    assert st["state"] == "faulted", st
    text = st["reason"]["text"]
    assert "no space left on the disk holding" in text and str(home) in text and "fix:" in text, text
    assert "faulted" in out and "no daemon running" in out


@pytest.mark.full
def test_a_run_folder_deleted_under_a_running_daemon_faults_the_run(repo, autodev, inproc):
    script = (
        step("builder", call("run_command", command="sleep 2; echo slept"))
        + post("builder", "say", "awake")
        + done_accepted("builder")
    )
    write_team(repo, BUILDER, script, 'sandbox = "off"\n')
    pid = start_detached(autodev, repo, "go")
    folder = run_dir(repo)
    wait_for("the command to start", lambda: "sleep 2" in (folder / "harness.jsonl").read_text(), 60)
    shutil.rmtree(folder)
    wait_for("the daemon to end", lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 60)
    st = status_json(inproc, repo)
    assert st["state"] == "faulted", st
    assert f"the run folder {folder} was deleted or replaced while the daemon ran" in st["reason"]["text"]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.full
def test_status_never_says_running_for_a_dead_daemon(repo, autodev, inproc):
    script = step("builder", call("run_command", command="sleep 30")) + done_accepted("builder")
    write_team(repo, BUILDER, script, 'sandbox = "off"\n')
    pid = start_detached(autodev, repo, "go")
    wait_for("the command to start", lambda: "sleep 30" in (run_dir(repo) / "harness.jsonl").read_text(), 60)
    os.killpg(pid, 9)
    wait_for("the daemon to die", lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 30)
    time.sleep(0.2)
    st = status_json(inproc, repo)
    assert st["state"] == "stopped" and st["daemon_pid"] is None, st
    assert "the daemon is gone (the run was running" in st["reason"]["text"]
    assert st["continue"] == "autodev start"
