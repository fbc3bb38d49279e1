"""A lost state.json rebuilt from the logs, in-process: the logs are laid down by the real
journals exactly as a run leaves them, then `rebuild` reads them (no daemon)."""

from __future__ import annotations

import time

from autodev.records.events import EVENTS
from autodev.records.post import Post
from autodev.rules.reasons import reason
from autodev.store import rebuild
from autodev.store.events import Events
from autodev.store.paths import RunPaths
from autodev.store.thread import Thread

WAIT_REASON = {"code": "wait", "text": "solo is waiting: CI", "continue": "the run continues by itself"}


def _logs(repo, posts: list[tuple], events: list[tuple]) -> RunPaths:
    paths = RunPaths(repo)
    paths.ensure()
    th = Thread(paths.thread)
    th.append(Post.draft("user", "say", "build it", id="u1"))
    for n, (frm, kind, text) in enumerate(posts, 1):
        th.append(Post.draft(frm, kind, text, id=f"r1:t{n}:post", turn=n))
    th.close()
    ev = Events(paths.events, "r1")
    for type_, fields in events:
        ev.emit(EVENTS[type_](**fields))
    ev.close()
    return paths


def test_a_wait_still_running_comes_back_with_its_timer_and_series(repo):
    now = time.time()
    paths = _logs(
        repo,
        [("solo", "wait", "CI"), ("solo", "wait", "CI again")],
        [
            ("wait", {"participant": "solo", "delay": 10, "due": now - 5, "streak": 1}),
            ("state", {"state": "waiting", "reason": WAIT_REASON}),
            ("state", {"state": "running", "reason": None}),
            ("wait", {"participant": "solo", "delay": 20, "due": now + 15, "streak": 2}),
            ("state", {"state": "waiting", "reason": WAIT_REASON}),
        ],
    )
    st = rebuild.rebuild(paths).dump()
    assert (st["state"], st["reason"]) == ("waiting", WAIT_REASON)
    assert st["wait"] == {
        "author": "solo",
        "seq": 3,
        "due": now + 15,
        "delay": 20,
        "streak": 2,
        "since": now - 15,  # when the series began: the next wait backs off from there
    }
    assert st["last_wait"] == st["wait"]


def test_a_wait_that_ended_is_not_brought_back(repo):
    now = time.time()
    paths = _logs(
        repo,
        [("solo", "wait", "CI")],
        [
            ("wait", {"participant": "solo", "delay": 10, "due": now - 5, "streak": 1}),
            ("state", {"state": "waiting", "reason": WAIT_REASON}),
            ("state", {"state": "paused", "reason": reason("user")}),
        ],
    )
    st = rebuild.rebuild(paths).dump()
    assert st["state"] == "stopped" and "wait" not in st


def test_usage_limit_resets_still_ahead_come_back_and_so_does_the_wait_for_them(repo):
    limit = {"code": "usage_limit", "text": "every model is limited", "continue": "by itself"}
    paths = _logs(
        repo,
        [],
        [
            ("failover", {"participant": "solo", "turn": 1, "model": "old", "to": None, "retry_after": 0.0}),
            ("failover", {"participant": "solo", "turn": 1, "model": "a", "to": "b", "retry_after": 3600}),
            ("failover", {"participant": "solo", "turn": 1, "model": "b", "to": None, "retry_after": 600}),
            ("state", {"state": "waiting", "reason": limit}),
        ],
    )
    now = time.time()
    st = rebuild.rebuild(paths).dump()
    assert set(st["limited_until"]) == {"a", "b"}  # an expired reset is not kept
    assert now + 3590 < st["limited_until"]["a"] <= now + 3600
    assert (st["state"], st["reason"]) == ("waiting", limit)
    assert st["wait"] == {"author": "solo", "due": st["limited_until"]["b"], "usage_limit": True}


def test_the_daemon_opening_on_a_lost_state_keeps_waiting_until_the_timer(repo):
    from autodev.daemon import Daemon
    from autodev.store.state import StateFile
    from tests.conftest import write_team

    write_team(repo, '[[participants]]\nname = "solo"\nmodel = "openai/gpt-5-mini"\nwrite = true\n')
    due = time.time() + 60
    paths = _logs(
        repo,
        [("solo", "wait", "CI")],
        [
            ("wait", {"participant": "solo", "delay": 60, "due": due, "streak": 1}),
            ("state", {"state": "waiting", "reason": WAIT_REASON}),
        ],
    )
    d = Daemon(repo)
    d.open()
    d.close()
    st = StateFile(paths.state).read().dump()
    assert st["state"] == "waiting" and st["wait"]["due"] == due and st["run_id"] == "r1"


def test_a_damaged_line_under_a_lost_state_is_named_not_a_traceback(repo, inproc):
    paths = _logs(repo, [("solo", "say", "hi")], [])
    paths.harness_log.write_text('{"type": "turn_started", "id": "r1:t1:start", "turn": "one"}\n')
    r = inproc(repo, "status")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr  # as for any damaged log
    assert "state.json is missing" in r.stderr and "(TurnStarted: " in r.stderr
    assert "fix: restore the damaged line" in r.stderr
