"""One run of an agent CLI while it runs: its JSON stream lines and its calls of autodev's
thread tools (through the MCP server), handled in arrival order until the CLI exits, the turn's
deadline passes or the user stops the run. What the run came to is a `CliRun`.
"""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, assert_never

from autodev.agents import adapters
from autodev.agents.events import AgentEvent, Arrival, StreamEnd, StreamLine, ToolCall
from autodev.agents.usage import RunUsage, count, session_part
from autodev.errors import ToolError
from autodev.harness.calls import dispatch, finish, log_started
from autodev.harness.context import TurnToolEnv
from autodev.harness.policy import stop_requested
from autodev.harness.thread_tools import POST, READ_THREAD, TELL_USER
from autodev.records.events import (
    AgentErrorEvent,
    AgentLimitEvent,
    AgentTextEvent,
    AgentTimeoutEvent,
    ToolEvent,
)
from autodev.store.journal import safe_text

if TYPE_CHECKING:
    from autodev.agents import runner
    from autodev.agents.spec import AgentSpec
    from autodev.harness.context import TurnContext, TurnResult
    from autodev.harness.credit import Baseline
    from autodev.harness.policy import Deadline

POLL_SEC = 0.1


@dataclass
class CliRun:
    limit: AgentEvent | None = None
    session: str = ""
    exit_code: int | None = None
    timed_out: bool = False
    stopped: bool = False
    errors: list[str] = field(default_factory=list)
    used: RunUsage = field(default_factory=RunUsage)
    base: AgentEvent | None = None  # what the resumed session's earlier runs were counted for


@dataclass(frozen=True)
class TurnParts:
    """What every run of the CLI in one turn shares: the turn, how its CLIs run, the result being
    made, the credit baseline and the deadline."""

    ctx: TurnContext
    spec: AgentSpec
    result: TurnResult
    baseline: Baseline
    deadline: Deadline


def pump(
    turn: TurnParts, agent: str, proc: runner.CliProcess, events: queue.Queue[Arrival], run: CliRun
) -> None:
    """The turn's one loop: stream lines and tool calls, in arrival order, until the CLI exits."""
    ctx, ad = turn.ctx, adapters.adapter(agent)
    calls = 0
    while True:
        if turn.deadline.passed():
            run.timed_out = True
            proc.kill()
            ctx.emit(AgentTimeoutEvent(agent=agent, pid=proc.pid))
            return
        if stop_requested(ctx) and turn.result.post is None:
            run.stopped = True
            proc.kill()
            return
        try:
            got = events.get(timeout=POLL_SEC)
        except queue.Empty:
            continue
        match got:
            case StreamEnd():
                run.exit_code = got.exit_code
                return
            case ToolCall():
                calls += 1
                got.reply.put(_call(turn, got, f"{agent}-{proc.pid}-{calls}"))
            case StreamLine():
                for ev in ad.read(got.text):
                    _event(ctx, agent, ev, run, turn.result)
            case _:
                assert_never(got)


def _event(ctx: TurnContext, agent: str, ev: AgentEvent, run: CliRun, result: TurnResult) -> None:
    match ev.kind:
        case "session" | "final":
            run.session = ev.session or run.session
        case "text":
            ctx.emit(AgentTextEvent(agent=agent, text=safe_text(ev.text)[:300]))
        case "tool":
            if ev.name not in adapters.THREAD_TOOLS:
                # autodev's own tools are logged where they run (_call); the CLI's own ones only here.
                ctx.emit(ToolEvent(name=ev.name, agent=agent))
        case "usage":
            if run.base is not None:
                ev = session_part(ev, run.base, adapters.adapter(agent).session_totals)
            run.used.see(ev)
            count(ctx, agent, ev, result)
        case "step":
            run.used.see(ev)
        case "limit":
            # The first signal is the precise one (Claude's event carries its reset time; the
            # error text after it does not).
            run.limit = run.limit or ev
            ctx.emit(AgentLimitEvent(agent=agent, reset_at=ev.reset_at, text=ev.text))
        case "error":
            run.errors.append(ev.text)
            ctx.emit(AgentErrorEvent(agent=agent, text=ev.text))
        case _:
            assert_never(ev.kind)


def _call(turn: TurnParts, call: ToolCall, call_id: str) -> str:
    """A thread tool the CLI called through autodev's MCP server: checked and applied exactly as
    a model's call (the post keeps its own intent records)."""
    ctx, tool, args = turn.ctx, call.tool, call.args
    env = TurnToolEnv(
        workspace=ctx.tools.workspace, turn=ctx, result=turn.result, baseline=turn.baseline, call_id=call_id
    )
    tools = {
        "post": POST,
        "read_thread": READ_THREAD,
        **({"tell_user": TELL_USER} if ctx.tools.tell_user else {}),
    }
    t = tools.get(tool)
    if t is None:
        return f"error: unknown tool '{tool}'; autodev's tools are: {', '.join(tools)}"
    if t is POST:
        try:
            return str(POST.call(env, args))
        except ToolError as e:
            return f"error: {e}"
    log_started(ctx, call_id, tool, args, t.replay_safe)
    return finish(ctx, call_id, dispatch(ctx, tool, t, tools, env, args))
