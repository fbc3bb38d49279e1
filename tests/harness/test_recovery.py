"""Recovery of an interrupted turn.

The first half feeds `rebuild` hand-written harness-log records (the prefixes a crash can leave)
and checks what the resumed turn will do with each call. The second half kills a real daemon
with SIGKILL while a tool runs and checks the restart: an unsafe command is answered
"interrupted" and never runs twice, a read is simply run again.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from autodev import records
from autodev.harness.recovery import CRASHED, INTERRUPTED, Began, rebuild
from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import SOLO, events_of, kill_group, records_of, requests_of, wait_for

RUN = "r1"
SYSTEM = {"role": "system", "content": "you are solo"}
PROMPT = {"role": "user", "content": "turn 3: your move"}
BASELINE = {"head": "abc123", "dirty": {}}


def started(turn: int = 3) -> dict:
    return {
        "type": "turn_started",
        "run": RUN,
        "turn": turn,
        "participant": "solo",
        "head": "abc123",
        "baseline": BASELINE,
        "messages": [SYSTEM, PROMPT],
    }


def call(cid: str, name: str, args: dict | None = None) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args or {})}}


def gen_started(step: int, attempt: int = 1) -> dict:
    return {
        "type": "generation_started",
        "run": RUN,
        "turn": 3,
        "step": step,
        "attempt": attempt,
        "model": "scripted",
    }


def gen_finished(
    step: int,
    calls: list[dict],
    content: str | None = None,
    tokens: tuple[int, int] = (10, 2),
    cost: float | None = 0.5,
) -> dict:
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = calls
    return {
        "type": "generation_finished",
        "run": RUN,
        "turn": 3,
        "step": step,
        "message": msg,
        "model": "scripted",
        "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1],
        "cost": cost,
    }


def tool_started(cid: str, name: str, args: dict, safe: bool) -> dict:
    return {
        "type": "tool_started",
        "run": RUN,
        "turn": 3,
        "call_id": cid,
        "name": name,
        "args": args,
        "replay_safe": safe,
    }


def tool_finished(cid: str, result: str) -> dict:
    return {"type": "tool_finished", "run": RUN, "turn": 3, "call_id": cid, "result": result}


# -- rebuild on hand-written records ----------------------------------------------------------


def test_agent_runs_count_their_usage_once_and_the_run_a_crash_cut_short_is_named():
    used = {"model": "agent:claude", "generations": 1, "prompt_tokens": 150, "completion_tokens": 20}
    recs = [
        started(),
        {"type": "agent_started", "run": RUN, "turn": 3, "agent": "claude", "pid": 11, "stream": "a/1.jsonl"},
        {
            "type": "agent_finished",
            "run": RUN,
            "turn": 3,
            "agent": "claude",
            "pid": 11,
            "usage": {**used, "cost": 0.5},
        },
        {"type": "agent_started", "run": RUN, "turn": 3, "agent": "claude", "pid": 12, "stream": "a/2.jsonl"},
    ]
    r = rebuild(recs)
    assert (r.spent.total.prompt_tokens, r.spent.total.completion_tokens, r.spent.total.cost, r.steps) == (
        150,
        20,
        0.5,
        0,
    )
    assert r.spent.models["agent:claude"].generations == 1
    assert [a.pid for a in r.unfinished_agents] == [12]
    # the resumed turn closes the cut-short run with a record of its own: counted, not pending
    r = rebuild(
        [
            *recs,
            {
                "type": "agent_finished",
                "run": RUN,
                "turn": 3,
                "agent": "claude",
                "pid": 12,
                "usage": {**used, "cost": 0.0},
                "recovered": True,
            },
        ]
    )
    assert r.spent.total.prompt_tokens == 300 and r.unfinished_agents == []


def test_only_turn_started_resumes_at_the_first_step():
    r = rebuild([started()])
    assert (r.turn, r.participant, r.steps, r.attempts) == (3, "solo", 0, 0)
    assert r.messages == [SYSTEM, PROMPT]
    assert r.baseline == BASELINE
    assert r.pending == [] and not r.nudged and not r.told


def test_finished_tools_are_reused_and_unfinished_ones_are_pending():
    cmd = {"command": "echo hi >> marker"}
    calls = [
        call("c1", "read_file", {"path": "a.txt"}),
        call("c2", "run_command", cmd),
        call("c3", "read_file", {"path": "b.txt"}),
        call("c4", "write_file", {"path": "c.txt", "content": "x"}),
    ]
    recs = [
        started(),
        gen_started(1),
        gen_finished(1, calls),
        tool_started("c1", "read_file", {"path": "a.txt"}, True),
        tool_finished("c1", "1\thello"),
        tool_started("c2", "run_command", cmd, False),
    ]
    r = rebuild(recs)
    assert r.steps == 1 and r.attempts == 0
    # The finished call's result is replayed from the log, right after the model's message.
    assert r.messages[2]["tool_calls"] == calls
    assert r.messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "1\thello"}
    assert len(r.messages) == 4
    # The unsafe call that started without a result is pending WITH its intent record, so the
    # turn answers it "interrupted" instead of running it again; later calls never started.
    assert [(c["id"], b) for c, b in r.pending] == [
        ("c2", Began(records.harness(recs[-1]), crashes=1)),
        ("c3", None),
        ("c4", None),
    ]
    began = r.pending[0][1]
    assert began is not None and began.started.replay_safe is False


def test_a_started_unfinished_write_file_is_pending_with_its_intent():
    args = {"path": "c.txt", "content": "x"}
    recs = [
        started(),
        gen_started(1),
        gen_finished(1, [call("w1", "write_file", args)]),
        tool_started("w1", "write_file", args, False),
    ]
    r = rebuild(recs)
    [(c, began)] = r.pending
    assert c["function"]["name"] == "write_file"
    assert began is not None and began.started.replay_safe is False and began.started.args == args


def test_a_started_unfinished_read_is_pending_as_replay_safe():
    args = {"path": "a.txt"}
    recs = [
        started(),
        gen_started(1),
        gen_finished(1, [call("r1", "read_file", args)]),
        tool_started("r1", "read_file", args, True),
    ]
    r = rebuild(recs)
    [(c, began)] = r.pending
    assert c["id"] == "r1" and began is not None and began.started.replay_safe is True


def test_a_never_started_call_is_pending_without_intent():
    recs = [started(), gen_started(1), gen_finished(1, [call("p1", "post", {"kind": "say", "text": "hi"})])]
    r = rebuild(recs)
    assert [(c["id"], b) for c, b in r.pending] == [("p1", None)]


def test_only_the_last_generation_can_leave_pending_calls():
    # Step 1's call finished; step 2's answer is known but its call never started.
    recs = [
        started(),
        gen_started(1),
        gen_finished(1, [call("a", "list_files")]),
        tool_started("a", "list_files", {}, True),
        tool_finished("a", "README.md"),
        gen_started(2),
        gen_finished(2, [call("b", "run_command", {"command": "ls"})]),
    ]
    r = rebuild(recs)
    assert r.steps == 2
    assert [m["role"] for m in r.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [(c["id"], b) for c, b in r.pending] == [("b", None)]


def test_tokens_and_cost_add_up_over_finished_generations():
    recs = [
        started(),
        gen_started(1),
        gen_finished(1, [], content="thinking", tokens=(100, 7), cost=0.25),
        gen_started(2),
        gen_finished(2, [call("x", "list_files")], tokens=(120, 9), cost=None),
    ]
    r = rebuild(recs)
    assert (r.spent.total.prompt_tokens, r.spent.total.completion_tokens, r.spent.total.cost) == (
        220,
        16,
        0.25,
    )


def test_attempts_of_the_next_step_survive_a_restart():
    recs = [
        started(),
        gen_started(1, attempt=1),
        gen_finished(1, [call("a", "list_files")]),
        tool_started("a", "list_files", {}, True),
        tool_finished("a", "x"),
        gen_started(2, attempt=1),
        gen_started(2, attempt=2),
        gen_started(2, attempt=3),
    ]
    r = rebuild(recs)
    assert r.steps == 1
    assert r.attempts == 3  # the next request is attempt 4, never a fresh 1


def test_attempts_of_a_finished_step_do_not_carry_over():
    recs = [
        started(),
        gen_started(1, attempt=1),
        gen_started(1, attempt=2),
        gen_finished(1, [call("a", "list_files")]),
    ]
    r = rebuild(recs)
    assert r.steps == 1 and r.attempts == 0


def test_generation_failed_resets_the_attempt_count():
    recs = [
        started(),
        gen_started(1, 1),
        gen_started(1, 2),
        gen_started(1, 3),
        {"type": "generation_failed", "run": RUN, "turn": 3, "error": "500 x3"},
    ]
    assert rebuild(recs).attempts == 0
    # ...and attempts after the user's retry count again from there.
    assert rebuild(recs + [gen_started(1, 1)]).attempts == 1


def test_nudged_is_restored_with_its_message():
    nudge = {"role": "user", "content": "you have not posted yet"}
    recs = [
        started(),
        gen_started(1),
        gen_finished(1, [], content="hmm"),
        {"type": "nudged", "run": RUN, "turn": 3, "message": nudge},
    ]
    r = rebuild(recs)
    assert r.nudged is True
    assert r.messages[-1] == nudge and r.messages[-2]["content"] == "hmm"
    assert r.pending == []
    assert rebuild(recs[:-1]).nudged is False


def test_told_only_when_the_notice_was_raised():
    args = {"text": "please log in"}
    base = [
        started(),
        gen_started(1),
        gen_finished(1, [call("t", "tell_user", args)]),
        tool_started("t", "tell_user", args, False),
    ]
    assert rebuild(base).told is False  # started, no result: unknown, so not counted
    assert rebuild(base + [tool_finished("t", "error: tell_user needs text")]).told is False
    r = rebuild(base + [tool_finished("t", "notice 4 raised; the user's answer will reach you")])
    assert r.told is True and r.pending == []


# -- a real daemon killed while a tool runs ----------------------------------------------------

# The command records each run of itself in .marker, then sleeps: a re-run would add a line.
SLOW_COMMAND = "echo $$ > .cmdpid; echo ran >> .marker; sleep 5; echo done >> .marker"

COMMAND_SCRIPT = f"""
[[step]]
participant = "solo"
calls = [{{ tool = "run_command", args = {{ command = "{SLOW_COMMAND}" }} }}]
[[step]]
participant = "solo"
calls = [{{ tool = "post", args = {{ kind = "done", text = "ran the command" }} }}]
[[step]]
participant = "audit"
calls = [{{ tool = "verdict", args = {{ accept = true, gap = "" }} }}]
"""

READ_SCRIPT = """
[[step]]
participant = "solo"
calls = [{ tool = "search", args = { pattern = "contents", path = "slow.txt" } }]
[[step]]
participant = "solo"
calls = [{ tool = "post", args = { kind = "done", text = "read the file" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


def _tool_started(repo, name):
    return lambda: any(
        r.get("type") == "tool_started" and r.get("name") == name
        for r in records_of(run_dir(repo) / "harness.jsonl")
    )


def _exclude(repo, *names: str) -> None:
    with open(repo / ".git" / "info" / "exclude", "a") as f:
        f.write("".join(n + "\n" for n in names))


@pytest.mark.full
def test_unsafe_command_killed_mid_run_is_interrupted_never_rerun(repo, autodev):
    write_team(repo, SOLO, COMMAND_SCRIPT)
    _exclude(repo, ".marker", ".cmdpid")
    p = autodev.popen(repo, "start", "--foreground", "--until-idle", "run the slow command")
    wait_for(
        "the command to start",
        lambda: (
            _tool_started(repo, "run_command")()
            and (repo / ".marker").exists()
            and (repo / ".cmdpid").exists()
            and (repo / ".cmdpid").read_text().strip()
        ),
    )
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    # The command runs in a session of its own; a crash of the whole machine takes it too.
    cmd_pgid = int((repo / ".cmdpid").read_text())
    autodev.adopt(cmd_pgid)
    kill_group(cmd_pgid)
    assert (repo / ".marker").read_text() == "ran\n"

    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    # Never run a second time (a re-run would have written "ran" again).
    assert (repo / ".marker").read_text() == "ran\n"
    # The model's next request carries the synthetic result for the interrupted call.
    reqs = requests_of(repo, "solo")
    tool_msgs = [m for m in reqs[-1]["body"]["messages"] if m.get("role") == "tool"]
    assert [m["content"] for m in tool_msgs] == [INTERRUPTED]
    assert INTERRUPTED.startswith("interrupted: ")
    assert [(x["from"], x["kind"]) for x in thread_of(repo)] == [
        ("user", "say"),
        ("solo", "done"),
        ("audit", "say"),
    ]
    hl = records_of(run_dir(repo) / "harness.jsonl")
    assert [x["type"] for x in hl].count("turn_started") == 1  # the same turn, resumed
    fin = [x for x in hl if x["type"] == "tool_finished"]
    assert len(fin) == 1 and fin[0]["result"] == INTERRUPTED and fin[0].get("synthetic")
    ev = events_of(repo)
    assert any(e["type"] == "turn_recovered" and e["participant"] == "solo" for e in ev)
    assert [e["name"] for e in ev if e["type"] == "tool_interrupted"] == ["run_command"]


@pytest.mark.full
def test_read_killed_mid_run_is_run_again(repo, autodev):
    write_team(repo, SOLO, READ_SCRIPT)
    _exclude(repo, "slow.txt")
    # A FIFO with no writer: the search blocks reading it until the daemon is killed.
    os.mkfifo(repo / "slow.txt")
    p = autodev.popen(repo, "start", "--foreground", "--until-idle", "read the slow file")
    wait_for("the read to start", _tool_started(repo, "search"))
    time.sleep(0.2)
    assert p.poll() is None, "search should still be blocked on the FIFO"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    hl = records_of(run_dir(repo) / "harness.jsonl")
    assert not any(x["type"] == "tool_finished" for x in hl)

    (repo / "slow.txt").unlink()
    (repo / "slow.txt").write_text("the contents after the restart\n")
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    tool_msgs = [m for m in requests_of(repo, "solo")[-1]["body"]["messages"] if m.get("role") == "tool"]
    assert len(tool_msgs) == 1
    assert "the contents after the restart" in tool_msgs[0]["content"]
    assert "interrupted" not in tool_msgs[0]["content"]
    hl = records_of(run_dir(repo) / "harness.jsonl")
    assert [x["name"] for x in hl if x["type"] == "tool_started"] == ["search", "search"]
    fin = [x for x in hl if x["type"] == "tool_finished"]
    assert len(fin) == 1 and not fin[0].get("synthetic")
    ev = events_of(repo)
    assert not any(e["type"] == "tool_interrupted" for e in ev)
    # The generation made before the kill is counted with the resumed turn, not lost.
    gens = [x for x in hl if x["type"] == "generation_finished" and x["turn"] == 1]
    assert len(gens) >= 2 and all(g["prompt_tokens"] > 0 for g in gens)
    solo = json.loads((run_dir(repo) / "state.json").read_text())["participants"]["solo"]
    assert solo["prompt_tokens"] == sum(g["prompt_tokens"] for g in gens)
    assert solo["completion_tokens"] == sum(g["completion_tokens"] for g in gens)
    assert [(x["from"], x["kind"]) for x in thread_of(repo)] == [
        ("user", "say"),
        ("solo", "done"),
        ("audit", "say"),
    ]


@pytest.mark.full
def test_a_read_in_flight_at_two_crashes_is_not_run_a_third_time(repo, autodev):
    """A replay-safe call that crashes the daemon would crash it at every restart: after two
    crashes with it in flight, it gets an "interrupted" result instead, and the run goes on."""
    write_team(repo, SOLO, READ_SCRIPT)
    _exclude(repo, "slow.txt")
    os.mkfifo(repo / "slow.txt")  # the search blocks on it: in flight when the daemon dies
    for n in (1, 2):
        p = autodev.popen(repo, "start", "--foreground", "--until-idle", *(["read it"] if n == 1 else []))
        wait_for(
            f"search started {n} time(s)",
            lambda n=n: (
                sum(r.get("name") == "search" for r in records_of(run_dir(repo) / "harness.jsonl")) == n
            ),
        )
        time.sleep(0.2)
        assert p.poll() is None
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    tool_msgs = [m for m in requests_of(repo, "solo")[-1]["body"]["messages"] if m.get("role") == "tool"]
    assert [m["content"] for m in tool_msgs] == [CRASHED]
    hl = records_of(run_dir(repo) / "harness.jsonl")
    assert [x["name"] for x in hl if x["type"] == "tool_started"] == ["search", "search"]  # not a 3rd
    crashed = [(e["name"], e["crashes"]) for e in events_of(repo) if e["type"] == "tool_crashed"]
    assert crashed == [("search", 1), ("search", 2)]
    assert [(x["from"], x["kind"]) for x in thread_of(repo)][-2:] == [("solo", "done"), ("audit", "say")]
