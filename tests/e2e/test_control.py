"""The user's side of a run through the real CLI: questions and answers, the audit, and a
detached daemon controlled by `send`, `pause`, `resume` and `stop`."""

from __future__ import annotations

import json
import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import light, run_dir, shape, thread_of, write_team
from tests.e2e.helpers import (
    PAIR,
    QUESTION_SCRIPT,
    SLOW_SCRIPT,
    call,
    events_of,
    requests_of,
    running,
    scheduled,
    sleepers,
    start_detached,
    state_of,
    status_json,
    step,
    stop_daemon,
    wait_for,
)

# -- questions --------------------------------------------------------------------------------


@pytest.mark.full
def test_question_to_user_then_send_routes_the_answer_and_completes(repo, autodev, inproc):
    write_team(repo, PAIR, QUESTION_SCRIPT)
    r = autodev(repo, "start", "--foreground", "--until-idle", "pick a colour")
    assert r.returncode == 3, r.stdout + r.stderr
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("alice", "say", "bob", None),
        ("bob", "say", "user", None),
    ]
    st = status_json(inproc, repo)
    assert st["state"] == "awaiting_user"
    assert st["reason"]["code"] == "question"
    assert [(n["type"], n["from"], n["text"]) for n in st["needs_you"]] == [
        ("question", "bob", "User: red or blue?")
    ]

    s = inproc(repo, "send", "blue, please")
    assert s.returncode == 0, s.stderr
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("alice", "say", "bob", None),
        ("bob", "say", "user", None),
        ("user", "say", None, None),
        ("bob", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert thread_of(repo)[3]["text"] == "blue, please"
    assert scheduled(repo)[-1] == ("bob", "user_message")
    # bob's turn prompt carried the answer in full.
    last_bob = [q for q in requests_of(repo) if q["participant"] == "bob"][-1]
    assert any("blue, please" in (m.get("content") or "") for m in last_bob["body"]["messages"])
    st = status_json(inproc, repo)
    assert st["state"] == "complete" and st["needs_you"] == []


# -- the audit --------------------------------------------------------------------------------

COMMIT = """calls = [
  {{ tool = "write_file", args = {{ path = "{f}", content = "{f}\\n" }} }},
  {{ tool = "run_command", args = {{ command = "git add -A && git commit -qm {f}" }} }},
]"""


def work(f: str, handoff: str = "alice") -> str:
    return (
        f'[[step]]\nparticipant = "alice"\n{COMMIT.format(f=f)}\n'
        f'[[step]]\nparticipant = "alice"\ncalls = [{{ tool = "post", args = '
        f'{{ kind = "work_done", text = "{f} added", handoff = "{handoff}" }} }}]\n'
    )


def done(text: str) -> str:
    return (
        f'[[step]]\nparticipant = "alice"\ncalls = [{{ tool = "post", args = '
        f'{{ kind = "done", text = "{text}" }} }}]\n'
    )


def verdict(accept: bool, gap: str = "") -> str:
    return (
        f'[[step]]\nparticipant = "audit"\ncalls = [{{ tool = "verdict", args = '
        f'{{ accept = {str(accept).lower()}, gap = "{gap}" }} }}]\n'
    )


def test_audit_reopens_to_the_done_author_then_accepts(repo, autodev, inproc):
    script = (
        work("a.txt")
        + done("a is in")
        + verdict(False, "b.txt is missing")
        + work("b.txt")
        + done("a and b are in")
        + verdict(True)
    )
    write_team(repo, PAIR, script)
    r = autodev(repo, "start", "--foreground", "--until-idle", "add a.txt and b.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    thread = thread_of(repo)
    assert shape(thread) == [
        ("user", "say", None, None),
        ("alice", "work_done", "alice", True),
        ("alice", "done", None, None),
        ("audit", "say", "alice", None),
        ("alice", "work_done", "alice", True),
        ("alice", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert "b.txt is missing" in thread[3]["text"]
    # The reopen hands the turn to the done author (bob would otherwise be silent longest).
    assert scheduled(repo) == [
        ("alice", "silent_longest"),
        ("alice", "self_handoff"),
        ("alice", "handoff"),
        ("alice", "self_handoff"),
    ]
    audits = [(e["accept"], e["by"]) for e in events_of(repo) if e["type"] == "audit"]
    assert audits == [(False, "model"), (True, "model")]
    st = status_json(inproc, repo)
    assert st["state"] == "complete" and st["audits"] == 2


@pytest.mark.full
def test_audit_limit_pauses_the_run(repo, autodev, inproc):
    script = (
        work("a.txt")
        + done("a is in")
        + verdict(False, "not yet")
        + done("really done")
        + verdict(False, "still not")
    )
    write_team(repo, PAIR, script, "maxAcceptChecks = 2\n")
    r = autodev(repo, "start", "--foreground", "--until-idle", "add a.txt")
    assert r.returncode == 3, r.stdout + r.stderr
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("alice", "work_done", "alice", True),
        ("alice", "done", None, None),
        ("audit", "say", "alice", None),
        ("alice", "done", None, None),
        ("audit", "say", "alice", None),
    ]
    st = status_json(inproc, repo)
    assert st["state"] == "paused"
    assert st["reason"]["code"] == "audit_limit"
    assert st["audits"] == 2


@pytest.mark.full
def test_failing_audit_check_reopens_without_asking_the_model(repo, autodev):
    script = (
        done("nothing to do") + work("fixed.txt") + done("fixed.txt is in") + verdict(True, "check passes")
    )
    write_team(repo, PAIR, script, 'auditCheck = "test -f fixed.txt && echo FOUND || (echo NOPE; exit 1)"\n')
    r = autodev(repo, "start", "--foreground", "--until-idle", "make fixed.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    thread = thread_of(repo)
    assert shape(thread) == [
        ("user", "say", None, None),
        ("alice", "done", None, None),
        ("audit", "say", "alice", None),
        ("alice", "work_done", "alice", True),
        ("alice", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert "auditCheck failed" in thread[2]["text"]
    assert "NOPE" in thread[2]["text"] and "exited 1" in thread[2]["text"]
    audits = [(e["accept"], e["by"]) for e in events_of(repo) if e["type"] == "audit"]
    assert audits == [(False, "auditCheck"), (True, "model")]
    # Exactly one audit request reached the model: the second audit, which read the passing check.
    audit_reqs = [q for q in requests_of(repo) if q["participant"] == "audit"]
    assert len(audit_reqs) == 1
    prompt = json.dumps(audit_reqs[0]["body"]["messages"])
    assert "exited 0" in prompt and "FOUND" in prompt and "exited 1" not in prompt


# -- a detached daemon ------------------------------------------------------------------------


@pytest.mark.full
def test_detached_daemon_idles_for_the_user_and_refuses_a_second(repo, autodev, inproc):
    write_team(repo, PAIR, QUESTION_SCRIPT)
    pid = start_detached(autodev, repo, "pick a colour")
    wait_for("awaiting_user", lambda: state_of(repo).get("state") == "awaiting_user")
    st = status_json(inproc, repo)
    assert st["daemon_pid"] == pid
    assert st["needs_you"][0]["from"] == "bob"

    second = autodev(repo, "start", "another objective")
    assert second.returncode == 2
    assert "already running" in second.stderr and str(pid) in second.stderr
    # The refused start dropped nothing: its objective never reaches the thread.
    assert not any("another objective" in p["text"] for p in thread_of(repo))

    assert inproc(repo, "send", "blue").returncode == 0
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("alice", "say", "bob", None),
        ("bob", "say", "user", None),
        ("user", "say", None, None),
        ("bob", "done", None, None),
        ("audit", "say", None, None),
    ]
    # Up while the run waited for the user; gone once the run is complete (SPEC §12).
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None)
    assert status_json(inproc, repo)["state"] == "complete"


@pytest.mark.full
def test_pause_resume_stop_on_a_detached_daemon(repo, autodev, inproc):
    write_team(repo, PAIR, SLOW_SCRIPT)
    start_detached(autodev, repo, "be slow")
    wait_for(
        "alice's command to start",
        lambda: any(e["type"] == "tool" and e["name"] == "run_command" for e in events_of(repo)),
    )
    assert inproc(repo, "pause").returncode == 0
    # The turn in flight finishes; the pause holds the run at the boundary after it.
    wait_for("paused", lambda: state_of(repo).get("state") == "paused")
    st = status_json(inproc, repo)
    assert st["reason"]["code"] == "user"
    time.sleep(0.5)
    assert shape(thread_of(repo)) == [("user", "say", None, None), ("alice", "say", "bob", None)]

    assert inproc(repo, "resume").returncode == 0
    wait_for("awaiting_user", lambda: state_of(repo).get("state") == "awaiting_user")
    assert shape(thread_of(repo))[-1] == ("bob", "say", "user", None)

    stop_daemon(autodev, repo)
    assert status_json(inproc, repo)["state"] == "stopped"
    assert [e["action"] for e in events_of(repo) if e["type"] == "control"] == ["pause", "resume", "stop"]

    # A stopped run starts again where it was: the question is still open for the answer.
    assert inproc(repo, "send", "yes").returncode == 0
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo))[-3:] == [
        ("user", "say", None, None),
        ("bob", "done", None, None),
        ("audit", "say", None, None),
    ]


def controls(repo) -> list[str]:
    return [e["action"] for e in events_of(repo) if e["type"] == "control"]


@pytest.mark.full
def test_pause_and_resume_while_awaiting_the_user_keeps_the_question_open(repo, autodev, inproc):
    write_team(repo, PAIR, QUESTION_SCRIPT)
    start_detached(autodev, repo, "pick a colour")
    wait_for("awaiting_user", lambda: state_of(repo).get("state") == "awaiting_user")
    assert inproc(repo, "pause").returncode == 0
    wait_for("the pause", lambda: controls(repo) == ["pause"])
    assert inproc(repo, "resume").returncode == 0
    wait_for("the resume", lambda: controls(repo) == ["pause", "resume"])
    time.sleep(1.0)  # room for a wrongly scheduled turn to start
    assert len(thread_of(repo)) == 3
    assert scheduled(repo) == [("alice", "silent_longest"), ("bob", "handoff")], (
        "a turn was scheduled while bob's question was still open"
    )
    st = status_json(inproc, repo)
    assert st["state"] == "awaiting_user"
    assert st["needs_you"][0]["from"] == "bob"


# A pause asked for during the turn that posts `done`: the done's audit waits for it.
DONE_SLOWLY = """
[[step]]
participant = "alice"
calls = [
  { tool = "run_command", args = { command = "sleep 3" } },
  { tool = "post", args = { kind = "done", text = "slept on it" } },
]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def test_a_pause_queued_during_the_done_turn_holds_before_the_audit(repo, autodev, inproc):
    write_team(repo, PAIR, DONE_SLOWLY)
    pid = start_detached(autodev, repo, "sleep, then be done")
    wait_for(
        "alice's command to start",
        lambda: any(e["type"] == "tool" and e["name"] == "run_command" for e in events_of(repo)),
    )
    assert inproc(repo, "pause").returncode == 0
    wait_for("paused", lambda: state_of(repo).get("state") == "paused")
    time.sleep(0.5)  # room for a wrongly started audit to show
    [done] = [p for p in thread_of(repo) if p["kind"] == "done"]
    st = state_of(repo)
    assert (st["state"], st["reason"]["code"], st["audit_pending"]) == ("paused", "user", done["seq"])
    assert not [e for e in events_of(repo) if e["type"] in ("audit_started", "audit")]
    assert shape(thread_of(repo))[-1] == ("alice", "done", None, None)

    # Crash-safe: the daemon killed while paused leaves the done awaiting its audit.
    os.kill(pid, signal.SIGKILL)
    wait_for("the daemon to die", lambda: status_json(inproc, repo)["daemon_pid"] is None)
    assert inproc(repo, "resume").returncode == 0
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo))[-2:] == [("alice", "done", None, None), ("audit", "say", None, None)]
    audits = [(e["seq"], e["accept"]) for e in events_of(repo) if e["type"] == "audit"]
    assert audits == [(done["seq"], True)]
    st = state_of(repo)
    assert (st["state"], st["audit_pending"]) == ("complete", None)
    assert controls(repo) == ["pause", "resume"]


@pytest.mark.parametrize("sandbox", light(["off", "bwrap"]))
def test_a_daemon_ended_with_sigterm_ends_its_turns_command(repo, autodev, inproc, sandbox):
    """A participant's command leads a process group of its own, out of reach of a signal to the
    daemon: the daemon kills it on SIGTERM, then closes (issue 32, item 7)."""
    from autodev.guard.sandbox import resolve

    if sandbox == "bwrap" and not resolve("auto").active:
        pytest.skip("bubblewrap cannot run here")
    marker = f"{sandbox}-{secrets.token_hex(6)}"
    script = step("alice", call("run_command", command=f"ORPHAN_MARK={marker} sleep 240"))
    write_team(repo, PAIR, script, f'sandbox = "{sandbox}"\n')
    pid = start_detached(autodev, repo, "sleep")
    [sleeper] = wait_for("the command to start", lambda: sleepers(marker))
    os.kill(pid, signal.SIGTERM)
    wait_for("the daemon to end", lambda: not running(pid))
    wait_for("the command to end", lambda: not running(sleeper), timeout=10)
    assert sleepers(marker) == []
    st = state_of(repo)
    assert (st["daemon"], st["pid"]) == ("stopped", None)
    assert status_json(inproc, repo)["daemon_pid"] is None


def test_a_daemon_killed_with_9_mid_command_leaves_nothing_running_after_the_next_start(repo, autodev):
    """Without the sandbox, a command's background job lives on in its group when the daemon is
    killed with -9 (the command's bash dies with the daemon, not what it started). The daemon
    listed the group as it started it (the run folder's groups/); the next one ends it before
    anything else, and says so (`leftover_killed`)."""
    marker = f"left-{secrets.token_hex(6)}"
    command = f"export ORPHAN_MARK={marker}; sleep 240 & wait"
    script = step("alice", call("run_command", command=command)) + step(
        "alice", call("post", kind="done", text="slept on it")
    )
    script += step("audit", call("verdict", accept=True, gap=""))
    write_team(repo, PAIR, script, 'sandbox = "off"\n')
    pid = start_detached(autodev, repo, "sleep")
    [job] = wait_for("the command's job", lambda: sleepers(marker))
    group = int(Path(f"/proc/{job}/stat").read_text().rsplit(")", 1)[1].split()[2])
    os.kill(pid, signal.SIGKILL)
    wait_for("the daemon to die", lambda: not running(pid))
    wait_for("the command's bash to die with it", lambda: not running(group), timeout=10)
    assert sleepers(marker) == [job], "what the command started outlives a kill -9"
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sleepers(marker) == []
    [left] = [e for e in events_of(repo) if e["type"] == "leftover_killed"]
    assert (left["pgid"], left["program"]) == (group, "bash")
    started = [i for i, e in enumerate(events_of(repo)) if e["type"] == "daemon_started"]
    assert len(started) == 2 and events_of(repo).index(left) < started[1]  # before anything else
    assert shape(thread_of(repo))[-2:] == [("alice", "done", None, None), ("audit", "say", None, None)]
    assert list((run_dir(repo) / "groups").iterdir()) == [], "the ledger is empty after a clean end"
