"""Opening a run, once the daemon holds the lock: named steps, in the order they must run.

`open_loop` first ends what a daemon killed with -9 left running (`end_leftovers`), then
prepares the run folder (the fault reserve, the accepted prompts, a lost state.json
rebuilt from the logs), opens the logs (`open_logs`), starts the services, builds the `Loop`
(assignment only), then starts the session (`start_session`: state.json's restart, the
`daemon_started` event, the runs index), telemetry (`start_telemetry`), and finally recovers
what a crash left (`Loop.recover`). Everything opened is registered on the daemon's `closing`
stack, in the order it must be closed.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from autodev import telemetry
from autodev.daemon import recovery
from autodev.daemon.boundary import Feed
from autodev.daemon.handles import Out, Run, Settings, accepted_prompts
from autodev.daemon.loop import TELEMETRY_CLOSE_S, Loop
from autodev.daemon.services import Services, hooks_for, save_team
from autodev.errors import AutodevError
from autodev.guard.redact import Redactor
from autodev.harness import credit
from autodev.host import gitlocks, procgroup, spawn
from autodev.records import check_harness
from autodev.records.events import DaemonStartedEvent, LeftoverKilledEvent, WarningEvent
from autodev.records.state import RunState
from autodev.store import faults, runs, userfiles
from autodev.store.events import Events
from autodev.store.journal import Journal, JsonObject
from autodev.store.paths import RunPaths, git_head
from autodev.store.state import StateFile
from autodev.store.thread import Thread

if TYPE_CHECKING:
    from autodev.harness.model import Model

IndexRecord = Callable[[str, int, Path, Path, RunState], JsonObject]  # runs.start_record, end_record


def open_loop(
    paths: RunPaths,
    settings: Settings,
    redact: Redactor,
    state: StateFile,
    closing: ExitStack,
    *,
    until_idle: bool = False,
    out: Out | None = None,
    model: Model | None = None,
    feed: Feed | None = None,
) -> Loop:
    """The open run, recovered and ready to loop."""
    left = end_leftovers(paths, closing)
    folder = faults.FolderWatch(paths.run_dir, paths.lock)  # deleted under us: faulted
    faults.keep_reserve(paths.run_dir)
    userfiles.snapshot_prompts(paths.prompt_overrides, accepted_prompts(paths))
    rebuilt = recovery.state_from_logs(paths, state)
    run = open_logs(paths, state, redact, closing, out)
    for pgid, program in left:
        run.events.emit(LeftoverKilledEvent(pgid=pgid, program=program))
    if rebuilt:
        run.events.emit(
            WarningEvent(message="state.json was missing: the run's state was rebuilt from its logs")
        )
    services = Services(paths, settings, run.events, closing)
    services.model = model
    hooks, notifier = hooks_for(paths, settings, run.run_id, run.events.emit)
    loop = Loop(run, settings, services, folder, closing, hooks, notifier, until_idle=until_idle, feed=feed)
    st = start_session(loop)
    closing.callback(lambda: loop.notifier.drain())  # `complete` is still delivered as the daemon exits
    start_telemetry(loop, st)
    loop.recover()
    return loop


def end_leftovers(paths: RunPaths, closing: ExitStack) -> list[tuple[int, str]]:
    """First of all: the process groups a daemon killed with -9 left running, ended (their
    leaders died with it, not what they started), then this daemon's own groups kept in the same
    ledger until it closes. Returns (group, program) of each ended."""
    left = procgroup.reap_ledger(paths.groups)
    spawn.keep_ledger(paths.groups)
    closing.callback(spawn.keep_ledger, None)  # last: a group still running at exit stays listed
    return left


def open_logs(
    paths: RunPaths, state: StateFile, redact: Redactor, closing: ExitStack, out: Out | None
) -> Run:
    """The thread, events and harness log, open for appending (closed by `closing`)."""
    run_id = state.read().run_id or secrets.token_hex(4)
    thread = Thread(paths.thread, redact=redact)
    closing.callback(thread.close)
    events = Events(paths.events, run_id, redact, group=True)
    closing.callback(events.close)
    hlog = Journal(paths.harness_log, redact=redact, schema=check_harness)
    closing.callback(hlog.close)
    # Group commit (issue 33): events and the harness log's records no effect waits for are
    # written at once and fsynced together before each state.json write (and on idle, on close).
    state.sync_first(events.sync, hlog.sync)
    return Run(paths, run_id, state, thread, events, hlog, redact, out)


def start_session(loop: Loop) -> RunState:
    """A new session of the run: git locks a crash left cleared, state.json restarted
    (`recovery.restarted`), `daemon_started` and the warnings, the run in the runs index."""
    paths, settings, events = loop.paths, loop.settings, loop.events
    stale = gitlocks.clear_stale(paths.repo)  # left by a git process the crash killed mid-write
    head = git_head(paths.repo)
    branch = credit.current_branch(paths.repo)
    warn: list[str] = []
    st = loop.state.update(
        lambda s: recovery.restarted(
            s,
            run_id=loop.run_id,
            head=head,
            pid=os.getpid(),
            stamp=settings.stamp,
            warn=warn,
            branch=branch,
        )
    )
    loop.session = st.sessions
    team = save_team(paths, events)
    events.emit(DaemonStartedEvent(pid=os.getpid(), sandbox=settings.sandbox.describe(), team=team))
    for w in [settings.sandbox.warning, gitlocks.report(stale) if stale else None, *dict.fromkeys(warn)]:
        if w:
            events.emit(WarningEvent(message=w))
    index(loop, runs.start_record)
    return st


def start_telemetry(loop: Loop, st: RunState) -> None:
    """The exporter, when [telemetry] asks for one, caught up with the turns before `st`'s."""
    events = loop.events
    loop.telemetry = telemetry.start(
        loop.paths,
        loop.settings.config.telemetry,
        loop.run_id,
        lambda m: events.emit(WarningEvent(message=m)),
        lambda: loop.redact.values,
    )
    exporter = loop.telemetry
    if exporter is not None:
        loop.closing.callback(lambda: exporter.close(TELEMETRY_CLOSE_S))
        exporter.catch_up(st.turn + 1)
        exporter.watch(loop.run.hlog, loop.events.journal)  # a finished turn's lines, as written


def index(loop: Loop, make: IndexRecord) -> None:
    """One line in $AUTODEV_HOME/index.jsonl; the run goes on without it if it fails."""
    try:
        runs.append(make(loop.run_id, loop.session, loop.paths.repo, loop.paths.run_dir, loop.state.read()))
    except (OSError, AutodevError) as e:
        msg = f"could not append to the runs index: {e}"
        print(f"autodev daemon: {msg}", file=sys.stderr)
        try:
            loop.events.emit(WarningEvent(message=msg))
        except (OSError, AutodevError):
            pass
