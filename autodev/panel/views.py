"""What the panel shows, computed from `autodev status`'s data (no widgets, no I/O): the header,
the Needs-you items and the participants' rows."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from rich.text import Text

from autodev.records.state import RunState
from autodev.user.status import Budget, Need, Status, cap_text, safe_to_show, spend_text
from autodev.user.statustext import speaking_text

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


def header(status: Status, st: RunState, daemon_pid: int | None, group: list[str] | None = None) -> Text:
    """State and why, the daemon, objective, figures, sandbox, refused config, who speaks next;
    the repository's best-of group side by side (`group`: its lines, escaped).
    `status` is what `autodev status` shows, `st` the raw state.json."""
    d = status.shown()  # participants' and providers' words, escaped
    state = d.state
    t = Text()
    t.append(f" {state} ", style=f"reverse {STATE_STYLE.get(state, 'bold')}")
    if d.reason and d.reason.text and state != "running":
        t.append(f"  {d.reason.text}")
    t.append("   ")
    if daemon_pid:
        t.append(f"daemon pid {daemon_pid}", style="green")
    else:
        t.append("no daemon running (autodev start)", style="bold red")
    t.append(f"\nobjective: {d.objective or '-'}")
    tot = d.totals
    b = d.budget or Budget()  # no status gathered (state.json unreadable): nothing to count
    t.append(
        f"\nelapsed {_elapsed(st.started_at)} · turns {tot.turns} · credited {tot.credited} · {spend_text(b)}"
    )
    if d.evidence:
        bad = d.evidence.summary.startswith("✘")
        t.append(
            f"\ntests on done #{d.evidence.of}: {d.evidence.summary}", style="bold red" if bad else "green"
        )
    sb = d.sandbox
    if sb and sb.warning:
        t.append(f"\nsandbox: {sb.warning}", style="bold red")
    elif sb:
        t.append(f"\nsandbox: {sb.describe}")
    if d.config_refused:
        t.append(f"\n{d.config_refused}", style="bold red")
    if d.queued_text:
        t.append(f"\n{d.queued_text}", style="bold yellow")
    if d.speaking:
        t.append(f"\n{speaking_text(d.speaking, bool(daemon_pid))}", style="bold")
    elif d.next:
        n = d.next
        t.append(f"\nnext: {n.speaker} ({n.rule}: {n.why})")
    else:
        t.append("\nnext: -")
    for g in group or []:
        t.append(f"\n{g}", style="cyan")
    return t


def needs(status: Status) -> list[Need]:
    """What Needs you lists, in order: why the run stopped, then gate, question, notices."""
    items: list[Need] = []
    r = status.reason
    if status.state in STOPPED and r:
        items.append(Need(type="stopped", text=r.text, do=r.continue_))
    return items + status.needs_you


def need_text(need: Need) -> Text:
    """One Needs-you item, with the keys that act on it."""
    n = need.shown()
    t = Text()
    if n.type == "stopped":
        t.append("The run stopped and why\n", style="bold red")
        t.append(f"{n.text}\n→ {n.do or '-'}")
    elif n.type == "gate":
        sha = f" (text sha256 {n.digest})" if n.digest else ""
        t.append(f"🚧 gate {n.id} from {n.from_}{sha}\n", style="bold magenta")
        t.append(f"{n.text[:400]}\n→ a: approve · d: deny")
    elif n.type == "question":
        t.append(f"❓ question from {n.from_}\n", style="bold yellow")
        t.append(f"{n.text[:400]}\n→ s: send your answer")
    else:
        held = ""
        if n.hold:
            held = f" · holds {n.hold}" + (" (pinned)" if n.pinned else "")
        state = "answered" if n.answered else "open"
        t.append(f"📣 notice {n.id} from {n.from_} · {state}{held}\n", style="bold yellow")
        t.append(f"{n.text[:400]}\n→ n: answer · h: hold · l: release")
    return t


def participant_rows(
    status: Status, st: RunState, failover: dict[str, str], last_post: dict[str, int]
) -> list[tuple[str, ...]]:
    """One row per participant (PARTICIPANT_COLUMNS): its model (and the failover in use), its
    figures, and when it last spoke (post seq, else turn). Strings are escaped for the table,
    which reads rich markup."""
    rows: list[tuple[str, ...]] = []
    for p in status.participants:
        name = safe_to_show(p.name)
        model = safe_to_show(str(p.model))
        if p.name in failover:
            model += f" → {safe_to_show(failover[p.name])}"
        last = last_post.get(p.name)
        mine = st.participants.get(p.name)
        lt = mine.last_turn if mine else None
        spoke = f"#{last}" if last else (f"turn {lt}" if lt else "-")
        rows.append(
            (
                name,
                model,
                safe_to_show(p.effort or "-"),
                "yes" if p.write else "no",
                str(p.turns),
                str(p.credited),
                str(p.silent_streak),
                f"{p.prompt_tokens + p.completion_tokens:,}",
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
