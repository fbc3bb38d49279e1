"""Rebuild an interrupted turn from its harness-log records (pure: records in, state out).

The log holds, for each turn, the intent before every effect and the result after it. From any
prefix of it we can tell which model answers are known (reuse them), which tools finished
(reuse their results), which started without a result (re-run if safe to replay, otherwise
answer "interrupted" — never run an unsafe tool twice), and how many attempts a request has
already had (the count survives restarts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import assert_never

from autodev import records
from autodev.harness import compaction
from autodev.harness.messages import Message, ToolCall, ToolMessage, assistant, calls_of, message
from autodev.records import (
    AgentFinished,
    AgentStarted,
    Compacted,
    GenerationFailed,
    GenerationFinished,
    GenerationStarted,
    HarnessRecord,
    Nudged,
    PostCommitted,
    PostStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from autodev.records.state import Spent, TurnUsage
from autodev.store.journal import JsonObject

INTERRUPTED = (
    "interrupted: autodev restarted while this tool was running, so it may or may not "
    "have taken effect. Check the repository's state before you run it again."
)

CRASHED = (
    "interrupted: autodev crashed twice while this tool was running, so it is not run again. "
    "Try another way (a narrower path, a smaller request), or tell the user."
)


@dataclass(frozen=True)
class Began:
    """A call's newest tool_started record, and how many times it started without a result
    (each restart that replays a call logs it again: the count is the crashes it saw)."""

    started: ToolStarted
    crashes: int = 1


@dataclass
class Resume:
    turn: int
    participant: str
    messages: list[Message]
    baseline: JsonObject  # credit's baseline as the log holds it (credit.baseline_from_json)
    steps: int = 0  # generations finished
    attempts: int = 0  # attempts already made for the next generation
    nudged: bool = False
    told: bool = False
    spent: Spent = field(default_factory=Spent)  # what the turn spent so far, as TurnResult
    compactions: int = 0  # compacted records of this turn: status counts them once the turn ends
    origins: dict[int, str] = field(default_factory=dict[int, str])  # assistant message index -> its model
    # the calls of the last known model answer with no result, and how each last began
    pending: list[tuple[ToolCall, Began | None]] = field(
        default_factory=list[tuple[ToolCall, "Began | None"]]
    )
    # agent_started records of CLI runs with no agent_finished: the crash cut them short
    unfinished_agents: list[AgentStarted] = field(default_factory=list[AgentStarted])


def rebuild(lines: Sequence[HarnessRecord | JsonObject]) -> Resume:
    """`lines` are one turn's harness-log records, oldest first, starting with turn_started (a
    line still as read is parsed into its record here)."""
    recs: list[HarnessRecord] = [records.harness(r) if isinstance(r, dict) else r for r in lines]
    start = recs[0]
    assert isinstance(start, TurnStarted), "a turn's records begin with turn_started"
    r = Resume(
        start.turn, start.participant, [message(dict(m)) for m in start.messages], start.baseline.dump()
    )
    finished = {rec.call_id: rec.result for rec in recs if isinstance(rec, ToolFinished)}
    started = _began(recs)
    r.told = any(
        cid in started and started[cid].started.name == "tell_user" and res.startswith("notice ")
        for cid, res in finished.items()
    )
    last_calls: list[ToolCall] = []
    for rec in recs[1:]:
        last_calls = _replay(r, rec, finished, last_calls)
    r.pending = [(c, started.get(c["id"])) for c in last_calls]
    return r


def _began(recs: Sequence[HarnessRecord]) -> dict[str, Began]:
    out: dict[str, Began] = {}
    for rec in recs:
        if isinstance(rec, ToolStarted):
            before = out.get(rec.call_id)
            out[rec.call_id] = Began(rec, before.crashes + 1 if before else 1)
    return out


def _replay(
    r: Resume, rec: HarnessRecord, finished: Mapping[str, str], calls: list[ToolCall]
) -> list[ToolCall]:
    """One record replayed into `r`; the calls of the last known answer still without a result."""
    match rec:
        case GenerationStarted():
            r.attempts = rec.attempt if rec.step == r.steps + 1 else r.attempts
        case GenerationFinished():
            return _generated(r, rec, finished)
        case GenerationFailed():
            r.attempts = 0  # the user chose to try again after retries ran out
        case Compacted():
            compaction.apply(r.messages, rec.stubs)
            r.compactions += 1
        case Nudged():
            r.nudged = True
            r.messages.append(message(rec.message))
        case AgentStarted():
            r.unfinished_agents.append(rec)
        case AgentFinished():
            _agent_finished(r, rec)
        case (
            TurnStarted() | ToolStarted() | ToolFinished() | PostStarted() | PostCommitted() | TurnFinished()
        ):
            pass  # read above (the calls), or nothing a resumed turn carries on from
        case _:
            assert_never(rec)
    return calls


def _generated(r: Resume, rec: GenerationFinished, finished: Mapping[str, str]) -> list[ToolCall]:
    r.steps, r.attempts = rec.step, 0
    r.spent.add(
        rec.model or "?",
        TurnUsage(
            generations=1,
            prompt_tokens=rec.prompt_tokens,
            completion_tokens=rec.completion_tokens,
            cached_tokens=rec.cached_tokens,
            cost=rec.cost or 0.0,
        ),
    )
    answer = assistant(rec.message)
    r.messages.append(answer)
    r.origins[len(r.messages) - 1] = rec.source or rec.model or ""
    calls = calls_of(answer)
    for call in calls:
        if call["id"] in finished:
            result: ToolMessage = {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": finished[call["id"]],
            }
            r.messages.append(result)
    return [c for c in calls if c["id"] not in finished]


def _agent_finished(r: Resume, rec: AgentFinished) -> None:
    r.unfinished_agents = [a for a in r.unfinished_agents if a.pid != rec.pid]
    used = rec.usage  # what one agent CLI run used
    if used is not None and used.model_fields_set:
        r.spent.add(used.model or "?", TurnUsage.of(used.dump()))
