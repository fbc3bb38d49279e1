"""The Gemini generateContent contract through litellm's real gemini provider and real HTTP:
thought signatures on function calls go back verbatim over a multi-step turn, a call without
its signature (or with litellm's skip placeholder) is refused, and failover to an
OpenAI-compatible provider and back keeps both sides valid."""

from __future__ import annotations

import os
import signal

import pytest

from autodev.harness import providers
from autodev.harness.messages import plain
from autodev.scripted import load_script
from autodev.scripted.contract import OpenAIServer
from autodev.scripted.contract_gemini import SKIP_SIGNATURE, GeminiServer, signature
from tests.conftest import run_dir, shape, thread_of, write_team
from tests.contract.test_anthropic import SCRIPT, TOOLS, _start, _tool_result
from tests.contract.test_runs import AUDIT_ONLY, _server, _team
from tests.e2e.helpers import call, events, post, records_of, step, wait_for

MODEL = "gemini/gemini-3-pro-preview"


def _gemini(tmp_path, script: str = SCRIPT, name: str = "gemini-3-pro-preview") -> GeminiServer:
    (tmp_path / "script.toml").write_text(script)
    return GeminiServer(
        load_script(tmp_path / "script.toml"), tmp_path / "ledger.json", participants={name: "builder"}
    )


def _target(srv: GeminiServer, model: str = MODEL, effort: str | None = "high") -> providers.Target:
    [t] = providers.targets_for(
        "builder", model, [], effort=effort, api_base=srv.root, api_key_env=None, scripted_url=None
    )
    return t


def _sent_calls(body: dict) -> list[dict]:
    """The first function-call part of every model turn in a request, as sent."""
    out = []
    for c in body["contents"]:
        parts = [p for p in c["parts"] if "functionCall" in p or "function_call" in p]
        if c["role"] == "model" and parts:
            out.append(parts[0])
    return out


def test_thought_signatures_go_back_verbatim_over_a_multi_step_turn(tmp_path):
    with _gemini(tmp_path) as srv:
        t = _target(srv)
        messages, origins = _start(), {}
        for n, path in enumerate((".", "a.txt")):
            gen = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30, origins=origins)
            msg = gen.message
            [call] = msg["tool_calls"]
            assert call["function"]["name"] == ("list_files", "read_file")[n]
            # Kept whole: litellm's id carries the signature, and its provider fields too.
            sig = call["provider_specific_fields"]["thought_signature"]
            assert sig == signature({"name": call["function"]["name"], "args": {"path": path}})
            assert call["id"].endswith("__thought__" + sig) and msg["reasoning_content"]
            origins[len(messages)] = gen.source
            messages += [msg, _tool_result(msg, f"result {n}")]
        gen = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30, origins=origins)
        assert gen.message["content"] == "done"
        assert srv.refusals == []
        # The last request carried both earlier calls, each with the signature it was given.
        sent = _sent_calls(srv.requests[-1]["body"])
        assert [p["thoughtSignature"] for p in sent] == [
            signature({"name": "list_files", "args": {"path": "."}}),
            signature({"name": "read_file", "args": {"path": "a.txt"}}),
        ]


def _unsigned(msg: dict) -> dict:
    """The message as a harness sends it that rebuilds messages from content + tool calls and
    shortens ids to OpenAI's 40 characters: the signature is lost (litellm carries it in the
    provider fields and after `__thought__` in the id; plain() keeps the id whole)."""
    out = plain(msg)
    assert "__thought__" in out["tool_calls"][0]["id"]
    out["tool_calls"][0]["id"] = out["tool_calls"][0]["id"][:40]
    return out


def test_the_server_refuses_a_function_call_without_its_signature(tmp_path):
    litellm = providers._litellm()
    with _gemini(tmp_path) as srv:
        t = _target(srv)
        messages = _start()
        gen = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30)
        stripped = _unsigned(gen.message)
        # For Gemini 3 litellm puts in Google's skip-validator placeholder (then retries once
        # with it on the refusal): the contract server refuses it, the signature was lost.
        with pytest.raises(litellm.BadRequestError):
            litellm.completion(
                model=t.model,
                messages=messages + [stripped, _tool_result(stripped, "a.txt")],
                tools=TOOLS,
                max_tokens=t.max_output,
                **t.kwargs,
            )
        assert srv.refusals and set(srv.refusals) == {"Corrupted thought signature."}
        # The verbatim message is accepted.
        providers.complete(
            t, messages + [gen.message, _tool_result(gen.message, "a.txt")], TOOLS, turn_id="x", timeout=30
        )
        assert len(srv.requests) == 2


def test_an_older_gemini_model_sends_no_placeholder_and_is_refused_in_geminis_words(tmp_path):
    litellm = providers._litellm()
    with _gemini(tmp_path, name="gemini-2.5-flash") as srv:
        t = _target(srv, "gemini/gemini-2.5-flash")
        messages = _start()
        gen = providers.complete(t, messages, TOOLS, turn_id="x", timeout=30)
        stripped = _unsigned(gen.message)
        with pytest.raises(litellm.BadRequestError):
            litellm.completion(
                model=t.model,
                messages=messages + [stripped, _tool_result(stripped, "a.txt")],
                tools=TOOLS,
                max_tokens=t.max_output,
                **t.kwargs,
            )
        assert "Function call is missing a thought_signature" in srv.refusals[-1]
        assert "default_api:list_files" in srv.refusals[-1]


def test_failover_to_openai_and_back_keeps_both_sides_valid(tmp_path):
    """OpenAI allows 40 characters in a tool-call id; litellm's Gemini ids carry the signature
    (hundreds). On a failover to an OpenAI-compatible provider the ids go out without it (litellm
    strips its own separator for non-Gemini targets; the server enforces OpenAI's limit); back
    on Gemini, the kept message goes verbatim again, signature intact."""
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "script.toml").write_text(
        '[[step]]\nparticipant = "builder"\ntext = "unused"\n'
        '[[step]]\nparticipant = "builder"\ncalls = [{ tool = "read_file", args = { path = "a.txt" } }]\n'
    )
    with (
        _gemini(tmp_path) as srv,
        OpenAIServer(
            load_script(tmp_path / "o" / "script.toml"), tmp_path / "o" / "ledger.json", id_limit=40
        ) as osrv,
    ):
        g = _target(srv)
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
        gen = providers.complete(g, messages, TOOLS, turn_id="x", timeout=30)
        messages += [gen.message, _tool_result(gen.message, "a.txt")]
        origins = {2: gen.source}
        gen2 = providers.complete(o, messages, TOOLS, turn_id="x", timeout=30, origins=origins)
        sent = osrv.requests[-1]["body"]["messages"]
        bare = gen.message["tool_calls"][0]["id"].split("__thought__")[0]
        assert sent[2]["tool_calls"][0]["id"] == bare and sent[3]["tool_call_id"] == bare
        assert osrv.refusals == 0
        messages += [gen2.message, _tool_result(gen2.message, "b")]
        origins[4] = gen2.source
        gen3 = providers.complete(g, messages, TOOLS, turn_id="x", timeout=30, origins=origins)
        assert gen3.message["content"] == "done" and srv.refusals == []
        first, foreign = _sent_calls(srv.requests[-1]["body"])
        assert first["thoughtSignature"] == signature({"name": "list_files", "args": {"path": "."}})
        # The OpenAI-written call has no signature: litellm sends Google's skip value for it.
        assert foreign["thoughtSignature"] == SKIP_SIGNATURE
        # The kept messages themselves are untouched.
        assert "__thought__" in messages[2]["tool_calls"][0]["id"]


@pytest.mark.full
def test_a_gemini_team_with_thinking_survives_kill_9_mid_turn(repo, autodev, tmp_path):
    """A whole run through the CLI, the daemon and litellm's gemini provider: a three-step turn
    killed (-9) during its second tool call and resumed; every request keeps every signature."""
    script = (
        step("builder", call("list_files", path="."), text="Looking around first.")
        + step("builder", call("run_command", command="sleep 2 && echo slept"))
        + post("builder", "done", "looked and slept")
    )
    with _server(GeminiServer, tmp_path, script, participants={"gemini-3-pro-preview": "builder"}) as srv:
        write_team(repo, _team(MODEL, srv.root, 'effort = "high"'), AUDIT_ONLY)
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
        assert srv.refusals == []
        # After the restart both calls went back rebuilt from the harness log, signed as given.
        assert [p["thoughtSignature"] for p in _sent_calls(srv.requests[-1]["body"])] == [
            signature({"name": "list_files", "args": {"path": "."}}),
            signature({"name": "run_command", "args": {"command": "sleep 2 && echo slept"}}),
        ]
        kept = [x["message"] for x in records_of(hlog) if x["type"] == "generation_finished"]
        assert kept[0]["tool_calls"][0]["provider_specific_fields"]["thought_signature"]
        assert [e["turn"] for e in events(repo, "turn_started")] == [1]  # the same turn, resumed
