"""Plain terminal rendering of posts and status (rich), shared by `thread`, `status`, `start
--foreground` and `demo`."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from autodev.guard.display import clean, line, shown

STYLE = {
    "say": ("💬", "cyan"),
    "work_done": ("🔨", "green"),
    "handoff": ("➡", "blue"),
    "wait": ("⏳", "yellow"),
    "gate": ("🚧", "magenta"),
    "done": ("✅", "bold green"),
}
AUTHOR_STYLE = {"user": "bold yellow", "system": "dim", "audit": "bold red"}


def credit_label(post: dict) -> str:
    if post.get("kind") != "work_done":
        return ""
    c = post.get("credit")
    if not c:
        return "  [not credited]"
    if c.get("commits"):
        return "  [credited: " + ", ".join(line(s)[:7] for s in c["commits"][:3]) + "]"
    return "  [credited: " + ", ".join(line(f) for f in c.get("files", [])[:3]) + "]"


def post_text(post: dict, width: int | None = None, superseded: bool = False) -> Text:
    """One post; a post a rewind superseded is struck through and says so."""
    if superseded:
        t = post_text(post, width)
        t.stylize("strike dim")
        t.append("  [superseded by a rewind]", style="dim")
        return t
    icon, style = STYLE.get(post.get("kind", ""), ("•", "white"))
    if post.get("from") == "audit":
        icon = "🔎"
    t = Text()
    t.append(f"#{post['seq']:<4} ", style="dim")
    t.append(f"{icon} ")
    t.append(line(post["from"]), style=AUTHOR_STYLE.get(post["from"], "bold"))
    t.append(f" {line(post['kind'])}", style=style)
    if post.get("handoff"):
        t.append(f" → {line(post['handoff'])}", style="blue")
    t.append(credit_label(post), style="green" if post.get("credit") else "red")
    body = str(post.get("text", ""))
    if width and len(body) > width:
        body = body[:width] + "…"
    # every line of the body is indented under the header, so none can pass for a header
    t.append("\n      " + shown(body).replace("\n", "\n      "))
    return t


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True)


# -- per-kind rendering of events.jsonl (the panel's Feed; `thread --follow` shares post_text) --

FOLD_CHARS = 280  # a post longer than this is folded in the Feed until the user expands it


def _clock(ts: float | None) -> str:
    if not ts:
        return "?"
    import time

    return time.strftime("%H:%M:%S", time.localtime(ts))


def _line(icon: str, text: str, style: str = "") -> Text:
    t = Text()
    t.append(f"{icon} ")
    t.append(text, style=style)
    return t


def event_text(ev: dict, expanded: bool = False, superseded: bool = False) -> Text | None:
    """One Feed line (or block) for an events.jsonl record; None for records the Feed skips
    (generations: their tokens and cost are summed in the header and the participants table)."""
    kind = ev.get("type")
    who = ev.get("participant") or ""
    if kind == "post":
        if not {"seq", "from", "kind"} <= ev.keys():
            return None
        t = post_text(ev, width=None if expanded else FOLD_CHARS, superseded=superseded)
        if not expanded and len(str(ev.get("text", ""))) > FOLD_CHARS:
            t.append("  [folded: e expands]", style="dim italic")
        return t
    ev = clean(ev)  # what participants and providers wrote, on one line each, escaped
    who = ev.get("participant") or ""
    if kind == "generation":
        return None
    if kind == "scheduled":
        return _line("·", f"turn {ev.get('turn')}: {who} speaks ({ev.get('rule')}: {ev.get('why')})", "dim")
    if kind == "turn_started":
        return _line("▶", f"turn {ev.get('turn')} started: {who}", "dim")
    if kind == "turn_resumed":
        return _line("▶", f"turn {ev.get('turn')} resumed: {who} at step {ev.get('step')}", "dim")
    if kind == "turn_ended":
        end = f"posted #{ev['posted']}" if ev.get("posted") else f"no post ({ev.get('reason') or 'silent'})"
        return _line("■", f"turn {ev.get('turn')} ended: {who}, {ev.get('steps')} steps, {end}", "dim")
    if kind == "tool":
        return _line("  ⚙", f"{who}: {ev.get('name')}", "dim")
    if kind == "tool_interrupted":
        return _line("  ⚙", f"{who}: {ev.get('name')} was interrupted by a restart", "yellow")
    if kind == "hook":
        what = f"hook {ev.get('on')} `{str(ev.get('command', ''))[:60]}` on {ev.get('subject')}"
        if ev.get("ok"):
            return _line("  ⚓", f"{what}: ok", "dim")
        out = str(ev.get("output") or "")[:160]
        return _line("  ⚓", f"{what} {ev.get('problem')}" + (f": {out}" if out else ""), "bold red")
    if kind == "notify_failed":
        return _line(
            "✉", f"notification ({ev.get('via')}) for {ev.get('state')} failed: {ev.get('error')}", "bold red"
        )
    if kind == "notified":
        return _line("✉", f"notified ({ev.get('via')}): {ev.get('state')}", "dim")
    if kind == "budget_reached":
        return _line("$", str(ev.get("text", "")), "yellow")
    if kind == "failover":
        to = ev.get("to") or "no model left: waiting for the reset"
        return _line("⇄", f"{who}: {ev.get('model')} hit a usage limit → {to}", "yellow")
    if kind == "retry":
        return _line(
            "↻",
            f"{who}: retry {ev.get('attempt')} in {ev.get('delay')}s ({ev.get('error', '')[:120]})",
            "yellow",
        )
    if kind == "compacted":
        how = "hard, after the provider refused" if ev.get("hard") else "older tool results stubbed"
        return _line(
            "⇲",
            f"{who}: compacted to fit {ev.get('model')}'s window ({how}; {ev.get('stubbed')} results, "
            f"~{ev.get('tokens_before')} → ~{ev.get('tokens_after')} tokens)",
            "yellow",
        )
    if kind == "context_exceeded":
        return _line("⇲", f"{who}: {ev.get('model')} said the context window was exceeded", "yellow")
    if kind == "wait":
        return _line("⏳", f"{who} waits {ev.get('delay')}s; next check at {_clock(ev.get('due'))}", "yellow")
    if kind == "gate_open":
        return _line(
            "🚧",
            f"gate {ev.get('id')} by {ev.get('declarer')} needs your decision: {ev.get('text', '')}",
            "bold magenta",
        )
    if kind == "gate_decided":
        return _line(
            "🚧",
            f"gate {ev.get('id')} {ev.get('decision')} by {ev.get('by')}",
            "green" if ev.get("decision") == "approved" else "red",
        )
    if kind == "gate_used":
        return _line("🚧", f"{who} used approved gate(s) {', '.join(map(str, ev.get('ids') or []))}", "dim")
    if kind == "command_refused":
        return _line("⛔", f"{who}: command refused without an approved gate: {ev.get('command', '')}", "red")
    if kind == "audit_started":
        return _line("🔎", f"audit {ev.get('n')} of done #{ev.get('seq')} started", "dim")
    if kind == "audit":
        if ev.get("accept"):
            return _line("🔎", f"audit accepted #{ev.get('seq')}", "bold green")
        return _line(
            "🔎", f"audit reopened #{ev.get('seq')} (by {ev.get('by')}): {ev.get('gap', '')}", "bold red"
        )
    if kind == "notice":
        held = f" (holds {ev['hold']})" if ev.get("hold") else ""
        return _line("📣", f"notice {ev.get('id')} from {who}{held}: {ev.get('text', '')}", "bold yellow")
    if kind in ("notice_answered", "notice_pinned", "notice_released"):
        verb = kind.split("_", 1)[1]
        return _line("📣", f"notice {ev.get('id')} {verb}", "dim")
    if kind == "state":
        r = ev.get("reason") or {}
        return _line(
            "●",
            f"run {ev.get('state')}" + (f": {r.get('text')}" if r.get("text") else ""),
            "bold" if ev.get("state") != "running" else "dim",
        )
    if kind == "control":
        return _line("⏯", f"{ev.get('action')} applied", "bold")
    if kind == "silent_turn":
        return _line(
            "…",
            f"{who} ended a turn without posting ({ev.get('reason')}; {ev.get('streak')} in a row)",
            "yellow",
        )
    if kind == "warning":
        return _line("⚠", str(ev.get("message", "")), "yellow")
    if kind == "error":
        return _line("✖", f"{who + ': ' if who else ''}{ev.get('message', '')}", "bold red")
    if kind == "daemon_started":
        return _line("⚑", f"daemon started (pid {ev.get('pid', '?')})", "dim")
    if kind == "team_reloaded":
        return _line("⚑", "team reloaded: " + ", ".join(ev.get("participants") or []), "dim")
    return _line("·", str(kind), "dim")
