"""events.jsonl: a turn (its generations, tools and recoveries) and an agent CLI's run."""

# Each kind narrows the discriminator `type: str` of `Event` to its own Literal, which is what the
# union on `type` reads. Pyright calls that override unsafe because a pydantic field can be
# assigned; no event is assigned to after it is made (`emit` writes the model as built), so the
# narrowing holds: this one rule is off in the event modules only.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from typing import Literal

from autodev.records.event_base import Event, Number, TurnEvent


class TurnStartedEvent(TurnEvent):
    type: Literal["turn_started"] = "turn_started"


class TurnResumedEvent(TurnEvent):
    type: Literal["turn_resumed"] = "turn_resumed"
    step: int | None = None
    pending_tools: int | None = None


class TurnEndedEvent(TurnEvent):
    type: Literal["turn_ended"] = "turn_ended"
    steps: int | None = None
    posted: int | None = None  # the post's seq; None: the turn ended silent
    reason: str | None = None


class TurnStoppedEvent(TurnEvent):
    """A turn left open at a step boundary by `stop`; `start` continues it."""

    type: Literal["turn_stopped"] = "turn_stopped"


class SilentTurnEvent(TurnEvent):
    type: Literal["silent_turn"] = "silent_turn"
    reason: str | None = None
    streak: int | None = None


class GenerationEvent(TurnEvent):
    """One model answer: its tokens and cost (summed in status and the panel's header)."""

    type: Literal["generation"] = "generation"
    step: int | None = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cost: Number | None = None


class FailoverEvent(TurnEvent):
    type: Literal["failover"] = "failover"
    model: str | None = None
    to: str | None = None  # None: no model left, the run waits for the reset
    retry_after: Number | None = None


class RetryEvent(TurnEvent):
    type: Literal["retry"] = "retry"
    model: str | None = None
    attempt: int | None = None
    delay: Number | None = None
    error: str = ""


class CompactedEvent(TurnEvent):
    type: Literal["compacted"] = "compacted"
    step: int | None = None
    model: str | None = None
    hard: bool = False
    stubbed: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    window: int | None = None


class ContextExceededEvent(TurnEvent):
    type: Literal["context_exceeded"] = "context_exceeded"
    model: str | None = None
    error: str = ""


class ToolEvent(TurnEvent):
    """A tool call of a turn (`post` excepted)."""

    type: Literal["tool"] = "tool"
    name: str | None = None
    agent: str | None = None  # an agent CLI's own tool


class ToolInterruptedEvent(TurnEvent):
    type: Literal["tool_interrupted"] = "tool_interrupted"
    name: str | None = None
    crashes: int | None = None


class ToolCrashedEvent(TurnEvent):
    """A tool call a crash cut, found by recovery."""

    type: Literal["tool_crashed"] = "tool_crashed"
    name: str | None = None
    call_id: str | None = None
    crashes: int | None = None
    replay_safe: bool | None = None


class ToolRefusedEvent(TurnEvent):
    type: Literal["tool_refused"] = "tool_refused"
    name: str | None = None


class CommandRefusedEvent(TurnEvent):
    type: Literal["command_refused"] = "command_refused"
    command: str = ""


class GitQuarantinedEvent(TurnEvent):
    """Files a participant left that git would run or follow, moved out of the repository
    (`host/gitquarantine`)."""

    type: Literal["git_quarantined"] = "git_quarantined"
    paths: list[str] = []
    why: list[str] = []
    folder: str = ""


class BranchMovedBackEvent(TurnEvent):
    """The run's branch moved to a commit that does not hold the turn's starting commit."""

    type: Literal["branch_moved_back"] = "branch_moved_back"
    branch: str = ""
    start: str = ""  # the branch's commit when the turn began
    to: str | None = None  # where the branch is now (None: deleted)
    dropped: list[str] = []
    restored: bool = False


class TurnRecoveredEvent(TurnEvent):
    type: Literal["turn_recovered"] = "turn_recovered"
    step: int | None = None
    posted: int | None = None


class EffectsRecoveredEvent(Event):
    """A post's effects (`seq`) or a silent turn's figures (`turn`) applied on restart."""

    type: Literal["effects_recovered"] = "effects_recovered"
    seq: int | None = None
    turn: int | None = None


class NudgedEvent(TurnEvent):
    type: Literal["nudged"] = "nudged"
    agent: str | None = None
    exit_code: int | None = None


# -- an agent CLI's run -----------------------------------------------------------------------


class AgentStartedEvent(TurnEvent):
    type: Literal["agent_started"] = "agent_started"
    agent: str | None = None
    pid: int | None = None


class AgentFinishedEvent(TurnEvent):
    type: Literal["agent_finished"] = "agent_finished"
    agent: str | None = None
    exit_code: int | None = None
    timed_out: bool | None = None
    limited: bool | None = None


class AgentKilledEvent(TurnEvent):
    """A CLI a dead daemon left running, killed before the turn goes on."""

    type: Literal["agent_killed"] = "agent_killed"
    pid: int | None = None


class AgentTimeoutEvent(TurnEvent):
    type: Literal["agent_timeout"] = "agent_timeout"
    agent: str | None = None
    pid: int | None = None


class AgentTextEvent(TurnEvent):
    type: Literal["agent_text"] = "agent_text"
    agent: str | None = None
    text: str = ""


class AgentLimitEvent(TurnEvent):
    type: Literal["agent_limit"] = "agent_limit"
    agent: str | None = None
    reset_at: Number | None = None
    text: str = ""


class AgentErrorEvent(TurnEvent):
    type: Literal["agent_error"] = "agent_error"
    agent: str | None = None
    text: str = ""
