"""The sandbox sees only what it needs (issue 29, finding 10 and Done-means 3): the repository,
the system's folders, a private /tmp and home, and the paths config `sandboxRead` adds. A tasks
file, an eval's output, AUTODEV_HOME and other runs that live anywhere else are not there, with
a real bubblewrap and the real command runner."""

from __future__ import annotations

import os
import secrets as pysecrets
import shutil
import sys
from pathlib import Path

import pytest

from autodev.config import RunConfig
from autodev.guard import mounts, sandbox
from autodev.harness.tools import Workspace
from autodev.store.paths import RunPaths, autodev_home

BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")
HIDDEN_TASK = "def test_hidden(): assert solve() == 42  # the grader's secret test"


@pytest.fixture
def outside():
    """A folder outside /tmp and $HOME, as /srv/evals would be (removed afterwards)."""
    for top in ("/srv", "/mnt", "/var/tmp"):
        if os.access(top, os.W_OK):
            d = Path(top) / f"autodev-test-{pysecrets.token_hex(4)}"
            d.mkdir()
            try:
                yield d
            finally:
                shutil.rmtree(d, ignore_errors=True)
            return
    pytest.skip("no writable folder outside /tmp and $HOME here")


def room(repo: Path, **kw) -> sandbox.Room:
    return BOX.room(repo, hide=sandbox.hidden(RunPaths(repo).run_dir), **kw)


def run(repo: Path, command: str, **kw) -> str:
    ws = Workspace(repo, write=True, command_timeout=30, room=room(repo, **kw))
    return ws.call("run_command", {"command": command})


@needs_bwrap
def test_a_folder_outside_tmp_and_home_is_not_in_the_sandbox(repo, outside):
    (outside / "tasks.jsonl").write_text(HIDDEN_TASK + "\n")
    out = run(repo, f"cat {outside}/tasks.jsonl; ls {outside.parent}; echo end")
    assert "the grader's secret test" not in out, out
    assert f"cat: {outside}/tasks.jsonl: No such file or directory" in out
    assert f"ls: cannot access '{outside.parent}': No such file or directory" in out


@needs_bwrap
def test_eval_shaped_tasks_and_out_outside_tmp_and_home_are_not_readable(repo, outside):
    """An eval with its tasks file and --out under /srv: a team's command in the room its
    clone gets sees neither the hidden tests nor the results or other teams' runs."""
    tasks, out_dir = outside / "tasks.jsonl", outside / "out"
    tasks.write_text('{"id": "t1", "test_patch": "' + HIDDEN_TASK + '"}\n')
    (out_dir / "runs" / "other-team").mkdir(parents=True)
    (out_dir / "results.jsonl").write_text('{"team": "a", "resolved": 1}\n')
    (out_dir / "runs" / "other-team" / "thread.jsonl").write_text('{"text": "their plan"}\n')
    clone = out_dir / "clones" / "t1"
    clone.mkdir(parents=True)
    shutil.copytree(repo, clone, dirs_exist_ok=True)
    got = run(
        clone,
        f"cat {tasks} {out_dir}/results.jsonl {out_dir}/runs/other-team/thread.jsonl; "
        f"echo LISTING; ls {out_dir} {out_dir}/clones; echo end",
    )
    assert "secret test" not in got and '"resolved"' not in got and "their plan" not in got, got
    for f in (tasks, out_dir / "results.jsonl", out_dir / "runs/other-team/thread.jsonl"):
        assert f"cat: {f}: No such file or directory" in got
    # the clone is there; of its parents only the way to it: no results file, no other runs
    listing = got.split("LISTING\n", 1)[1].split("end", 1)[0]
    assert listing.split() == [f"{out_dir}:", "clones", f"{out_dir}/clones:", "t1"], listing


@needs_bwrap
def test_autodev_home_other_runs_and_home_are_not_visible(repo, outside, monkeypatch):
    monkeypatch.setenv("AUTODEV_HOME", str(outside / "autodev-home"))
    home = autodev_home()
    other = home / "runs" / "someone-else"
    other.mkdir(parents=True)
    (other / "thread.jsonl").write_text('{"text": "another run"}\n')
    (Path(mounts.private_home()) / ".autodev-view-probe").mkdir(exist_ok=True)
    try:
        out = run(
            repo, f"cat {other}/thread.jsonl; ls -A {home}; echo HOME=$HOME; ls -A ~; echo AH=$AUTODEV_HOME"
        )
    finally:
        (Path(mounts.private_home()) / ".autodev-view-probe").rmdir()
    assert "another run" not in out, out
    assert f"ls: cannot access '{home}': No such file or directory" in out
    assert f"HOME={mounts.private_home()}\nAH=\n" in out, out  # an empty home; AUTODEV_HOME unset


@needs_bwrap
def test_other_users_and_system_private_folders_are_not_there(repo):
    out = run(repo, "for d in /home /root /srv /mnt /media /var/lib /sys/kernel; do ls -A $d; done; echo end")
    for d in ("/srv", "/mnt", "/media", "/var/lib", "/sys/kernel"):
        assert f"cannot access '{d}'" in out, out


@needs_bwrap
def test_the_repository_and_the_system_folders_work(repo):
    out = run(
        repo,
        "ls /usr/bin/env && /bin/sh -c 'echo via-bin-sh' && python3 -c 'print(6*7)' && "
        "echo x > made.txt && git add made.txt && git commit -qm made && git log --oneline -1 && "
        "echo y > /tmp/scratch && cat /tmp/scratch && touch /usr/planted /etc/planted /newtop; echo end",
    )
    assert "via-bin-sh" in out and "42" in out and "made" in out and "y\n" in out, out
    assert (repo / "made.txt").exists() and not Path("/usr/planted").exists()
    assert out.count("Read-only file system") == 3, out  # /usr, /etc and the root itself
    for path in ("/bin", "/lib", "/sbin", "/lib64"):
        if os.path.islink(path):  # merged /usr: the same link inside
            assert mounts.system_mounts()[mounts.system_mounts().index(path) - 2] == "--symlink"


@needs_bwrap
def test_sandbox_read_paths_are_visible_read_only(repo, outside):
    data = outside / "datasets"
    data.mkdir()
    (data / "train.csv").write_text("a,b\n1,2\n")
    cfg = RunConfig.model_validate({"sandboxRead": [str(data)]})
    out = run(repo, f"cat {data}/train.csv; echo z > {data}/planted; echo end", expose=cfg.sandbox_read)
    assert "1,2" in out and "Read-only file system" in out, out
    assert not (data / "planted").exists()
    # without it, the same folder is not there
    assert "1,2" not in run(repo, f"cat {data}/train.csv; echo end")


@needs_bwrap
def test_autodev_own_python_is_there_only_when_a_caller_exposes_it(repo):
    """A Python outside the system folders (pyenv, pipx, a virtualenv) is not in the room; a
    caller that runs autodev's own code there exposes `own_python()`."""
    probe = f"{sys.executable} -c 'import autodev; print(\"autodev-imported\")'"
    assert "autodev-imported" in run(repo, probe, expose=sandbox.own_python())
    if not any(sys.base_prefix.startswith(p) for p in mounts.SYSTEM):
        assert "autodev-imported" not in run(repo, probe)


def test_sandbox_read_takes_full_paths_or_home_paths_only():
    from pydantic import ValidationError

    assert RunConfig.model_validate({"sandboxRead": ["~/.pyenv", "/srv/data"]}).sandbox_read
    with pytest.raises(ValidationError, match="neither absolute nor under ~"):
        RunConfig.model_validate({"sandboxRead": ["data"]})
