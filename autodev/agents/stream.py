"""One run of an agent CLI while it runs: its JSON stream lines and its calls of autodev's
thread tools (through the MCP server), handled in arrival order until the CLI exits, the turn's
deadline passes or the user stops the run. What the run came to is a `CliRun`.
"""

from __future__ import annotations

import json
import queue
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autodev.agents import adapters
from autodev.agents.events import AgentEvent
from autodev.agents.usage import RunUsage, count, session_part
from autodev.errors import ToolError
from autodev.harness.calls import dispatch, finish, log_started
from autodev.harness.policy import stop_requested
from autodev.harness.registry import ToolEnv
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


def pump(
    ctx: TurnContext,
    agent: str,
    proc: runner.CliProcess,
    events: queue.Queue,
    run: CliRun,
    result: TurnResult,
    baseline: Baseline,
    deadline: Deadline,
) -> None:
    """The turn's one loop: stream lines and tool calls, in arrival order, until the CLI exits."""
    ad = adapters.adapter(agent)
    calls = 0
    while True:
        if deadline.passed():
            run.timed_out = True
            proc.kill()
            ctx.emit(AgentTimeoutEvent(agent=agent, pid=proc.pid))
            return
        if stop_requested(ctx) and result.post is None:
            run.stopped = True
            proc.kill()
            return
        try:
            what, payload = events.get(timeout=POLL_SEC)
        except queue.Empty:
            continue
        if what == "eof":
            run.exit_code = payload
            return
        if what == "call":
            calls += 1
            tool, args, reply = payload
            reply.put(_call(ctx, tool, args, result, baseline, f"{agent}-{proc.pid}-{calls}"))
            continue
        try:
            obj = json.loads(payload)
        except ValueError:
            continue  # progress text some CLIs print among their JSON lines
        if not isinstance(obj, dict):
            continue
        for ev in ad.parse(obj):
            _event(ctx, agent, ev, run, result)


def _event(ctx: TurnContext, agent: str, ev: AgentEvent, run: CliRun, result: TurnResult) -> None:
    if ev.kind == "session" and ev.session:
        run.session = ev.session
    elif ev.kind == "final" and ev.session:
        run.session = ev.session
    elif ev.kind == "text":
        ctx.emit(AgentTextEvent(agent=agent, text=safe_text(ev.text)[:300]))
    elif ev.kind == "tool" and ev.name not in adapters.THREAD_TOOLS:
        # autodev's own tools are logged where they run (_call); the CLI's own ones only here.
        ctx.emit(ToolEvent(name=ev.name, agent=agent))
    elif ev.kind == "usage":
        if run.base is not None:
            ev = session_part(ev, run.base, adapters.adapter(agent).session_totals)
        run.used.see(ev)
        count(ctx, agent, ev, result)
    elif ev.kind == "step":
        run.used.see(ev)
    elif ev.kind == "limit":
        # The first signal is the precise one (Claude's event carries its reset time; the
        # error text after it does not).
        run.limit = run.limit or ev
        ctx.emit(AgentLimitEvent(agent=agent, reset_at=ev.reset_at, text=ev.text))
    elif ev.kind == "error":
        run.errors.append(ev.text)
        ctx.emit(AgentErrorEvent(agent=agent, text=ev.text))


def _call(
    ctx: TurnContext, tool: str, args: object, result: TurnResult, baseline: Baseline, call_id: str
) -> str:
    """A thread tool the CLI called through autodev's MCP server: checked and applied exactly as
    a model's call (the post keeps its own intent records)."""
    env = ToolEnv(workspace=ctx.workspace, turn=ctx, result=result, baseline=baseline, call_id=call_id)
    tools = {"post": POST, "read_thread": READ_THREAD, **({"tell_user": TELL_USER} if ctx.tell_user else {})}
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
