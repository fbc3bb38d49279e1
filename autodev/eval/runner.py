"""One task × team, whole: the clone, the setup, the team's run through the same daemon and harness
as `autodev start` (its own AUTODEV_HOME in the run's folder), the patch it left, the grade.

`run_job` is what every executor calls (in a thread here, in a Ray worker there); it returns the
result line and the patch, and raises nothing for what a task or a run can do wrong: that is the
result's `error`."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from autodev.errors import AutodevError
from autodev.eval.outcome import Outcome, read_outcome
from autodev.eval.rows import EvalResult, JobOutcome
from autodev.eval.tasks import Task
from autodev.eval.teams import RunSettings, TeamSpec
from autodev.eval.workspace import (
    TaskShell,
    WorkspaceError,
    bad_patch_path,
    clone,
    grade,
    model_patch,
    shell_for,
)
from autodev.host import spawn
from autodev.host.hostproc import PYTHON_SAFE
from autodev.host.procgroup import end_all, end_trees, kill_group
from autodev.rules.names import RUN_INDEX


@dataclass(frozen=True)
class Job:
    task: Task
    team: TeamSpec
    settings: RunSettings
    folder: Path  # DIR/runs/<task>/<team>[@<run>]: the clone (repo/), AUTODEV_HOME (home/) and the logs
    run: int = 0  # with `--best-of N`: this run's number, 1 to N (AUTODEV_RUN_INDEX); else 0

    @property
    def key(self) -> tuple[str, ...]:
        return (self.task.id, self.team.name, *((str(self.run),) if self.run else ()))

    def digest(self) -> str:
        return f"{self.task.digest()}:{self.team.digest()}:{self.settings.digest()}"

    def shell(self, repo: Path) -> TaskShell:
        """Where this task's setup and tests run: the sandbox, which sees neither the user's home,
        autodev's, nor the eval's --out (other runs, their logs, the results), and gets none of
        the team's keys. Its .autodev/ must be installed (the keys' names are read from it)."""
        from autodev.config import load_team
        from autodev.store.paths import autodev_home

        out = self.folder.parents[2]  # DIR/runs/<task>/<team>[@<run>]
        keys = load_team(repo / ".autodev" / "team.toml").key_names()
        return shell_for(self.settings.grade_unsandboxed, (Path.home(), autodev_home(), out), keys)


def run_job(job: Job) -> JobOutcome:
    """Run and grade one task × team: its results.jsonl line and its patch (model_patch)."""
    folder = job.folder
    reset_folder(folder)
    folder.mkdir(parents=True)
    repo, home = folder / "repo", folder / "home"
    result = blank_result(job)
    try:
        base, shell = _prepare(job, repo)
    except (WorkspaceError, AutodevError) as e:
        result.error = str(e)
        return JobOutcome(result, "")
    if ENDING.is_set():
        result.error = "the eval was interrupted"
        return JobOutcome(result, "")
    started = time.monotonic()
    end = run_team(job, repo, home)
    if ENDING.is_set():  # the eval is ending: this run is not recorded, so it is not graded either
        result.error = "the eval was interrupted"
        return JobOutcome(result, "")
    result.wall_s = round(time.monotonic() - started, 3)
    outcome = read_outcome(home)
    outcome.fill(result)
    if end.reason:  # the eval cut it (wall time): that is why the run ended, whatever it says
        result.reason, result.reason_code = end.reason, "wall"
    if outcome.state is None:
        result.error = f"the run did not start (exit {end.code}; see {folder / 'run.log'}): {end.tail}"
        return JobOutcome(result, "")
    return _graded(job, repo, base, shell, result)


def _prepare(job: Job, repo: Path) -> tuple[str, TaskShell]:
    """The clone at the task's base commit with the team and settings installed, and the task's
    setup run in its sandbox; the base commit and that sandbox."""
    if why := bad_patch_path(job.task.test_patch):
        raise WorkspaceError(why)
    base = clone(job.task.repo, job.task.base_commit, repo)
    job.team.install(repo / ".autodev")
    (repo / ".autodev" / "config.toml").write_text(job.settings.config_toml())
    shell = job.shell(repo)
    if job.task.setup.strip():
        log = job.folder / "setup.log"
        code = shell.run(
            job.task.setup, repo, log, job.settings.setup_timeout_s, network=job.task.setup_network
        )
        if code != 0:
            raise WorkspaceError(f"the setup command exited {code} (see {log})")
    return base, shell


def _graded(job: Job, repo: Path, base: str, shell: TaskShell, result: EvalResult) -> JobOutcome:
    """What the run left, as a patch, graded by the task's hidden tests."""
    patch = ""
    try:
        patch = model_patch(repo, base)
        result.changed_lines = changed_lines(patch)
        g = grade(
            repo,
            base,
            job.task.test_patch,
            job.task.test_command,
            job.folder / "grade.log",
            job.settings.test_timeout_s,
            shell,
        )
    except (WorkspaceError, AutodevError) as e:
        result.error = f"grading failed: {e}"
        return JobOutcome(result, patch)
    result.resolved, result.test_exit, result.error = g.resolved, g.test_exit, g.error
    return JobOutcome(result, patch)


def blank_result(job: Job) -> EvalResult:
    """A results.jsonl line before anything ran (SPEC §18's keys first, then ours)."""
    r = EvalResult(
        task=job.task.id,
        team=job.team.name,
        resolved=False,
        state=None,
        reason=None,
        audit="none",
        turns=0,
        tokens=0,
        cost_usd=0.0,
        wall_s=0.0,
        participants={},
        error=None,
        reason_code=None,
        audits=[],
        test_exit=None,
        digest=job.digest(),
        folder=str(job.folder),
    )
    if job.run:
        r.run = job.run
    return r


def changed_lines(patch: str) -> int:
    """Lines added plus removed by a unified diff (`pick`'s fourth rule)."""
    return sum(1 for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))


# The daemons of the runs in flight in this process (their process groups): an interrupted eval
# (Ctrl-C, kill; a Ray task cancelled) ends them rather than leaving them to run on unrecorded.
LIVE: set[int] = set()
_LIVE_LOCK = threading.Lock()
ENDING = threading.Event()  # set by kill_live: the runs in flight end without a grade
# How long a run's daemon has, after SIGTERM, to end its turn's command and close its files.
END_GRACE_S = 10.0


def kill_live(grace: float = END_GRACE_S) -> int:
    """End every run in flight in this process, whole: its daemon (SIGTERM: it kills its turn's
    command, in bubblewrap or not, and closes; SIGKILL after `grace`), every process below it,
    and the setup or test command a run had going. How many daemons there were."""
    with _LIVE_LOCK:
        ENDING.set()
        groups = list(LIVE)
    end_trees(groups, grace)
    end_all()  # a task's setup or tests (sandboxed, their own group) in flight
    return len(groups)


@dataclass
class RunEnd:
    code: int | None
    reason: str | None  # set when the eval itself ended the run (the wall cap)
    tail: str = ""


def run_team(job: Job, repo: Path, home: Path) -> RunEnd:
    """`autodev start --foreground --until-idle OBJECTIVE` in the clone, with its own AUTODEV_HOME:
    exactly a user's run. Past the wall cap: `autodev stop`, then the process group is killed.
    Both with `-P` and a PYTHONPATH without relative entries (the door, host/spawn.py): the clone
    is the working directory, and an `autodev/` package in it must not be what `-m autodev` runs
    (issue 29)."""
    env = {**os.environ, "AUTODEV_HOME": str(home)}
    if job.run:
        env[RUN_INDEX] = str(job.run)  # a scripted team's steps may differ by run (docs/best-of.md)
    log = job.folder / "run.log"
    cmd = [
        sys.executable,
        *PYTHON_SAFE,
        "-m",
        "autodev",
        "start",
        "--foreground",
        "--until-idle",
        job.task.problem_statement,
    ]
    wall = job.settings.caps.max_wall_min
    with open(log, "ab") as out:
        # die_with_parent: should this process die unasked (kill -9, a Ray worker killed), the run
        # ends too (the daemon's SIGTERM ends its turn's command).
        p = spawn.popen(
            cmd, "autodev", cwd=repo, env=env, stdin=spawn.DEVNULL, stdout=out, stderr=spawn.STDOUT,
            start_new_session=True, die_with_parent=signal.SIGTERM,
        )  # fmt: skip
        # With the node's name: a resume on another node (Ray) must not kill its own pid of that number.
        (job.folder / "daemon.pid").write_text(f"{p.pid} {socket.gethostname()}\n")
        with _LIVE_LOCK:  # kill_live sets ENDING before it looks: this daemon is its, or ends here
            LIVE.add(p.pid)
            ending = ENDING.is_set()
        reason = None
        try:
            if not ending:
                _wait(p, wall * 60 if wall else None)
        except spawn.TimeoutExpired:
            reason = _stop_at_wall(job, p, repo, env)
        finally:
            # Ended whole, however this ends (a Ray task cancelled raises KeyboardInterrupt here);
            # once it has ended by itself, what it left in its group.
            if p.poll() is None:
                end_trees([p.pid], END_GRACE_S)
            kill_group(p.pid)
            with _LIVE_LOCK:
                LIVE.discard(p.pid)
    tail = log.read_text(errors="replace")[-600:].strip() if log.exists() else ""
    return RunEnd(p.returncode, reason, tail)


def _stop_at_wall(job: Job, p: spawn.Popen[bytes], repo: Path, env: dict[str, str]) -> str:
    """Past the wall cap: `autodev stop`, then, after the stop's grace, the daemon killed whole;
    the reason the run ended."""
    wall = job.settings.caps.max_wall_min or 0
    spawn.run(
        [sys.executable, *PYTHON_SAFE, "-m", "autodev", "stop"],
        "autodev",
        cwd=repo,
        env=env,
        capture_output=True,
        timeout=60,
    )
    try:
        p.wait(timeout=job.settings.stop_grace_s)
    except spawn.TimeoutExpired:
        end_trees([p.pid], END_GRACE_S)
        p.wait()
        return f"the eval's wall-time cap ({wall:g} min) was reached: killed"
    return f"the eval's wall-time cap ({wall:g} min) was reached: stopped"


def _wait(p: spawn.Popen[bytes], timeout: float | None) -> None:
    """p.wait(timeout) in steps of a second: a Ray task cancelled gets KeyboardInterrupt only
    between Python steps, never inside a wait with no timeout (os.waitpid), and so would never
    end its run."""
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        step = 1.0 if end is None else min(1.0, end - time.monotonic())
        if step <= 0:
            raise spawn.TimeoutExpired(p.args, timeout or 0)
        try:
            p.wait(timeout=step)
            return
        except spawn.TimeoutExpired:
            continue


def reset_folder(folder: Path) -> None:
    """An interrupted run's folder goes, after its daemon (still running if the eval was killed)."""
    pid_file = folder / "daemon.pid"
    if pid_file.exists() and ran_here(pid_file):
        from autodev.store.lock import DaemonLock

        for lock in (folder / "home").glob("*/daemon.lock"):
            holder = DaemonLock.holder(lock)
            if holder and holder > 0:
                end_trees([holder], END_GRACE_S)  # the daemon, its turn's command and all below
                _wait_gone(holder)
    if folder.exists():
        shutil.rmtree(folder)


def ran_here(pid_file: Path) -> bool:
    """Whether daemon.pid names this node (a file without a node, an older autodev's, is taken as
    this one's). A daemon of another node is that node's to end: its pid here is someone else."""
    parts = pid_file.read_text().split()
    return len(parts) < 2 or parts[1] == socket.gethostname()


def _wait_gone(pid: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


__all__ = ["Job", "Outcome", "run_job"]
