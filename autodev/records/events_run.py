"""events.jsonl: the run, the daemon and the thread's posts; hooks, notifications and MCP servers."""

# Each kind narrows the discriminator `type: str` of `Event` to its own Literal, which is what the
# union on `type` reads. Pyright calls that override unsafe because a pydantic field can be
# assigned; no event is assigned to after it is made (`emit` writes the model as built), so the
# narrowing holds: this one rule is off in the event modules only.
# pyright: reportIncompatibleVariableOverride=false

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, cast

from pydantic import JsonValue, model_validator

from autodev.records.base import State
from autodev.records.event_base import Event, Number, TurnEvent
from autodev.records.post import Post
from autodev.records.state import Reason


class DaemonStartedEvent(Event):
    type: Literal["daemon_started"] = "daemon_started"
    pid: int | None = None
    sandbox: str | None = None
    team: int | None = None  # the team it loaded: its number in the run folder's team-history/


class StateEvent(Event):
    type: Literal["state"] = "state"
    state: State
    reason: Reason | None = None


class ControlEvent(Event):
    """A queued pause, resume or stop, applied."""

    type: Literal["control"] = "control"
    action: str | None = None


class WarningEvent(Event):
    type: Literal["warning"] = "warning"
    message: str = ""


class ErrorEvent(TurnEvent):
    type: Literal["error"] = "error"
    message: str = ""
    detail: JsonValue = None  # a provider's raw answer, when there is one


class TeamReloadedEvent(Event):
    type: Literal["team_reloaded"] = "team_reloaded"
    participants: list[str] = []
    team: int | None = None  # its number in the run folder's team-history/ (replay uses it)


class ConfigRefusedEvent(TurnEvent):
    """A change to .autodev/ made during a turn, kept out."""

    type: Literal["config_refused"] = "config_refused"
    message: str = ""


class BudgetReachedEvent(TurnEvent):
    type: Literal["budget_reached"] = "budget_reached"
    text: str = ""


class ScheduledEvent(TurnEvent):
    """Who speaks next and by which rule of the scheduler."""

    type: Literal["scheduled"] = "scheduled"
    rule: str | None = None
    why: str | None = None


class PostEvent(Event):
    """A post copied into events: the panel's Feed shows these. It carries the `Post`; its line
    is the post's own after the envelope, its `id` as `post_id` and its `ts` the event's."""

    type: Literal["post"] = "post"
    post: Post

    @model_validator(mode="before")
    @classmethod
    def _from_line(cls, data: object) -> object:
        """A line of events.jsonl holds the post's fields flat (a post always has a `seq`)."""
        if not isinstance(data, Mapping):
            return data  # a PostEvent already
        line = cast("Mapping[str, object]", data)  # a JSON object: its keys are strings
        if "seq" not in line:
            return line  # built from its Post
        envelope = {k: v for k, v in line.items() if k in _ENVELOPE}
        post = {POST_KEYS.get(k, k): v for k, v in line.items() if k not in _ENVELOPE}
        return {**envelope, "post": {**post, "ts": line.get("ts", "")}}

    def fields(self) -> dict[str, object]:
        return {EVENT_KEYS.get(k, k): v for k, v in self.post.dump().items() if k != "ts"}


_ENVELOPE = frozenset({"type", "ts", "run", "schema"})
EVENT_KEYS = {"id": "post_id"}  # a post's key in its event, where the two differ
POST_KEYS = {v: k for k, v in EVENT_KEYS.items()}


# -- hooks, notifications, MCP servers ---------------------------------------------------------


class HookEvent(Event):
    type: Literal["hook"] = "hook"
    on: str | None = None
    subject: str | None = None
    command: str = ""
    exit: int | None = None
    ok: bool = False
    problem: str | None = None
    output: str | None = None
    seconds: Number | None = None


class NotifiedEvent(Event):
    type: Literal["notified"] = "notified"
    via: str | None = None
    state: str | None = None


class NotifyFailedEvent(Event):
    type: Literal["notify_failed"] = "notify_failed"
    via: str | None = None
    state: str | None = None
    error: str | None = None
    detail: str | None = None


class McpServerStartedEvent(Event):
    type: Literal["mcp_server_started"] = "mcp_server_started"
    server: str | None = None
    tools: list[str] = []


class McpServerRestartedEvent(Event):
    type: Literal["mcp_server_restarted"] = "mcp_server_restarted"
    server: str | None = None
    tools: list[str] = []


class McpServerDownEvent(Event):
    type: Literal["mcp_server_down"] = "mcp_server_down"
    server: str | None = None
    error: str = ""
    restart_in: Number | None = None


class McpServerReapedEvent(Event):
    """An MCP server's process group a killed daemon left, ended by the next one."""

    type: Literal["mcp_server_reaped"] = "mcp_server_reaped"
    server: str | None = None
    pgid: int | None = None


class LeftoverKilledEvent(Event):
    """A process group a killed daemon started and left running (a command's background job,
    a sandbox killed in its set-up), ended by the next daemon before it started anything: named
    by its leader's pid and program (its arguments are not kept)."""

    type: Literal["leftover_killed"] = "leftover_killed"
    pgid: int | None = None
    program: str = ""
