"""Input that once wedged a run, through the real CLI and daemon: undecodable bytes in a message,
a lone surrogate in a model's post, file names that are not UTF-8, and inbox files autodev did
not write. The daemon keeps going; every log stays valid UTF-8; the damage is set aside and said.
And the CLI refuses what cannot work instead of saying "sent" and dropping it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import (
    ACCEPT,
    SOLO,
    call,
    cli,
    events,
    post,
    requests_of,
    run_until_idle,
    start_detached,
    state_of,
    status_json,
    status_text,
    step,
    tool_results,
    wait_for,
)

# The model's question carries a lone surrogate (valid JSON, not valid UTF-8 once decoded).
SURROGATE_SCRIPT = (
    """
[[step]]
participant = "solo"
calls = [{ tool = "post", raw_args = '{"kind":"say","text":"red or bl\\ud800ue?","handoff":"user"}' }]
"""
    + post("solo", "done", "painted it blue")
    + ACCEPT
)


def _strict_utf8(path) -> None:
    path.read_bytes().decode("utf-8")  # raises on any invalid byte


@pytest.mark.full
def test_bad_bytes_and_malformed_inbox_files_never_wedge_the_daemon(repo, autodev, inproc):
    write_team(repo, SOLO, SURROGATE_SCRIPT)
    # `autodev send $'\xff\xfe'`: the objective is two bytes that are not UTF-8.
    r = inproc(repo, "send", os.fsdecode(b"\xff\xfe"))
    assert r.returncode == 0, r.stderr
    box = run_dir(repo) / "inbox"
    bad = {
        "00000000000000000001-1-a.json": b'{"kind":"send"}',
        "00000000000000000001-1-b.json": b"[1,2,3]",
        "00000000000000000001-1-c.json": b"\xff\xfe",
        "99999999999999999999-1-d.json": b"not json at all {",
    }
    for name, raw in bad.items():
        (box / name).write_bytes(raw)

    run_until_idle(autodev, repo, expect=3)  # the question is open: the daemon lived through it

    posts = thread_of(repo)
    assert posts[0]["from"] == "user" and posts[0]["text"] == "\\xff\\xfe"
    assert posts[1]["from"] == "solo" and posts[1]["text"] == "red or bl\\ud800ue?"
    assert [p["from"] for p in posts] == ["user", "solo"]  # no malformed message reached the thread
    warned = " ".join(e["message"] for e in events(repo, "warning"))
    for name, raw in bad.items():
        assert f"{name[:-5]}.bad set aside" in warned
        assert (box / name.replace(".json", ".bad")).read_bytes() == raw
    for log in ("thread.jsonl", "events.jsonl", "harness.jsonl", "state.json"):
        _strict_utf8(run_dir(repo) / log)
    assert "red or bl\\ud800ue?" in status_text(inproc, repo)

    cli(inproc, repo, "send", "blue")
    run_until_idle(autodev, repo, expect=0)
    assert state_of(repo)["state"] == "complete"


def _refused(r, *needles: str) -> None:
    assert r.returncode == 2, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    for n in needles:
        assert n in r.stderr, f"{n!r} not in:\n{r.stderr}"
    assert "Traceback" not in r.stderr


def _inbox_files(repo) -> list[str]:
    box = run_dir(repo) / "inbox"
    return sorted(p.name for p in box.glob("*.json")) if box.exists() else []


@pytest.mark.full
def test_answers_decisions_and_holds_for_what_does_not_exist_are_refused(repo, autodev, inproc):
    script = (
        step("solo", call("tell_user", text="which region?"), call("post", kind="gate", text="git push"))
        + post("solo", "done", "pushed")
        + ACCEPT
    )
    write_team(repo, SOLO, script)
    # Nothing open yet: every answer or decision is refused, and nothing reaches the inbox.
    _refused(inproc(repo, "approve"), "no gate is open")
    _refused(inproc(repo, "deny", "99"), "no gate is open")
    _refused(inproc(repo, "answer", "999", "yes"), "there is no notice 999", "no notice is open")
    _refused(inproc(repo, "notice", "--release", "5"), "there is no notice 5")
    _refused(inproc(repo, "send", ""), "empty")
    _refused(inproc(repo, "send", "   \n"), "empty")
    assert _inbox_files(repo) == []

    run_until_idle(autodev, repo, "ship it", expect=3)  # notice 1 and gate 3 are open
    _refused(inproc(repo, "answer", "999", "yes"), "there is no notice 999", "open notices: 1")
    _refused(inproc(repo, "notice", "--hold", "7"), "open notices: 1")
    _refused(inproc(repo, "approve", "99"), "gate 99 is not open", "the open gate is 3")
    _refused(inproc(repo, "deny", "2"), "the open gate is 3")
    _refused(inproc(repo, "answer", "1", " "), "empty")
    assert _inbox_files(repo) == []
    assert "approval of gate 3 sent" in cli(inproc, repo, "approve")
    cli(inproc, repo, "answer", "1", "eu-west-1")
    run_until_idle(autodev, repo, expect=0)
    assert [p["gate"]["decision"] for p in thread_of(repo) if p.get("gate")] == ["approved"]
    assert state_of(repo)["notices"]["1"]["answer"] == "eu-west-1"


def _send(repo, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autodev", "send", *args],
        cwd=repo,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        timeout=60,
    )


@pytest.mark.full
def test_send_reads_long_messages_from_stdin_or_a_file(repo, autodev, tmp_path):
    write_team(repo, SOLO, post("solo", "say", "read them", "user"))
    long = "line of a long brief\n" * 5000  # ~100 KB: past what a shell argument comfortably holds
    r = _send(repo, "-", stdin=long.encode())
    assert r.returncode == 0, r.stderr
    notes = tmp_path / "notes.txt"
    notes.write_bytes("from a file: ü\n".encode() + b"\xff\n")
    r = _send(repo, "--file", str(notes))
    assert r.returncode == 0, r.stderr
    r = _send(repo, "-", stdin=b"  \n")
    assert r.returncode == 2 and b"empty" in r.stderr
    r = _send(repo, "--file", str(tmp_path / "nope.txt"))
    assert r.returncode == 2 and b"nope.txt" in r.stderr
    r = _send(repo, "both", "--file", str(notes))
    assert r.returncode == 2 and b"exactly one" in r.stderr
    run_until_idle(autodev, repo, expect=3)
    texts = [p["text"] for p in thread_of(repo) if p["from"] == "user"]
    assert texts == [long, "from a file: ü\n\\xff\n"]


@pytest.mark.full
def test_the_run_folder_is_private(repo, autodev, inproc):
    write_team(repo, SOLO, post("solo", "say", "which colour?", "user"))
    os.umask(0o022)  # the usual umask: files would be world-readable by default
    cli(inproc, repo, "send", "paint it")
    d = run_dir(repo)
    (queued,) = (d / "inbox").glob("*.json")
    assert queued.stat().st_mode & 0o777 == 0o600
    start_detached(autodev, repo)
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")
    cli(inproc, repo, "pause")  # the CLI rewrites state.json too
    wait_for("the pause", lambda: state_of(repo).get("state") == "paused")
    assert d.stat().st_mode & 0o777 == 0o700
    assert (d / "inbox").stat().st_mode & 0o777 == 0o700
    for name in ("state.json", "daemon.log", "thread.jsonl", "events.jsonl", "harness.jsonl", "daemon.lock"):
        assert (d / name).stat().st_mode & 0o777 == 0o600, name
    inproc(repo, "stop")
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None)


@pytest.mark.full
def test_latin1_file_names_reach_the_model_escaped(repo, autodev):
    # Once a UnicodeEncodeError at every start: both tools are replay-safe, so they ran again.
    script = step("solo", call("list_files"), call("search", pattern="needle")) + post(
        "solo", "say", "found it", "user"
    )
    write_team(repo, SOLO, script)
    with open(os.path.join(os.fsencode(repo), b"caf\xe9.txt"), "wb") as f:
        f.write(b"needle in a latin-1 named file\n")
    run_until_idle(autodev, repo, "find the needle", expect=3)
    listed, found = tool_results(requests_of(repo, "solo")[1])
    assert "caf\\xe9.txt" in listed
    assert "caf\\xe9.txt:1: needle in a latin-1 named file" in found
    _strict_utf8(run_dir(repo) / "harness.jsonl")


def test_a_mistyped_state_json_is_one_message_naming_the_repair_not_a_traceback(repo, inproc):
    """Issue 20: state.json with wrong types (or not an object) gives the repair, never a traceback."""
    from tests.conftest import run_dir, write_team
    from tests.e2e.helpers import BUILDER

    write_team(repo, BUILDER)
    run_dir(repo).mkdir(parents=True, exist_ok=True)
    for bad in ('{"turn": "seven", "participants": []}', "[1, 2]"):
        (run_dir(repo) / "state.json").write_text(bad)
        r = inproc(repo, "status")
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        assert "state.json" in r.stderr and "rebuilds the run's state from its logs" in r.stderr, r.stderr
