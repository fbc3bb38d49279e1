"""Turn set-up: everything a participant's turn is given before it runs, and running it.

The turn's context (`context`): the system prompt (roster, lane, write rule, tools) and the
bounded turn prompt (with the talk limit, answered notices and held tools as notes), the
workspace (sandbox room, secrets kept out, the turn's deadline and `stop`), the model targets
with failover, and the guards that refuse gateRequired commands and gateRequiredTools tools
unless an approved gate covers them (each approval covers one use). A resumed turn gets its
prompts from the harness log instead. `take` runs the turn by the runner of the participant's
kind (`kinds`: the harness's tool loop, or the participant's agent CLI) and records where it
got to: usage-limit resets, delivered answers, the participant's cursor. What its post does is
`effects`'; what happens when it is interrupted is `recovery`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, assert_never

from autodev.config import Participant, RunConfig, Team, prompts
from autodev.daemon import gitwatch, notices, recovery
from autodev.daemon.gateguards import READ_ONLY_GATED as READ_ONLY_GATED  # callers import it from here
from autodev.daemon.gateguards import command_guard, tool_guard
from autodev.daemon.handles import Run, Scripted, Settings
from autodev.daemon.services import Services
from autodev.guard import sandbox, secrets
from autodev.guard.sandbox import Room
from autodev.harness import providers
from autodev.harness.context import Limits, Logs, Models, Toolbox, Who
from autodev.harness.hooks import Hooks
from autodev.harness.model import LitellmModel
from autodev.harness.prompt import build_turn_prompt
from autodev.harness.recovery import Resume
from autodev.harness.registry import Registry, Tool
from autodev.harness.tools import Workspace
from autodev.harness.turn import TurnContext, TurnResult
from autodev.records import harness as read_harness
from autodev.records import harness_log as h
from autodev.records.events import WarningEvent
from autodev.records.state import RunState
from autodev.store.thread import TAIL

if TYPE_CHECKING:
    from autodev.harness.browser import Browser
    from autodev.harness.model import Model

TALK_LIMIT_NOTE = (
    "talk limit reached: only work_done, a say to the user, or (if you cannot "
    "write) a handoff to a participant who can write are accepted now"
)


@dataclass
class TurnInputs:
    """What a turn is set up with besides the run and its participant: the run's services for
    it (`Services`), the check of a `stop`, and the hooks in force."""

    tools: Registry
    browser: Browser | None
    stopping: Callable[[], bool]
    hooks: Hooks
    scripted: Scripted
    model: Model | None = None


@dataclass
class TurnNotes:
    """The turn prompt's notes, the notices whose answers they deliver, and the tools the
    participant has (or has withheld by a notice's hold)."""

    notes: list[str]
    delivered: list[str]
    withheld: frozenset[str]
    extra: list[Tool[str]]


def notes_for(p: Participant, st: RunState, why: str | None, config: RunConfig, got: TurnInputs) -> TurnNotes:
    """`p`'s notes (`why`: the scheduler's reason, None for a resumed turn) and tools (pure)."""
    notes = [f"you were chosen by the scheduler: {why}"] if why else []
    if st.talk_turns >= config.max_talk_turns:
        notes.append(TALK_LIMIT_NOTE)
    answers, delivered = notices.answers_for(p.name, st)
    notes.extend(answers)
    withheld = got.tools.withheld(notices.holds_of(p.name, st))
    extra = [t for t in got.tools if t.capability in p.tools]
    if got.browser is None:
        extra = [t for t in extra if t.capability != "browser"]
    if withheld:
        notes.append(
            "a notice holds some of your tools until the user releases them: " + ", ".join(sorted(withheld))
        )
    return TurnNotes(notes, delivered, withheld, extra)


def workspace_for(
    run: Run,
    settings: Settings,
    p: Participant,
    turn_no: int,
    st: RunState,
    resume: Resume | None,
    got: TurnInputs,
) -> Workspace:
    """Where `p`'s tools work: the repository, the sandbox room, the guards, the deadline."""
    config = settings.config
    workspace = Workspace(
        run.paths.repo,
        write=p.write,
        command_timeout=config.command_timeout_sec,
        secret_env=settings.secret_env,
        command_guard=command_guard(
            run, config, p.name, read_only=not p.write and not settings.sandbox.active
        ),
        room=room(run, config, settings, p),
        redactor=run.redact,
        secret_files=config.secret_files,
    )
    if p.agent is not None:
        # An agent CLI reads files on the host, beside the sandbox: what the secret files hold
        # is masked in its records (and so in logs, bundles and spans) from the start.
        try:
            workspace.mask_secret_files(secrets.find(run.paths.repo, config.secret_files))
        except secrets.TooManyFiles as e:
            run.events.emit(WarningEvent(message=f"secret files are not masked in {p.name}'s output: {e}"))
    if p.models() and got.model is None:
        # litellm's import takes seconds, once per daemon: that is the daemon's start-up, not
        # this turn's time (a short turnTimeoutMin would otherwise expire before the first ask).
        providers.warm()
    watch = gitwatch.GitWatch(run, config, p.name, turn_no, st.branch, resume.baseline if resume else None)
    workspace.after_command = watch.after_command
    # Every tool that runs a process is cut at the turn's deadline, or when `stop` arrives.
    workspace.limit(time.monotonic() + config.turn_timeout_min * 60, got.stopping)
    return workspace


def context(
    run: Run,
    settings: Settings,
    p: Participant,
    turn_no: int,
    st: RunState,
    *,
    why: str | None,
    resume: Resume | None,
    got: TurnInputs,
) -> tuple[TurnContext, list[str]]:
    """`p`'s turn `turn_no` (`why`: the scheduler's reason, None for a resumed turn), and the
    notices whose answers its prompt delivers."""
    config, team = settings.config, settings.team
    told = notes_for(p, st, why, config, got)
    workspace = workspace_for(run, settings, p, turn_no, st, resume, got)
    who = Who(
        run_id=run.run_id,
        turn=turn_no,
        name=p.name,
        can_write=p.write,
        team_writers={q.name: q.write for q in team.participants},
        repo=run.paths.repo,
        branch=st.branch,
    )
    models = Models(
        targets(p, config, got.scripted),
        system_prompt=""
        if resume
        else system_prompt(p, team, workspace, told.withheld, told.extra, run.overrides),
        turn_prompt="" if resume else turn_prompt(run, p, turn_no, st, told.notes),
        overrides=run.overrides,
        model=LitellmModel() if got.model is None else got.model,
    )
    tools = Toolbox(
        workspace,
        withheld=told.withheld,
        extra=told.extra,
        guard=tool_guard(run, config, p.name),
        browser=got.browser,
        hooks=got.hooks if got.hooks.hooks else None,
        tell_user=notices.teller(run, p.name, got.tools.holdable),
        # replay --tools recorded
        recorded=None if got.model is None else getattr(got.model, "tools", None),
    )
    logs = Logs(run.thread, run.events, run.hlog)
    ctx = TurnContext(who, logs, models, tools, limits(config, st), limited_until=dict(st.limited_until))
    return ctx, told.delivered


def limits(config: RunConfig, st: RunState) -> Limits:
    """How far a turn may go, as configured (restricted once the run's talk limit is reached)."""
    return Limits(
        max_steps=config.max_steps_per_turn,
        timeout_sec=config.turn_timeout_min * 60,
        max_retries=config.max_retries,
        retry_backoff_sec=config.retry_backoff_sec,
        restricted=st.talk_turns >= config.max_talk_turns,
    )


def turn_prompt(run: Run, p: Participant, turn_no: int, st: RunState, notes: list[str]) -> str:
    return build_turn_prompt(
        name=p.name,
        turn=turn_no,
        last_seq=run.thread.last_seq,
        cursor=st.cursors.get(p.name, 0),
        objective=st.objective,
        tail=run.thread.tail(TAIL),
        notes=notes,
        overrides=run.overrides,
    )


def take(
    run: Run,
    settings: Settings,
    services: Services,
    p: Participant,
    turn_no: int,
    st: RunState,
    *,
    why: str | None,
    resume: Resume | None,
    stopping: Callable[[], bool],
    hooks: Hooks,
) -> tuple[TurnResult, Callable[[RunState], RunState]]:
    """Run `p`'s turn `turn_no` to its end (raises what the turn raises: a provider error,
    a stop, every model limited; the turn then stays open for `recovery`). Returns the result
    and the turn's closing change (its cursor, notices delivered, no one speaking), which the
    caller writes in the same state update as the turn's outcome (the group commit, issue 33)."""
    from autodev.daemon import kinds
    from autodev.harness.context import Seat

    services.mcp_events()
    got = TurnInputs(
        services.tools(), services.browser(p), stopping, hooks, services.scripted, services.model
    )
    ctx, delivered = context(run, settings, p, turn_no, st, why=why, resume=resume, got=got)
    seen_upto = run.thread.last_seq
    resumed = recovery.last_turn_records(run.paths.harness_log)[0] if resume else []
    seat = Seat(p, settings.config, run.paths.run_dir, resumed, run.redact.text)
    try:
        result = kinds.kind_of(p).runner.run(ctx, seat, resume)
    finally:
        if ctx.limited_until != st.limited_until:  # no state.json replacement when nothing changed
            run.state.update(lambda s: s.changed(limited_until=ctx.limited_until))
    if ctx.tools.workspace.after_command is not None and not _only_talked(run, p, ctx, resume):
        ctx.tools.workspace.after_command(None)  # an agent CLI's commands were not seen one by one
    told = delivered if not resume else []
    upto = result.post.seq if result.post else seen_upto

    def close(s: RunState) -> RunState:
        if told:
            s = s.changed(notices={**s.notices, **{nid: s.notices[nid].but(delivered=True) for nid in told}})
        return s.changed(cursors={**s.cursors, p.name: upto}, speaking=None, recovered_turn=None)

    if result.post:
        run.echo(result.post)
    return result, close


def _talks(r: h.HarnessRecord) -> bool:
    """A model turn's harness record that runs nothing in the repository: every tool call but the
    post has a tool_started record, an agent CLI an agent_started one."""
    match r:
        case h.TurnStarted() | h.GenerationStarted() | h.GenerationFinished() | h.GenerationFailed():
            return True
        case h.Compacted() | h.Nudged() | h.PostStarted() | h.PostCommitted() | h.TurnFinished():
            return True
        case h.ToolStarted() | h.ToolFinished() | h.AgentStarted() | h.AgentFinished():
            return False
        case _:
            assert_never(r)


def _only_talked(run: Run, p: Participant, ctx: TurnContext, resume: Resume | None) -> bool:
    """The turn (a model's) called no tool but its post: nothing of it can have touched git, so
    the turn's end needs no look at it (issue 33: one git process less for a turn that talks).
    A turn begun here is known from memory; a resumed one from its records in the harness log."""
    if p.agent is not None:
        return False
    if resume is None:
        return not ctx.ran
    recs = recovery.last_turn_records(run.paths.harness_log)[0]
    return bool(recs) and all(_talks(read_harness(r)) for r in recs)


def room(run: Run, config: RunConfig, settings: Settings, p: Participant | None = None) -> Room:
    """Where `p`'s commands run (None: the audit's check)."""
    net = config.command_network if p is None or p.network is None else p.network
    return settings.sandbox.room(
        run.paths.repo,
        hide=sandbox.hidden(run.paths.run_dir),
        network=net,
        expose=[*config.sandbox_read, *config.sandbox_expose],
        writable=True if p is None else p.write,
        secret_files=config.secret_files,
    )


def targets(p: Participant, config: RunConfig, scripted: Scripted) -> list[providers.Target]:
    models = p.models()
    if not models:  # an agent CLI without model failovers
        return []
    return providers.targets_for(
        p.name,
        models[0],
        models[1:],
        effort=p.effort,
        api_base=p.api_base,
        api_key_env=p.api_key_env,
        scripted_url=scripted.url,
        scripted_price=scripted.price,
        context=p.context,
        max_output_tokens=p.max_output_tokens,
        configured_output=config.max_output_tokens,
    )


def system_prompt(
    p: Participant,
    team: Team,
    workspace: Workspace,
    withheld: frozenset[str] = frozenset(),
    extra: Sequence[Tool[object]] = (),
    overrides: Path | None = None,
) -> str:
    roster = "\n".join(
        f"- {q.name}{' (you)' if q.name == p.name else ''}: {'writes' if q.write else 'reads only'}; {q.lane}"
        for q in team.participants
    )
    write_rule = (
        "You may change the repository."
        if p.write
        else "You may NOT change the repository (you cannot post work_done); you can "
        "read, search and run commands such as tests."
    )
    names = [
        "post",
        "read_thread",
        "tell_user",
        *sorted((workspace.names() | {t.name for t in extra}) - withheld),
    ]
    return prompts.render(
        "system.md",
        {
            "name": p.name,
            "lane": p.lane or "(no lane given)",
            "write_rule": write_rule,
            "roster": roster,
            "tool_names": ", ".join(names),
        },
        overrides,
    )
