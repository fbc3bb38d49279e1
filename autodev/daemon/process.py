"""The daemon process: its lock, the settings it starts with, the `Loop` it opens, and what it
leaves in state.json when it ends (stopped, or faulted when a log could not be written)."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from autodev.agents import projectfiles
from autodev.daemon import notify, opening
from autodev.daemon.boundary import Feed
from autodev.daemon.handles import Out, Settings
from autodev.daemon.loop import EXIT_FAILED, Loop
from autodev.errors import AutodevError, LogWriteError
from autodev.guard import keys
from autodev.guard.redact import Redactor
from autodev.harness.model import Model
from autodev.host import gitquarantine, hostgit, hostproc, procgroup, spawn
from autodev.rules.reasons import reason
from autodev.store import faults, inbox, runs
from autodev.store.lock import DaemonLock
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile


class Daemon:
    """One daemon per repository: `run()` opens the run under the lock, loops, and closes."""

    def __init__(
        self,
        repo: Path,
        *,
        until_idle: bool = False,
        out: Out | None = None,
        staged: Path | None = None,
        model: Model | None = None,
        feed: Feed | None = None,
    ):
        self.paths = RunPaths(repo)
        self.staged = staged  # the objective `start` staged: queued once this daemon holds the lock
        self.until_idle = until_idle
        self.out = out  # optional callback(post) for printing as the thread grows
        self.model, self.feed = model, feed  # replay (autodev/timeline): recorded answers, recorded input
        self.settings = Settings.load(self.paths)
        self.redact = Redactor(keys.values(self.settings.secret_env))
        self.state = StateFile(self.paths.state, redact=self.redact)
        self.lock = DaemonLock(self.paths.lock)
        self.closing = ExitStack()  # what open() started, stopped in reverse order by close()

    def open(self) -> Loop:
        """Take the lock and open the run (recovering whatever a crash left)."""
        self.paths.ensure()
        self.lock.acquire()
        self.closing.callback(self.lock.release)
        if self.staged is not None:
            inbox.publish(self.staged)
        return opening.open_loop(
            self.paths,
            self.settings,
            self.redact,
            self.state,
            self.closing,
            until_idle=self.until_idle,
            out=self.out,
            model=self.model,
            feed=self.feed,
        )

    def close(self) -> None:
        self.closing.close()

    def run(self) -> int:
        with ended_whole():
            return self._run()

    def _run(self) -> int:
        # Before anything of the run: nothing imported from the repository from here on, no
        # process of the user reads this one's memory, and git runs only on the .git seen now.
        hostproc.harden(self.paths.repo)
        hostgit.pin_run(self.paths.repo)
        projectfiles.pin(self.paths.repo)
        gitquarantine.pin(self.paths.repo)
        try:
            loop = self.open()
        except (LogWriteError, faults.RunFolderLost, OSError) as e:
            why = machine_fault(e)
            if why is None:
                self.close()
                raise
            fault(self.state, why, paths=self.paths)
            mark_stopped(self.state)
            self.close()
            if isinstance(why, faults.EnvironmentFault):
                raise why from e  # before the run: exit 2 with the path and the fix
            print(f"autodev daemon: {why}", file=sys.stderr)
            return EXIT_FAILED
        except AutodevError:
            self.close()
            raise
        try:
            return loop.loop()
        except (LogWriteError, faults.RunFolderLost, OSError) as e:
            why = machine_fault(e)
            if why is None:
                raise
            fault(self.state, why, loop.notifier, str(self.paths.repo), loop.run_id, paths=self.paths)
            print(f"autodev daemon: {why}", file=sys.stderr)
            return EXIT_FAILED
        finally:
            mark_stopped(self.state)
            opening.index(loop, runs.end_record)
            self.close()


@contextmanager
def ended_whole() -> Generator[None, None, None]:
    """However the daemon ends, what it started ends with it. Its turn's command, an agent CLI and
    the audit's check each lead a process group of their own, which a signal to the daemon's
    group (an eval ending its run, a shell's kill) never reaches: on SIGTERM or SIGHUP they are
    killed at once and the daemon exits as for Ctrl-C (state.json records that it stopped, its
    files close; `start` continues the run, as after a crash), and on any way out they are killed."""
    main = threading.current_thread() is threading.main_thread()  # replay runs a daemon in a thread
    others = set(spawn.live_groups())  # the process's own, should a daemon run inside it (replay)

    def terminated(signum: int, _frame: object) -> None:
        procgroup.end_all(others)
        raise SystemExit(128 + signum)

    before = {sig: signal.signal(sig, terminated) for sig in (signal.SIGTERM, signal.SIGHUP)} if main else {}
    try:
        yield
    finally:
        procgroup.end_all(others)
        for sig, handler in before.items():
            signal.signal(sig, handler)


def machine_fault(e: Exception) -> AutodevError | None:
    """The fault to record for `e` (a log that could not be written, the run folder gone, the
    disk full or read-only), or None for an error that is not the machine's (re-raised)."""
    if isinstance(e, (LogWriteError, faults.RunFolderLost)):
        cause = e.__cause__
        if isinstance(cause, OSError) and (better := faults.explain(cause)) is not None:
            return better  # the path and the fix, not only "could not append"
        return e
    if isinstance(e, OSError):
        return faults.explain(e)
    return None


def fault(
    state: StateFile,
    e: Exception,
    notifier: notify.Notifier | None = None,
    repo: str = "",
    run_id: str = "",
    paths: RunPaths | None = None,
) -> None:
    """The run is faulted: the machine refused a write (a log, state.json), or the run folder
    went away. The notifier, when the run had one, tells the user."""
    # Nothing else is appended: the logs are the thing that failed. The reserve gives a full
    # disk room for state.json's reason.
    if paths is not None:
        faults.free_reserve(paths.run_dir)
    text = f"{e.message}; fix: {e.fix}" if isinstance(e, AutodevError) and e.fix else str(e)
    why = reason("fault", error=text)
    try:
        # A run folder deleted under us starts a fresh state.json: it still names the run.
        state.update(lambda s: s.changed(state="faulted", reason=why, run_id=s.run_id or run_id or None))
    except OSError as err:
        print(f"autodev daemon: could not record the fault in {state.path}: {err}", file=sys.stderr)
        return
    if notifier is not None:
        notifier.fire(notify.payload("faulted", why, repo, run_id))


def mark_stopped(state: StateFile) -> None:
    try:
        state.update(lambda s: s.changed(daemon="stopped", pid=None))
    except OSError as e:
        print(f"autodev daemon: could not record that it stopped: {e}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry of the detached daemon: python -m autodev.daemon REPO [STAGED_OBJECTIVE]"""
    argv = sys.argv[1:] if argv is None else argv
    repo = Path(argv[0]).resolve()
    hostproc.drop_repository_from_path(repo)
    paths = RunPaths(repo)
    paths.ensure()
    hostproc.leave(repo, paths.run_dir)  # `start` already starts it there; a hand-started one too
    keys.receive()  # `start` hands the keys over a pipe; they are never in our environment
    try:
        return Daemon(repo, staged=Path(argv[1]) if len(argv) > 1 else None).run()
    except AutodevError as e:
        print(f"autodev daemon: {e}", file=sys.stderr)
        return e.exit_code
