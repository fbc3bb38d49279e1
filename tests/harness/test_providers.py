"""The provider layer through litellm's real HTTP client against the scripted server."""

import json

import pytest

from autodev.errors import ProviderError
from autodev.harness import providers
from autodev.scripted import ScriptedServer, load_script


def _server(tmp_path, body: str) -> ScriptedServer:
    script = tmp_path / "script.toml"
    script.write_text(body)
    return ScriptedServer(load_script(script), tmp_path / "ledger.json", tmp_path / "requests.jsonl")


def test_effort_and_endpoint_reach_the_provider_request(tmp_path, monkeypatch):
    """effort maps to the provider's reasoning setting; api_base and api_key_env are honoured."""
    monkeypatch.setenv("LOCAL_KEY", "local-secret-123")
    with _server(tmp_path, '[[step]]\nparticipant = "coder"\ntext = "hi"\n') as srv:
        [t] = providers.targets_for(
            "builder",
            "openai/coder",
            [],
            effort="high",
            api_base=srv.base_url,
            api_key_env="LOCAL_KEY",
            scripted_url=None,
        )
        gen = providers.complete(t, [{"role": "user", "content": "x"}], [], turn_id="t1", timeout=30)
    assert gen.message["content"] == "hi" and gen.model == "openai/coder"
    assert gen.prompt_tokens > 0 and gen.completion_tokens > 0
    body = json.loads((tmp_path / "requests.jsonl").read_text().splitlines()[0])["body"]
    assert body["reasoning_effort"] == "high"
    assert body["model"] == "coder"


def test_scripted_targets_carry_the_participant_and_failover_labels():
    ts = providers.targets_for(
        "builder",
        "scripted",
        ["scripted:backup", "openai/gpt-5"],
        effort=None,
        api_base=None,
        api_key_env=None,
        scripted_url="http://127.0.0.1:1/v1",
    )
    assert [t.label for t in ts] == ["scripted", "scripted:backup", "openai/gpt-5"]
    assert ts[0].model == ts[1].model == "openai/builder" and ts[0].scripted and not ts[2].scripted


def test_scripted_without_a_server_is_a_clear_error():
    with pytest.raises(ProviderError, match=r"\[scripted\]"):
        providers.targets_for(
            "builder", "scripted", [], effort=None, api_base=None, api_key_env=None, scripted_url=None
        )


@pytest.mark.parametrize(
    "status,exc,kind",
    [
        (429, providers.RateLimited, None),
        (500, providers.Transient, None),
        (503, providers.Transient, None),
        (529, providers.Transient, None),  # Anthropic's "overloaded"
        (401, providers.Refused, "auth"),
        (403, providers.Refused, "auth"),
        (404, providers.Refused, "model"),
        (400, providers.Refused, "request"),
    ],
)
def test_http_errors_are_classified_by_what_fixes_them(tmp_path, status, exc, kind):
    extra = "retry_after = 7\n" if status == 429 else ""
    with _server(tmp_path, f'[[step]]\nparticipant = "builder"\nerror = {status}\n{extra}') as srv:
        [t] = providers.targets_for(
            "builder", "scripted", [], effort=None, api_base=None, api_key_env=None, scripted_url=srv.base_url
        )
        with pytest.raises(exc) as info:
            providers.complete(t, [{"role": "user", "content": "x"}], [], turn_id="t", timeout=30)
    if status == 429:
        assert info.value.retry_after == 7
    if kind:
        assert info.value.kind == kind
        err = info.value.to_error("builder", "scripted")
        # One line naming participant and model; the fix says what to change; raw text kept aside.
        assert "\n" not in err.message and "builder" in err.message and "scripted" in err.message
        assert "scripted error" not in err.message and "scripted error" in err.detail
        assert "team.toml" in err.fix


def test_backoff_doubles_up_to_the_cap():
    assert [providers.backoff(a, 0.5, cap=3) for a in (1, 2, 3, 4, 5)] == [0.5, 1, 2, 3, 3]


@pytest.mark.parametrize(
    "text,unknown",
    [
        ("The model `gpt-9` does not exist or you do not have access to it.", True),
        ('{"error": {"code": "model_not_found"}}', True),
        ("model 'llama9' not found, try pulling it first", True),  # Ollama
        ("Unable to access non-serverless model x. Not a valid model ID", True),
        ("messages.1.content: Field required", False),
        ("Invalid value for 'tool_choice': the function does not exist", False),
        ("max_tokens is too large for this model: 99999 > 8192", False),
    ],
)
def test_a_400_that_names_an_unknown_model_is_told_apart_from_a_malformed_request(text, unknown):
    assert providers._unknown_model(text) is unknown


def test_an_answer_over_the_cap_is_dropped_before_anyone_stores_it(tmp_path):
    """A provider that ignores max_tokens and sends megabytes (issue 20, item 8): the answer is
    refused as a retryable fault, never returned to the turn (which would journal it)."""
    huge = "x" * (providers.MAX_ANSWER_CHARS + 1000)
    with _server(tmp_path, f'[[step]]\nparticipant = "builder"\ntext = "{huge}"\n') as srv:
        [t] = providers.targets_for(
            "builder", "scripted", [], effort=None, api_base=None, api_key_env=None, scripted_url=srv.base_url
        )
        with pytest.raises(providers.Oversized, match=r"over the 8,388,608 cap") as info:
            providers.complete(t, [{"role": "user", "content": "x"}], [], turn_id="t", timeout=60)
    assert isinstance(info.value, providers.Transient) and len(str(info.value)) < 300
