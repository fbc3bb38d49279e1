"""Every shape autodev persists or exchanges, as pydantic models: one place to read them.

| file | model | on read |
|---|---|---|
| thread.jsonl | `Post` | extra fields allowed (SPEC §3: posts are additive) |
| state.json | `RunState` and its parts | extra fields allowed: a newer daemon's state stays readable |
| harness.jsonl | `HarnessRecord`, a union on `type` | extra fields allowed; an unknown `type` is refused |
| events.jsonl | `AnyEvent`, a union on `type` (events.py: a model per kind) | extra fields allowed; an unknown `type` reads as `UnknownEvent` |
| inbox/*.json | `InboxMessage`, a union on `kind` | extra fields allowed; an unknown `kind` is refused |
| rewinds.jsonl | `RewindRecord`, a union on `type` | extra fields allowed; an unknown `type` is refused |

Why the closed unions: recovery must understand every record of an interrupted turn (or
rewind) to finish it safely, and the daemon must know what a user action asks for; skipping one
would lose work silently. Everything else is additive (SPEC §3): fields are only ever added, with a
default, so files written by older versions still load (tests/fixtures/ holds such a run).
`schema` numbers a format change that additive fields cannot express.

The models validate what the journals, state.json and the inbox hold; the code still passes the
records around as the dicts it wrote (a model dump would add every default), so validation never
changes what is written. This module imports pydantic: cold commands that do not need it
import it lazily.

The models are in base.py (the Open base, schema, moves, states), post.py, state.py,
harness_log.py (with chat.py: the chat messages it holds), events.py (a model per event kind:
`Events.emit` takes one), messages.py (inbox), rewinds.py and evidence.py (a done's test
evidence); every name but the event kinds is importable from here, with the parsing functions
the journals use (the kinds: `autodev.records.events`). exported.py (telemetry.jsonl, the export
cursor) and group.py (a best-of group's group.jsonl) are imported from their modules, by the one
package that reads and writes each.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import ConfigDict, TypeAdapter, ValidationError

from autodev.records.base import SCHEMA, Move, Open, State
from autodev.records.evidence import Evidence, EvidenceNote, TestRun
from autodev.records.harness_log import (
    AgentFinished,
    AgentStarted,
    AgentUsage,
    Compacted,
    CreditBaseline,
    GenerationFailed,
    GenerationFinished,
    GenerationStarted,
    HarnessRecord,
    HookOutcome,
    Nudged,
    PostCommitted,
    PostStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from autodev.records.messages import (
    INBOX,
    AnswerMessage,
    ApproveMessage,
    DenyMessage,
    InboxMessage,
    NoticeMessage,
    SendMessage,
)
from autodev.records.post import Credit, GateNote, NoticeNote, Post
from autodev.records.rewinds import RewindFinished, RewindRecord, RewindStarted
from autodev.records.state import (
    ConfigRefused,
    Control,
    Figures,
    Gate,
    ModelUsage,
    Next,
    Notice,
    PausedFrom,
    Question,
    Reason,
    RunState,
    Usage,
    Wait,
)

__all__ = [
    "EVENTS",
    "INBOX",
    "SCHEMA",
    "AgentFinished",
    "AgentStarted",
    "AgentUsage",
    "AnswerMessage",
    "AnyEvent",
    "ApproveMessage",
    "Compacted",
    "ConfigRefused",
    "Control",
    "Credit",
    "CreditBaseline",
    "DenyMessage",
    "Envelope",
    "Event",
    "Evidence",
    "EvidenceNote",
    "Figures",
    "Gate",
    "GateNote",
    "GenerationEvent",
    "GenerationFailed",
    "GenerationFinished",
    "GenerationStarted",
    "HarnessRecord",
    "HookOutcome",
    "InboxMessage",
    "ModelUsage",
    "Move",
    "Next",
    "Notice",
    "NoticeMessage",
    "NoticeNote",
    "Nudged",
    "Open",
    "PausedFrom",
    "Post",
    "PostCommitted",
    "PostEvent",
    "PostStarted",
    "Question",
    "Reason",
    "RewindFinished",
    "RewindRecord",
    "RewindStarted",
    "RunState",
    "SendMessage",
    "State",
    "StateEvent",
    "TestRun",
    "ToolFinished",
    "ToolStarted",
    "TurnFinished",
    "TurnStarted",
    "UnknownEvent",
    "Usage",
    "ValidationError",
    "Wait",
    "check_event",
    "check_harness",
    "check_post",
    "checker",
    "event",
    "harness",
    "inbox_message",
    "post",
    "rewind",
    "run_state",
    "why",
]

if TYPE_CHECKING:
    from autodev.records.events import (
        EVENTS,
        AnyEvent,
        Envelope,
        Event,
        GenerationEvent,
        PostEvent,
        StateEvent,
        UnknownEvent,
    )

# The event kinds (events.py, some fifty models) load on first use: the commands that never
# read events.jsonl (status, thread, send) do not pay for them.
_EVENT_NAMES = frozenset(
    {"EVENTS", "AnyEvent", "Envelope", "Event", "GenerationEvent", "PostEvent", "StateEvent", "UnknownEvent"}
)


def __getattr__(name: str) -> object:
    if name in _EVENT_NAMES:
        return getattr(importlib.import_module("autodev.records.events"), name)
    raise AttributeError(f"module 'autodev.records' has no attribute {name!r}")


_harness = TypeAdapter(HarnessRecord, config=ConfigDict(defer_build=True))
_inbox = TypeAdapter(InboxMessage, config=ConfigDict(defer_build=True))
_rewind = TypeAdapter(RewindRecord, config=ConfigDict(defer_build=True))


def build_log_schemas() -> None:
    """Build the validators of harness-log lines and events now rather than at their first line
    (they are deferred so that a cold command pays for none): a process that reads logs all its
    life, the telemetry exporter, pays before its first turn arrives, not during it."""
    from autodev.records import events

    _harness.rebuild(force=True)
    events.build_schemas()


def post(rec: object) -> Post:
    return Post.model_validate(rec)


def harness(rec: object) -> HarnessRecord:
    """A line of harness.jsonl as its record (`isinstance` picks the type: TurnStarted, ...)."""
    return _harness.validate_python(rec)


def event(rec: object) -> Event:
    """A line of events.jsonl: the envelope checked, then its kind (an unknown kind is read)."""
    from autodev.records import events

    events.Envelope.model_validate(rec)
    return events.parse(rec)


def inbox_message(msg: object) -> InboxMessage:
    return _inbox.validate_python(msg)


def rewind(rec: object) -> RewindRecord:
    return _rewind.validate_python(rec)


def run_state(data: object) -> RunState:
    return RunState.model_validate(data)


def why(e: ValidationError) -> str:
    """The first problem of a validation error, as one line: where in the record and what."""
    err = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"]) or "the record"
    more = f" (and {e.error_count() - 1} more)" if e.error_count() > 1 else ""
    return f"{where}: {err['msg']}{more}"


def checker(parse: Callable[[dict[str, object]], object]) -> Callable[[dict[str, object]], None]:
    """`parse` as a journal's schema check: a record that does not fit raises ValueError with
    `why` (the journal adds its file and line)."""

    def check(rec: dict[str, object]) -> None:
        try:
            parse(rec)
        except ValidationError as e:
            raise ValueError(why(e)) from None

    return check


check_post = checker(post)
check_harness = checker(harness)
check_event = checker(event)
