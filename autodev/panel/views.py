"""What the panel shows, computed from `autodev status`'s data (no widgets, no I/O): the header,
the Needs-you items and the participants' rows."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from rich.text import Text

from autodev.guard.display import clean
from autodev.records.state import RunState
from autodev.user.status import cap_text, safe_to_show, spend_text

STOPPED = ("paused", "stopped", "faulted")  # states whose reason Needs you shows first
STATE_STYLE = {
    "running": "bold green",
    "waiting": "bold yellow",
    "awaiting_user": "bold yellow",
    "gated": "bold magenta",
    "auditing": "bold cyan",
    "paused": "bold yellow",
    "stopped": "bold red",
    "complete": "bold green",
    "faulted": "bold red",
}

PARTICIPANT_COLUMNS = (
    "name", "model", "effort", "write", "turns", "credited", "silent", "tokens", "cost", "last spoke",
)  # fmt: skip


def header(d: dict, st: RunState, daemon_pid: int | None) -> Text:
    """State and why, the daemon, objective, figures, sandbox, refused config, who speaks next.
    `d` is status data, `st` the raw state.json."""
    d = clean(d)  # participants' and providers' words, escaped
    state = d.get("state", "?")
    t = Text()
    t.append(f" {state} ", style=f"reverse {STATE_STYLE.get(state, 'bold')}")
    r = d.get("reason") or {}
    if r.get("text") and state != "running":
        t.append(f"  {r['text']}")
    t.append("   ")
    if daemon_pid:
        t.append(f"daemon pid {daemon_pid}", style="green")
    else:
        t.append("no daemon running (autodev start)", style="bold red")
    t.append(f"\nobjective: {d.get('objective') or '-'}")
    tot = d.get("totals") or {}
    au = d.get("audit_usage") or {}
    tokens = tot.get("tokens", 0) + au.get("prompt_tokens", 0) + au.get("completion_tokens", 0)
    cost = tot.get("cost", 0.0) + au.get("cost", 0.0)
    b = d.get("budget") or {"cost": cost, "tokens": tokens}
    t.append(
        f"\nelapsed {_elapsed(st.started_at)} · turns {tot.get('turns', 0)} · "
        f"credited {tot.get('credited', 0)} · {spend_text(b)}"
    )
    sb = d.get("sandbox") or {}
    if sb.get("warning"):
        t.append(f"\nsandbox: {sb['warning']}", style="bold red")
    elif sb:
        t.append(f"\nsandbox: {sb['describe']}")
    if d.get("config_refused"):
        t.append(f"\n{d['config_refused']}", style="bold red")
    if d.get("queued_text"):
        t.append(f"\n{d['queued_text']}", style="bold yellow")
    if d.get("speaking"):
        t.append(f"\nspeaking now: {d['speaking']}", style="bold")
    elif d.get("next"):
        n = d["next"]
        t.append(f"\nnext: {n.get('speaker')} ({n.get('rule')}: {n.get('why')})")
    else:
        t.append("\nnext: -")
    return t


def needs(d: dict) -> list[dict]:
    """What Needs you lists, in order: why the run stopped, then gate, question, notices."""
    items = []
    r = d.get("reason") or {}
    if d.get("state") in STOPPED and r:
        items.append({"type": "stopped", "text": r.get("text", ""), "do": r.get("continue", "")})
    return items + list(d.get("needs_you") or [])


def need_text(n: dict) -> Text:
    """One Needs-you item, with the keys that act on it."""
    n = clean(n)
    t = Text()
    if n["type"] == "stopped":
        t.append("The run stopped and why\n", style="bold red")
        t.append(f"{n['text']}\n→ {n['do'] or '-'}")
    elif n["type"] == "gate":
        sha = f" (text sha256 {n['digest']})" if n.get("digest") else ""
        t.append(f"🚧 gate {n['id']} from {n['from']}{sha}\n", style="bold magenta")
        t.append(f"{n['text'][:400]}\n→ a: approve · d: deny")
    elif n["type"] == "question":
        t.append(f"❓ question from {n['from']}\n", style="bold yellow")
        t.append(f"{n['text'][:400]}\n→ s: send your answer")
    else:
        held = ""
        if n.get("hold"):
            held = f" · holds {n['hold']}" + (" (pinned)" if n.get("pinned") else "")
        state = "answered" if n.get("answered") else "open"
        t.append(f"📣 notice {n['id']} from {n['from']} · {state}{held}\n", style="bold yellow")
        t.append(f"{n['text'][:400]}\n→ n: answer · h: hold · l: release")
    return t


def participant_rows(
    d: dict, st: RunState, failover: dict[str, str], last_post: dict[str, int]
) -> list[tuple]:
    """One row per participant (PARTICIPANT_COLUMNS): its model (and the failover in use), its
    figures, and when it last spoke (post seq, else turn). Strings are escaped for the table,
    which reads rich markup."""
    d = safe_to_show(d)
    failover = safe_to_show(failover)
    rows = []
    for p in d.get("participants") or []:
        model = str(p.get("model"))
        if p["name"] in failover:
            model += f" → {failover[p['name']]}"
        last = last_post.get(p["name"])
        mine = st.participants.get(p["name"])
        lt = mine.last_turn if mine else None
        spoke = f"#{last}" if last else (f"turn {lt}" if lt else "-")
        rows.append(
            (
                p["name"],
                model,
                p.get("effort") or "-",
                "yes" if p.get("write") else "no",
                str(p["turns"]),
                str(p["credited"]),
                str(p.get("silent_streak", 0)),
                f"{p['prompt_tokens'] + p['completion_tokens']:,}",
                cap_text(p),
                spoke,
            )
        )
    return rows


def _elapsed(started: str | None) -> str:
    if not started:
        return "-"
    try:
        t0 = datetime.strptime(started, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return "-"
    s = max(0, int(time.time() - t0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
