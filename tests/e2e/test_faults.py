"""Fault injection: real daemons killed with SIGKILL at seeded random instants, restarted until
the run completes. After every trial the logs must tell one consistent story: the thread parses,
seq is contiguous, no post appears twice, every `send` is on the thread exactly once, no unsafe
tool ran twice, and the thread has the same shape as an uninterrupted run. Then a rewind killed
at a seeded step and its undo leave the run where it was.

AUTODEV_FAULT_TRIALS sets the trial count: one in `make test` (of two rounds), three in
`make test-all` and forty in `make soak` (of four rounds).
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter

import pytest

from tests.conftest import git, run_dir, thread_of, write_team
from tests.e2e.helpers import BUILDER_REVIEWER, records_of

TRIALS = int(os.environ.get("AUTODEV_FAULT_TRIALS", "1"))
# `make test`'s single trial runs two rounds (each restart of a killed daemon pays litellm's
# import, most of the test's time); the soak and `make test-all` run four.
ROUNDS = 2 if TRIALS == 1 else 4


def _script(rounds: int) -> str:
    """Each round: builder writes, appends a marker line (an unsafe effect), commits, posts;
    the reviewer reads and answers. Then done and an accepting audit."""
    steps = []
    for i in range(rounds):
        steps.append(f'''
[[step]]
participant = "builder"
calls = [
  {{ tool = "write_file", args = {{ path = "f{i}.txt", content = "{i}\\n" }} }},
  {{ tool = "run_command", args = {{ command = "echo b{i} >> .marker && git add f{i}.txt && git commit -qm f{i}" }} }},
]
[[step]]
participant = "builder"
calls = [{{ tool = "post", args = {{ kind = "work_done", text = "f{i} added", handoff = "reviewer" }} }}]
[[step]]
participant = "reviewer"
calls = [{{ tool = "read_file", args = {{ path = "f{i}.txt" }} }},
         {{ tool = "run_command", args = {{ command = "echo r{i} >> .marker" }} }}]
[[step]]
participant = "reviewer"
calls = [{{ tool = "post", args = {{ kind = "say", text = "f{i} reviewed", handoff = "builder" }} }}]
''')
    steps.append("""
[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "done", text = "all files added" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
""")
    return "".join(steps)


def _setup(repo, rounds=ROUNDS):
    write_team(repo, BUILDER_REVIEWER, _script(rounds), "maxTalkTurns = 50\n")
    with open(repo / ".git" / "info" / "exclude", "a") as f:
        f.write(".marker\n")


def _objective_given(repo) -> bool:
    """Queued in the inbox or already on the thread (appended before its inbox file goes)."""
    d = run_dir(repo)
    queued = (d / "inbox").exists() and any((d / "inbox").glob("*.json"))
    return queued or any(p["from"] == "user" for p in records_of(d / "thread.jsonl"))


def _lines(path) -> int:
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def _check(repo, reference_shape, sends: list[str]) -> dict:
    posts = thread_of(repo)
    assert [p["seq"] for p in posts] == list(range(1, len(posts) + 1)), "seq must be contiguous"
    ids = [p["id"] for p in posts if "id" in p]
    assert len(ids) == len(set(ids)), f"a post appears twice: {Counter(ids).most_common(2)}"
    user_texts = [p["text"] for p in posts if p["from"] == "user"]
    for s in sends:
        assert user_texts.count(s) == 1, f"send {s!r} is on the thread {user_texts.count(s)} times"
    marker = (repo / ".marker").read_text().split() if (repo / ".marker").exists() else []
    dup = [m for m, n in Counter(marker).items() if n > 1]
    assert not dup, f"an unsafe tool ran twice: {dup}"
    shape = [(p["from"], p["kind"], p.get("handoff")) for p in posts]
    assert shape == reference_shape
    return {"posts": len(posts), "markers": len(marker)}


def _rewind_killed(autodev, repo, reference_shape, rnd: random.Random) -> int:
    """A rewind to a seeded post, killed -9 at a seeded step, then `rewind --undo` (which first
    finishes a rewind a kill cut short): the run is back where it was, whatever the step."""
    from autodev.store.thread import read_live
    from autodev.timeline.rewind import KILL_AT, STEPS

    head = git(repo, "rev-parse", "HEAD").strip()
    seq = rnd.randint(2, len(reference_shape) - 1)
    step = rnd.choice(["planned", *STEPS])
    r = autodev(repo, "rewind", str(seq), env={KILL_AT: step})
    assert r.returncode == -signal.SIGKILL, r.stdout + r.stderr
    r = autodev(repo, "rewind", "--undo")
    assert r.returncode == (2 if step == "planned" else 0), r.stdout + r.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == head
    live = read_live(run_dir(repo) / "thread.jsonl")
    posts = [p for p in thread_of(repo) if live.is_live(p["seq"]) and "rewind" not in p]
    assert [(p["from"], p["kind"], p.get("handoff")) for p in posts] == reference_shape
    return 0 if step == "planned" else 1


@pytest.mark.timeout(180 + 110 * TRIALS)  # each trial also rewinds and undoes (two CLI calls)
def test_reference_and_killed_runs_agree(repo, tmp_path, autodev):
    _setup(repo)
    r = autodev(repo, "start", "--foreground", "--until-idle", "add the files")
    assert r.returncode == 0, r.stdout + r.stderr
    reference = [(p["from"], p["kind"], p.get("handoff")) for p in thread_of(repo)]
    assert len(reference) == 1 + ROUNDS * 2 + 2

    rnd = random.Random(20261130)
    totals = {"trials": 0, "kills": 0, "recoveries": 0}
    for trial in range(TRIALS):
        trepo = tmp_path / f"trial{trial}"
        trepo.mkdir()
        git(trepo, "init", "-q", "-b", "main")
        (trepo / "README.md").write_text("x\n")
        git(trepo, "add", "-A")
        git(trepo, "commit", "-qm", "start")
        (trepo / ".git" / "info" / "exclude").write_text(".autodev/\n")
        _setup(trepo)
        hlog = run_dir(trepo) / "harness.jsonl"
        for _attempt in range(60):
            # A `start` killed before it queued its objective never gave one: give it again,
            # as a user would. Once queued (inbox) or posted (thread), it is never given twice.
            args = ["start", "--foreground", "--until-idle"]
            if not _objective_given(trepo):
                args.append("add the files")
            p = autodev.popen(trepo, *args)
            # Kill at a seeded point of the run's progress: once the harness log has grown by a
            # random number of records, plus a random sub-second delay (anywhere in a step).
            target = _lines(hlog) + rnd.randint(0, 12)
            deadline = time.time() + 60
            while p.poll() is None and _lines(hlog) < target and time.time() < deadline:
                time.sleep(0.005)
            time.sleep(rnd.uniform(0, 0.05))
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                totals["kills"] += 1
                continue
            assert p.returncode == 0, p.stdout.read() + p.stderr.read()
            break
        else:
            pytest.fail("the run never completed")
        events = [json.loads(x) for x in (run_dir(trepo) / "events.jsonl").read_text().splitlines()]
        totals["recoveries"] += sum(e["type"] == "turn_recovered" for e in events)
        totals["trials"] += 1
        _check(trepo, reference, ["add the files"])
        totals["rewinds"] = totals.get("rewinds", 0) + _rewind_killed(autodev, trepo, reference, rnd)
    assert totals["trials"] == TRIALS
    print(f"fault suite: {totals}")
