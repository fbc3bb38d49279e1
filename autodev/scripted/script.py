"""A scripted model's script (SPEC §11): the TOML file of steps per participant, loaded and
checked. The scripted HTTP server (`server.py`) and the in-process model (`model.py`) answer from
the same scripts."""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from autodev.config.base import MODEL_CONFIG, rule_error
from autodev.config.loading import explain
from autodev.errors import ConfigError
from autodev.rules.names import RUN_INDEX
from autodev.store.journal import is_object


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
    args: dict[str, object]
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
    price: dict[str, float] | None = None  # USD per token: {input_per_token, output_per_token}

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

    tables = doc.get("step")
    if tables == [] or ("step" not in doc and set(doc) <= {"price"}):
        raise ScriptError(
            f"script {path} has no [[step]] tables",
            "add at least one [[step]] with a participant",
            path=path,
            key="step",
        )
    try:
        checked = ScriptFile.model_validate(doc)
    except ValidationError as e:
        raise _script_error(path, doc, list(e.errors())) from None
    price = checked.price.model_dump() if checked.price is not None else None
    run = run_index()
    kept = [s for s in checked.step if s.runs is None or run is None or run in s.runs]
    return Script(path=path, steps=[_step(s) for s in kept], price=price)


def run_index() -> int | None:
    """This run's number in its best-of group (`autodev start --best-of`, `eval --best-of`)."""
    raw = os.environ.get(RUN_INDEX, "")
    return int(raw) if raw.isdigit() else None


class CallSpec(BaseModel):
    """One tool call the scripted model makes."""

    model_config = MODEL_CONFIG

    tool: str
    """The tool's name, as the participant's tool list names it."""
    args: dict[str, object] = Field(default_factory=dict)
    """The call's arguments (sent as JSON)."""
    raw_args: str | None = None
    """Sent verbatim instead of `args`: a model's malformed JSON, to test how it is handled."""

    @field_validator("tool")
    @classmethod
    def _named(cls, v: str) -> str:
        if not v.strip():
            raise rule_error("must not be empty", 'add tool = "<tool name>"')
        return v.strip()

    @model_validator(mode="after")
    def _sendable(self) -> CallSpec:
        try:
            json.dumps(self.args)
        except (TypeError, ValueError) as e:
            raise rule_error(
                f"args cannot be sent as JSON ({e})", "quote TOML dates and times as strings"
            ) from e
        if self.raw_args is not None and "args" in self.model_fields_set:
            raise rule_error("raw_args is used instead of args, not with them", "drop args or raw_args")
        return self


class StepSpec(BaseModel):
    """One answer of the scripted model to one participant's request."""

    model_config = MODEL_CONFIG

    participant: str
    """Who asks: a team member's name, or "audit"."""
    calls: list[CallSpec] = Field(default_factory=list)
    """The tool calls of the answer."""
    text: str | None = None
    """The answer's text."""
    error: int | None = Field(default=None, ge=400, le=599)
    """Answer with this HTTP error status instead (e.g. 429)."""
    retry_after: float | None = Field(default=None, ge=0)
    """The error's Retry-After, in seconds."""
    delay_sec: float = Field(default=0.0, ge=0, le=3600)
    """The first answer to this step waits this long (a slow provider)."""
    runs: list[int] | None = None
    """Only in these runs of a best-of group or `eval --best-of` (numbered from 1, as
    AUTODEV_RUN_INDEX says); default: every run. A script whose runs differ, deterministically."""

    @field_validator("participant")
    @classmethod
    def _named(cls, v: str) -> str:
        if not v.strip():
            raise rule_error("must not be empty", 'add participant = "<name>" (a team member or "audit")')
        return v.strip()

    @model_validator(mode="after")
    def _one_answer(self) -> StepSpec:
        if self.retry_after is not None and self.error is None:
            raise rule_error("retry_after without error", "add error = 429 or drop retry_after")
        if self.error is not None and (self.calls or self.text is not None):
            raise rule_error("error cannot be combined with calls or text", "split it into two steps")
        if self.error is None and not self.calls and self.text is None:
            raise rule_error("has no response", 'give it calls = [...], text = "..." or error = 429')
        return self


class PriceSpec(BaseModel):
    """USD per token. litellm has no price for the scripted model, so the daemon hands these to
    litellm as custom prices and the run's cost (and budgets) work offline as with a priced
    provider."""

    model_config = MODEL_CONFIG

    input_per_token: float = Field(default=0.0, ge=0)
    """Dollars per prompt token."""
    output_per_token: float = Field(default=0.0, ge=0)
    """Dollars per completion token."""


class ScriptFile(BaseModel):
    """A script file: its [[step]] tables and an optional [price] table."""

    model_config = MODEL_CONFIG

    step: list[StepSpec]
    """The answers, in order; each participant is answered from its own steps."""
    price: PriceSpec | None = None
    """What the scripted model's tokens cost."""


def _step(s: StepSpec) -> Step:
    return Step(
        participant=s.participant,
        calls=[ToolCallSpec(tool=c.tool, args=c.args, raw_args=c.raw_args) for c in s.calls],
        text=s.text,
        error=s.error,
        retry_after=s.retry_after,
        delay_sec=s.delay_sec,
    )


def _script_error(path: Path, doc: Mapping[str, object], errors: Sequence[ErrorDetails]) -> ScriptError:
    """Pydantic's errors in the config files' words, each placed at its step (numbered from 1)."""
    placed: list[tuple[str, str, int | None, str | None]] = []
    for err in errors:
        loc = tuple(err["loc"])
        data: object
        root: type[BaseModel]
        if len(loc) >= 2 and loc[0] == "step" and isinstance(loc[1], int):
            steps = doc.get("step")
            step, root = loc[1] + 1, StepSpec
            data = steps[loc[1]] if _is_list(steps) and loc[1] < len(steps) else None
            err = err.copy()
            err["loc"] = loc[2:]
        else:
            step, root, data = None, ScriptFile, doc
        (problem, fix), *_ = explain(root, [err], data if is_object(data) else {}) or [("is invalid", "")]
        key = next((str(k) for k in reversed(err["loc"]) if isinstance(k, str)), None)
        placed.append(((f"step {step}: " if step else "") + problem, fix, step, key))
    first = placed[0]
    if len(placed) == 1:
        return ScriptError(f"script {path}, {first[0]}", first[1], path=path, step=first[2], key=first[3])
    lines = [f"script {path}: {len(placed)} problems"]
    lines += [f"  - {problem}" + (f"\n    fix: {fix}" if fix else "") for problem, fix, _s, _k in placed]
    return ScriptError("\n".join(lines), "correct each key listed", path=path, step=first[2], key=first[3])


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)
