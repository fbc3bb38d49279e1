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

from autodev.agents import adapters, projectfiles, runner
from autodev.agents.bridge import Bridge
from autodev.agents.events import AgentEvent
from autodev.agents.invocation import Invocation, McpLaunch
from autodev.agents.spec import AgentSpec
from autodev.agents.stream import CliRun, pump
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
from autodev.records.events import (
    AgentFinishedEvent,
    AgentKilledEvent,
    AgentStartedEvent,
    FailoverEvent,
    NudgedEvent,
    TurnResumedEvent,
)

__all__ = ["AgentSpec", "AgentTurn", "child_env", "run_agent_turn", "spec_for"]


class AgentTurn:
    """The `TurnRunner` of a participant with `agent`: its coding-agent CLI (SPEC §16)."""

    def run(self, ctx: TurnContext, seat: Seat, resume: Resume | None) -> TurnResult:
        stale = [r for r in seat.resumed if r.get("type") == "agent_started"]
        return run_agent_turn(ctx, spec_for(seat, stale), resume)


def spec_for(seat: Seat, stale: list[dict]) -> AgentSpec:
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


def run_agent_turn(ctx: TurnContext, spec: AgentSpec, resume: Resume | None = None) -> TurnResult:
    result, deadline = TurnResult(None), Deadline.of(ctx)
    for rec in spec.stale:
        if runner.kill_stale(rec.get("pid", 0), rec.get("started")):
            ctx.emit(AgentKilledEvent(pid=rec["pid"]))
    if resume is None:
        baseline = credit.take_baseline(ctx.repo, ctx.branch)
        prompt = f"{ctx.system_prompt}\n\n{ctx.turn_prompt}".strip()
        log_turn_started(ctx, baseline, [{"role": "user", "content": prompt}], agent=spec.agents[0])
    else:
        baseline = credit.baseline_from_json(resume.baseline)
        prompt = (resume.messages[0]["content"] or "") if resume.messages else ctx.turn_prompt
        carry(resume, result)
        recovered(ctx, spec.run_dir, resume, result)
        ctx.emit(TurnResumedEvent(step=0, pending_tools=0))
    if resume is not None and resume.steps:  # the turn had passed to its failover models
        return run_turn(ctx, resume)
    nudge, session, runs, so_far = Nudge(), "", 0, AgentEvent("usage")
    while result.post is None:
        ready = usable(ctx, spec.agents, label)
        if not ready:
            if usable(ctx, ctx.targets, lambda t: t.label):
                return _to_models(ctx, prompt, baseline, result)
            labels = [*map(label, spec.agents), *(t.label for t in ctx.targets)]
            raise all_limited(ctx, labels, f"every agent and model of {ctx.name} is at its usage limit")
        agent = ready[0]
        text = prompt
        resumable = nudge.given and bool(adapters.adapter(agent).resumable and session)
        if nudge.given:
            reminder = Nudge.text(ctx)
            text = reminder if resumable else f"{prompt}\n\n{reminder}"
        runs += 1
        base = so_far if resumable else None
        run = _run_once(
            ctx, spec, agent, text, session if nudge.given else "", result, baseline, deadline, runs, base
        )
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
            nxt = ready[1:]
            reset_at = run.limit.reset_at
            retry_after = max(0.0, reset_at - time.time())
            failover(ctx, label(agent), reset_at, retry_after, label(nxt[0]) if nxt else None)
            nudge, session = Nudge(), ""
            continue
        # The CLI's session holds the reminder; the log keeps only that it was given.
        marker = {"role": "user", "content": "nudge"}
        silent = nudge.after_silence(
            ctx, "the agent exited", marker, NudgedEvent(agent=agent, exit_code=run.exit_code)
        )
        if silent:
            result.reason = silent
            break
    result.steps = runs
    log_turn_finished(ctx, result)
    return result


def _to_models(ctx: TurnContext, prompt: str, baseline: credit.Baseline, so_far: TurnResult) -> TurnResult:
    """Every agent is limited: the participant's failover models take the rest of the turn,
    from the same prompt and baseline (the harness's own tool loop, under the same turn id)."""
    ctx.emit(FailoverEvent(model="agents", to=ctx.targets[0].label))
    resume = Resume(
        ctx.turn, ctx.name, [{"role": "user", "content": prompt}], credit.baseline_to_json(baseline)
    )
    carry(so_far, resume)
    return run_turn(ctx, resume)


def _run_once(
    ctx: TurnContext,
    spec: AgentSpec,
    agent: str,
    prompt: str,
    session: str,
    result: TurnResult,
    baseline: credit.Baseline,
    deadline: Deadline,
    n: int,
    base: AgentEvent | None = None,
) -> CliRun:
    ad = adapters.adapter(agent)
    run = CliRun(base=base)
    projectfiles.check(ctx.repo, agent)  # its settings planted in the repository: not run
    exe = adapters.find_binary(agent)
    if exe is None:
        raise AutodevError(
            f"{ctx.name}: the {agent} CLI was not found (PATH or ${ad.bin_env})",
            f"install it, or set {ad.bin_env} to its path; `autodev doctor` checks it",
        )
    events: queue.Queue = queue.Queue()
    bridge = Bridge(events)
    inv: Invocation | None = None
    try:
        mcp = McpLaunch(
            sys.executable,
            [*PYTHON_SAFE, "-m", "autodev.agents.server"],
            {
                "AUTODEV_AGENT_SOCKET": str(bridge.path),
                "AUTODEV_AGENT_TOKEN": bridge.token,
                "PYTHONSAFEPATH": "1",
            },
        )
        first = agent == spec.agents[0]
        inv = Invocation(
            prompt=prompt,
            mcp=mcp,
            workdir=bridge.dir,
            model=spec.model if first else None,
            effort=spec.effort,
            extra_args=list(spec.extra_args) if first else [],
            gated=spec.gated,
            write=ctx.can_write,
            resume=session or None,
            key_mode=bool(spec.key_env),
            settings_dir=spec.run_dir / "agents",
        )
        argv = ad.argv(exe, inv)
        env = {**child_env(agent, spec.key_env), **ad.env(inv)}
        folder = spec.run_dir / "agents"
        stem = f"t{ctx.turn}-{n}-{agent}"
        proc = runner.CliProcess(
            argv,
            cwd=ctx.repo,
            env=env,
            raw=folder / f"{stem}.jsonl",
            stderr=folder / f"{stem}.stderr",
            events=events,
            redact=spec.redact,
        )
        ctx.record(
            "agent_started",
            agent=agent,
            pid=proc.pid,
            started=proc.started,
            resume=session or None,
            stream=f"agents/{stem}.jsonl",
        )
        ctx.emit(AgentStartedEvent(agent=agent, pid=proc.pid))
        try:
            pump(ctx, agent, proc, events, run, result, baseline, deadline)
        finally:
            if run.exit_code is None:
                proc.kill()
            proc.close()
    finally:
        bridge.close()
        if inv is not None:
            ad.cleanup(inv)
    late = run.used.unreported()
    if late is not None:  # killed before its final figure: what it reported on the way
        count(ctx, agent, late, result)
    ctx.record(
        "agent_finished",
        agent=agent,
        pid=proc.pid,
        exit_code=run.exit_code,
        session=run.session or None,
        timed_out=run.timed_out,
        limit=run.limit.reset_at if run.limit else None,
        usage=run.used.record(label(agent)),
    )
    ctx.emit(
        AgentFinishedEvent(
            agent=agent,
            exit_code=run.exit_code,
            timed_out=run.timed_out or None,
            limited=bool(run.limit) or None,
        )
    )
    return run
