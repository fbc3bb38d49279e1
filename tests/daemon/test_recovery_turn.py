"""The scheduled turn's state.json write is not durable on its own (the group commit, issue 33):
when a power cut loses it, recovery takes the turn's number back from the harness log, so the
next turn never reuses it (its post id is provisioned from it)."""

from __future__ import annotations

import time
from pathlib import Path

from autodev.daemon import recovery
from autodev.daemon.handles import Run
from autodev.guard.redact import Redactor
from autodev.records import check_harness
from autodev.store.events import Events
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import Thread

RUN = "r1"


def open_run(repo: Path) -> Run:
    repo.mkdir(exist_ok=True)
    paths = RunPaths(repo)
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    redact = Redactor([])
    return Run(
        paths,
        RUN,
        StateFile(paths.state),
        Thread(paths.thread),
        Events(paths.events, RUN),
        Journal(paths.harness_log, schema=check_harness),
        redact,
    )


def started(run: Run, turn: int) -> None:
    run.hlog.append(
        {
            "type": "turn_started",
            "run": RUN,
            "turn": turn,
            "ts": time.time(),
            "participant": "solo",
            "head": None,
            "baseline": {"head": None, "dirty": {}},
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}],
        }
    )


def test_an_open_turn_whose_scheduling_write_was_lost_gets_its_number_back(tmp_path: Path) -> None:
    run = open_run(tmp_path / "repo")
    run.state.update(lambda s: s.but(state="running", turn=1, accounted_turn=1))
    started(run, 2)  # the turn began; state.json still says turn 1 (its write was lost)
    resume, applied = recovery.settle(run, ["solo"], lambda *a: True, lambda *a: True)
    assert resume is not None and resume.turn == 2 and not applied
    st = run.state.read()
    assert (st.turn, st.recovered_turn) == (2, 2)


def test_a_closed_turn_whose_scheduling_write_was_lost_gets_its_number_back(tmp_path: Path) -> None:
    run = open_run(tmp_path / "repo")
    run.state.update(lambda s: s.but(state="running", turn=1, accounted_turn=1))
    started(run, 2)
    run.hlog.append(
        {"type": "turn_finished", "run": RUN, "turn": 2, "ts": time.time(), "seq": None, "reason": "x"}
    )
    silent: list[int] = []
    recovery.settle(run, ["solo"], lambda *a: True, lambda name, why, turn, fig: silent.append(turn) or True)
    assert silent == [2]
    assert run.state.read().turn == 2
