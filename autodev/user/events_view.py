"""The panel's Feed: one line (or block) per events.jsonl record, by the event's kind (`feed`,
one `match` per family of kinds over the `AnyEvent` union, each ending in `assert_never`: a kind
added to the union without a line here fails the type check; `thread --follow` shares
`render.post_text` for posts)."""

from __future__ import annotations

import time
from typing import assert_never

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


def shown_event(ev: JsonObject) -> events.AnyEvent | None:
    """An events.jsonl record as the Feed shows it (`events.readable`: leniently), with what
    participants and providers wrote on one line each, escaped (a post: by post_text, so it is
    read as written)."""
    shown = events.readable(clean(ev))
    return events.readable(ev) if isinstance(shown, events.PostEvent) else shown


# The families of kinds, each shown by its own `match` (one match for all would pass 60 lines).
_Run = (
    events.DaemonStartedEvent
    | events.StateEvent
    | events.ControlEvent
    | events.WarningEvent
    | events.ErrorEvent
    | events.TeamReloadedEvent
    | events.ConfigRefusedEvent
    | events.BudgetReachedEvent
    | events.ScheduledEvent
    | events.HookEvent
    | events.NotifiedEvent
    | events.NotifyFailedEvent
    | events.McpServerStartedEvent
    | events.McpServerRestartedEvent
    | events.McpServerDownEvent
    | events.McpServerReapedEvent
    | events.LeftoverKilledEvent
)
_Turn = (
    events.TurnStartedEvent
    | events.TurnResumedEvent
    | events.TurnEndedEvent
    | events.TurnStoppedEvent
    | events.TurnRecoveredEvent
    | events.EffectsRecoveredEvent
    | events.SilentTurnEvent
    | events.NudgedEvent
    | events.FailoverEvent
    | events.RetryEvent
    | events.CompactedEvent
    | events.ContextExceededEvent
)
_Tool = (
    events.ToolEvent
    | events.ToolInterruptedEvent
    | events.ToolCrashedEvent
    | events.ToolRefusedEvent
    | events.CommandRefusedEvent
    | events.GitQuarantinedEvent
    | events.BranchMovedBackEvent
    | events.AgentStartedEvent
    | events.AgentFinishedEvent
    | events.AgentKilledEvent
    | events.AgentTimeoutEvent
    | events.AgentTextEvent
    | events.AgentLimitEvent
    | events.AgentErrorEvent
)
_Effect = (
    events.WaitEvent
    | events.GateOpenEvent
    | events.GateDecidedEvent
    | events.GateUsedEvent
    | events.AuditStartedEvent
    | events.AuditStoppedEvent
    | events.AuditEvent
    | events.EvidenceEvent
    | events.NoticeEvent
    | events.NoticeAnsweredEvent
    | events.NoticePinnedEvent
    | events.NoticeReleasedEvent
    | events.RewindEvent
)


def feed(ev: events.AnyEvent, expanded: bool = False, superseded: bool = False) -> Text | None:
    """An event's Feed line, by its kind; None for a generation (its tokens and cost are summed
    in the header and the participants table). A kind this version does not know (a newer
    autodev wrote it) is its type in words, never the raw name (`turn_stopped`)."""
    if isinstance(ev, _Run):
        return _run_line(ev)
    if isinstance(ev, _Turn):
        return _turn_line(ev)
    if isinstance(ev, _Tool):
        return _tool_line(ev)
    if isinstance(ev, _Effect):
        return _effect_line(ev)
    match ev:
        case events.PostEvent():
            return _post(ev, expanded, superseded)
        case events.GenerationEvent():
            return None
        case events.UnknownEvent():
            who = ev.participant
            return _line("·", (f"{who}: " if who else "") + ev.type.replace("_", " "), "dim")
        case _:
            assert_never(ev)


def _who(ev: events.TurnEvent) -> str:
    return ev.participant or ""


def _post(ev: events.PostEvent, expanded: bool, superseded: bool) -> Text:
    t = post_text(
        ev.post.model_dump(by_alias=True), width=None if expanded else FOLD_CHARS, superseded=superseded
    )
    if not expanded and len(ev.post.text) > FOLD_CHARS:
        t.append("  [folded: e expands]", style="dim italic")
    return t


def _run_line(ev: _Run) -> Text:
    match ev:
        case events.DaemonStartedEvent():
            return _line("⚑", f"daemon started (pid {'?' if ev.pid is None else ev.pid})", "dim")
        case events.StateEvent():
            why = ev.reason.text if ev.reason else ""
            style = "bold" if ev.state != "running" else "dim"
            return _line("●", f"run {ev.state}" + (f": {why}" if why else ""), style)
        case events.ControlEvent():
            return _line("⏯", f"{ev.action} applied", "bold")
        case events.WarningEvent():
            return _line("⚠", ev.message, "yellow")
        case events.ErrorEvent():
            who = _who(ev)
            return _line("✖", f"{who + ': ' if who else ''}{ev.message}", "bold red")
        case events.TeamReloadedEvent():
            return _line("⚑", "team reloaded: " + ", ".join(ev.participants), "dim")
        case events.ConfigRefusedEvent():
            return _line("⚠", f"a change to .autodev/ was refused: {ev.message}", "yellow")
        case events.BudgetReachedEvent():
            return _line("$", ev.text, "yellow")
        case events.ScheduledEvent():
            return _line("·", f"turn {ev.turn}: {_who(ev)} speaks ({ev.rule}: {ev.why})", "dim")
        case events.HookEvent():
            return _hook(ev)
        case events.NotifiedEvent():
            return _line("✉", f"notified ({ev.via}): {ev.state}", "dim")
        case events.NotifyFailedEvent():
            return _line("✉", f"notification ({ev.via}) for {ev.state} failed: {ev.error}", "bold red")
        case events.McpServerStartedEvent() | events.McpServerRestartedEvent():
            verb = "restarted" if isinstance(ev, events.McpServerRestartedEvent) else "started"
            return _line("⚙", f"MCP server {ev.server} {verb} ({len(ev.tools)} tools)", "dim")
        case events.McpServerDownEvent():
            again = f"; restarting in {ev.restart_in:g} s" if ev.restart_in is not None else ""
            return _line("⚠", f"MCP server {ev.server} is down: {ev.error[:FOLD_CHARS]}{again}", "yellow")
        case events.McpServerReapedEvent():
            what = f"a previous daemon's process group {ev.pgid} was ended"
            return _line("⚙", f"MCP server {ev.server}: {what}", "dim")
        case events.LeftoverKilledEvent():
            what = f"{ev.program or 'a process'} (group {ev.pgid})"
            return _line("⚙", f"a previous daemon's {what} was still running: ended", "yellow")
        case _:
            assert_never(ev)


def _hook(ev: events.HookEvent) -> Text:
    what = f"hook {ev.on} `{ev.command[:60]}` on {ev.subject}"
    if ev.ok:
        return _line("  ⚓", f"{what}: ok", "dim")
    out = (ev.output or "")[:160]
    return _line("  ⚓", f"{what} {ev.problem}" + (f": {out}" if out else ""), "bold red")


def _turn_line(ev: _Turn) -> Text:
    who = _who(ev) if isinstance(ev, events.TurnEvent) else ""
    match ev:
        case events.TurnStartedEvent():
            return _line("▶", f"turn {ev.turn} started: {who}", "dim")
        case events.TurnResumedEvent():
            return _line("▶", f"turn {ev.turn} resumed: {who} at step {ev.step}", "dim")
        case events.TurnEndedEvent():
            end = f"posted #{ev.posted}" if ev.posted else f"no post ({ev.reason or 'silent'})"
            return _line("■", f"turn {ev.turn} ended: {who}, {ev.steps} steps, {end}", "dim")
        case events.TurnStoppedEvent():
            return _line(
                "■", f"turn {ev.turn} of {who} cut by stop: it continues on the next start", "yellow"
            )
        case events.TurnRecoveredEvent():
            done = f", its post #{ev.posted} kept" if ev.posted else ""
            return _line(
                "▶", f"turn {ev.turn} of {who} recovered after a restart at step {ev.step}{done}", "dim"
            )
        case events.EffectsRecoveredEvent():
            return _line("▶", f"what post #{ev.seq} does was applied after a restart", "dim")
        case events.SilentTurnEvent():
            why = f"{ev.reason}; {ev.streak} in a row"
            return _line("…", f"{who} ended a turn without posting ({why})", "yellow")
        case events.NudgedEvent():
            return _line("…", f"{who} was reminded to post", "dim")
        case events.FailoverEvent():
            to = ev.to or "no model left: waiting for the reset"
            return _line("⇄", f"{who}: {ev.model} hit a usage limit → {to}", "yellow")
        case events.RetryEvent():
            return _line("↻", f"{who}: retry {ev.attempt} in {ev.delay}s ({ev.error[:120]})", "yellow")
        case events.CompactedEvent():
            return _compacted(ev)
        case events.ContextExceededEvent():
            return _line("⇲", f"{who}: {ev.model} said the context window was exceeded", "yellow")
        case _:
            assert_never(ev)


def _compacted(ev: events.CompactedEvent) -> Text:
    how = "hard, after the provider refused" if ev.hard else "older tool results stubbed"
    return _line(
        "⇲",
        f"{_who(ev)}: compacted to fit {ev.model}'s window ({how}; {ev.stubbed} results, "
        f"~{ev.tokens_before} → ~{ev.tokens_after} tokens)",
        "yellow",
    )


def _tool_line(ev: _Tool) -> Text:
    who = _who(ev)
    match ev:
        case events.ToolEvent():
            return _line("  ⚙", f"{who}: {ev.name}", "dim")
        case events.ToolInterruptedEvent():
            return _line("  ⚙", f"{who}: {ev.name} was interrupted by a restart", "yellow")
        case events.ToolCrashedEvent():
            again = "run again" if ev.replay_safe else "not run again (it may have had effects)"
            return _line("  ⚙", f"{who}: {ev.name} was cut by a crash; {again}", "yellow")
        case events.ToolRefusedEvent():
            return _line("  ⛔", f"{who}: {ev.name} refused", "yellow")
        case events.CommandRefusedEvent():
            return _line("⛔", f"{who}: command refused without an approved gate: {ev.command}", "red")
        case events.GitQuarantinedEvent():
            paths = ", ".join(ev.paths)
            return _line("⛔", f"{who}: moved out of the repository (git would run them): {paths}", "red")
        case events.BranchMovedBackEvent():
            back = "; put back" if ev.restored else ""
            gone = f"dropping {len(ev.dropped)} commit(s){back}"
            return _line("⛔", f"{who}: {ev.branch} moved back, {gone}", "red")
        case events.AgentStartedEvent():
            return _line("  ⧉", f"{who}: {ev.agent} started", "dim")
        case events.AgentFinishedEvent():
            how = (
                "timed out"
                if ev.timed_out
                else "hit its usage limit"
                if ev.limited
                else f"exit {ev.exit_code}"
            )
            return _line("  ⧉", f"{who}: {ev.agent} finished ({how})", "dim")
        case events.AgentKilledEvent():
            return _line("  ⧉", f"{who}: a left-over agent CLI (pid {ev.pid}) was ended", "yellow")
        case events.AgentTimeoutEvent():
            return _line("  ⧉", f"{who}: {ev.agent} ran past the turn's deadline and was ended", "yellow")
        case events.AgentTextEvent():
            return _line("  ⧉", f"{who} ({ev.agent}): {ev.text[:FOLD_CHARS]}", "dim")
        case events.AgentLimitEvent():
            return _line("⏳", f"{who}: {ev.agent} reached its usage limit: {ev.text[:FOLD_CHARS]}", "yellow")
        case events.AgentErrorEvent():
            return _line("✖", f"{who}: {ev.agent} failed: {ev.text[:FOLD_CHARS]}", "red")
        case _:
            assert_never(ev)


def _effect_line(ev: _Effect) -> Text:
    match ev:
        case events.WaitEvent():
            return _line("⏳", f"{_who(ev)} waits {ev.delay}s; next check at {_clock(ev.due)}", "yellow")
        case events.GateOpenEvent():
            return _line(
                "🚧", f"gate {ev.id} by {ev.declarer} needs your decision: {ev.text}", "bold magenta"
            )
        case events.GateDecidedEvent():
            style = "green" if ev.decision == "approved" else "red"
            return _line("🚧", f"gate {ev.id} {ev.decision} by {ev.by}", style)
        case events.GateUsedEvent():
            return _line("🚧", f"{_who(ev)} used approved gate(s) {', '.join(map(str, ev.ids))}", "dim")
        case events.AuditStartedEvent():
            return _line("🔎", f"audit {ev.n} of done #{ev.seq} started", "dim")
        case events.AuditStoppedEvent():
            again = "cut by stop: it runs again on the next start"
            return _line("🔎", f"audit {ev.n} of done #{ev.seq} {again}", "yellow")
        case events.AuditEvent() if ev.accept:
            return _line("🔎", f"audit accepted #{ev.seq}", "bold green")
        case events.AuditEvent():
            return _line("🔎", f"audit reopened #{ev.seq} (by {ev.by}): {ev.gap}", "bold red")
        case events.EvidenceEvent():
            style = "bold red" if ev.summary.startswith("✘") else "green"
            return _line("🧪", f"tests on done #{ev.seq}: {ev.summary} ({ev.command})", style)
        case events.NoticeEvent():
            held = f" (holds {ev.hold})" if ev.hold else ""
            return _line("📣", f"notice {ev.id} from {_who(ev)}{held}: {ev.text}", "bold yellow")
        case events.NoticeAnsweredEvent() | events.NoticePinnedEvent() | events.NoticeReleasedEvent():
            return _line("📣", f"notice {ev.id} {ev.type.split('_', 1)[1]}", "dim")
        case events.RewindEvent() if ev.undo_of is not None:
            return _line("↶", f"rewind {ev.undo_of} undone", "bold")
        case events.RewindEvent():
            return _line("↶", f"rewound to post #{ev.to_seq}: the posts after it are superseded", "bold")
        case _:
            assert_never(ev)
