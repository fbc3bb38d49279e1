"""A turn's spans from its records (pure): names, shape, attributes, the ids, a resumed turn."""

from autodev import records
from autodev.records.events import Event
from autodev.records.harness_log import HarnessRecord
from autodev.records.state import RunState
from autodev.telemetry.spans import group_events, span_id, trace_id, workflow_span
from autodev.telemetry.turn import turn_spans

RUN = "r1"


def _h(type_: str, ts: float, turn: int = 1, **f) -> dict:
    return {"type": type_, "run": RUN, "turn": turn, "ts": ts, **f}


def _e(type_: str, second: float, **f) -> dict:
    return {"type": type_, "run": RUN, "ts": f"2026-12-02T00:00:{second:06.3f}Z", **f}


def parsed(recs: list[dict]) -> list[HarnessRecord]:
    return [records.harness(r) for r in recs]


def events_of(evs: list[dict]) -> list[Event]:
    return [records.event(e) for e in evs]


def turn_records(crash: bool = False) -> list[dict]:
    recs = [
        _h(
            "turn_started",
            100.0,
            participant="builder",
            baseline={},
            messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "do it"}],
        ),
        _h("generation_started", 100.1, step=1, attempt=1, model="main"),
        _h(
            "generation_finished",
            100.5,
            step=1,
            model="main",
            source="openai/gpt-5",
            prompt_tokens=120,
            completion_tokens=30,
            cached_tokens=20,
            cost=0.01,
            finish_reason="tool_calls",
            message={
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c1", "function": {"name": "run_command", "arguments": "{}"}}],
            },
        ),
        _h(
            "tool_started", 100.6, call_id="c1", name="run_command", args={"command": "ls"}, replay_safe=False
        ),
    ]
    if crash:  # the daemon died here; the next one answered the call "interrupted" and went on
        recs.append(_h("tool_finished", 200.0, call_id="c1", result="interrupted: ...", synthetic=True))
    else:
        recs.append(_h("tool_finished", 100.9, call_id="c1", result="a.txt"))
    base = 200.0 if crash else 101.0
    recs += [
        _h("generation_started", base + 0.1, step=2, attempt=1, model="main"),
        _h(
            "generation_finished",
            base + 0.4,
            step=2,
            model="main",
            source="openai/gpt-5",
            prompt_tokens=200,
            completion_tokens=10,
            cost=0.02,
            message={"role": "assistant", "content": "ok"},
        ),
        _h("tool_started", base + 0.5, call_id="c2", name="github__merge", args={}, replay_safe=False),
        _h("tool_finished", base + 0.6, call_id="c2", result="error: refused"),
        _h("post_started", base + 0.7, id=f"{RUN}:t1:post"),
        _h("post_committed", base + 0.8, seq=2),
        _h("turn_finished", base + 0.9, seq=2, reason=""),
    ]
    return recs


def turn_events(crash: bool = False) -> list[dict]:
    evs = [
        _e("scheduled", 0.0, participant="builder", rule="handoff", turn=1),
        _e(
            "retry",
            0.2,
            participant="builder",
            turn=1,
            step=1,
            model="main",
            attempt=1,
            delay=0.1,
            error="boom",
        ),
        _e(
            "post",
            1.0,
            seq=2,
            kind="work_done",
            text="built it",
            handoff="reviewer",
            credit={"commits": ["abc"], "files": []},
            **{"from": "builder"},
        ),
        _e("audit_started", 1.1, seq=2, n=1),
        _e("audit", 1.5, seq=2, accept=True, gap="", by="model"),
    ]
    if crash:
        evs.insert(2, _e("turn_recovered", 0.5, participant="builder", turn=1, step=1, posted=None))
    return evs


def by_name(spans):
    return {s.name: s for s in spans}


def test_turn_spans_shape_names_and_attributes():
    spans = turn_spans(RUN, parsed(turn_records()), events_of(turn_events()))
    names = by_name(spans)
    assert set(names) == {
        "invoke_agent builder",
        "chat gpt-5",
        "execute_tool run_command",
        "execute_tool github__merge",
        "execute_tool post",
        "audit",
    }
    turn = names["invoke_agent builder"]
    assert turn.key == f"{RUN}:t1" and turn.parent == RUN
    assert all(s.parent == turn.key for s in spans if s is not turn)
    a = turn.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "builder" and a["gen_ai.conversation.id"] == RUN
    assert a["gen_ai.usage.input_tokens"] == 320 and a["gen_ai.usage.output_tokens"] == 40
    assert a["gen_ai.usage.cache_read.input_tokens"] == 20
    assert a["autodev.post.kind"] == "work_done" and a["autodev.post.handoff"] == "reviewer"
    assert a["autodev.harness.credit"] == "commits:1" and a["autodev.rules.scheduler.rule"] == "handoff"
    assert a["autodev.turn.resumed"] is False
    chats = [s for s in spans if s.name.startswith("chat")]
    assert len(chats) == 2
    c1 = next(c for c in chats if c.attributes["autodev.step"] == 1)
    assert c1.kind == "client"
    assert (
        c1.attributes["gen_ai.provider.name"] == "openai" and c1.attributes["gen_ai.request.model"] == "gpt-5"
    )
    assert c1.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert c1.attributes["autodev.cost_usd"] == 0.01
    assert [e.name for e in c1.events] == ["retry"]
    tool = names["execute_tool run_command"]
    assert tool.attributes["gen_ai.tool.call.id"] == "c1" and tool.attributes["autodev.tool.outcome"] == "ok"
    assert tool.attributes["gen_ai.tool.type"] == "function" and tool.error is None
    mcp = names["execute_tool github__merge"]
    assert mcp.attributes["gen_ai.tool.type"] == "extension" and mcp.error == "tool_error"
    assert names["audit"].attributes["autodev.harness.audit.accept"] is True
    # the turn covers its children, the audit included
    assert all(turn.start <= s.start and s.end <= turn.end for s in spans)
    # contents stay out unless asked for
    assert not any(
        k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg", "gen_ai.system_instr"))
        for s in spans
        for k in s.attributes
    )


def test_content_is_exported_only_when_asked_and_redacted():
    spans = turn_spans(
        RUN,
        parsed(turn_records()),
        events_of(turn_events()),
        capture=True,
        redact=lambda s: s.replace("do it", "[redacted]"),
    )
    turn = by_name(spans)["invoke_agent builder"]
    assert (
        "[redacted]" in turn.attributes["gen_ai.input.messages"]
        and "do it" not in turn.attributes["gen_ai.input.messages"]
    )
    assert '"content": "sys"' in turn.attributes["gen_ai.system_instructions"]
    chat = next(s for s in spans if s.name.startswith("chat") and s.attributes["autodev.step"] == 1)
    assert '"tool_call"' in chat.attributes["gen_ai.output.messages"]
    assert by_name(spans)["execute_tool run_command"].attributes["gen_ai.tool.call.result"] == "a.txt"


def test_an_unfinished_turn_has_no_spans_yet():
    recs = turn_records()
    assert turn_spans(RUN, parsed(recs[:-1]), events_of(turn_events())) == []


def test_a_resumed_turn_is_one_whole_span_with_its_resume_marked():
    before = [r for r in turn_records(crash=True) if r["ts"] < 150]
    spans = turn_spans(RUN, parsed(turn_records(crash=True)), events_of(turn_events(crash=True)))
    keys = [s.key for s in spans]
    assert len(keys) == len(set(keys))  # nothing twice
    turn = by_name(spans)["invoke_agent builder"]
    assert turn.attributes["autodev.turn.resumed"] is True
    assert "turn_recovered" in [e.name for e in turn.events]
    assert turn.start == before[0]["ts"] and turn.end >= 200.9  # whole: from the first session to the last
    tool = by_name(spans)["execute_tool run_command"]
    assert tool.attributes["autodev.tool.outcome"] == "interrupted" and tool.error == "interrupted"
    # the same turn derived again (as `trace export` would) gives the same ids
    again = turn_spans(RUN, parsed(turn_records(crash=True)), events_of(turn_events(crash=True)))
    assert [span_id(s.key) for s in again] == [span_id(s.key) for s in spans]


def test_ids_are_derived_from_the_run_turn_and_call():
    assert trace_id(RUN) == trace_id(RUN) != trace_id("r2")
    assert 0 < trace_id(RUN) < 2**128 and 0 < span_id(f"{RUN}:t1") < 2**64
    assert span_id(f"{RUN}:t1") != span_id(f"{RUN}:t2")


def test_events_are_grouped_by_the_turn_current_when_written():
    evs = [
        _e("daemon_started", 0),
        _e("scheduled", 1, turn=1),
        _e("post", 2, seq=1, kind="say", text="hi", **{"from": "builder"}),
        _e("scheduled", 3, turn=2),
        _e("state", 4, state="paused"),
    ]
    g = group_events(events_of(evs))
    assert [e.type for e in g[None]] == ["daemon_started"]
    assert [e.type for e in g[1]] == ["scheduled", "post"]
    assert [e.type for e in g[2]] == ["scheduled", "state"]


def test_workflow_root():
    root = workflow_span(RUN, 10.0, 20.0, RunState(state="complete", turn=3))
    assert root.name == "invoke_workflow autodev" and root.parent is None and root.key == RUN
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["gen_ai.conversation.id"] == RUN and root.error is None
    assert workflow_span(RUN, 10.0, 20.0, RunState(state="faulted")).error == "faulted"


def test_the_audit_span_carries_the_evidence_counts_not_the_tests():
    evs = turn_events()
    evidence = _e(
        "evidence",
        1.3,
        seq=2,
        summary="✘ 1 broke: tests/test_x.py::test_y",
        outcome="ran",
        command="pytest -q",
        counts={
            "fail_to_pass": 0,
            "pass_to_fail": 1,
            "pass_to_pass": 4,
            "still_failing": 0,
            "tests_changed": 0,
        },
        pass_to_fail=["tests/test_x.py::test_y"],
    )
    evs.insert(len(evs) - 1, evidence)
    a = by_name(turn_spans(RUN, parsed(turn_records()), events_of(evs)))["audit"].attributes
    assert a["autodev.evidence.outcome"] == "ran" and a["autodev.evidence.command"] == "pytest -q"
    assert a["autodev.evidence.pass_to_fail"] == 1 and a["autodev.evidence.pass_to_pass"] == 4
    assert not any("test_y" in str(v) for v in a.values())


def test_scripted_requests_are_named_as_team_toml_names_their_model():
    # What the harness records for `model = "scripted"`: the label, and the litellm string that
    # reached the scripted server (the participant as the model id, an OpenAI-compatible route).
    recs = [
        {**r, "model": "scripted", "source": "openai/builder"} if "model" in r else r for r in turn_records()
    ]
    chats = [
        s
        for s in turn_spans(RUN, parsed(recs), events_of(turn_events()))
        if s.attributes.get("gen_ai.operation.name") == "chat"
    ]
    chats = [c for c in chats if c.name != "audit"]
    assert [c.name for c in chats] == ["chat scripted", "chat scripted"]
    for c in chats:
        assert c.attributes["gen_ai.request.model"] == "scripted"
        assert c.attributes["gen_ai.provider.name"] == "autodev.scripted"
        assert c.attributes["gen_ai.response.model"] == "scripted"


def test_the_audit_span_carries_its_tokens_and_the_turn_only_its_own():
    evs = turn_events()
    evs[-1] = _e("audit", 1.5, seq=2, accept=True, gap="", by="model", model="anthropic/claude-x",
                 prompt_tokens=900, completion_tokens=12, cost=0.005)  # fmt: skip
    spans = turn_spans(RUN, parsed(turn_records()), events_of(evs))
    names = by_name(spans)
    a = names["audit"].attributes
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.agent.name"] == "audit"
    assert (a["gen_ai.provider.name"], a["gen_ai.request.model"]) == ("anthropic", "claude-x")
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"], a["autodev.cost_usd"]) == (
        900,
        12,
        0.005,
    )
    turn = names["invoke_agent builder"].attributes
    assert (turn["gen_ai.usage.input_tokens"], turn["gen_ai.usage.output_tokens"]) == (320, 40)
    every = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert sum(s.attributes["gen_ai.usage.input_tokens"] for s in every) == 320 + 900
    # an audit decided by auditCheck alone made no model call: no figures
    evs[-1] = _e("audit", 1.5, seq=2, accept=True, gap="", by="auditCheck", model="anthropic/claude-x")
    assert (
        "gen_ai.usage.input_tokens"
        not in by_name(turn_spans(RUN, parsed(turn_records()), events_of(evs)))["audit"].attributes
    )
