"""harness.jsonl: the intent and result records of a turn, a union on `type` (recovery must
understand every record of an interrupted turn, so an unknown type is refused)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from autodev.records.base import Open


class _Harness(Open):
    run: str
    turn: int
    ts: float | None = None  # epoch seconds (older logs have none): the spans' times (autodev/telemetry)


class TurnStarted(_Harness):
    type: Literal["turn_started"]
    participant: str
    head: str | None = None
    baseline: dict[str, Any]
    messages: list[dict[str, Any]]


class GenerationStarted(_Harness):
    type: Literal["generation_started"]
    step: int
    attempt: int
    model: str


class GenerationFinished(_Harness):
    type: Literal["generation_finished"]
    step: int
    message: dict[str, Any]
    model: str | None = None
    source: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None
    finish_reason: str | None = None
    response_model: str | None = None


class GenerationFailed(_Harness):
    type: Literal["generation_failed"]
    error: str


class ToolStarted(_Harness):
    type: Literal["tool_started"]
    call_id: str
    name: str
    args: dict[str, Any]
    replay_safe: bool
    hook: dict[str, Any] | None = None  # a before_tool hook's effective outcome


class ToolFinished(_Harness):
    type: Literal["tool_finished"]
    call_id: str
    result: str
    synthetic: bool = False  # the "interrupted" answer recovery gave, not a run


class PostStarted(_Harness):
    type: Literal["post_started"]
    id: str


class PostCommitted(_Harness):
    type: Literal["post_committed"]
    seq: int


class TurnFinished(_Harness):
    type: Literal["turn_finished"]
    seq: int | None = None
    reason: str | None = None


class Compacted(_Harness):
    type: Literal["compacted"]
    step: int
    hard: bool = False
    stubs: dict[str, str]


class Nudged(_Harness):
    type: Literal["nudged"]
    message: dict[str, Any]


class AgentStarted(_Harness):
    """A coding-agent CLI's process began (autodev/agents): recovery kills a stale one."""

    type: Literal["agent_started"]
    agent: str
    pid: int | None = None
    started: float | None = None
    resume: str | None = None  # the CLI session it continues
    stream: str | None = None  # its raw output, relative to the run folder


class AgentFinished(_Harness):
    type: Literal["agent_finished"]
    agent: str
    exit_code: int | None = None
    session: str | None = None
    timed_out: bool | None = None
    limit: float | None = None  # a usage limit's reset time


HarnessRecord = Annotated[
    TurnStarted
    | GenerationStarted
    | GenerationFinished
    | GenerationFailed
    | ToolStarted
    | ToolFinished
    | PostStarted
    | PostCommitted
    | TurnFinished
    | Compacted
    | Nudged
    | AgentStarted
    | AgentFinished,
    Field(discriminator="type"),
]
