"""state.json as plain JSON, typed for `autodev status` without pydantic (quickstatus.py): the
fields status reads, as TypedDicts of the records' JSON form (records/state.py).

`fits_state` narrows a parsed state.json to `PlainState` with store/plain.py's `fits`, which
checks every field against the model's shape (shapes.py, generated from the records), so the
types below hold on the fast path; tests/user/test_quickstatus.py keeps their keys equal to the
models' fields."""

# No `from __future__ import annotations`: the TypedDicts' `NotRequired` is then read at run time
# too, where the test compares the required keys with the models'.
from typing import Literal, NotRequired, TypedDict, TypeGuard

from autodev.store.jsonline import JsonObject

State = Literal[
    "running", "waiting", "awaiting_user", "gated", "auditing", "paused", "stopped", "complete", "faulted"
]

# The JSON names "from" and "continue" are keywords: these use the functional form.
PlainReason = TypedDict("PlainReason", {"code": str, "text": NotRequired[str], "continue": NotRequired[str]})
PlainQuestion = TypedDict("PlainQuestion", {"from": str, "seq": int, "text": NotRequired[str]})
PlainNotice = TypedDict(
    "PlainNotice",
    {
        "id": str,
        "from": str,
        "text": NotRequired[str],
        "hold": NotRequired[str | None],
        "pinned": NotRequired[bool],
        "answer": NotRequired[str | None],
    },
)


class PlainGate(TypedDict):
    id: str
    declarer: str
    text: NotRequired[str]


class PlainWait(TypedDict):
    author: str
    due: NotRequired[float | None]


class PlainNext(TypedDict, total=False):
    speaker: str | None
    rule: str | None
    why: str | None


class PlainUsage(TypedDict, total=False):
    prompt_tokens: int
    completion_tokens: int
    cost: float


class PlainFigures(PlainUsage, total=False):
    turns: int
    credited: int
    cached_tokens: int
    compactions: int
    silent_streak: int


class PlainConfigRefused(TypedDict, total=False):
    text: str | None


class PlainState(TypedDict, total=False):
    """The RunState fields status reads (every one has a default in the model: none is required)."""

    state: State
    reason: PlainReason | None
    run_id: str | None
    turn: int
    speaking: str | None
    next: PlainNext | None
    wait: PlainWait | None
    warnings: list[str]
    objective: str
    talk_turns: int
    audits: int
    gate: PlainGate | None
    question: PlainQuestion | None
    notices: dict[str, PlainNotice]
    team_error: str | None
    config_refused: PlainConfigRefused | None
    participants: dict[str, PlainFigures]
    audit_usage: PlainUsage | None


def fits_state(data: JsonObject) -> TypeGuard[PlainState]:
    """`data` is a state.json RunState takes as it is (and writes back unchanged)."""
    from autodev.store import plain

    return plain.fits("RunState", data)
