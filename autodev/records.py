"""Every shape autodev persists or exchanges, as pydantic models: one place to read them.

| file | model | on read |
|---|---|---|
| thread.jsonl | `Post` | extra fields allowed (SPEC §3: posts are additive) |
| state.json | `RunState` and its parts | extra fields allowed: a newer daemon's state stays readable |
| harness.jsonl | `HarnessRecord`, a union on `type` | extra fields allowed; an unknown `type` is refused |
| events.jsonl | `Event` (envelope), typed where a reader relies on fields | extra fields and unknown types allowed |
| inbox/*.json | `InboxMessage`, a union on `kind` | extra fields allowed; an unknown `kind` is refused |

Why the two closed unions: recovery must understand every record of an interrupted turn to
rebuild it safely, and the daemon must know what a user action asks for; skipping either would
lose work silently. Everything else is additive (SPEC §3): fields are only ever added, with a
default, so files written by older versions still load (tests/fixtures/ holds such a run).
`schema` numbers a format change that additive fields cannot express.

The models validate what the journals, state.json and the inbox hold; the code still passes the
records around as the dicts it wrote (a model dump would add every default), so validation never
changes what is written. This module imports pydantic: cold commands that do not need it
import it lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

SCHEMA = 1  # state.json's and events.jsonl's `schema` (state.SCHEMA, events.SCHEMA: a test keeps them equal)

Move = Literal["say", "work_done", "handoff", "wait", "gate", "done"]
State = Literal[
    "running", "waiting", "awaiting_user", "gated", "auditing", "paused", "stopped", "complete", "faulted"
]


class Open(BaseModel):
    """A record read from a file: fields a newer autodev added are kept, not refused."""

    # defer_build: a class costs its schema only when it first validates (cold commands stay fast)
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


# -- thread.jsonl ------------------------------------------------------------------------------


class Credit(Open):
    commits: list[Any] = []
    files: list[Any] = []


class GateNote(Open):
    id: str
    decision: str | None = None
    declarer: str | None = None
    by: str | None = None


class NoticeNote(Open):
    id: str
    from_: str | None = Field(default=None, alias="from")
    hold: str | None = None
    answered: bool | None = None


class Post(Open):
    """One line of thread.jsonl (SPEC §3)."""

    seq: int = Field(ge=1)
    from_: str = Field(alias="from")
    kind: Move
    text: str
    handoff: str | None = None
    ts: str
    id: str | None = None  # a provisioned id: appending it twice writes it once
    turn: int | str | None = None  # the daemon writes the turn number; the SPEC leaves it open
    credit: Credit | None = None  # work_done: null when not credited
    gate: GateNote | None = None  # a system note of a gate decision
    notice: NoticeNote | None = None  # a system note of a notice or its answer
    verdict: Literal["accept", "reopen"] | None = None  # the audit's note
    by: str | None = None  # who reopened: the model, or the check


# -- state.json --------------------------------------------------------------------------------


class Reason(Open):
    """Why the run is where it is (reasons.py): a stable code, a sentence, the way on."""

    code: str
    text: str = ""
    continue_: str = Field(default="", alias="continue")


class Gate(Open):
    id: str
    declarer: str
    text: str = ""
    seq: int | None = None


class Question(Open):
    from_: str = Field(alias="from")
    seq: int
    text: str = ""


class Wait(Open):
    """A wait post's timer, or a usage limit's reset (`usage_limit`)."""

    author: str
    due: float | None = None
    seq: int | None = None
    delay: float | None = None
    streak: int = 1
    since: float | None = None
    usage_limit: bool = False


class Notice(Open):
    id: str
    from_: str = Field(alias="from")
    text: str = ""
    hold: str | None = None
    pinned: bool = False
    answer: str | None = None
    delivered: bool = False
    released: str | None = None
    ts: str | None = None


class Figures(Open):
    """One participant's accounting: turns, credited work, tokens, cost, the silent streak."""

    turns: int = 0
    credited: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    compactions: int = 0
    cost: float = 0.0
    silent_streak: int = 0
    last_turn: int | None = None


class Usage(Open):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


class ModelUsage(Usage):
    generations: int = 0


class Control(Open):
    """A queued pause/resume/stop request (state.request)."""

    n: int
    action: Literal["pause", "resume", "stop"]


class Next(Open):
    speaker: str | None = None
    rule: str | None = None
    why: str | None = None


class PausedFrom(Open):
    state: State
    reason: Reason | None = None


class ConfigRefused(Open):
    turn: int | None = None
    participant: str | None = None
    stamp: str | None = None
    text: str | None = None


class RunState(Open):
    """state.json. Every field has the default a fresh run starts from (`blank_state`)."""

    schema_: int = Field(default=SCHEMA, alias="schema")
    version: int = 0
    state: State = "stopped"
    reason: Reason | None = None
    controls: list[Control] = []
    control_seq: int = 0
    controls_applied: int = 0
    # identity and the daemon
    run_id: str | None = None
    started_at: str | None = None
    base_head: str | None = None
    pid: int | None = None
    daemon: Literal["running", "stopped"] | None = None
    sessions: int = 0
    # where the run is
    turn: int = 0
    accounted_turn: int = 0
    applied_seq: int = 0
    recovered_turn: int | None = None
    speaking: str | None = None
    next: Next | None = None
    warnings: list[str] = []
    cursors: dict[str, int] = {}
    objective: str = ""
    user_messages: list[str] = []
    talk_turns: int = 0
    audits: int = 0
    # what is open
    question: Question | None = None
    wait: Wait | None = None
    last_wait: Wait | None = None
    gate: Gate | None = None
    approved_gates: list[Gate] = []
    notices: dict[str, Notice] = {}
    notice_seq: int = 0
    paused_from: PausedFrom | None = None
    limited_until: dict[str, float] = {}
    team_error: str | None = None
    config_refused: ConfigRefused | None = None
    # figures
    participants: dict[str, Figures] = {}
    models: dict[str, ModelUsage] = {}
    audit_usage: Usage | None = None


# -- harness.jsonl -----------------------------------------------------------------------------


class _Harness(Open):
    run: str
    turn: int


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


# -- events.jsonl ------------------------------------------------------------------------------


class Event(Open):
    """Every event: its type, time and run (SPEC §3); the rest is the type's own, additive."""

    type: str
    ts: str
    run: str
    schema_: int = Field(default=SCHEMA, alias="schema")


class PostEvent(Event):
    """A post copied into events (its `id` as `post_id`): the panel's Feed shows these."""

    seq: int
    from_: str = Field(alias="from")
    kind: str
    text: str


class GenerationEvent(Event):
    participant: str
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: float | None = None


class StateEvent(Event):
    state: State
    reason: Reason | None = None


EVENTS: dict[str, type[Event]] = {"post": PostEvent, "generation": GenerationEvent, "state": StateEvent}


# -- inbox/*.json ------------------------------------------------------------------------------


class _Inbox(Open):
    id: str = Field(min_length=1)
    ts: str | None = None


class SendMessage(_Inbox):
    kind: Literal["send"]
    text: str


class AnswerMessage(_Inbox):
    kind: Literal["answer"]
    notice_id: str
    text: str


class ApproveMessage(_Inbox):
    kind: Literal["approve"]
    gate_id: str | None = None


class DenyMessage(_Inbox):
    kind: Literal["deny"]
    gate_id: str | None = None
    reason: str | None = None


class NoticeMessage(_Inbox):
    kind: Literal["notice"]
    notice_id: str
    action: str


INBOX: dict[str, type[_Inbox]] = {
    "send": SendMessage,
    "answer": AnswerMessage,
    "approve": ApproveMessage,
    "deny": DenyMessage,
    "notice": NoticeMessage,
}
InboxMessage = Annotated[
    SendMessage | AnswerMessage | ApproveMessage | DenyMessage | NoticeMessage, Field(discriminator="kind")
]


# -- parsing -----------------------------------------------------------------------------------

_harness = TypeAdapter(HarnessRecord, config=ConfigDict(defer_build=True))
_inbox = TypeAdapter(InboxMessage, config=ConfigDict(defer_build=True))


def post(rec: dict) -> Post:
    return Post.model_validate(rec)


def harness(rec: dict) -> BaseModel:
    return _harness.validate_python(rec)


def event(rec: dict) -> Event:
    return EVENTS.get(rec.get("type"), Event).model_validate(rec)  # type: ignore[arg-type]


def inbox_message(msg: object) -> BaseModel:
    return _inbox.validate_python(msg)


def run_state(data: dict) -> RunState:
    return RunState.model_validate(data)


def why(e: ValidationError) -> str:
    """The first problem of a validation error, as one line: where in the record and what."""
    err = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "the record"
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def checker(parse: Callable[[Any], object]) -> Callable[[dict], None]:
    """`parse` as a journal's schema check: a record that does not fit raises ValueError with
    `why` (the journal adds its file and line)."""

    def check(rec: dict) -> None:
        try:
            parse(rec)
        except ValidationError as e:
            raise ValueError(why(e)) from None

    return check


check_post = checker(post)
check_harness = checker(harness)
check_event = checker(event)
