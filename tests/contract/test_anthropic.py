"""The Anthropic Messages contract through litellm's real anthropic provider and real HTTP:
thinking blocks go back verbatim (signature intact), failover to another family makes the
messages valid for it, and prompt-cache marks earn cache reads."""

from __future__ import annotations

import pytest

from autodev.harness import providers
from autodev.harness.messages import plain
from autodev.scripted import load_script
from autodev.scripted.contract import OpenAIServer
from autodev.scripted.contract_anthropic import AnthropicServer

SCRIPT = """
[[step]]
participant = "builder"
text = "Looking first."
calls = [{ tool = "list_files", args = { path = "." } }]
[[step]]
participant = "builder"
calls = [{ tool = "read_file", args = { path = "a.txt" } }]
[[step]]
participant = "builder"
text = "done"
"""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} of the workspace",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("list_files", "read_file")
]


def _anthropic(tmp_path, script: str = SCRIPT) -> AnthropicServer:
    (tmp_path / "script.toml").write_text(script)
    return AnthropicServer(
        load_script(tmp_path / "script.toml"),
        tmp_path / "ledger.json",
        participants={"claude-sonnet-4-5": "builder"},
    )


def _target(srv: AnthropicServer, effort: str | None = "high") -> providers.Target:
    [t] = providers.targets_for(
        "builder",
        "anthropic/claude-sonnet-4-5",
        [],
        effort=effort,
        api_base=srv.root,
        api_key_env=None,
        scripted_url=None,
    )
    return t


def _start() -> list[dict]:
    return [{"role": "system", "content": "You are builder."}, {"role": "user", "content": "turn 1: go"}]


def _tool_result(msg: dict, text: str) -> dict:
    return {"role": "tool", "tool_call_id": msg["tool_calls"][0]["id"], "content": text}


def test_thinking_blocks_go_back_verbatim_and_the_server_accepts_them(tmp_path):
    with _anthropic(tmp_path) as srv:
        t = _target(srv)
        messages = _start()
        gen = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30)
        msg = gen.message
        # Kept whole: thinking block with its signature, reasoning text, the tool-call id.
        [block] = msg["thinking_blocks"]
        assert block["signature"] and block["thinking"] and msg["reasoning_content"]
        assert msg["tool_calls"][0]["id"].startswith("toolu_")
        messages += [msg, _tool_result(msg, "a.txt")]
        origins = {2: gen.source}
        gen2 = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30, origins=origins)
        assert gen2.message["tool_calls"][0]["function"]["name"] == "read_file"
        assert srv.refusals == []
        sent = srv.requests[-1]["body"]["messages"][1]
        assert sent["content"][0] == {
            "type": "thinking",
            "thinking": block["thinking"],
            "signature": block["signature"],
        }


def _raw(t: providers.Target, messages: list[dict]):
    """litellm straight, as the old harness called it (no adaptation of the messages)."""
    return providers._litellm().completion(
        model=t.model, messages=messages, tools=TOOLS, max_tokens=t.max_output, **t.kwargs
    )


def test_the_server_refuses_a_tool_use_without_its_thinking_block(tmp_path):
    """The contract the old harness broke: content + tool_calls alone is refused (400)."""
    litellm = providers._litellm()
    with _anthropic(tmp_path) as srv:
        t = _target(srv)
        messages = _start()
        gen = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30)
        stripped = plain(gen.message)
        with pytest.raises(litellm.BadRequestError):
            _raw(t, messages + [stripped, _tool_result(stripped, "a.txt")])
        assert "Expected `thinking` or `redacted_thinking`, but found" in srv.refusals[-1]
        # A forged signature is refused too.
        forged = {**gen.message, "thinking_blocks": [{**gen.message["thinking_blocks"][0], "signature": "x"}]}
        with pytest.raises(litellm.BadRequestError):
            _raw(t, messages + [forged, _tool_result(forged, "a.txt")])
        assert "Invalid `signature`" in srv.refusals[-1]
        # And the verbatim message is accepted.
        _raw(t, messages + [gen.message, _tool_result(gen.message, "a.txt")])
        assert len(srv.refusals) == 2


def test_failover_to_another_family_makes_the_messages_valid_for_it(tmp_path):
    """Anthropic → OpenAI-compatible mid-turn: thinking blocks and provider fields are dropped;
    back to Anthropic with thinking on: thinking is turned off for the request, since the
    OpenAI message has no signed thinking block (which Anthropic would refuse)."""
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "script.toml").write_text(
        # The step index is the count of assistant messages in the request: one is already there.
        '[[step]]\nparticipant = "builder"\ntext = "unused"\n'
        '[[step]]\nparticipant = "builder"\ncalls = [{ tool = "read_file", args = { path = "b" } }]\n'
    )
    with (
        _anthropic(tmp_path) as srv,
        OpenAIServer(load_script(tmp_path / "o" / "script.toml"), tmp_path / "o" / "ledger.json") as osrv,
    ):
        a = _target(srv)
        [o] = providers.targets_for(
            "builder",
            "openai/builder",
            [],
            effort=None,
            api_base=osrv.base_url,
            api_key_env=None,
            scripted_url=None,
        )
        messages = _start()
        gen = providers.complete(a, messages, TOOLS, turn_id="x", timeout=30)
        messages += [gen.message, _tool_result(gen.message, "a.txt")]
        origins = {2: gen.source}
        gen2 = providers.complete(o, messages, TOOLS, turn_id="x", timeout=30, origins=origins)
        sent = osrv.requests[-1]["body"]["messages"][2]
        assert "thinking_blocks" not in sent and "provider_specific_fields" not in sent
        assert sent["tool_calls"][0]["id"] == gen.message["tool_calls"][0]["id"]
        messages += [gen2.message, _tool_result(gen2.message, "b")]
        origins[4] = gen2.source
        gen3 = providers.complete(a, messages, TOOLS, turn_id="x", timeout=30, origins=origins)
        assert gen3.message["content"] == "done"
        body = srv.requests[-1]["body"]
        assert "thinking" not in body and srv.refusals == []
        # The kept messages themselves are untouched (only what is sent is adapted).
        assert messages[2]["thinking_blocks"] == gen.message["thinking_blocks"]


def test_cache_marks_earn_cache_reads_on_the_next_step(tmp_path):
    with _anthropic(tmp_path) as srv:
        t = _target(srv, effort=None)
        messages = _start()
        gen = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30)
        assert gen.cached_tokens == 0
        body = srv.requests[-1]["body"]
        assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        messages += [gen.message, _tool_result(gen.message, "a.txt " * 200)]
        gen2 = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30, origins={2: gen.source})
        # The whole previous request (its newest message was marked) is read from the cache.
        assert gen2.cached_tokens > 0
        assert gen2.cached_tokens < gen2.prompt_tokens
