"""harness.jsonl: the intent and result records of a turn, a union on `type` (recovery must
understand every record of an interrupted turn, so an unknown type is refused).

Every writer builds its record's model and writes `line(rec)`: `type` first, then the fields
that were set, in the order declared here (the order the log has always had: a test pins each
kind's bytes). A record's `type` has its default, so a writer names only what it knows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, JsonValue, TypeAdapter

from autodev.records.base import Open
from autodev.records.chat import AssistantMessage, Checked, Message, assistant, message, messages

JsonArgs = dict[str, JsonValue]  # a tool call's arguments: whatever JSON object the model sent
_ARGS: TypeAdapter[JsonArgs] = TypeAdapter(JsonArgs, config=ConfigDict(defer_build=True))


def json_args(value: Mapping[str, object]) -> JsonArgs:
    """Arguments parsed from JSON, checked as the JSON object they are (keys in their order)."""
    return _ARGS.validate_python(value)


class _Harness(Open):
    run: str
    turn: int
    ts: float | None = None  # epoch seconds (older logs have none): the spans' times (autodev/telemetry)


class CreditBaseline(Open):
    """The repository's state at turn start, as credit takes it (`harness.credit.Baseline`)."""

    head: str | None = None
    dirty: dict[str, str] = Field(default_factory=dict[str, str])  # path -> content hash
    branch: str | None = None
    off_branch: bool = False


class TurnStarted(_Harness):
    type: Literal["turn_started"] = "turn_started"
    participant: str
    head: str | None = None
    baseline: CreditBaseline
    messages: Annotated[list[Message], Checked(messages)]
    agent: str | None = None  # an agent turn's first CLI


class GenerationStarted(_Harness):
    type: Literal["generation_started"] = "generation_started"
    step: int
    attempt: int
    model: str


class GenerationFinished(_Harness):
    type: Literal["generation_finished"] = "generation_finished"
    step: int
    message: Annotated[AssistantMessage, Checked(assistant)]
    source: str | None = None
    finish_reason: str | None = None
    response_model: str | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None


class GenerationFailed(_Harness):
    type: Literal["generation_failed"] = "generation_failed"
    error: str


class HookOutcome(Open):
    """A before_tool hook's effective outcome."""

    blocked: str | None = None  # why the call is blocked; None: it runs
    args: JsonArgs = Field(default_factory=dict[str, JsonValue])  # the arguments it runs with


class ToolStarted(_Harness):
    type: Literal["tool_started"] = "tool_started"
    call_id: str
    name: str
    args: JsonArgs
    replay_safe: bool
    hook: HookOutcome | None = None  # a before_tool hook's effective outcome


class ToolFinished(_Harness):
    type: Literal["tool_finished"] = "tool_finished"
    call_id: str
    result: str
    synthetic: bool = False  # the "interrupted" answer recovery gave, not a run


class PostStarted(_Harness):
    type: Literal["post_started"] = "post_started"
    id: str


class PostCommitted(_Harness):
    type: Literal["post_committed"] = "post_committed"
    seq: int


class TurnFinished(_Harness):
    type: Literal["turn_finished"] = "turn_finished"
    seq: int | None = None
    reason: str | None = None


class Compacted(_Harness):
    type: Literal["compacted"] = "compacted"
    step: int
    hard: bool = False
    stubs: dict[str, str]


class Nudged(_Harness):
    type: Literal["nudged"] = "nudged"
    message: Annotated[Message, Checked(message)]


class AgentStarted(_Harness):
    """A coding-agent CLI's process began (autodev/agents): recovery kills a stale one."""

    type: Literal["agent_started"] = "agent_started"
    agent: str
    pid: int | None = None
    started: float | None = None
    resume: str | None = None  # the CLI session it continues
    stream: str | None = None  # its raw output, relative to the run folder


class AgentUsage(Open):
    """What one CLI run used, as its agent_finished record carries it (recovery adds them up)."""

    model: str = ""  # the agent's label (agent:NAME); a figure without one counts under "?"
    generations: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0


class AgentFinished(_Harness):
    type: Literal["agent_finished"] = "agent_finished"
    agent: str
    pid: int | None = None  # the process agent_started named
    exit_code: int | None = None
    session: str | None = None
    timed_out: bool | None = None
    limit: float | None = None  # a usage limit's reset time
    usage: AgentUsage | None = None
    recovered: bool = False  # closed by recovery: its usage is read from its raw stream


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


def line(rec: HarnessRecord) -> dict[str, object]:
    """`rec` as its line holds it: `type` first, then what was set, in the declared order."""
    return {"type": rec.type, **rec.dump()}
