"""`autodev rewind`: the thread, the repository and the state go back to a post; nothing is lost;
a kill -9 at every step leaves the old position or one the next owner finishes."""

from __future__ import annotations

import json
import signal
from contextlib import closing

import pytest

from autodev.store.events import Events
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import Thread
from autodev.timeline import rewind as rw
from tests.conftest import git, run_dir, thread_of
from tests.e2e.helpers import wait_for
from tests.timeline.conftest import copy_run


def head(repo) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def state_of(repo) -> dict:
    return json.loads((run_dir(repo) / "state.json").read_text())


@pytest.fixture
def wrong_run(recorded_run, tmp_path):
    """A copy of the recorded run (tests/timeline/conftest.py), its own to change."""
    return copy_run(recorded_run, tmp_path / "repo")


def test_rewind_then_continue_to_complete_then_undo(wrong_run, autodev, inproc):
    repo = wrong_run
    posts = thread_of(repo)
    at3, broken = posts[1]["head"], head(repo)
    assert (repo / "junk.txt").exists() and state_of(repo)["question"]

    # A daemon holds the run (idle on the reviewer's question): it does the rewind between turns.
    assert autodev(repo, "start").returncode == 0
    autodev.adopt(wait_for("the daemon", lambda: state_of(repo).get("pid")))
    wait_for("the daemon to hold the run", lambda: state_of(repo).get("daemon") == "running")
    r = inproc(repo, "rewind", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("rewound to post 3 (note #6); `autodev resume`")
    note = thread_of(repo)[-1]
    assert note["from"] == "system" and note["rewind"]["to_seq"] == 3 and note["seq"] == 6
    assert head(repo) == at3 and not (repo / "b.txt").exists() and not (repo / "junk.txt").exists()
    assert git(repo, "rev-parse", "refs/autodev/rewound/1").strip() == broken
    assert git(repo, "show", "refs/autodev/rewound/1-worktree:junk.txt") == "junk\n"
    st = state_of(repo)
    assert st.get("question") is None and st["state"] == "paused" and st["reason"]["code"] == "rewound"
    assert st["applied_seq"] == 6 and st["next"]["speaker"] == "builder"  # from post 3's handoff
    assert st["participants"]["builder"]["credited"] == 1  # post 4's credit is gone
    assert st["participants"]["builder"]["turns"] == 2  # spend is not rewound
    shown = inproc(repo, "thread", check=True).stdout
    assert shown.count("superseded by a rewind") == 2  # posts 4 and 5

    assert inproc(repo, "resume").returncode == 0
    wait_for("complete", lambda: state_of(repo)["state"] == "complete", timeout=180)
    wait_for("the daemon to end", lambda: state_of(repo).get("daemon") == "stopped")
    posts = thread_of(repo)
    assert [(p["from"], p["kind"]) for p in posts[6:]] == [
        ("builder", "work_done"),
        ("reviewer", "done"),
        ("audit", "say"),
    ]
    assert (repo / "c.txt").exists() and not (repo / "b.txt").exists()

    # No daemon now: the CLI undoes it itself, under the daemon lock.
    r = inproc(repo, "rewind", "--undo")
    assert r.returncode == 0, r.stdout + r.stderr
    assert head(repo) == broken and (repo / "junk.txt").read_text() == "junk\n"
    assert thread_of(repo)[-1]["rewind"]["undo_of"] == 1
    st = state_of(repo)
    assert st["state"] == "stopped" and st["paused_from"]["state"] == "awaiting_user"  # post 5's question
    with closing(Thread(RunPaths(repo).thread)) as t:
        live = [p.seq for p in t.tail(100)]
    assert live == [1, 2, 3, 4, 5, 10]
    # rewinds.jsonl keeps its shape (the records' models write the fields in this order)
    started = ["type", "id", "n", "last_seq", "head_before", "branch", "ts", "to_seq", "target", "restore"]
    finished = ["type", "id", "n", "note_seq", "ts"]
    logged = rw.records(RunPaths(repo))
    assert [list(r) for r in logged] == [[*started, "undo_of"], finished] * 2
    assert [(r["id"], r.get("undo_of")) for r in logged] == [
        ("rewind-1", None),
        ("rewind-1:done", None),
        ("rewind-2", 1),
        ("rewind-2:done", None),
    ]


def test_refused_while_a_turn_may_run(wrong_run):
    from autodev.store.lock import DaemonLock

    paths = RunPaths(wrong_run)
    StateFile(paths.state).update(lambda s: s.but(state="running"))
    lock = DaemonLock(paths.lock)
    lock.acquire()  # a daemon holds the run
    try:
        with pytest.raises(rw.TurnRunning) as e:
            rw.request(paths, 3)
    finally:
        lock.release()
    assert e.value.exit_code == 2 and "autodev pause" in str(e.value)
    assert len(thread_of(wrong_run)) == 5 and rw.records(paths) == []


def test_a_daemon_that_exits_without_reading_the_request_leaves_it_to_the_cli(wrong_run):
    """The daemon's last state write comes before it lets go of the lock: a rewind asked in that
    window queued for a daemon that never read it. The CLI sees the lock free, withdraws the
    request and rewinds itself, so no later daemon applies it a second time."""
    import threading

    from autodev.store.lock import DaemonLock

    paths = RunPaths(wrong_run)
    lock = DaemonLock(paths.lock)
    lock.acquire()  # a daemon on its way out: it holds the lock but reads no more requests
    exiting = threading.Timer(0.3, lock.release)
    exiting.start()
    try:
        done = rw.request(paths, 3, wait_s=30)
    finally:
        exiting.cancel()
        lock.release()
    assert done["ok"] and done["to_seq"] == 3 and thread_of(wrong_run)[-1]["rewind"]["to_seq"] == 3
    st = StateFile(paths.state).read()
    assert st.controls == [] and st.control_seq == 1  # withdrawn: nothing left for the next daemon
    assert [r["type"] for r in rw.records(paths)] == ["rewind_started", "rewind_finished"]  # once


@pytest.mark.parametrize(
    "seq, undo, words",
    [(9, False, "there is no post 9"), (5, False, "already the newest"), (None, True, "no rewind to undo")],
)
def test_refusals(wrong_run, seq, undo, words):
    paths = RunPaths(wrong_run)
    with pytest.raises(rw.RewindRefused) as e:
        rw.request(paths, seq, undo=undo)
    assert e.value.exit_code == 2 and words in str(e.value)
    assert len(thread_of(wrong_run)) == 5 and rw.records(paths) == []


CHILD = """
import sys
from pathlib import Path
from autodev.store.paths import RunPaths
from autodev.timeline import rewind
rewind.request(RunPaths(Path(sys.argv[1])), 3)
"""


def _rewind_killed_at(repo, step: str) -> int:
    """`rewind 3` in a process of its own that kill -9s itself right after `step`: its exit.
    (Not a fork of this worker: forking a process with threads can hang the child on a lock.)"""
    import os
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-c", CHILD, str(repo)],
        env={**os.environ, rw.KILL_AT: step},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return r.returncode


@pytest.mark.parametrize("step", ["planned", *rw.STEPS])
def test_kill_at_every_step_leaves_old_or_new(wrong_run, step):
    repo = wrong_run
    paths = RunPaths(repo)
    old_head, old_thread = head(repo), thread_of(repo)
    assert _rewind_killed_at(repo, step) == -signal.SIGKILL
    if step == "planned":  # nothing written yet: the old position, untouched
        assert head(repo) == old_head and thread_of(repo) == old_thread
        assert rw.pending(paths) is None and (repo / "junk.txt").exists()
        return
    # The next owner of the run (`autodev start`, `autodev rewind`) finishes it: the new position.
    st = StateFile(paths.state)
    with (
        Journal(paths.harness_log) as hlog,
        closing(Thread(paths.thread)) as thread,
        closing(Events(paths.events, "t")) as events,
    ):
        rw.finish_pending(rw.Handles(paths, thread, st, hlog, events))
    assert rw.pending(paths) is None
    posts = thread_of(repo)
    assert len(posts) == 6 and posts[5]["rewind"]["to_seq"] == 3
    assert head(repo) == posts[1]["head"] and not (repo / "junk.txt").exists()
    assert git(repo, "show", "refs/autodev/rewound/1-worktree:junk.txt") == "junk\n"
    assert git(repo, "rev-parse", "refs/autodev/rewound/1").strip() == old_head
    assert st.read().rewind_applied == 1 and st.read().applied_seq == 6
