"""Which step answers a request, and what it answers with: shared by the scripted HTTP server and
the in-process scripted model, so a script behaves the same through either.

Which step answers is derived from the run's state, never from how many requests were served: a
retried or resumed request must get the same answer as the request it replaces, or
crash-recovery would diverge from the original run. The state is a small ledger, per participant:
  next                 the first step index no turn has used yet
  turns[id].base       the step index where that turn started
  turns[id].errors     error steps already served in that turn
and a request is answered with step  base + (assistant messages in the request) + errors.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import TypeGuard

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from autodev.errors import ConfigError
from autodev.scripted.script import Script, Step, ToolCallSpec
from autodev.store.journal import JsonObject, is_object

# What an error status is called on the wire (OpenAI's error types).
ERROR_TYPES = {
    429: "rate_limit_error",
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
}


class TurnRecord(TypedDict, total=False):
    """A turn's place in a participant's steps."""

    base: int  # the step index where the turn started
    errors: int  # error steps already served in the turn
    delayed: list[int]  # step indexes whose delay was served


class Seat(TypedDict, total=False):
    """A participant's ledger."""

    next: int  # the first step index no turn has used yet
    turns: dict[str, TurnRecord]


LedgerFile = dict[str, Seat]
"""The ledger by participant, as ledger.json holds it (written by `_write_ledger` alone)."""
_LEDGER = TypeAdapter(LedgerFile)


class Function(TypedDict):
    name: str
    arguments: str  # JSON text


class ToolCall(TypedDict):
    """A tool call as OpenAI's chat completions API writes it."""

    id: str
    type: str
    function: Function


def _read_ledger(path: Path) -> LedgerFile:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"scripted ledger {path} is unreadable: {e}",
            "delete the file to start the script from its first step",
        ) from e
    if not isinstance(data, dict):
        raise ConfigError(
            f"scripted ledger {path} is not a JSON object",
            "delete the file to start the script from its first step",
        )
    try:
        return _LEDGER.validate_python(data)
    except ValidationError as e:
        raise ConfigError(
            f"scripted ledger {path} is unreadable: {e}",
            "delete the file to start the script from its first step",
        ) from e


def _write_ledger(path: Path, data: LedgerFile) -> None:
    # tmp + fsync + rename: a crash leaves the old ledger or the new one, never half of one.
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # mkstemp makes the file 0600, private like every run-folder file; the rename keeps that.
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Ledger:
    """The script's steps by participant and the ledger of which step each turn has reached.
    With a path the ledger is a file (it survives a restart of the daemon); without, it lives in
    memory (the in-process model of one test)."""

    def __init__(self, script: Script, path: Path | None = None):
        self.script = script
        self.path = Path(path) if path is not None else None
        self.lock = threading.Lock()
        self._memory: LedgerFile = {}
        self.by_participant: dict[str, list[Step]] = {}
        for s in script.steps:
            self.by_participant.setdefault(s.participant, []).append(s)
        if self.path is not None:
            _read_ledger(self.path)  # a broken ledger fails now, not on the first request

    def choose(self, participant: str, turn: str, assistant_count: int) -> tuple[int, Step | None]:
        """Pick the step for a request and persist the ledger; called under `lock`."""
        ledger = _read_ledger(self.path) if self.path is not None else self._memory
        mine = ledger.setdefault(participant, {"next": 0, "turns": {}})
        first = mine.setdefault("next", 0)
        turns = mine.setdefault("turns", {})
        if turn not in turns:
            turns[turn] = {"base": first, "errors": 0}
        record = turns[turn]
        errors = record.setdefault("errors", 0)
        index = record.setdefault("base", first) + assistant_count + errors
        mine["next"] = max(first, index + 1)
        steps = self.by_participant.get(participant, [])
        step = steps[index] if index < len(steps) else None
        if step is not None and step.error is not None:
            # Counted before answering, so the retry of this very request moves on.
            record["errors"] = errors + 1
        if self.path is not None:
            _write_ledger(self.path, ledger)
        return index, step

    def delay(self, participant: str, turn: str, index: int, step: Step | None) -> float:
        """Seconds to wait before answering: a step's `delay_sec` the first time it is served
        in a turn, none when the same request comes again (a retry, a resumed turn), so a test
        can cut a slow request and then see the turn finish. Called under `lock`, after choose."""
        if step is None or not step.delay_sec:
            return 0.0
        ledger = _read_ledger(self.path) if self.path is not None else self._memory
        record = ledger.setdefault(participant, {}).setdefault("turns", {}).setdefault(turn, {})
        served = record.setdefault("delayed", [])
        if index in served:
            return 0.0
        served.append(index)
        if self.path is not None:
            _write_ledger(self.path, ledger)
        return step.delay_sec


def tokens(n_chars: int) -> int:
    return max(1, n_chars // 4)


def safe_id(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", s) or "_"


def assistants(messages: object) -> int:
    """How many assistant messages a request holds (the steps its turn has already had)."""
    return sum(1 for m in objects(messages) if m.get("role") == "assistant")


def items(value: object) -> list[object]:
    """The items of a JSON array in a request; none for anything else (a key left out, null)."""
    return value if is_list(value) else []


def objects(value: object) -> list[JsonObject]:
    """The objects of a JSON array in a request (messages, blocks, parts); other items skipped."""
    return [v for v in items(value) if is_object(v)]


def is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def reply(participant: str, turn: str, index: int, step: Step | None) -> tuple[str | None, list[ToolCall]]:
    """The text and OpenAI-shaped tool calls of a step that is not an error (None: the script
    is exhausted for this participant). Call ids are stable across retries and resume."""
    if step is None:
        text: str | None = f"(script exhausted for {participant})"
        calls: list[ToolCallSpec] = []
    else:
        text, calls = step.text, step.calls
    tool_calls: list[ToolCall] = [
        {
            "id": f"call_{safe_id(turn)}_{index}_{j}",
            "type": "function",
            "function": {"name": c.tool, "arguments": c.arguments()},
        }
        for j, c in enumerate(calls)
    ]
    return text, tool_calls


def output_chars(text: str | None, tool_calls: list[ToolCall]) -> int:
    return len(text or "") + sum(len(t["function"]["arguments"]) for t in tool_calls)


EXHAUSTED_CODE = "script_exhausted"


def exhausted_message(participant: str, index: int, steps: int) -> str:
    """A request past the participant's last step: said as what it is, not answered with text
    the turn would end silent on (three of those read "ended 3 turns without posting")."""
    return (
        f"the script for {participant} has no step {index + 1} "
        f"(it has {steps} step{'' if steps == 1 else 's'} for {participant})"
    )


def error_message(step: Step, participant: str, index: int) -> str:
    return f"scripted error {step.error} for {participant} (step index {index})"
