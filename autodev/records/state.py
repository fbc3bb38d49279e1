"""state.json: `RunState` and its parts (reason, gate, question, wait, notices, figures,
controls)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Self, TypedDict, Unpack

from pydantic import ConfigDict, Field

from autodev.records.base import SCHEMA, Open, State


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

    def usage(self) -> TurnUsage:
        """What the participant spent: tokens, cached tokens and cost (figures count no generations)."""
        return TurnUsage.of(self.model_dump())

    def plus(self, used: ModelUsage) -> Self:
        """These figures with `used` added, by `ModelUsage`'s `+`: tokens, cached tokens (a
        `TurnUsage` has them) and cost, rounded as state.json keeps it."""
        mine = type(self).model_fields
        return self.but(**{k: v for k, v in (self.usage() + used).plain(6).items() if k in mine})


class Usage(Open):
    """Tokens and cost. The one place usage is added up (`+`): turns, recovery, the state's
    figures, the audit's and `autodev runs stats` all go through it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @classmethod
    def of(cls, fields: Mapping[str, object]) -> Self:
        """From a record's or a figure's fields: what is missing or null counts as nothing."""
        return cls.model_validate({k: fields.get(k) or 0 for k in cls.model_fields})

    def __add__(self, other: Usage) -> Self:
        mine = {k: getattr(self, k) for k in type(self).model_fields}
        return type(self)(**{k: v + getattr(other, k, 0) for k, v in mine.items()})

    def plain(self, round_cost: int | None = None) -> dict[str, int | float]:
        """The figures as state.json and the runs index keep them (cost rounded when asked)."""
        keys = sorted(type(self).model_fields, key=lambda k: k != "generations")  # generations first, as ever
        out: dict[str, int | float] = {k: getattr(self, k) for k in keys}
        if round_cost is not None:
            out["cost"] = round(self.cost, round_cost)
        return out


class ModelUsage(Usage):
    """One model label's usage: its generations, tokens and cost."""

    generations: int = 0


class TurnUsage(ModelUsage):
    """What a turn spent in all: a `ModelUsage` and the input tokens read from the provider's
    cache. Added to a model label's `ModelUsage` it leaves them out (state.json's `models` never
    had them; the participant's figures do)."""

    cached_tokens: int = 0


@dataclass
class Spent:
    """What a turn has spent so far, in all and per model label (a `TurnResult`'s, a `Resume`'s).
    `add` is the one way it grows, by `ModelUsage`'s `+`."""

    total: TurnUsage = field(default_factory=TurnUsage)
    models: dict[str, ModelUsage] = field(default_factory=dict)

    def add(self, label: str, used: TurnUsage) -> None:
        """One generation (or one agent CLI run) of model `label`."""
        self.total = self.total + used
        self.models[label] = self.models.get(label, ModelUsage()) + used

    def copy(self) -> Spent:
        """A copy to carry on from (the usages themselves are never changed in place)."""
        return Spent(self.total, dict(self.models))


class Control(Open):
    """A queued pause/resume/stop request (state.request)."""

    n: int
    action: Literal["pause", "resume", "stop", "rewind"]
    at: int = 0  # when it was asked (ns); 0 for a request older than the time stamp
    seq: int | None = None  # rewind: the post to rewind to
    undo: bool = False  # rewind: undo the newest rewind instead


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


class ForkedFrom(Open):
    """The run and post a fork was made from (`autodev fork`)."""

    run: str | None = None
    seq: int
    repo: str = ""


class RewindDone(Open):
    """`rewind_result` when the daemon applied the rewind asked as control `n` (daemon/loop.py)."""

    n: int
    ok: Literal[True]
    note_seq: int
    to_seq: int


class RewindDenied(Open):
    """`rewind_result` when the daemon refused the rewind asked as control `n`: why, and the fix."""

    n: int
    ok: Literal[False]
    error: str
    fix: str = ""


class RunState(Open):
    """state.json. Every field has the default a fresh run starts from (`blank_state`). Frozen:
    a change is a copy (`changed`), so a state read once may be handed to every reader."""

    model_config = ConfigDict(frozen=True)

    schema_: int = Field(default=SCHEMA, alias="schema")
    version: int = 0
    state: State = "stopped"
    reason: Reason | None = None
    controls: list[Control] = []
    control_seq: int = 0
    controls_applied: int = 0
    # requests a later continuing request replaced while no daemon ran (never applied, not lost)
    controls_cancelled: int = 0
    # identity and the daemon
    run_id: str | None = None
    started_at: str | None = None
    base_head: str | None = None
    branch: str | None = None  # the run's branch (refs/heads/...): credit counts commits on it
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
    audit_pending: int | None = None  # a done post whose audit failed on its provider: audited on resume
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
    # rewinds (autodev/timeline): the newest applied, and the outcome of the newest request
    rewind_applied: int = 0
    rewind_result: RewindDone | RewindDenied | None = None
    forked_from: ForkedFrom | None = None
    rebuilt_from_logs: str | None = None  # when a lost state.json was rebuilt (store/rebuild)

    def changed(self, **change: Unpack[StateChange]) -> RunState:
        """A copy with `change` (`but`, with the field names and types checked): what the file
        had stays, the changed fields become set."""
        return self.but(**change)


class StateChange(TypedDict, total=False):
    """A change of `RunState`: the fields it sets, by name (tests/test_state.py keeps the names
    equal to the model's). A reason may be the plain form `rules.reasons.reason` makes."""

    version: int
    state: State
    reason: Reason | Mapping[str, object] | None
    controls: list[Control]
    control_seq: int
    controls_applied: int
    controls_cancelled: int
    run_id: str | None
    started_at: str | None
    base_head: str | None
    branch: str | None
    pid: int | None
    daemon: Literal["running", "stopped"] | None
    sessions: int
    turn: int
    accounted_turn: int
    applied_seq: int
    recovered_turn: int | None
    speaking: str | None
    next: Next | None
    warnings: list[str]
    cursors: dict[str, int]
    objective: str
    user_messages: list[str]
    talk_turns: int
    audits: int
    audit_pending: int | None
    question: Question | None
    wait: Wait | None
    last_wait: Wait | None
    gate: Gate | None
    approved_gates: list[Gate]
    notices: dict[str, Notice]
    notice_seq: int
    paused_from: PausedFrom | None
    limited_until: dict[str, float]
    team_error: str | None
    config_refused: ConfigRefused | None
    participants: dict[str, Figures]
    models: dict[str, ModelUsage]
    audit_usage: Usage | None
    rewind_applied: int
    rewind_result: RewindDone | RewindDenied | Mapping[str, object] | None
    forked_from: ForkedFrom | None
    rebuilt_from_logs: str | None
