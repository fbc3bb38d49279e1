"""Compaction is pure and replayable: older tool results become stubs naming the call to repeat,
the prompts and the newest step stay intact, and recovery rebuilds exactly the same messages."""

from __future__ import annotations

import json

from autodev.harness import compaction
from autodev.harness.messages import estimate_tokens
from autodev.harness.recovery import rebuild


def _call(cid: str, name: str, args: dict) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _turn(n_steps: int, size: int) -> list[dict]:
    msgs = [{"role": "system", "content": "sys " * 50}, {"role": "user", "content": "turn prompt"}]
    for i in range(n_steps):
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call(f"c{i}", "read_file", {"path": f"f{i}.py"})],
                "thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": f"s{i}"}],
            }
        )
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i}" * size})
    return msgs


def test_nothing_changes_when_the_request_fits():
    msgs = _turn(3, 100)
    assert compaction.plan(msgs, [], estimate_tokens(msgs) + 10) == {}


def test_oldest_results_become_stubs_until_it_fits_and_the_rest_stays_intact():
    msgs = _turn(6, 4000)
    before = [dict(m) for m in msgs]
    budget = estimate_tokens(msgs) - 2500  # about two results too many
    stubs = compaction.plan(msgs, [], budget)
    assert list(stubs) == ["c0", "c1", "c2"][: len(stubs)] and 2 <= len(stubs) <= 3
    assert 'read_file({"path": "f0.py"})' in stubs["c0"] and "call it again" in stubs["c0"]
    compaction.apply(msgs, stubs)
    assert estimate_tokens(msgs) <= budget
    # System prompt, turn prompt, every assistant message and the newest step are untouched.
    assert msgs[:2] == before[:2]
    assert [m for m in msgs if m["role"] == "assistant"] == [m for m in before if m["role"] == "assistant"]
    assert msgs[-2:] == before[-2:]


def test_hard_compaction_stubs_every_older_result_and_cuts_the_newest():
    msgs = _turn(3, 9000)
    stubs = compaction.plan(msgs, [], 10**9, hard=True)
    assert set(stubs) == {"c0", "c1", "c2"}
    assert stubs["c2"].startswith("2" * compaction.HARD_HEAD) and "cut at" in stubs["c2"]
    assert stubs["c0"].startswith(compaction.STUB_MARK)


def test_recovery_replays_the_compaction_record():
    live = _turn(3, 4000)
    stubs = compaction.plan(live, [], estimate_tokens(live) - 1500)
    assert stubs
    at = {"run": "r", "turn": 1}  # every record names its run and turn
    records = [{"type": "turn_started", **at, "participant": "p", "baseline": {}, "messages": live[:2]}]
    for step in range(3):
        a, t = live[2 + 2 * step], live[3 + 2 * step]
        cid = t["tool_call_id"]
        records += [
            {"type": "generation_started", **at, "step": step + 1, "attempt": 1, "model": "x"},
            {"type": "generation_finished", **at, "step": step + 1, "message": a, "source": "anthropic/x"},
            {
                "type": "tool_started",
                **at,
                "call_id": cid,
                "name": "read_file",
                "args": {},
                "replay_safe": True,
            },
            {"type": "tool_finished", **at, "call_id": cid, "result": t["content"]},
        ]
    records.append({"type": "compacted", **at, "step": 4, "hard": False, "stubs": stubs})
    compaction.apply(live, stubs)
    r = rebuild(records)
    assert r.messages == live
    assert r.origins == {2: "anthropic/x", 4: "anthropic/x", 6: "anthropic/x"}
