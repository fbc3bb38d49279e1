"""The in-process scripted model answers a script exactly as the scripted HTTP server does
through litellm: the same steps, texts, tool-call ids, ledger and error classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodev.harness import providers
from autodev.harness.model import LitellmModel
from autodev.scripted import ScriptedServer, load_script
from autodev.scripted.model import ScriptedModel

SCRIPT = """
[price]
input_per_token = 0.001
output_per_token = 0.002

[[step]]
participant = "builder"
text = "reading"
calls = [{ tool = "read_file", args = { path = "README.md" } }]

[[step]]
participant = "builder"
error = 429
retry_after = 2

[[step]]
participant = "builder"
error = 503

[[step]]
participant = "builder"
calls = [{ tool = "post", raw_args = "{not json" }]

[[step]]
participant = "builder"
error = 401
"""

TOOL_RESULT = {"role": "tool", "tool_call_id": "x", "content": "README.md: 1 lines"}


def _walk(model, target: providers.Target) -> list:
    """Four requests of one turn, then the first of the next: what each answered, or raised."""
    messages: list[dict] = [{"role": "user", "content": "turn 1"}]
    out: list = []
    for turn in ("r:1", "r:1", "r:1", "r:1", "r:2"):
        if turn == "r:2":
            messages = [{"role": "user", "content": "turn 2"}]
        try:
            gen = model.complete(target, messages, [], turn_id=turn, timeout=30)
        except (providers.RateLimited, providers.Transient, providers.Refused) as e:
            out.append((type(e).__name__, getattr(e, "retry_after", None), getattr(e, "kind", None)))
            continue
        out.append((gen.message.get("content"), gen.message.get("tool_calls"), gen.cost is not None))
        messages += [gen.message, TOOL_RESULT]
    return out


def test_in_process_and_http_answer_alike(tmp_path: Path) -> None:
    path = tmp_path / "script.toml"
    path.write_text(SCRIPT)
    script = load_script(path)
    local = _walk(ScriptedModel(script), ScriptedModel(script).targets("builder")[0])
    with ScriptedServer(script, tmp_path / "ledger.json") as srv:
        [target] = providers.targets_for(
            "builder",
            "scripted",
            [],
            effort=None,
            api_base=None,
            api_key_env=None,
            scripted_url=srv.base_url,
            scripted_price=script.price,
        )
        remote = _walk(LitellmModel(), target)
    assert local == remote
    assert local[0][0] == "reading" and local[0][1][0]["id"] == "call_r_1_0_0"
    assert local[1] == ("RateLimited", 2.0, None) and local[2] == ("Transient", None, None)
    assert local[3][1][0]["function"]["arguments"] == "{not json"
    assert local[4] == ("Refused", None, "auth")


def test_a_ledger_file_carries_a_turn_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "script.toml"
    path.write_text(SCRIPT)
    ledger = tmp_path / "ledger.json"
    first = ScriptedModel(path, ledger)
    [t] = first.targets("builder")
    messages = [{"role": "user", "content": "turn 1"}]
    gen = first.complete(t, messages, [], turn_id="r:1", timeout=1)
    # A restarted daemon resends the same request: the same answer, not the next step.
    again = ScriptedModel(path, ledger).complete(t, messages, [], turn_id="r:1", timeout=1)
    assert again.message == gen.message
    with pytest.raises(providers.RateLimited):
        ScriptedModel(path, ledger).complete(
            t, [*messages, gen.message, TOOL_RESULT], [], turn_id="r:1", timeout=1
        )
