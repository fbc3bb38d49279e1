"""The panel's Feed: one line (or block) per events.jsonl record, by the event's kind
(`feed`, dispatched on its model; `thread --follow` shares `render.post_text` for posts)."""

from __future__ import annotations

import time
from functools import singledispatch

from rich.text import Text

from autodev.guard.display import clean
from autodev.records import events
from autodev.store.journal import JsonObject
from autodev.user.render import post_text

FOLD_CHARS = 280  # a post longer than this is folded in the Feed until the user expands it


def _clock(ts: float | None) -> str:
    if not ts:
        return "?"
    return time.strftime("%H:%M:%S", time.localtime(ts))


def _line(icon: str, text: str, style: str = "") -> Text:
    t = Text()
    t.append(f"{icon} ")
    t.append(text, style=style)
    return t


def event_text(ev: JsonObject, expanded: bool = False, superseded: bool = False) -> Text | None:
    """One Feed line (or block) for an events.jsonl record; None for records the Feed skips
    (generations: their tokens and cost are summed in the header and the participants table)
    and for a line that does not read as its kind."""
    read = shown_event(ev)
    return None if read is None else feed(read, expanded, superseded)


def shown_event(ev: JsonObject) -> events.Event | None:
    """An events.jsonl record as the Feed shows it (`events.readable`: leniently), with what
    participants and providers wrote on one line each, escaped (a post: by post_text)."""
    return events.readable(ev if ev.get("type") == "post" else clean(ev))


@singledispatch
def feed(ev: events.Event, expanded: bool = False, superseded: bool = False) -> Text | None:
    """An event's Feed line, by its kind. A kind without its own (one a newer autodev wrote) is
    its type in words, never the raw name (`turn_stopped`)."""
    who = getattr(ev, "participant", None)
    return _line("·", (f"{who}: " if who else "") + str(ev.type).replace("_", " "), "dim")


def _who(ev: events.TurnEvent) -> str:
    return ev.participant or ""


@feed.register
def _post(ev: events.PostEvent, expanded: bool = False, superseded: bool = False) -> Text | None:
    t = post_text(
        ev.post.model_dump(by_alias=True), width=None if expanded else FOLD_CHARS, superseded=superseded
    )
    if not expanded and len(ev.post.text) > FOLD_CHARS:
        t.append("  [folded: e expands]", style="dim italic")
    return t


@feed.register
def _generation(ev: events.GenerationEvent, *_: bool) -> Text | None:
    return None


@feed.register
def _scheduled(ev: events.ScheduledEvent, *_: bool) -> Text | None:
    return _line("·", f"turn {ev.turn}: {_who(ev)} speaks ({ev.rule}: {ev.why})", "dim")


@feed.register
def _turn_started(ev: events.TurnStartedEvent, *_: bool) -> Text | None:
    return _line("▶", f"turn {ev.turn} started: {_who(ev)}", "dim")


@feed.register
def _turn_resumed(ev: events.TurnResumedEvent, *_: bool) -> Text | None:
    return _line("▶", f"turn {ev.turn} resumed: {_who(ev)} at step {ev.step}", "dim")


@feed.register
def _turn_ended(ev: events.TurnEndedEvent, *_: bool) -> Text | None:
    end = f"posted #{ev.posted}" if ev.posted else f"no post ({ev.reason or 'silent'})"
    return _line("■", f"turn {ev.turn} ended: {_who(ev)}, {ev.steps} steps, {end}", "dim")


@feed.register
def _tool(ev: events.ToolEvent, *_: bool) -> Text | None:
    return _line("  ⚙", f"{_who(ev)}: {ev.name}", "dim")


@feed.register
def _tool_interrupted(ev: events.ToolInterruptedEvent, *_: bool) -> Text | None:
    return _line("  ⚙", f"{_who(ev)}: {ev.name} was interrupted by a restart", "yellow")


@feed.register
def _hook(ev: events.HookEvent, *_: bool) -> Text | None:
    what = f"hook {ev.on} `{ev.command[:60]}` on {ev.subject}"
    if ev.ok:
        return _line("  ⚓", f"{what}: ok", "dim")
    out = (ev.output or "")[:160]
    return _line("  ⚓", f"{what} {ev.problem}" + (f": {out}" if out else ""), "bold red")


@feed.register
def _notify_failed(ev: events.NotifyFailedEvent, *_: bool) -> Text | None:
    return _line("✉", f"notification ({ev.via}) for {ev.state} failed: {ev.error}", "bold red")


@feed.register
def _notified(ev: events.NotifiedEvent, *_: bool) -> Text | None:
    return _line("✉", f"notified ({ev.via}): {ev.state}", "dim")


@feed.register
def _budget_reached(ev: events.BudgetReachedEvent, *_: bool) -> Text | None:
    return _line("$", ev.text, "yellow")


@feed.register
def _failover(ev: events.FailoverEvent, *_: bool) -> Text | None:
    to = ev.to or "no model left: waiting for the reset"
    return _line("⇄", f"{_who(ev)}: {ev.model} hit a usage limit → {to}", "yellow")


@feed.register
def _retry(ev: events.RetryEvent, *_: bool) -> Text | None:
    return _line("↻", f"{_who(ev)}: retry {ev.attempt} in {ev.delay}s ({ev.error[:120]})", "yellow")


@feed.register
def _compacted(ev: events.CompactedEvent, *_: bool) -> Text | None:
    how = "hard, after the provider refused" if ev.hard else "older tool results stubbed"
    return _line(
        "⇲",
        f"{_who(ev)}: compacted to fit {ev.model}'s window ({how}; {ev.stubbed} results, "
        f"~{ev.tokens_before} → ~{ev.tokens_after} tokens)",
        "yellow",
    )


@feed.register
def _context_exceeded(ev: events.ContextExceededEvent, *_: bool) -> Text | None:
    return _line("⇲", f"{_who(ev)}: {ev.model} said the context window was exceeded", "yellow")


@feed.register
def _wait(ev: events.WaitEvent, *_: bool) -> Text | None:
    return _line("⏳", f"{_who(ev)} waits {ev.delay}s; next check at {_clock(ev.due)}", "yellow")


@feed.register
def _gate_open(ev: events.GateOpenEvent, *_: bool) -> Text | None:
    return _line("🚧", f"gate {ev.id} by {ev.declarer} needs your decision: {ev.text}", "bold magenta")


@feed.register
def _gate_decided(ev: events.GateDecidedEvent, *_: bool) -> Text | None:
    style = "green" if ev.decision == "approved" else "red"
    return _line("🚧", f"gate {ev.id} {ev.decision} by {ev.by}", style)


@feed.register
def _gate_used(ev: events.GateUsedEvent, *_: bool) -> Text | None:
    return _line("🚧", f"{_who(ev)} used approved gate(s) {', '.join(map(str, ev.ids))}", "dim")


@feed.register
def _command_refused(ev: events.CommandRefusedEvent, *_: bool) -> Text | None:
    return _line("⛔", f"{_who(ev)}: command refused without an approved gate: {ev.command}", "red")


@feed.register
def _git_quarantined(ev: events.GitQuarantinedEvent, *_: bool) -> Text | None:
    return _line(
        "⛔", f"{_who(ev)}: moved out of the repository (git would run them): {', '.join(ev.paths)}", "red"
    )


@feed.register
def _branch_moved_back(ev: events.BranchMovedBackEvent, *_: bool) -> Text | None:
    back = "; put back" if ev.restored else ""
    return _line(
        "⛔", f"{_who(ev)}: {ev.branch} moved back, dropping {len(ev.dropped)} commit(s){back}", "red"
    )


@feed.register
def _audit_started(ev: events.AuditStartedEvent, *_: bool) -> Text | None:
    return _line("🔎", f"audit {ev.n} of done #{ev.seq} started", "dim")


@feed.register
def _audit(ev: events.AuditEvent, *_: bool) -> Text | None:
    if ev.accept:
        return _line("🔎", f"audit accepted #{ev.seq}", "bold green")
    return _line("🔎", f"audit reopened #{ev.seq} (by {ev.by}): {ev.gap}", "bold red")


@feed.register
def _evidence(ev: events.EvidenceEvent, *_: bool) -> Text | None:
    bad = ev.summary.startswith("✘")
    return _line(
        "🧪", f"tests on done #{ev.seq}: {ev.summary} ({ev.command})", "bold red" if bad else "green"
    )


@feed.register
def _notice(ev: events.NoticeEvent, *_: bool) -> Text | None:
    held = f" (holds {ev.hold})" if ev.hold else ""
    return _line("📣", f"notice {ev.id} from {_who(ev)}{held}: {ev.text}", "bold yellow")


@feed.register(events.NoticeAnsweredEvent)
@feed.register(events.NoticePinnedEvent)
@feed.register(events.NoticeReleasedEvent)
def _notice_changed(
    ev: events.NoticeAnsweredEvent | events.NoticePinnedEvent | events.NoticeReleasedEvent, *_: bool
) -> Text | None:
    verb = ev.type.split("_", 1)[1]
    return _line("📣", f"notice {ev.id} {verb}", "dim")


@feed.register
def _state(ev: events.StateEvent, *_: bool) -> Text | None:
    why = ev.reason.text if ev.reason else ""
    return _line(
        "●", f"run {ev.state}" + (f": {why}" if why else ""), "bold" if ev.state != "running" else "dim"
    )


@feed.register
def _control(ev: events.ControlEvent, *_: bool) -> Text | None:
    return _line("⏯", f"{ev.action} applied", "bold")


@feed.register
def _silent_turn(ev: events.SilentTurnEvent, *_: bool) -> Text | None:
    return _line(
        "…", f"{_who(ev)} ended a turn without posting ({ev.reason}; {ev.streak} in a row)", "yellow"
    )


@feed.register
def _warning(ev: events.WarningEvent, *_: bool) -> Text | None:
    return _line("⚠", ev.message, "yellow")


@feed.register
def _error(ev: events.ErrorEvent, *_: bool) -> Text | None:
    who = _who(ev)
    return _line("✖", f"{who + ': ' if who else ''}{ev.message}", "bold red")


@feed.register
def _daemon_started(ev: events.DaemonStartedEvent, *_: bool) -> Text | None:
    return _line("⚑", f"daemon started (pid {'?' if ev.pid is None else ev.pid})", "dim")


@feed.register
def _team_reloaded(ev: events.TeamReloadedEvent, *_: bool) -> Text | None:
    return _line("⚑", "team reloaded: " + ", ".join(ev.participants), "dim")


# -- the kinds below had no line of their own and showed their raw type in the Feed --------------


@feed.register
def _turn_stopped(ev: events.TurnStoppedEvent, *_: bool) -> Text | None:
    return _line("■", f"turn {ev.turn} of {_who(ev)} cut by stop: it continues on the next start", "yellow")


@feed.register
def _turn_recovered(ev: events.TurnRecoveredEvent, *_: bool) -> Text | None:
    done = f", its post #{ev.posted} kept" if ev.posted else ""
    return _line(
        "▶", f"turn {ev.turn} of {_who(ev)} recovered after a restart at step {ev.step}{done}", "dim"
    )


@feed.register
def _effects_recovered(ev: events.EffectsRecoveredEvent, *_: bool) -> Text | None:
    return _line("▶", f"what post #{ev.seq} does was applied after a restart", "dim")


@feed.register
def _config_refused(ev: events.ConfigRefusedEvent, *_: bool) -> Text | None:
    return _line("⚠", f"a change to .autodev/ was refused: {ev.message}", "yellow")


@feed.register
def _tool_crashed(ev: events.ToolCrashedEvent, *_: bool) -> Text | None:
    again = "run again" if ev.replay_safe else "not run again (it may have had effects)"
    return _line("  ⚙", f"{_who(ev)}: {ev.name} was cut by a crash; {again}", "yellow")


@feed.register
def _tool_refused(ev: events.ToolRefusedEvent, *_: bool) -> Text | None:
    return _line("  ⛔", f"{_who(ev)}: {ev.name} refused", "yellow")


@feed.register
def _nudged(ev: events.NudgedEvent, *_: bool) -> Text | None:
    return _line("…", f"{_who(ev)} was reminded to post", "dim")


@feed.register
def _agent_started(ev: events.AgentStartedEvent, *_: bool) -> Text | None:
    return _line("  ⧉", f"{_who(ev)}: {ev.agent} started", "dim")


@feed.register
def _agent_finished(ev: events.AgentFinishedEvent, *_: bool) -> Text | None:
    how = "timed out" if ev.timed_out else "hit its usage limit" if ev.limited else f"exit {ev.exit_code}"
    return _line("  ⧉", f"{_who(ev)}: {ev.agent} finished ({how})", "dim")


@feed.register
def _agent_killed(ev: events.AgentKilledEvent, *_: bool) -> Text | None:
    return _line("  ⧉", f"{_who(ev)}: a left-over agent CLI (pid {ev.pid}) was ended", "yellow")


@feed.register
def _agent_timeout(ev: events.AgentTimeoutEvent, *_: bool) -> Text | None:
    return _line("  ⧉", f"{_who(ev)}: {ev.agent} ran past the turn's deadline and was ended", "yellow")


@feed.register
def _agent_text(ev: events.AgentTextEvent, *_: bool) -> Text | None:
    return _line("  ⧉", f"{_who(ev)} ({ev.agent}): {ev.text[:FOLD_CHARS]}", "dim")


@feed.register
def _agent_limit(ev: events.AgentLimitEvent, *_: bool) -> Text | None:
    return _line("⏳", f"{_who(ev)}: {ev.agent} reached its usage limit: {ev.text[:FOLD_CHARS]}", "yellow")


@feed.register
def _agent_error(ev: events.AgentErrorEvent, *_: bool) -> Text | None:
    return _line("✖", f"{_who(ev)}: {ev.agent} failed: {ev.text[:FOLD_CHARS]}", "red")


@feed.register
def _audit_stopped(ev: events.AuditStoppedEvent, *_: bool) -> Text | None:
    return _line(
        "🔎", f"audit {ev.n} of done #{ev.seq} cut by stop: it runs again on the next start", "yellow"
    )


@feed.register
def _rewind(ev: events.RewindEvent, *_: bool) -> Text | None:
    if ev.undo_of is not None:
        return _line("↶", f"rewind {ev.undo_of} undone", "bold")
    return _line("↶", f"rewound to post #{ev.to_seq}: the posts after it are superseded", "bold")


@feed.register(events.McpServerStartedEvent)
@feed.register(events.McpServerRestartedEvent)
def _mcp_up(ev: events.McpServerStartedEvent | events.McpServerRestartedEvent, *_: bool) -> Text | None:
    verb = "restarted" if isinstance(ev, events.McpServerRestartedEvent) else "started"
    return _line("⚙", f"MCP server {ev.server} {verb} ({len(ev.tools)} tools)", "dim")


@feed.register
def _mcp_down(ev: events.McpServerDownEvent, *_: bool) -> Text | None:
    again = f"; restarting in {ev.restart_in:g} s" if ev.restart_in is not None else ""
    return _line("⚠", f"MCP server {ev.server} is down: {ev.error[:FOLD_CHARS]}{again}", "yellow")


@feed.register
def _mcp_reaped(ev: events.McpServerReapedEvent, *_: bool) -> Text | None:
    return _line("⚙", f"MCP server {ev.server}: a previous daemon's process group {ev.pgid} was ended", "dim")
