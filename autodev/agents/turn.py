"""An agent turn: the participant's CLI run once in the repository with the turn prompt; the
thread tools reach it through autodev's MCP server; the turn ends when the CLI exits.

Harness-log records (the same log and recovery as a model turn): turn_started (baseline, the
prompt as its one message) → agent_started (agent, pid and start time of its process group) →
tool_started/tool_finished around read_thread and tell_user, post_started/post_committed for
the post → agent_finished → turn_finished. A CLI that exits without a post is run once more with
the nudge (continuing its session where the CLI can); then the turn is silent. A usage limit
moves to the next entry of the participant's agents; when every one is limited the run waits.
After a crash the turn starts its CLI again from the prompt (the group the dead daemon left is
killed first); the post keeps its provisioned id and credit is counted from the turn's
baseline, so nothing done twice counts twice. What one run of the CLI does while it runs (its
stream and its tool calls) is autodev/agents/stream.py. Stop, deadline, nudge, failover and the
figures a resumed or handed-over turn carries are the shared policy (`harness/policy`);
`AgentTurn` is this kind's `TurnRunner` (the daemon picks it in `daemon/kinds`).
"""

from __future__ import annotations

import queue
import sys
import time
from dataclasses import dataclass

from autodev.agents import adapters, projectfiles, runner
from autodev.agents.bridge import Bridge
from autodev.agents.events import AgentEvent, Arrival
from autodev.agents.invocation import Invocation, McpLaunch
from autodev.agents.spec import AgentSpec
from autodev.agents.stream import CliRun, TurnParts, pump
from autodev.agents.usage import added, count, label, recovered
from autodev.errors import AutodevError
from autodev.guard import keys
from autodev.harness import credit
from autodev.harness.context import Seat, TurnContext, TurnResult
from autodev.harness.policy import (
    TIMED_OUT,
    Deadline,
    Nudge,
    TurnStopped,
    all_limited,
    carry,
    failover,
    log_turn_finished,
    log_turn_started,
    usable,
)
from autodev.harness.recovery import Resume
from autodev.harness.turn import run_turn
from autodev.host.hostproc import PYTHON_SAFE
from autodev.host.procgroup import kill_stale
from autodev.records import harness as read_harness
from autodev.records.chat import UserMessage
from autodev.records.events import (
    AgentFinishedEvent,
    AgentKilledEvent,
    AgentStartedEvent,
    FailoverEvent,
    NudgedEvent,
    TurnResumedEvent,
)
from autodev.records.harness_log import AgentFinished, AgentStarted

__all__ = ["AgentSpec", "AgentTurn", "child_env", "run_agent_turn", "spec_for"]


class AgentTurn:
    """The `TurnRunner` of a participant with `agent`: its coding-agent CLI (SPEC §16)."""

    def run(self, ctx: TurnContext, seat: Seat, resume: Resume | None) -> TurnResult:
        stale = [r for r in map(read_harness, seat.resumed) if isinstance(r, AgentStarted)]
        return run_agent_turn(ctx, spec_for(seat, stale), resume)


def spec_for(seat: Seat, stale: list[AgentStarted]) -> AgentSpec:
    """How the participant's CLI runs its turn; `stale`: the `agent_started` records of the turn
    being resumed (a dead daemon's CLI is killed by pid and start time)."""
    p = seat.participant
    return AgentSpec(
        p.agents(),
        seat.run_dir,
        model=p.model,
        effort=p.effort,
        extra_args=list(p.agent_args),
        gated=p.agent_permission == "gated" or seat.config.agents_gated,
        key_env=p.api_key_env,
        stale=stale,
        redact=seat.redact,
    )


def child_env(agent: str, key_env: str | None) -> dict[str, str]:
    """The CLI's environment: no secret but the participant's own key, which in API-key mode
    is also given under the name the CLI reads."""
    env = keys.env_for([key_env] if key_env else [])
    a = adapters.adapter(agent)
    if key_env and key_env in env and key_env not in a.key_vars and a.key_vars:
        env[a.key_vars[0]] = env[key_env]
    return env


@dataclass(frozen=True)
class RunAsk:
    """One run of a CLI in the turn: which one, its prompt, the session it continues ("": a new
    one), its number in the turn (its stream's file name) and, for a resumed session, what the
    session's earlier runs were counted for."""

    agent: str
    prompt: str
    session: str
    n: int
    base: AgentEvent | None = None


def run_agent_turn(ctx: TurnContext, spec: AgentSpec, resume: Resume | None = None) -> TurnResult:
    result, deadline = TurnResult(None), Deadline.of(ctx)
    for rec in spec.stale:
        if rec.pid and kill_stale(rec.pid, rec.started, runner.KILL_GRACE_SEC):
            ctx.emit(AgentKilledEvent(pid=rec.pid))
    if resume is None:
        baseline = credit.take_baseline(ctx.who.repo, ctx.who.branch)
        prompt = f"{ctx.models.system_prompt}\n\n{ctx.models.turn_prompt}".strip()
        log_turn_started(ctx, baseline, [{"role": "user", "content": prompt}], agent=spec.agents[0])
    else:
        baseline = credit.baseline_from_json(resume.baseline)
        prompt = (resume.messages[0]["content"] or "") if resume.messages else ctx.models.turn_prompt
        carry(resume, result)
        recovered(ctx, spec.run_dir, resume, result)
        ctx.emit(TurnResumedEvent(step=0, pending_tools=0))
    if resume is not None and resume.steps:  # the turn had passed to its failover models
        return run_turn(ctx, resume)
    return _runs(TurnParts(ctx, spec, result, baseline, deadline), str(prompt))


def _runs(turn: TurnParts, prompt: str) -> TurnResult:
    """The CLI run until it posts: nudged once after a silent exit, the next agent after a usage
    limit, the failover models when every agent is limited."""
    ctx, spec, result = turn.ctx, turn.spec, turn.result
    nudge, session, runs, so_far = Nudge(), "", 0, AgentEvent("usage")
    while result.post is None:
        ready = usable(ctx, spec.agents, label)
        if not ready:
            return _all_agents_limited(turn, prompt)
        agent = ready[0]
        text = prompt
        resumable = nudge.given and bool(adapters.adapter(agent).resumable and session)
        if nudge.given:
            reminder = Nudge.text(ctx)
            text = reminder if resumable else f"{prompt}\n\n{reminder}"
        runs += 1
        base = so_far if resumable else None
        run = _run_once(turn, RunAsk(agent, text, session if nudge.given else "", runs, base))
        so_far = added(base or AgentEvent("usage"), *run.used.final)
        session = run.session or session
        if result.post is not None:
            break
        if run.stopped:
            raise TurnStopped()
        if run.timed_out:
            result.reason = TIMED_OUT
            break
        if run.limit is not None:
            _limited(ctx, agent, run.limit, ready[1:])
            nudge, session = Nudge(), ""
            continue
        # The CLI's session holds the reminder; the log keeps only that it was given.
        marker: UserMessage = {"role": "user", "content": "nudge"}
        silent = nudge.after_silence(
            ctx, "the agent exited", marker, NudgedEvent(agent=agent, exit_code=run.exit_code)
        )
        if silent:
            result.reason = silent
            break
    result.steps = runs
    log_turn_finished(ctx, result)
    return result


def _limited(ctx: TurnContext, agent: str, limit: AgentEvent, rest: list[str]) -> None:
    """`agent` is at its usage limit: the turn moves to the next of `rest`."""
    retry_after = max(0.0, limit.reset_at - time.time())
    failover(ctx, label(agent), limit.reset_at, retry_after, label(rest[0]) if rest else None)


def _all_agents_limited(turn: TurnParts, prompt: str) -> TurnResult:
    """Every agent is limited: the failover models take the turn, or the run waits."""
    ctx = turn.ctx
    if usable(ctx, ctx.models.targets, lambda t: t.label):
        return _to_models(ctx, prompt, turn.baseline, turn.result)
    labels = [*map(label, turn.spec.agents), *(t.label for t in ctx.models.targets)]
    raise all_limited(ctx, labels, f"every agent and model of {ctx.who.name} is at its usage limit")


def _to_models(ctx: TurnContext, prompt: str, baseline: credit.Baseline, so_far: TurnResult) -> TurnResult:
    """Every agent is limited: the participant's failover models take the rest of the turn,
    from the same prompt and baseline (the harness's own tool loop, under the same turn id)."""
    ctx.emit(FailoverEvent(model="agents", to=ctx.models.targets[0].label))
    resume = Resume(
        ctx.who.turn, ctx.who.name, [{"role": "user", "content": prompt}], credit.baseline_to_json(baseline)
    )
    carry(so_far, resume)
    return run_turn(ctx, resume)


def _run_once(turn: TurnParts, ask: RunAsk) -> CliRun:
    """One run of the CLI: started with autodev's MCP server on a bridge of its own, pumped until
    it exits, and recorded (agent_started, agent_finished)."""
    ctx, agent = turn.ctx, ask.agent
    ad = adapters.adapter(agent)
    run = CliRun(base=ask.base)
    projectfiles.check(ctx.who.repo, agent)  # its settings planted in the repository: not run
    exe = adapters.find_binary(agent)
    if exe is None:
        raise AutodevError(
            f"{ctx.who.name}: the {agent} CLI was not found (PATH or ${ad.bin_env})",
            f"install it, or set {ad.bin_env} to its path; `autodev doctor` checks it",
        )
    events: queue.Queue[Arrival] = queue.Queue()
    bridge = Bridge(events)
    inv: Invocation | None = None
    try:
        inv = _invocation(turn, ask, bridge)
        proc = _start(
            turn, ask, ad.argv(exe, inv), {**child_env(agent, turn.spec.key_env), **ad.env(inv)}, events
        )
        try:
            pump(turn, agent, proc, events, run)
        finally:
            if run.exit_code is None:
                proc.kill()
            proc.close()
    finally:
        bridge.close()
        if inv is not None:
            ad.cleanup(inv)
    _finished(turn, agent, proc.pid, run)
    return run


def _invocation(turn: TurnParts, ask: RunAsk, bridge: Bridge) -> Invocation:
    """What the CLI is given: the prompt, autodev's MCP server (reaching the turn over `bridge`),
    the participant's model and arguments (for the first of its agents), the session it continues."""
    spec = turn.spec
    mcp = McpLaunch(
        sys.executable,
        [*PYTHON_SAFE, "-m", "autodev.agents.server"],
        {
            "AUTODEV_AGENT_SOCKET": str(bridge.path),
            "AUTODEV_AGENT_TOKEN": bridge.token,
            "PYTHONSAFEPATH": "1",
        },
    )
    first = ask.agent == spec.agents[0]
    return Invocation(
        prompt=ask.prompt,
        mcp=mcp,
        workdir=bridge.dir,
        model=spec.model if first else None,
        effort=spec.effort,
        extra_args=list(spec.extra_args) if first else [],
        gated=spec.gated,
        write=turn.ctx.who.can_write,
        resume=ask.session or None,
        key_mode=bool(spec.key_env),
        settings_dir=spec.run_dir / "agents",
    )


def _start(
    turn: TurnParts, ask: RunAsk, argv: list[str], env: dict[str, str], events: queue.Queue[Arrival]
) -> runner.CliProcess:
    """The CLI's process, its raw stream and stderr in the run folder's agents/, recorded."""
    ctx, agent = turn.ctx, ask.agent
    folder = turn.spec.run_dir / "agents"
    stem = f"t{ctx.who.turn}-{ask.n}-{agent}"
    proc = runner.CliProcess(
        argv,
        cwd=ctx.who.repo,
        env=env,
        raw=folder / f"{stem}.jsonl",
        stderr=folder / f"{stem}.stderr",
        events=events,
        redact=turn.spec.redact,
    )
    ctx.record(
        AgentStarted(
            run=ctx.who.run_id,
            turn=ctx.who.turn,
            agent=agent,
            pid=proc.pid,
            started=proc.started,
            resume=ask.session or None,
            stream=f"agents/{stem}.jsonl",
        )
    )
    ctx.emit(AgentStartedEvent(agent=agent, pid=proc.pid))
    return proc


def _finished(turn: TurnParts, agent: str, pid: int, run: CliRun) -> None:
    """The run's end, counted and recorded: what it used (reported on the way, for a run killed
    before its final figure), how it ended."""
    ctx = turn.ctx
    late = run.used.unreported()
    if late is not None:  # killed before its final figure: what it reported on the way
        count(ctx, agent, late, turn.result)
    ctx.record(
        AgentFinished(
            run=ctx.who.run_id,
            turn=ctx.who.turn,
            agent=agent,
            pid=pid,
            exit_code=run.exit_code,
            session=run.session or None,
            timed_out=run.timed_out,
            limit=run.limit.reset_at if run.limit else None,
            usage=run.used.record(label(agent)),
        )
    )
    ctx.emit(
        AgentFinishedEvent(
            agent=agent,
            exit_code=run.exit_code,
            timed_out=run.timed_out or None,
            limited=bool(run.limit) or None,
        )
    )
