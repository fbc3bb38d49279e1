"""What one CLI run used, as the CLI reported it: its final figure when it got to print one, else
the sum of the answers it reported on the way (a run killed by a timeout, a stop or the daemon's
own death). `agent_finished` carries the figure in the harness log, so a turn resumed after a
crash counts every earlier run of the turn exactly once (harness/recovery.py adds them up).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from autodev.agents import adapters
from autodev.agents.events import AgentEvent
from autodev.harness.context import TurnContext, TurnResult
from autodev.harness.recovery import Resume
from autodev.records.events import GenerationEvent
from autodev.records.harness_log import AgentFinished, AgentUsage
from autodev.records.harness_log import line as harness_line
from autodev.records.state import TurnUsage


def label(agent: str) -> str:
    """The agent's name where a model's would be (usage per model, failover, limits)."""
    return f"agent:{agent}"


@dataclass
class RunUsage:
    final: list[AgentEvent] = field(default_factory=list[AgentEvent])
    steps: dict[str, AgentEvent] = field(
        default_factory=dict[str, AgentEvent]
    )  # answer id -> its latest figure

    def see(self, ev: AgentEvent) -> None:
        if ev.kind == "usage":
            self.final.append(ev)
        elif ev.kind == "step":
            self.steps[ev.key] = ev

    def unreported(self) -> AgentEvent | None:
        """The usage to count for a run that ended without its final figure (None: nothing, or
        the CLI reported its own)."""
        if self.final or not self.steps:
            return None
        s = list(self.steps.values())
        return AgentEvent(
            "usage",
            input_tokens=sum(e.input_tokens for e in s),
            output_tokens=sum(e.output_tokens for e in s),
            cached_tokens=sum(e.cached_tokens for e in s),
        )

    def record(self, model: str) -> AgentUsage | None:
        """The run's figure for its agent_finished record."""
        counted = self.final or [e for e in [self.unreported()] if e]
        if not counted:
            return None
        total = sum((usage(e) for e in counted), TurnUsage())
        return AgentUsage(
            model=model,
            generations=total.generations,
            prompt_tokens=total.prompt_tokens,
            completion_tokens=total.completion_tokens,
            cached_tokens=total.cached_tokens,
            cost=total.cost,
        )


def added(*events: AgentEvent) -> AgentEvent:
    """The sum of usage figures."""
    return AgentEvent(
        "usage",
        input_tokens=sum(e.input_tokens for e in events),
        output_tokens=sum(e.output_tokens for e in events),
        cached_tokens=sum(e.cached_tokens for e in events),
        cost=sum(e.cost or 0.0 for e in events) if any(e.cost is not None for e in events) else None,
    )


def session_part(ev: AgentEvent, before: AgentEvent, totals: tuple[str, ...]) -> AgentEvent:
    """A resumed run's own usage: its `totals` fields are the session's, less what its earlier
    runs were counted for."""
    own = {
        f: max(0, getattr(ev, f) - (getattr(before, f) or 0)) for f in totals if getattr(ev, f) is not None
    }
    return replace(ev, **own)


def from_stream(agent: str, path: Path) -> RunUsage:
    """The usage in the raw stream a dead daemon left of a run it never finished (the stream is
    evidence, flushed line by line: what the daemon read before it died)."""
    used = RunUsage()
    if not path.exists():
        return used
    ad = adapters.adapter(agent)
    for line in path.read_text(errors="replace").splitlines():
        for ev in ad.read(line):
            used.see(ev)
    return used


def usage(ev: AgentEvent) -> TurnUsage:
    """A CLI's usage figure as one generation's usage (a cost it did not report counts as 0)."""
    return TurnUsage(
        generations=1,
        prompt_tokens=ev.input_tokens,
        completion_tokens=ev.output_tokens,
        cached_tokens=ev.cached_tokens,
        cost=ev.cost or 0.0,
    )


def count(ctx: TurnContext, agent: str, ev: AgentEvent, result: TurnResult) -> None:
    """A run's usage into the turn's figures and a `generation` event (what status shows)."""
    result.spent.add(label(agent), usage(ev))
    ctx.emit(
        GenerationEvent(
            step=0,
            model=label(agent),
            prompt_tokens=ev.input_tokens,
            completion_tokens=ev.output_tokens,
            cached_tokens=ev.cached_tokens,
            cost=ev.cost,
        )
    )


def recovered(ctx: TurnContext, run_dir: Path, resume: Resume, result: TurnResult) -> None:
    """A turn resumed after a crash keeps what its earlier runs used: the finished ones from their
    agent_finished records (summed by rebuild, carried by `policy.carry`), and a run the crash cut
    short from its raw stream, closed now with an agent_finished of its own so a second crash does
    not count it twice."""
    for rec in resume.unfinished_agents:
        agent = rec.agent
        if agent not in adapters.ADAPTERS or not rec.stream:
            continue
        used = from_stream(agent, run_dir / rec.stream)
        for ev in used.final or [e for e in [used.unreported()] if e]:
            count(ctx, agent, ev, result)
        ctx.logs.hlog.append(
            harness_line(
                AgentFinished(
                    run=ctx.who.run_id,
                    turn=ctx.who.turn,
                    ts=time.time(),  # not rounded, as ever
                    agent=agent,
                    pid=rec.pid,
                    exit_code=None,
                    session=None,
                    timed_out=False,
                    limit=None,
                    usage=used.record(label(agent)),
                    recovered=True,
                )
            )
        )
