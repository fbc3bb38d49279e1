"""One recorded run per session (a builder that went wrong: tests/timeline/runs.py), copied for
each test that changes it: running it costs seconds, copying it milliseconds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from autodev.store.paths import RunPaths
from tests.conftest import GIT_ENV, Runner, git, write_team
from tests.timeline.runs import SCRIPT, TEAM


@pytest.fixture(scope="session")
def recorded_run(tmp_path_factory) -> tuple[Path, Path]:
    """(repository, run folder) of the run up to the reviewer's question after the broken b.txt."""
    base = tmp_path_factory.mktemp("recorded")
    repo, home = base / "repo", base / "home"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "autodev tests")
    git(repo, "config", "user.email", "tests@autodev.invalid")
    (repo / "README.md").write_text("# test repo\n")
    (repo / ".git" / "info" / "exclude").write_text(".autodev/\n__pycache__/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "start")
    write_team(repo, TEAM, SCRIPT)
    runner = Runner()
    try:
        guard = str(Path(__file__).parent.parent / "guard")  # no connection beyond loopback
        env = {"AUTODEV_HOME": str(home), "PYTHONPATH": guard, **GIT_ENV}
        r = runner(repo, "start", "--foreground", "--until-idle", "add a.txt and b.txt", env=env)
    finally:
        runner.cleanup()
    assert r.returncode == 3, r.stdout + r.stderr
    old = os.environ.get("AUTODEV_HOME")
    os.environ["AUTODEV_HOME"] = str(home)
    try:
        run_dir = RunPaths(repo).run_dir
    finally:
        if old is None:
            os.environ.pop("AUTODEV_HOME")
        else:
            os.environ["AUTODEV_HOME"] = old
    return repo, run_dir


def copy_run(recorded: tuple[Path, Path], to: Path) -> Path:
    """The recorded repository at `to`, its run folder under this test's AUTODEV_HOME."""
    repo, run_dir = recorded
    shutil.copytree(repo, to, symlinks=True)
    dst = RunPaths(to).run_dir
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(run_dir, dst, ignore=shutil.ignore_patterns("daemon.lock", "*.sock"))
    return to


@pytest.fixture(scope="session")
def scenario(tmp_path_factory) -> tuple[Path, Path, Path]:
    """(repository, AUTODEV_HOME, run folder) of the run of tests/timeline/scenarios.py: a team
    edit, `.autodev/` committed, a notice answered while a gate is open, a nanosecond clock."""
    from tests.timeline import scenarios

    return scenarios.record(tmp_path_factory.mktemp("scenario"))


@pytest.fixture(scope="session")
def scenario_fork(scenario, tmp_path_factory) -> tuple[Path, Path, Path]:
    """The same run forked at post 3 and gone on to `complete` by itself."""
    from tests.timeline import scenarios

    return scenarios.record_fork(scenario, tmp_path_factory.mktemp("scenario-fork"))
