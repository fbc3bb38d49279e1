"""Notifications (a local HTTP receiver and a command appending to a file) and hooks at every
point, through the real daemon and the scripted model; a before_tool outcome survives kill -9."""

from __future__ import annotations

import json
import os
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from autodev.user.events_view import event_text
from tests.conftest import git, run_dir, write_team
from tests.e2e.helpers import (
    ACCEPT,
    PAIR,
    QUESTION_SCRIPT,
    SOLO,
    call,
    events,
    post,
    records_of,
    requests_of,
    run_until_idle,
    start_detached,
    step,
    tool_results,
    wait_for,
)


@pytest.fixture
def receiver():
    got: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.full
def test_notifications_fire_once_per_change_by_command_and_url(repo, autodev, inproc, receiver, tmp_path):
    url, posted = receiver
    notes = tmp_path / "notes.jsonl"
    config = f'notifyCommand = "cat >> {notes}; echo >> {notes}"\nnotifyUrl = "{url}"\nnotifyTimeoutSec = 5\n'
    write_team(repo, PAIR, QUESTION_SCRIPT, config=config)
    run_until_idle(autodev, repo, "pick a colour", expect=3)
    assert inproc(repo, "send", "blue").returncode == 0
    run_until_idle(autodev, repo, expect=0)

    by_command = [json.loads(line) for line in notes.read_text().splitlines() if line.strip()]
    for got in (by_command, posted):
        assert [(p["state"], p["reason"]) for p in got] == [
            ("awaiting_user", "question"),
            ("complete", "complete"),
        ]
        first = got[0]
        assert (
            first["repo"] == str(repo) and first["run"] and first["continue"] == 'autodev send "your answer"'
        )
        assert "bob asked you a question" in first["text"]
    assert len(events(repo, "notified")) == 4 and not events(repo, "notify_failed")


def test_a_failing_notification_is_an_event_and_does_not_hold_the_run(repo, autodev):
    # Port 9 on loopback: nothing listens; the POST fails at once and the run goes on.
    write_team(repo, SOLO, post("solo", "done", "ok") + ACCEPT, config='notifyUrl = "http://127.0.0.1:9/x"\n')
    run_until_idle(autodev, repo, "go", expect=0)
    failed = events(repo, "notify_failed")
    assert [(e["via"], e["state"]) for e in failed] == [("url", "complete")]
    assert "failed" in event_text(failed[0]).plain


def _sh(path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _hooks_config(d, after_read: str) -> str:
    before_read = _sh(
        d / "before_read.sh",
        f'cat > {d}/payload.json; echo asked >> {d}/asked; echo \'{{"args": {{"path": "b.txt"}}}}\'\n',
    )
    block = _sh(d / "block.sh", 'if grep -q secret; then echo "secret files are off limits"; exit 1; fi\n')
    refuse = _sh(d / "refuse.sh", 'if grep -q untested; then echo "run the tests first"; exit 2; fi\n')
    states = _sh(d / "states.sh", f"cat >> {d}/states.jsonl; echo >> {d}/states.jsonl\n")
    # The hooks that write to `d` run on the host (`host = true`); the others run in the
    # sandbox, where `d` is readable through sandboxRead (tests/security/test_hooks.py).
    return f"""
sandboxRead = ["{d}"]

[[hooks]]
on = "before_tool"
match = "read_file"
command = "{before_read}"
host = true

[[hooks]]
on = "before_tool"
match = "write_*"
command = "{block}"

[[hooks]]
on = "after_tool"
match = "read_file"
command = "{after_read}"
timeout_sec = 20

[[hooks]]
on = "before_post"
match = "done"
command = "{refuse}"

[[hooks]]
on = "on_state"
match = "complete"
command = "{states}"
host = true
"""


SCRIPT = (
    step("solo", call("read_file", path="a.txt"))
    + step("solo", call("write_file", path="secret.txt", content="x"))
    + post("solo", "done", "untested")
    + post("solo", "done", "tested")
    + ACCEPT
)


@pytest.mark.full
def test_hooks_block_rewrite_note_refuse_and_survive_a_kill(repo, autodev, tmp_path):
    (repo / "a.txt").write_text("content of a\n")
    (repo / "b.txt").write_text("content of b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "files")
    d = tmp_path / "hooks"
    d.mkdir()
    write_team(repo, SOLO, SCRIPT, config=_hooks_config(d, "sleep 5"))
    pid = start_detached(autodev, repo, "read, then finish")
    harness = run_dir(repo) / "harness.jsonl"
    started = wait_for(
        "read_file to start",
        lambda: [r for r in records_of(harness) if r["type"] == "tool_started" and r["name"] == "read_file"],
    )
    os.killpg(pid, signal.SIGKILL)  # in the after_tool hook: the call has no result yet
    # The hook's outcome is in the intent record: the effective (rewritten) arguments.
    assert started[0]["args"] == {"path": "b.txt"} and started[0]["hook"] == {
        "blocked": None,
        "args": {"path": "b.txt"},
    }
    payload = json.loads((d / "payload.json").read_text())
    assert payload["tool"] == "read_file" and payload["args"] == {"path": "a.txt"}
    assert payload["participant"] == "solo" and payload["repo"] == str(repo)

    write_team(repo, SOLO, SCRIPT, config=_hooks_config(d, "echo LINT-NOTE"))
    run_until_idle(autodev, repo, expect=0)
    assert (d / "asked").read_text() == "asked\n"  # the resumed turn did not ask again
    seen = [tool_results(r) for r in requests_of(repo, "solo")]
    after_read, after_write, after_refusal = seen[1][-1], seen[2][-1], seen[3][-1]
    assert "content of b" in after_read and "LINT-NOTE" in after_read and "content of a" not in after_read
    assert after_write == "blocked by a before_tool hook: secret files are off limits"
    assert not (repo / "secret.txt").exists()
    assert after_refusal == "refused by a before_post hook: run the tests first"
    states = [json.loads(line) for line in (d / "states.jsonl").read_text().splitlines() if line.strip()]
    assert [(s["state"], s["hook"]) for s in states] == [("complete", "on_state")]

    hooks = events(repo, "hook")
    failing = [e for e in hooks if not e["ok"]]
    assert [(e["on"], e["subject"], e["problem"]) for e in failing] == [
        ("before_tool", "write_file", "exited 1"),
        ("before_post", "done", "exited 2"),
    ]
    # visible in the Feed, in red
    line = event_text(failing[0])
    assert "exited 1" in line.plain and "secret files are off limits" in line.plain
    assert any("red" in str(span.style) for span in line.spans)
