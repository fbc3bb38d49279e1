"""A scripted model's script (SPEC §11): the TOML file of steps per participant, loaded and
checked. The scripted HTTP server (`server.py`) and the in-process model (`model.py`) answer from
the same scripts."""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autodev.errors import ConfigError

STEP_KEYS = ("participant", "calls", "text", "error", "retry_after", "delay_sec")
CALL_KEYS = ("tool", "args", "raw_args")


class ScriptError(ConfigError):
    """A script file is wrong; names the file, the step number, the key and the fix."""

    def __init__(
        self,
        message: str,
        fix: str = "",
        *,
        path: Path | None = None,
        step: int | None = None,
        key: str | None = None,
        line: int | None = None,
    ):
        super().__init__(message, fix)
        self.path = path
        self.step = step
        self.key = key
        self.line = line


@dataclass
class ToolCallSpec:
    tool: str
    args: dict
    raw_args: str | None = None  # sent verbatim instead of args: a model's malformed JSON

    def arguments(self) -> str:
        return self.raw_args if self.raw_args is not None else json.dumps(self.args)


@dataclass
class Step:
    participant: str
    calls: list[ToolCallSpec] = field(default_factory=list)
    text: str | None = None
    error: int | None = None
    retry_after: float | None = None
    delay_sec: float = 0.0  # the first answer to this step waits this long (a slow provider)


@dataclass
class Script:
    path: Path
    steps: list[Step]
    price: dict | None = None  # USD per token: {input_per_token, output_per_token}

    def for_participant(self, name: str) -> list[Step]:
        return [s for s in self.steps if s.participant == name]


def load_script(path: Path) -> Script:
    """Read and check a script file; every problem names the file, step and key."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScriptError(
            f"cannot read script {path}: {e.strerror or e}",
            "check the [scripted] path in the team file",
            path=path,
        ) from e
    try:
        doc = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"at line (\d+)", str(e))
        line = int(m.group(1)) if m else None
        where = f"line {line}" if line else "unknown line"
        shown = ""
        if line and 0 < line <= len(raw.splitlines()):
            shown = f": {raw.splitlines()[line - 1].strip()!r}"
        raise ScriptError(
            f"script {path} is not valid TOML at {where}{shown} ({e})",
            "fix the TOML syntax on that line",
            path=path,
            line=line,
        ) from e

    extra = sorted(set(doc) - {"step", "price"})
    if extra:
        raise ScriptError(
            f"script {path}: unknown top-level key {extra[0]!r}",
            "a script holds [[step]] tables and an optional [price] table",
            path=path,
            key=extra[0],
        )
    price = _check_price(path, doc.get("price"))
    tables = doc.get("step")
    if not isinstance(tables, list) or not tables:
        raise ScriptError(
            f"script {path} has no [[step]] tables",
            "add at least one [[step]] with a participant",
            path=path,
            key="step",
        )
    return Script(path=path, steps=[_check_step(path, n, t) for n, t in enumerate(tables, 1)], price=price)


PRICE_KEYS = ("input_per_token", "output_per_token")


def _check_price(path: Path, t: Any) -> dict | None:
    """The optional [price] table: USD per prompt and per completion token. litellm has no
    price for the scripted model, so the daemon hands these to litellm as custom prices and
    the run's cost (and budgets) work offline exactly as with a priced provider."""
    if t is None:
        return None
    fix = "write\n    [price]\n    input_per_token = 0.000001\n    output_per_token = 0.000002"
    if not isinstance(t, dict):
        raise ScriptError(f"script {path}: price must be a table", fix, path=path, key="price")
    for k, v in t.items():
        if k not in PRICE_KEYS:
            raise ScriptError(
                f"script {path}: price has unknown key {k!r}",
                f"use only {', '.join(PRICE_KEYS)}",
                path=path,
                key=k,
            )
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ScriptError(
                f"script {path}: price.{k} must be a number of dollars, at least 0 (got {v!r})",
                fix,
                path=path,
                key=k,
            )
    return {k: float(t.get(k, 0.0)) for k in PRICE_KEYS}


def _check_step(path: Path, n: int, t: Any) -> Step:
    def bad(msg: str, fix: str, key: str | None = None) -> ScriptError:
        return ScriptError(f"script {path}, step {n}: {msg}", fix, path=path, step=n, key=key)

    if not isinstance(t, dict):
        raise bad("is not a table", "write each step as a [[step]] table")
    for key in t:
        if key not in STEP_KEYS:
            raise bad(f"unknown key {key!r}", f"use only {', '.join(STEP_KEYS)}", key)

    who = t.get("participant")
    if not isinstance(who, str) or not who.strip():
        raise bad(
            "missing participant", 'add participant = "<name>" (a team member or "audit")', "participant"
        )

    text = t.get("text")
    if text is not None and not isinstance(text, str):
        raise bad("text must be a string", 'write text = "..."', "text")

    error = t.get("error")
    if error is not None and (
        isinstance(error, bool) or not isinstance(error, int) or not 400 <= error <= 599
    ):
        raise bad(f"error must be an HTTP status 400-599, not {error!r}", "write e.g. error = 429", "error")

    retry_after = t.get("retry_after")
    if retry_after is not None:
        if error is None:
            raise bad("retry_after without error", "add error = 429 or drop retry_after", "retry_after")
        if isinstance(retry_after, bool) or not isinstance(retry_after, (int, float)) or retry_after < 0:
            raise bad(
                "retry_after must be a number of seconds >= 0", "write e.g. retry_after = 2", "retry_after"
            )

    delay = t.get("delay_sec", 0)
    if isinstance(delay, bool) or not isinstance(delay, (int, float)) or not 0 <= delay <= 3600:
        raise bad(
            f"delay_sec must be a number of seconds from 0 to 3600, not {delay!r}",
            "write e.g. delay_sec = 2.5",
            "delay_sec",
        )

    calls = [_check_call(bad, j, c) for j, c in enumerate(_as_list(bad, t.get("calls")), 1)]

    if error is not None and (calls or text is not None):
        raise bad("error cannot be combined with calls or text", "split it into two steps", "error")
    if error is None and not calls and text is None:
        raise bad("has no response", 'give it calls = [...], text = "..." or error = 429', "calls")
    return Step(
        participant=who.strip(),
        calls=calls,
        text=text,
        error=error,
        retry_after=float(retry_after) if retry_after is not None else None,
        delay_sec=float(delay),
    )


def _as_list(bad, calls: Any) -> list:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise bad(
            "calls must be a list of { tool = ..., args = {...} }",
            'write calls = [{ tool = "post", args = { ... } }]',
            "calls",
        )
    return calls


def _check_call(bad, j: int, c: Any) -> ToolCallSpec:
    if not isinstance(c, dict):
        raise bad(f"call {j} is not a table", 'write { tool = "name", args = { ... } }', "calls")
    for key in c:
        if key not in CALL_KEYS:
            raise bad(f"call {j} has unknown key {key!r}", "a call holds only tool, args and raw_args", key)
    tool = c.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise bad(f"call {j} is missing tool", 'add tool = "<tool name>"', "tool")
    args = c.get("args", {})
    if not isinstance(args, dict):
        raise bad(f"call {j} ({tool}): args must be a table", "write args = { key = value }", "args")
    try:
        json.dumps(args)
    except (TypeError, ValueError) as e:
        raise bad(
            f"call {j} ({tool}): args cannot be sent as JSON ({e})",
            "quote TOML dates and times as strings",
            "args",
        ) from e
    raw = c.get("raw_args")
    if raw is not None and (not isinstance(raw, str) or "args" in c):
        raise bad(
            f"call {j} ({tool}): raw_args must be a string, used instead of args",
            'write raw_args = "{not json" (to test malformed arguments)',
            "raw_args",
        )
    return ToolCallSpec(tool=tool.strip(), args=args, raw_args=raw)
