"""Whole runs on the provider contract servers, through the real CLI, daemon and litellm:
an Anthropic team with thinking on survives kill -9 mid-turn, a keyless local team runs without
retries or warnings, and a turn that outgrows its window is compacted and still posts."""

from __future__ import annotations

import json
import os
import signal

import pytest

from autodev.scripted import load_script
from autodev.scripted.contract import OpenAIServer
from autodev.scripted.contract_anthropic import AnthropicServer
from tests.conftest import run_dir, shape, thread_of, write_team
from tests.e2e.helpers import ACCEPT, call, events, post, records_of, step, wait_for

AUDIT_ONLY = ACCEPT  # the daemon's own scripted server serves the audit only


def _server(cls, tmp_path, script: str, **kw):
    d = tmp_path / "contract"
    d.mkdir(exist_ok=True)
    (d / "script.toml").write_text(script)
    return cls(load_script(d / "script.toml"), d / "ledger.json", d / "requests.jsonl", **kw)


def _team(model: str, api_base: str, extra: str = "") -> str:
    return f"""
[[participants]]
name = "builder"
model = "{model}"
api_base = "{api_base}"
write = true
{extra}
[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""


@pytest.fixture
def anthropic(tmp_path):
    script = (
        step("builder", call("list_files", path="."), text="Looking around first.")
        + step("builder", call("run_command", command="sleep 2 && echo slept"))
        + post("builder", "done", "looked and slept")
    )
    with _server(AnthropicServer, tmp_path, script, participants={"claude-sonnet-4-5": "builder"}) as srv:
        yield srv


@pytest.mark.full
def test_anthropic_with_thinking_survives_kill_9_mid_turn(repo, autodev, inproc, anthropic):
    write_team(repo, _team("anthropic/claude-sonnet-4-5", anthropic.root, 'effort = "high"'), AUDIT_ONLY)
    p = autodev.popen(repo, "start", "--foreground", "--until-idle", "look around")
    hlog = run_dir(repo) / "harness.jsonl"
    wait_for(
        "run_command to start",
        lambda: any(r["type"] == "tool_started" and r["name"] == "run_command" for r in records_of(hlog)),
    )
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo))[1:] == [("builder", "done", None, None), ("audit", "say", None, None)]
    # Every request was accepted: after the restart the assistant messages went back rebuilt
    # from the harness log, each starting with its own signed thinking block.
    assert anthropic.refusals == []
    last = anthropic.requests[-1]["body"]
    assert last["thinking"]["type"] == "enabled" and last["max_tokens"] > last["thinking"]["budget_tokens"]
    sent = [m for m in last["messages"] if m["role"] == "assistant"]
    assert len(sent) == 2 and all(m["content"][0]["type"] == "thinking" for m in sent)
    kept = [x["message"] for x in records_of(hlog) if x["type"] == "generation_finished"]
    assert kept[0]["thinking_blocks"][0]["signature"] == sent[0]["content"][0]["signature"]
    assert kept[0]["reasoning_content"] and kept[0]["tool_calls"][0]["id"].startswith("toolu_")
    assert [e["turn"] for e in events(repo, "turn_started")] == [1]  # the same turn, resumed
    # Prompt caching: the requests mark the system prompt and the newest message; later steps
    # read from the cache, and status sums it.
    assert last["system"][-1]["cache_control"] == {"type": "ephemeral"}
    gens = events(repo, "generation")
    assert gens[0]["cached_tokens"] == 0 and all(g["cached_tokens"] > 0 for g in gens[1:])
    st = inproc(repo, "status", "--json", check=True).stdout
    assert '"cached_tokens"' in st


def test_a_keyless_local_team_runs_without_retries_or_warnings(repo, autodev, tmp_path):
    script = step("builder", call("list_files", path=".")) + post("builder", "done", "listed")
    with _server(OpenAIServer, tmp_path, script, window=32_000) as srv:
        write_team(repo, _team("openai/builder", srv.base_url, "context = 32000"), AUDIT_ONLY)
        r = autodev(repo, "start", "--foreground", "--until-idle", "list the files", timeout=90)
        assert r.returncode == 0, r.stdout + r.stderr
        assert shape(thread_of(repo))[1][:2] == ("builder", "done")
        assert len(srv.requests) == 2 and srv.refusals == 0
        # No key was configured: a placeholder is sent, never a real secret.
        assert set(srv.keys_seen) == {"Bearer no-key-needed"}
        assert events(repo, "retry") == [] and events(repo, "error") == []
        assert "WARNING" not in r.stderr and "Missing credentials" not in r.stdout + r.stderr
        # Every request carries an output cap under the window.
        caps = [q["body"].get("max_tokens") or q["body"].get("max_completion_tokens") for q in srv.requests]
        assert caps == [8000, 8000], caps  # a quarter of the 32,000-token window


BIG = "".join(f"line {i}: " + "x" * 70 + "\n" for i in range(300))  # about 6,000 tokens


def _outgrowing(tmp_path, **kw):
    script = (
        step("builder", call("read_file", path="big.txt", limit=400))
        + step("builder", call("read_file", path="big.txt", limit=400))
        + step("builder", call("read_file", path="big.txt", limit=400))
        + post("builder", "say", "read it three times", handoff="user")
    )
    return _server(OpenAIServer, tmp_path, script, **kw)


@pytest.mark.full
def test_a_turn_that_outgrows_its_window_is_compacted_and_still_posts(repo, autodev, inproc, tmp_path):
    (repo / "big.txt").write_text(BIG)
    with _outgrowing(tmp_path, window=16_000) as srv:
        write_team(repo, _team("openai/builder", srv.base_url, "context = 16000"), AUDIT_ONLY)
        r = autodev(repo, "start", "--foreground", "--until-idle", "read big.txt", timeout=90)
        assert r.returncode == 3, r.stdout + r.stderr  # the post hands off to the user
        assert shape(thread_of(repo))[1] == ("builder", "say", "user", None)
        assert srv.refusals == 0  # compacted before the request, never refused
        comp = events(repo, "compacted")
        assert comp and comp[0]["tokens_after"] < comp[0]["tokens_before"] and not comp[0]["hard"]
        last = srv.requests[-1]["body"]["messages"]
        tools = [m["content"] for m in last if m["role"] == "tool"]
        assert tools[0].startswith("[compacted]") and "read_file" in tools[0]
        assert "line 0:" in tools[-1] and "[compacted]" not in tools[-1]  # the newest step intact
        hl = records_of(run_dir(repo) / "harness.jsonl")
        assert any(x["type"] == "compacted" for x in hl)
        st = inproc(repo, "status", check=True).stdout
        assert "compacted" in st


@pytest.mark.full
def test_a_provider_context_refusal_compacts_harder_and_retries_once(repo, autodev, tmp_path):
    """The participant claims a larger window than the server has: our estimate fits, the
    server answers context_length_exceeded, the turn compacts hard and still posts."""
    (repo / "big.txt").write_text(BIG)
    with _outgrowing(tmp_path, window=16_000) as srv:
        write_team(repo, _team("openai/builder", srv.base_url, "context = 200000"), AUDIT_ONLY)
        r = autodev(repo, "start", "--foreground", "--until-idle", "read big.txt", timeout=90)
        assert r.returncode == 3, r.stdout + r.stderr
        assert shape(thread_of(repo))[1] == ("builder", "say", "user", None)
        assert srv.refusals >= 1
        assert events(repo, "context_exceeded") and any(c["hard"] for c in events(repo, "compacted"))
        assert events(repo, "error") == []


@pytest.mark.full
def test_a_turn_that_cannot_fit_ends_silent_with_reason_context(repo, autodev, inproc, tmp_path):
    """Even the prompts exceed the server's window: nothing can be compacted, so the turn ends
    silent (reason `context`) instead of pausing on a provider error."""
    script = post("builder", "say", "never reached", handoff="user")
    with _server(OpenAIServer, tmp_path, script, window=300) as srv:
        write_team(
            repo,
            _team("openai/builder", srv.base_url, "context = 200000"),
            AUDIT_ONLY,
            "maxSilentTurns = 1\n",
        )
        r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=90)
        assert r.returncode == 3, r.stdout + r.stderr
        [ended] = events(repo, "turn_ended")
        assert ended["reason"] == "context" and ended["posted"] is None
        assert events(repo, "error") == [] and srv.refusals >= 1
        st = inproc(repo, "status", "--json", check=True).stdout
        assert '"code": "silent"' in st


@pytest.mark.full
def test_an_unknown_model_pauses_once_naming_the_participant_the_model_and_the_fix(
    repo, autodev, inproc, tmp_path
):
    """A gateway answers 400 model_not_found (not 404): that is an unknown model, never retried,
    not a malformed request; the pause line names who, which model and the fix."""
    script = post("builder", "done", "never reached")
    with _server(OpenAIServer, tmp_path, script, models={"builder"}) as srv:
        write_team(repo, _team("openai/no-such-model", srv.base_url), AUDIT_ONLY, "maxRetries = 3\n")
        r = autodev(repo, "start", "--foreground", "--until-idle", "go", timeout=90)
        assert r.returncode == 3, r.stdout + r.stderr
        assert srv.unknown_models == ["no-such-model"]  # one request: no retry
        assert events(repo, "retry") == []
        st = inproc(repo, "status", "--json", check=True).stdout
        reason = json.loads(st)["reason"]
        assert reason["code"] == "provider"
        text = reason["text"]
        assert "builder's model openai/no-such-model" in text and "does not know this model" in text
        assert "check the model name" in text and "team.toml" in text
        assert "does not exist" not in text  # the raw provider text is in events, not the headline
        [err] = events(repo, "error")
        assert "model_not_found" in err["detail"] or "does not exist" in err["detail"]


@pytest.mark.full
def test_compactions_made_before_a_kill_9_are_counted_after_resume(repo, autodev, inproc, tmp_path):
    (repo / "big.txt").write_text(BIG)
    script = (
        step("builder", call("read_file", path="big.txt", limit=400))
        + step("builder", call("read_file", path="big.txt", limit=400))
        + step("builder", call("read_file", path="big.txt", limit=400))
        + step("builder", call("run_command", command="sleep 3 && echo slept"))
        + post("builder", "say", "read it and slept", handoff="user")
    )
    with _server(OpenAIServer, tmp_path, script, window=16_000) as srv:
        write_team(repo, _team("openai/builder", srv.base_url, "context = 16000"), AUDIT_ONLY)
        p = autodev.popen(repo, "start", "--foreground", "--until-idle", "read big.txt")
        hlog = run_dir(repo) / "harness.jsonl"
        wait_for(
            "run_command to start",
            lambda: any(r["type"] == "tool_started" and r["name"] == "run_command" for r in records_of(hlog)),
        )
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        before = sum(1 for x in records_of(hlog) if x["type"] == "compacted")
        assert before >= 1
        r = autodev(repo, "start", "--foreground", "--until-idle", timeout=90)
        assert r.returncode == 3, r.stdout + r.stderr
        assert [e["turn"] for e in events(repo, "turn_started")] == [1]  # the same turn, resumed
        made = sum(1 for x in records_of(hlog) if x["type"] == "compacted")
        st = json.loads(inproc(repo, "status", "--json", check=True).stdout)
        assert st["participants"][0]["compactions"] == made >= before
        assert st["totals"]["compactions"] == made
