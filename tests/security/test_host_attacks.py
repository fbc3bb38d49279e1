"""Issue 20 through the real CLI and daemon: a participant's payload that would run on the host
leaves no mark there, and the daemon's memory is closed to other processes of the user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from autodev.guard import sandbox
from tests.conftest import thread_of, write_team
from tests.e2e.helpers import BUILDER, call, done_accepted, post, state_of, step, stop_daemon, wait_for

BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")


def evil_program(mark) -> str:
    """A shell line a participant runs: a program that would touch `mark` outside the repository."""
    return f"printf '#!/bin/sh\\ntouch {mark}\\ncat\\n' > evil.sh && chmod +x evil.sh"


@needs_bwrap
def test_attack1_a_commondir_planted_by_a_command_is_quarantined_and_runs_nothing(repo, autodev, tmp_path):
    mark = tmp_path / "MARK"
    plant = (
        f"{evil_program(mark)} && cp -a .git evilgit && printf '[core]\\n\\tfsmonitor = %s\\n' $PWD/evil.sh >> evilgit/config"
        " && echo $PWD/evilgit > .git/commondir && echo x > new.txt"
    )
    script = step("builder", call("run_command", command=plant)) + post(
        "builder", "work_done", "did it", "builder"
    )
    write_team(repo, BUILDER, script + done_accepted("builder"))
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    # moved to the run folder's quarantine right after the command (issue 29; the full story:
    # tests/security/test_git_content.py), so the run goes on and credit runs on the real .git
    assert not (repo / ".git" / "commondir").exists()
    assert any(".git/commondir" in p["text"] for p in thread_of(repo) if p["from"] == "system")
    assert state_of(repo)["state"] == "complete"
    assert not mark.exists()


def uncapped(argv: list[str]) -> list[str]:
    """`argv` as a process of the user without capabilities: root here would read any process's
    memory with CAP_SYS_PTRACE, and a capable target is closed to an incapable reader whatever
    its dumpable flag; a plain user's processes have none, so both sides drop them."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot drop capabilities")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--", *argv]


def _read_as_another_process(pid: int, what: str) -> subprocess.CompletedProcess:
    code = f"f = open('/proc/{pid}/{what}', 'rb'); f.seek(4096 if '{what}' == 'mem' else 0); f.read(64)"
    return subprocess.run(
        uncapped([sys.executable, "-I", "-c", code]), capture_output=True, text=True, timeout=60
    )


def test_attack4_and_memory_a_repository_module_is_never_imported_and_the_daemon_is_not_readable(
    repo, autodev, tmp_path
):
    mark = tmp_path / "MARK"
    payload = f"open({str(mark)!r}, 'w').write('imported from the repository')\n"
    script = (
        step(
            "builder",
            call("write_file", path="ctypes.py", content=payload),
            call("write_file", path="json.py", content=payload),
            call("search", pattern="imported"),
        )
        + post("builder", "say", "found it; over to you", "user")
        + done_accepted("builder")
    )
    write_team(repo, BUILDER, script)
    r = subprocess.run(
        uncapped([sys.executable, "-m", "autodev", "start", "go"]),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        start_new_session=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    pid = int(r.stdout.split("pid ")[1].split(")")[0])
    autodev.adopt(pid)
    wait_for("the handoff to the user", lambda: state_of(repo).get("state") == "awaiting_user", timeout=120)
    assert not mark.exists()
    # Started outside the repository, with no working directory or script folder on sys.path.
    assert not os.path.realpath(f"/proc/{pid}/cwd").startswith(str(repo.resolve()))
    assert "-P" in open(f"/proc/{pid}/cmdline").read().split("\0")
    # The control: a process of the same user and rights that is dumpable can be read.
    sleeper = subprocess.Popen(uncapped(["sleep", "30"]))
    try:
        wait_for("the control", lambda: _read_as_another_process(sleeper.pid, "environ").returncode == 0)
    finally:
        sleeper.kill()
        sleeper.wait()
    for what in ("mem", "environ"):
        r = _read_as_another_process(pid, what)
        assert r.returncode != 0 and "Permission denied" in r.stderr, (what, r.stderr)
    stop_daemon(autodev, repo)
