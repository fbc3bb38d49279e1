"""Rebuild an interrupted turn from its harness-log records (pure: records in, state out).

The log holds, for each turn, the intent before every effect and the result after it. From any
prefix of it we can tell which model answers are known (reuse them), which tools finished
(reuse their results), which started without a result (re-run if safe to replay, otherwise
answer "interrupted" — never run an unsafe tool twice), and how many attempts a request has
already had (the count survives restarts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autodev.harness import compaction
from autodev.records.state import Spent, TurnUsage

INTERRUPTED = (
    "interrupted: autodev restarted while this tool was running, so it may or may not "
    "have taken effect. Check the repository's state before you run it again."
)

CRASHED = (
    "interrupted: autodev crashed twice while this tool was running, so it is not run again. "
    "Try another way (a narrower path, a smaller request), or tell the user."
)


@dataclass
class Resume:
    turn: int
    participant: str
    messages: list[dict[str, object]]
    baseline: dict[str, object]
    steps: int = 0  # generations finished
    attempts: int = 0  # attempts already made for the next generation
    nudged: bool = False
    told: bool = False
    spent: Spent = field(default_factory=Spent)  # what the turn spent so far, as TurnResult
    compactions: int = 0  # compacted records of this turn: status counts them once the turn ends
    origins: dict[int, str] = field(default_factory=dict)  # assistant message index -> its model
    # (call, its newest tool_started with "crashes": how many times it started without a result)
    pending: list[tuple[dict, dict | None]] = field(default_factory=list)
    # agent_started records of CLI runs with no agent_finished: the crash cut them short
    unfinished_agents: list[dict[str, object]] = field(default_factory=list)


def rebuild(records: list[dict]) -> Resume:
    """`records` are one turn's harness-log records, oldest first, starting with turn_started."""
    start = records[0]
    assert start["type"] == "turn_started", "a turn's records begin with turn_started"
    r = Resume(start["turn"], start["participant"], [dict(m) for m in start["messages"]], start["baseline"])
    finished: dict[str, str] = {}
    started: dict[str, dict] = {}
    for rec in records[1:]:
        t = rec["type"]
        if t == "tool_finished":
            finished[rec["call_id"]] = rec["result"]
        elif t == "tool_started":
            # Each restart that replays a call logs it again: the count is the crashes it saw.
            n = started.get(rec["call_id"], {}).get("crashes", 0)
            started[rec["call_id"]] = {**rec, "crashes": n + 1}
    r.told = any(
        started.get(cid, {}).get("name") == "tell_user" and res.startswith("notice ")
        for cid, res in finished.items()
    )
    last_calls: list[dict] = []
    for rec in records[1:]:
        t = rec["type"]
        if t == "generation_started":
            r.attempts = rec["attempt"] if rec["step"] == r.steps + 1 else r.attempts
        elif t == "generation_finished":
            r.steps, r.attempts = rec["step"], 0
            r.spent.add(rec.get("model") or "?", TurnUsage.of({**rec, "generations": 1}))
            r.messages.append(rec["message"])
            r.origins[len(r.messages) - 1] = rec.get("source") or rec.get("model", "")
            last_calls = list(rec["message"].get("tool_calls") or [])
            for call in last_calls:
                if call["id"] in finished:
                    r.messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": finished[call["id"]]}
                    )
            last_calls = [c for c in last_calls if c["id"] not in finished]
        elif t == "generation_failed":
            r.attempts = 0  # the user chose to try again after retries ran out
        elif t == "compacted":
            compaction.apply(r.messages, rec["stubs"])
            r.compactions += 1
        elif t == "nudged":
            r.nudged = True
            r.messages.append(rec["message"])
        elif t == "agent_started":
            r.unfinished_agents.append(rec)
        elif t == "agent_finished":
            r.unfinished_agents = [a for a in r.unfinished_agents if a.get("pid") != rec.get("pid")]
            used = rec.get("usage")  # what one agent CLI run used
            if used:
                r.spent.add(used.get("model") or "?", TurnUsage.of(used))
    r.pending = [(c, started.get(c["id"])) for c in last_calls]
    return r
