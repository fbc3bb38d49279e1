"""Telemetry end to end: a real daemon exporting a scripted run over OTLP/HTTP to a real receiver
started by the test (protobuf decoded with opentelemetry-proto), and a turn killed with -9 and
resumed, which arrives once, whole, with its resume marked."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.conftest import write_team
from tests.e2e.helpers import (
    BUILDER_REVIEWER,
    PAIR,
    events,
    kill_group,
    start_detached,
    state_of,
    status_json,
    wait_for,
)
from tests.e2e.otlp_receiver import Receiver
from tests.e2e.test_smoke import SCRIPT as SMOKE


def otel_env(url: str) -> dict:
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": url,
        "OTEL_SERVICE_NAME": "autodev-test",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "5",
    }


def test_a_run_reaches_a_real_receiver_with_the_genai_shape(repo, autodev, inproc, receiver):
    write_team(repo, BUILDER_REVIEWER, SMOKE)

    r = autodev(repo, "start", "--foreground", "--until-idle", "add a.txt", env=otel_env(receiver.url))
    assert r.returncode == 0, r.stdout + r.stderr
    spans = receiver.spans
    ids = [s["span_id"] for s in spans]
    assert len(ids) == len(set(ids)), "a span was sent twice"
    assert len({s["trace_id"] for s in spans}) == 1
    by_id = {s["span_id"]: s for s in spans}
    [root] = [s for s in spans if s["parent"] is None]
    assert root["name"] == "invoke_workflow autodev" and root["attributes"]["autodev.run.state"] == "complete"
    assert root["resource"]["service.name"] == "autodev-test" and root["scope"] == "autodev"
    turns = sorted(
        (s for s in spans if s["name"].startswith("invoke_agent")),
        key=lambda s: s["attributes"]["autodev.turn"],
    )
    assert [t["name"] for t in turns] == ["invoke_agent builder", "invoke_agent reviewer"]
    assert all(t["parent"] == root["span_id"] for t in turns)
    run_id = state_of(repo)["run_id"]
    assert all(t["attributes"]["gen_ai.conversation.id"] == run_id for t in turns)
    assert turns[0]["attributes"]["autodev.post.kind"] == "work_done"
    assert turns[0]["attributes"]["autodev.post.handoff"] == "reviewer"
    assert turns[0]["attributes"]["autodev.harness.credit"].startswith("commits:")
    assert turns[1]["attributes"]["autodev.rules.scheduler.rule"] == "handoff"
    tools = [s for s in spans if s["name"].startswith("execute_tool")]
    assert {t["name"] for t in tools} == {
        "execute_tool write_file",
        "execute_tool run_command",
        "execute_tool post",
    }
    assert all(by_id[t["parent"]]["name"].startswith("invoke_agent") for t in tools)
    assert all(t["attributes"]["gen_ai.tool.call.id"] for t in tools)
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert chats and all(by_id[c["parent"]]["name"].startswith("invoke_agent") for c in chats)
    assert all(
        c["attributes"]["gen_ai.operation.name"] == "chat" and "gen_ai.provider.name" in c["attributes"]
        for c in chats
    )
    audit = [s for s in spans if s["name"] == "audit"]
    assert len(audit) == 1 and audit[0]["attributes"]["autodev.harness.audit.accept"] is True
    # token sums equal what `status` reports
    st = status_json(inproc, repo)
    parts = {p["name"]: p for p in st["participants"]}
    prompt = {
        p: sum(
            c["attributes"]["gen_ai.usage.input_tokens"]
            for c in chats
            if by_id[c["parent"]]["attributes"]["gen_ai.agent.name"] == p
        )
        for p in ("builder", "reviewer")
    }
    assert prompt == {p: parts[p]["prompt_tokens"] for p in ("builder", "reviewer")}, json.dumps(parts)
    # metrics: token usage by participant, the run's counters
    usage = Counter()
    for p in receiver.latest("gen_ai.client.token.usage"):
        if p["attributes"]["gen_ai.token.type"] == "input":
            usage[p["attributes"]["gen_ai.agent.name"]] += p["value"]
    # the audit's call carries its own figures: the trace's tokens add up to status's
    assert audit[0]["attributes"]["gen_ai.request.model"] == "scripted"
    assert audit[0]["attributes"]["gen_ai.usage.input_tokens"] == st["audit_usage"]["prompt_tokens"] > 0
    assert all(c["attributes"]["gen_ai.provider.name"] == "autodev.scripted" for c in chats)
    assert {c["name"] for c in chats} == {"chat scripted"}
    audit_prompt = usage.pop("audit")
    assert audit_prompt == st["audit_usage"]["prompt_tokens"]
    assert dict(usage) == prompt
    turns_metric = {
        p["attributes"]["gen_ai.agent.name"]: p["value"] for p in receiver.latest("autodev.run.turns")
    }
    assert turns_metric == {"builder": 1, "reviewer": 1}
    # contents stay home unless captureContent
    assert not any(
        k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arg"))
        for s in spans
        for k in s["attributes"]
    )

    # sent after the fact: nothing new to the same collector, the whole run to another one
    r = autodev(repo, "trace", "export", "--json", env=otel_env(receiver.url))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["spans"] == 0 and len(receiver.spans) == len(spans)
    other = Receiver()
    try:
        r = autodev(repo, "trace", "export", "--run", run_id, env=otel_env(other.url))
        assert r.returncode == 0, r.stdout + r.stderr
        assert sorted(s["span_id"] for s in other.spans) == sorted(ids)
    finally:
        other.close()


KILL_SCRIPT = """
[[step]]
participant = "alice"
calls = [{ tool = "run_command", args = { command = "sleep 30" } }]
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "say", text = "slept", handoff = "bob" } }]
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "done", text = "all set" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


@pytest.mark.full
def test_a_turn_killed_and_resumed_is_one_whole_span(repo, autodev, receiver, monkeypatch):
    for k, v in otel_env(receiver.url).items():
        monkeypatch.setenv(k, v)
    write_team(repo, PAIR, KILL_SCRIPT)
    pid = start_detached(autodev, repo, "go")
    wait_for(
        "the sleep to start",
        lambda: any(e.get("name") == "run_command" for e in events(repo, "tool")),
        timeout=120,
    )
    kill_group(pid)
    from autodev.store.lock import DaemonLock
    from autodev.store.paths import RunPaths

    wait_for("the daemon to die", lambda: DaemonLock.holder(RunPaths(repo).lock) is None, timeout=60)
    assert not [s for s in receiver.spans if s["name"].startswith("invoke_agent")]  # turn 1 is not whole yet
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert state_of(repo)["state"] == "complete"
    spans = receiver.spans
    ids = Counter(s["span_id"] for s in spans)
    assert max(ids.values()) == 1, "a span was sent twice"
    alice = [s for s in spans if s["name"] == "invoke_agent alice"]
    assert len(alice) == 1
    [turn] = alice
    assert turn["attributes"]["autodev.turn.resumed"] is True
    assert "turn_recovered" in turn["events"] or "turn_resumed" in turn["events"]
    [sleep] = [s for s in spans if s["name"] == "execute_tool run_command"]
    assert sleep["parent"] == turn["span_id"] and sleep["attributes"]["autodev.tool.outcome"] == "interrupted"
    posts = [s for s in spans if s["name"] == "execute_tool post" and s["parent"] == turn["span_id"]]
    assert len(posts) == 1 and turn["start"] <= sleep["start"] and posts[0]["end"] <= turn["end"]
