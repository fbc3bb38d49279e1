"""The scripted model in-process: a harness `Model` that answers from a script without HTTP.

It reads the same TOML scripts and keeps the same ledger as the scripted server (`answers.py`),
so a script drives a turn the same way through either; error steps raise the errors litellm's
would become (`providers.RateLimited`, `Transient`, `Refused`). Tests of the turn loop use it to
run in milliseconds; the end-to-end tests keep the real HTTP path.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Mapping
from pathlib import Path

from autodev.harness import providers
from autodev.harness.messages import Message, ToolSpec, assistant
from autodev.harness.model import Model
from autodev.scripted.answers import (
    Ledger,
    assistants,
    error_message,
    exhausted_message,
    output_chars,
    reply,
    tokens,
)
from autodev.scripted.script import Script, Step, load_script
from autodev.store.journal import JsonObject


class ScriptedModel(Model):
    def __init__(self, script: Script | Path, ledger_path: Path | None = None):
        self.script = script if isinstance(script, Script) else load_script(Path(script))
        self.ledger = Ledger(self.script, ledger_path)
        self.requests: list[JsonObject] = []  # what each request held, oldest first

    def targets(self, who: str, *, window: int = providers.SCRIPTED_WINDOW) -> list[providers.Target]:
        """The target of participant `who` on this model (the participant's name is its model id,
        as on the scripted server)."""
        cap = providers.output_cap(window, None, providers.DEFAULT_MAX_OUTPUT, None)
        return [providers.Target("scripted", f"openai/{who}", scripted=True, window=window, max_output=cap)]

    def complete(
        self,
        target: providers.Target,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        turn_id: str,
        timeout: float,
        origins: Mapping[int, str] | None = None,
    ) -> providers.Generation:
        participant = target.model.rsplit("/", 1)[-1]
        with self.ledger.lock:
            index, step = self.ledger.choose(participant, turn_id, assistants(messages))
            self.requests.append(
                {
                    "participant": participant,
                    "turn": turn_id,
                    "index": index,
                    "messages": copy.deepcopy(messages),
                    "tools": tools,
                }
            )
            delay = self.ledger.delay(participant, turn_id, index, step)
        time.sleep(delay)
        if step is not None and step.error is not None:
            raise _error(target, step, error_message(step, participant, index))
        if step is None:
            steps = len(self.ledger.by_participant.get(participant, []))
            raise providers.Refused("script", exhausted_message(participant, index, steps))
        text, calls = reply(participant, turn_id, index, step)
        message: JsonObject = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        prompt = tokens(len(json.dumps({"model": target.model, "messages": messages, "tools": tools})))
        completion = tokens(output_chars(text, calls))
        price = self.script.price
        cost = prompt * price["input_per_token"] + completion * price["output_per_token"] if price else None
        finish = "tool_calls" if calls else "stop"
        return providers.Generation(
            assistant(message), prompt, completion, cost, target.label, 0, target.model, finish, target.model
        )


def _error(target: providers.Target, step: Step, text: str) -> Exception:
    """What litellm's error for this status becomes in `providers.complete`."""
    status = step.error or 500
    if status == 429:
        return providers.RateLimited(target, step.retry_after or 0.0, text)
    if status >= 500:
        return providers.Transient(f"{target.label}: {text}")
    kind = {401: "auth", 403: "auth", 404: "model"}.get(status, "request")
    return providers.Refused(kind, text)
