"""Durability of the run's files under concurrency and damage, through real processes:
many senders at once, concurrent control commands, torn tails, corruption, a full disk,
a second daemon and a stale lock, and restore cost that does not grow with the thread."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from autodev.store.paths import RunPaths
from tests.conftest import run_dir, shape, thread_of, write_team
from tests.e2e.helpers import SOLO, done_accepted, kill_group, start_detached, state_of, status_json, wait_for


def say_to_user(n: int, start: int = 1) -> str:
    """n distinct questions to the user: each ends a turn with the run awaiting the user."""
    return "".join(
        f'[[step]]\nparticipant = "solo"\ncalls = [{{ tool = "post", args = '
        f'{{ kind = "say", text = "question {i}", handoff = "user" }} }}]\n'
        for i in range(start, start + n)
    )


DONE = done_accepted("solo")


def records(path: Path) -> list[dict]:
    """Every line parses and ends with a newline (nothing torn)."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), f"{path.name} ends with a torn line"
    return [json.loads(line) for line in data.decode().splitlines()]


def assert_contiguous(posts: list[dict]) -> None:
    assert [p["seq"] for p in posts] == list(range(1, len(posts) + 1)), "seq must be contiguous"


def wait_daemon_gone(autodev, repo, timeout: float = 30.0) -> None:
    from autodev.store.lock import DaemonLock

    wait_for(
        "the daemon to release its lock", lambda: DaemonLock.holder(RunPaths(repo).lock) is None, timeout
    )


# -- concurrent send ----------------------------------------------------------------------------

SENDERS, PER_SENDER = 8, 50
DROP = """
import sys, time
from pathlib import Path
from autodev.store import inbox
box, k, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
while not go.exists():  # start together
    time.sleep(0.001)
for i in range(int(sys.argv[4])):
    inbox.drop(box, "send", text=f"s{k}-{i}")
"""


@pytest.mark.full
def test_concurrent_sends_land_exactly_once_in_sender_order(repo, autodev, tmp_path):
    # Each batch of user messages wakes the daemon for one turn ending in a question to the user.
    write_team(repo, SOLO, say_to_user(500), "maxTalkTurns = 1000\n")
    start_detached(autodev, repo, "answer everything")
    wait_for("awaiting_user", lambda: state_of(repo).get("state") == "awaiting_user")

    box, go = RunPaths(repo).inbox, tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", DROP, str(box), str(k), str(go), str(PER_SENDER)], start_new_session=True
        )
        for k in range(SENDERS)
    ]
    for p in procs:
        autodev.adopt(p.pid)
    time.sleep(0.3)  # let the interpreters start; they spin on the go file
    go.touch()
    cli = [autodev.popen(repo, "send", f"cli-{j}") for j in range(4)]
    for p in procs:
        assert p.wait(timeout=60) == 0
    for p in cli:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err

    total = SENDERS * PER_SENDER + len(cli)

    def all_in():
        users = [p for p in thread_of(repo) if p["from"] == "user"]
        return len(users) >= total + 1 and not list(box.glob("*.json"))

    wait_for("every message on the thread", all_in, timeout=90)
    wait_for("the run to settle", lambda: state_of(repo).get("state") == "awaiting_user")

    posts = thread_of(repo)
    assert_contiguous(posts)
    texts = [p["text"] for p in posts if p["from"] == "user"]
    counts = Counter(texts)
    expected = {f"s{k}-{i}" for k in range(SENDERS) for i in range(PER_SENDER)}
    expected |= {f"cli-{j}" for j in range(4)} | {"answer everything"}
    assert set(counts) == expected
    assert [t for t, n in counts.items() if n != 1] == [], "a message appears more than once"
    for k in range(SENDERS):
        mine = [int(t.split("-")[1]) for t in texts if t.startswith(f"s{k}-")]
        assert mine == list(range(PER_SENDER)), f"sender {k}'s order was not kept"
    ids = [p["id"] for p in posts if "id" in p]
    assert len(ids) == len(set(ids))
    # The daemon kept answering: the last post is solo's question after the last message.
    assert posts[-1]["from"] == "solo" and posts[-1]["handoff"] == "user"


# -- concurrent pause / resume / stop ------------------------------------------------------------

WORKERS = [
    ["pause", "resume", "pause", "resume", "pause"],
    ["resume", "pause", "resume", "pause", "resume"],
    ["pause", "pause", "resume", "resume", "stop"],
    ["resume", "resume", "pause", "pause", "resume"],
    ["pause", "resume", "stop", "pause", "resume"],
    ["resume", "pause", "pause", "resume", "pause"],
]
WORKER = """
import subprocess, sys
for action in sys.argv[1:]:
    r = subprocess.run([sys.executable, "-m", "autodev", action], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{action}: {r.stderr}")
"""


@cache
def _is_merge(seq: tuple, lanes: tuple) -> bool:
    """Whether `seq` interleaves the sequences in `lanes`, each kept in its own order."""
    if not seq:
        return all(not lane for lane in lanes)
    for i, lane in enumerate(lanes):
        if lane and lane[0] == seq[0]:
            rest = lanes[:i] + (lane[1:],) + lanes[i + 1 :]
            if _is_merge(seq[1:], tuple(sorted(rest))):
                return True
    return False


@pytest.mark.full
def test_concurrent_control_commands_lose_no_update(repo, autodev):
    write_team(repo, SOLO, DONE)
    # No objective: the daemon idles awaiting the user and only applies control requests.
    start_detached(autodev, repo)
    wait_for("awaiting_user", lambda: state_of(repo).get("state") == "awaiting_user")
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, *w],
            cwd=repo,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in WORKERS
    ]
    for p in workers:
        autodev.adopt(p.pid)
    for p in workers:
        _, err = p.communicate(timeout=90)
        assert p.returncode == 0, err
    made = sum(len(w) for w in WORKERS)
    assert state_of(repo)["control_seq"] == made, "a control request was lost"

    # A stop ends the daemon; requests that came after it wait for the next start.
    for _ in range(len(WORKERS)):
        st = state_of(repo)
        if st.get("controls_applied", 0) >= made:
            break
        wait_daemon_gone(autodev, repo) if st.get("state") == "stopped" else None
        from autodev.store.lock import DaemonLock

        if DaemonLock.holder(RunPaths(repo).lock) is None:
            r = autodev(repo, "start", "--foreground", "--until-idle")
            assert r.returncode in (0, 3), r.stdout + r.stderr
        else:
            time.sleep(0.2)
    wait_for("every request applied", lambda: state_of(repo).get("controls_applied") == made)

    st = state_of(repo)
    assert st["control_seq"] == made and st["controls"] == []
    applied = [
        json.loads(x)["action"]
        for x in (run_dir(repo) / "events.jsonl").read_text().splitlines()
        if json.loads(x)["type"] == "control"
    ]
    # Every request is accounted for: applied, or replaced by a later resume made while no daemon
    # ran after a stop (a continuing request cancels the queued stop and pause; docs/DECISIONS.md).
    assert len(applied) + st.get("controls_cancelled", 0) == made
    if not st.get("controls_cancelled"):
        assert Counter(applied) == Counter(a for w in WORKERS for a in w)
        # Applied in the order made: an interleaving that keeps every process's own order.
        assert _is_merge(tuple(applied), tuple(sorted(tuple(w) for w in WORKERS)))
    else:
        assert Counter(applied) - Counter(a for w in WORKERS for a in w) == Counter()
    # No turn ever ran: control requests alone never make posts.
    assert thread_of(repo) == []


# -- torn tails and corruption ----------------------------------------------------------------


def finished_run(autodev, repo) -> None:
    write_team(repo, SOLO, DONE + say_to_user(1))
    r = autodev(repo, "start", "--foreground", "--until-idle", "finish up")
    assert r.returncode == 0, r.stdout + r.stderr
    assert state_of(repo)["state"] == "complete"


@pytest.mark.full
def test_torn_tails_are_dropped_and_the_run_continues(repo, autodev):
    finished_run(autodev, repo)
    rd = run_dir(repo)
    before = {n: (rd / n).read_bytes() for n in ("thread.jsonl", "events.jsonl")}
    n_posts = len(thread_of(repo))
    with open(rd / "thread.jsonl", "ab") as f:
        f.write(b'{"seq": %d, "from": "solo", "kind": "say", "te' % (n_posts + 1))
    with open(rd / "events.jsonl", "ab") as f:
        f.write(b'{"type": "post", "ts": "2026-')

    r = autodev(repo, "start", "--foreground", "--until-idle", "one more thing")
    assert r.returncode == 3, r.stdout + r.stderr  # solo's question to the user
    for n in ("thread.jsonl", "events.jsonl"):
        data = (rd / n).read_bytes()
        assert data.startswith(before[n]), f"{n}: the torn bytes were not cut off cleanly"
        assert b'"te{' not in data and b'"2026-{' not in data
        records(rd / n)
    posts = thread_of(repo)
    assert_contiguous(posts)
    assert [(p["from"], p["text"]) for p in posts[n_posts:]] == [
        ("user", "one more thing"),
        ("solo", "question 1"),
    ]


def corrupt_line_2(autodev, repo) -> dict[str, bytes]:
    finished_run(autodev, repo)
    rd = run_dir(repo)
    lines = (rd / "thread.jsonl").read_bytes().split(b"\n")
    lines[1] = b'{"seq": 2, "from": "solo", "kind": BROKEN'
    (rd / "thread.jsonl").write_bytes(b"\n".join(lines))
    return snapshot(repo)


def snapshot(repo) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in run_dir(repo).iterdir()
        if p.is_file() and p.name.endswith((".jsonl", ".json"))
    }


def assert_refused_unchanged(r, repo, before: dict[str, bytes]) -> None:
    assert r.returncode == 1, r.stdout + r.stderr
    assert "line 2" in r.stderr and "thread.jsonl" in r.stderr, r.stderr
    after = snapshot(repo)
    for name in ("thread.jsonl", "events.jsonl", "harness.jsonl"):
        assert after[name] == before[name], f"{name} changed"
    assert json.loads(after["state.json"])["state"] == "complete"


@pytest.mark.full
def test_corruption_mid_thread_is_refused_and_nothing_changes(repo, autodev, inproc):
    before = corrupt_line_2(autodev, repo)
    for _ in range(2):  # refused every time, not repaired by the first attempt
        assert_refused_unchanged(autodev(repo, "start", "--foreground", "--until-idle"), repo, before)
    assert inproc(repo, "send", "more").returncode == 0
    assert_refused_unchanged(autodev(repo, "start", "--foreground", "--until-idle"), repo, before)


@pytest.mark.full
def test_corruption_refused_by_a_detached_start(repo, autodev):
    before = corrupt_line_2(autodev, repo)
    assert_refused_unchanged(autodev(repo, "start"), repo, before)


@pytest.mark.full
def test_a_log_line_that_does_not_fit_its_schema_is_refused_with_file_and_line(repo, autodev):
    finished_run(autodev, repo)
    rd = run_dir(repo)
    lines = (rd / "harness.jsonl").read_bytes().split(b"\n")
    rec = json.loads(lines[1])
    rec["turn"] = "not a number"  # valid JSON, not a harness record
    lines[1] = json.dumps(rec).encode()
    (rd / "harness.jsonl").write_bytes(b"\n".join(lines))
    before = snapshot(repo)
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "harness.jsonl: line 2 does not fit its schema (" in r.stderr, r.stderr
    assert ".turn: Input should be a valid integer" in r.stderr, r.stderr  # the field and why
    assert "Traceback" not in r.stderr
    assert snapshot(repo) == before


# -- a full disk --------------------------------------------------------------------------------


def asked_and_answered(autodev, repo) -> list[Path]:
    """solo asked the user and the answer waits in the inbox; returns the run's three logs."""
    write_team(repo, SOLO, say_to_user(1) + DONE)
    r = autodev(repo, "start", "--foreground", "--until-idle", "ask me first")
    assert r.returncode == 3, r.stdout + r.stderr
    assert autodev(repo, "send", "go ahead").returncode == 0
    rd = run_dir(repo)
    return [rd / n for n in ("thread.jsonl", "events.jsonl", "harness.jsonl")]


@pytest.mark.full
def test_disk_full_faults_the_run_then_start_resumes(repo, autodev, inproc):
    logs = asked_and_answered(autodev, repo)
    sizes = {p.name: p.stat().st_size for p in logs}
    # The harness log is the largest (turn_started carries the prompts), so with files capped
    # just above it the user's post and its events still fit and the next turn's intent record
    # does not: the failure lands mid-loop, on an append.
    assert sizes["harness.jsonl"] == max(sizes.values()), sizes
    limit = sizes["harness.jsonl"] + 16

    r = capped_start(autodev, repo, limit)
    assert r.returncode == 1, r.stdout + r.stderr
    st = status_json(inproc, repo)
    assert st["state"] == "faulted", st
    assert st["reason"]["code"] == "fault"
    assert "could not append" in st["reason"]["text"]
    assert st["reason"]["continue"] == "fix the cause, then autodev start"
    for path in logs:
        records(path)  # nothing torn: a failed append takes back its partial line
    assert max(p.stat().st_size for p in logs) <= limit
    posts = thread_of(repo)
    assert_contiguous(posts)
    assert posts[-1]["text"] == "go ahead"
    assert not list(RunPaths(repo).inbox.glob("*.json"))

    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    posts = thread_of(repo)
    assert_contiguous(posts)
    assert shape(posts) == [
        ("user", "say", None, None),
        ("solo", "say", "user", None),
        ("user", "say", None, None),
        ("solo", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert [p["text"] for p in posts if p["from"] == "user"] == ["ask me first", "go ahead"]
    for path in logs:
        records(path)
    assert status_json(inproc, repo)["state"] == "complete"


def capped_start(autodev, repo, limit: int) -> subprocess.CompletedProcess:
    """`start --foreground --until-idle` with every file it writes capped at `limit` bytes."""

    def cap():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = subprocess.Popen(
        [sys.executable, "-m", "autodev", "start", "--foreground", "--until-idle"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=cap,
        stdin=subprocess.DEVNULL,
    )
    autodev.adopt(p.pid)
    out, err = p.communicate(timeout=60)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@pytest.mark.full
def test_disk_full_at_start_faults_the_run(repo, autodev, inproc):
    logs = asked_and_answered(autodev, repo)
    rd = run_dir(repo)
    # A valid event line of 8 KiB, so the cap below leaves state.json room to record the fault.
    pad = {"type": "warning", "ts": "2026-01-01T00:00:00Z", "run": "x", "schema": 1, "message": "p" * 8192}
    with open(rd / "events.jsonl", "a") as f:
        f.write(json.dumps(pad) + "\n")
    before = {p.name: p.read_bytes() for p in logs}
    # events.jsonl cannot grow at all: the very first append, at start-up, fails.
    r = capped_start(autodev, repo, (rd / "events.jsonl").stat().st_size)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "could not append" in r.stdout + r.stderr
    assert {p.name: p.read_bytes() for p in logs} == before  # nothing further was written
    st = status_json(inproc, repo)
    assert st["daemon_pid"] is None
    assert st["state"] == "faulted" and st["reason"]["code"] == "fault", st
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr


# -- one daemon per repository -------------------------------------------------------------------


@pytest.mark.full
def test_second_daemon_refused_and_stale_lock_taken_over(repo, autodev, inproc):
    write_team(repo, SOLO, say_to_user(1) + DONE)
    pid = start_detached(autodev, repo, "ask me")
    wait_for("awaiting_user", lambda: state_of(repo).get("state") == "awaiting_user")
    for args in (["start"], ["start", "--foreground", "--until-idle"]):
        r = autodev(repo, *args)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "already running" in r.stderr and str(pid) in r.stderr
    assert len(thread_of(repo)) == 2

    kill_group(pid)  # the daemon dies without releasing anything by itself
    wait_for(
        "the daemon to die",
        lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2],
    )
    lock = RunPaths(repo).lock
    assert lock.exists() and lock.read_text().strip() == str(pid)  # the stale lock is left
    assert status_json(inproc, repo)["daemon_pid"] is None

    assert inproc(repo, "send", "carry on").returncode == 0
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo))[-3:] == [
        ("user", "say", None, None),
        ("solo", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert_contiguous(thread_of(repo))


# -- restore reads a bounded tail ----------------------------------------------------------------


def _synthetic_thread(repo, n: int) -> None:
    """A thread of n posts (as an earlier daemon left it, with its index cache), the last a
    question to the user that the user has answered."""
    rd = run_dir(repo)
    rd.mkdir(parents=True, exist_ok=True)
    with open(rd / "thread.jsonl", "w") as f:
        for seq in range(1, n + 1):
            frm = "user" if seq % 2 else "solo"
            f.write(
                json.dumps(
                    {
                        "seq": seq,
                        "from": frm,
                        "kind": "say",
                        "text": f"old post {seq} " + "x" * 60,
                        "handoff": "user" if frm == "solo" else None,
                        "ts": "2026-01-01T00:00:00.000Z",
                    }
                )
                + "\n"
            )
    last = {"user": n if n % 2 else n - 1, "solo": n - 1 if n % 2 else n}
    (rd / "thread-index.json").write_text(json.dumps({"seq": n, "last_spoke": last}))
    # The state.json that daemon left (without one, the start would rebuild it from the whole
    # thread, which is the lost-state path, not a restore).
    state = {
        "schema": 1,
        "version": 1,
        "state": "stopped",
        "reason": None,
        "controls": [],
        "control_seq": 0,
        "run_id": "synthetic",
        "turn": n // 2,
        "objective": "old post 1",
    }
    (rd / "state.json").write_text(json.dumps(state))


def _read_bytes_after_restore(autodev, repo, n: int) -> tuple[int, int]:
    write_team(repo, SOLO, say_to_user(1), "maxTalkTurns = 1000\n")
    _synthetic_thread(repo, n)
    p = autodev.popen(repo, "start", "--foreground", "next question")
    try:
        wait_for(
            "awaiting_user",
            lambda: (
                state_of(repo).get("state") == "awaiting_user"
                and any(x["text"] == "question 1" for x in thread_of_tail(repo))
            ),
            timeout=60,
        )
        io = dict(line.split(": ") for line in Path(f"/proc/{p.pid}/io").read_text().splitlines())
    finally:
        kill_group(p.pid)
        p.wait()
    return int(io["rchar"]), (run_dir(repo) / "thread.jsonl").stat().st_size


def thread_of_tail(repo) -> list[dict]:
    from autodev.store.journal import read_tail

    return read_tail(run_dir(repo) / "thread.jsonl", 5)


@pytest.mark.full
def test_restore_reads_a_bounded_tail_not_the_whole_thread(tmp_path, autodev):
    from tests.conftest import git

    repos = []
    for name in ("small", "big"):
        r = tmp_path / name
        r.mkdir()
        git(r, "init", "-q", "-b", "main")
        (r / "README.md").write_text("x\n")
        (r / ".git" / "info" / "exclude").write_text(".autodev/\n")
        git(r, "add", "-A")
        git(r, "commit", "-qm", "start")
        repos.append(r)
    # Both threads are far larger than any tail the daemon reads (blocks of 64 KiB, a 256 KiB
    # check on open), so a bounded restore reads the same amount of each; reading the whole
    # file would cost the big one ~8 MB more.
    small_read, small_size = _read_bytes_after_restore(autodev, repos[0], 5_001)
    big_read, big_size = _read_bytes_after_restore(autodev, repos[1], 50_001)
    assert small_size > 800_000 and big_size - small_size > 8_000_000
    # Everything else the daemon reads (code, config, prompts) is the same for both runs, so
    # the difference is what it read of the thread: a bounded tail, not the file.
    assert abs(big_read - small_read) < (big_size - small_size) / 10, (small_read, big_read)
    posts = thread_of_tail(repos[1])
    assert [p["seq"] for p in posts] == list(range(50_003 - 4, 50_003 + 1))
