"""How `autodev status` prints: the status JSON (`quickstatus.gather_json`, or the model's
`status.Status.to_json`) as lines and a table with rich; the one renderer of both paths. The
panel's views share the line helpers."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard, TypeVar, overload

from autodev.guard.display import line
from autodev.store.journal import JsonObject, is_object

if TYPE_CHECKING:
    from rich.console import Console

M = TypeVar("M", bound=Mapping[str, object])


@overload
def safe_to_show(value: str) -> str: ...
@overload
def safe_to_show(value: M) -> M: ...  # the same keys and shape: JSON holds no tuple to turn into a list
@overload
def safe_to_show(value: object) -> object: ...
def safe_to_show(value: object) -> object:
    """Status data as it may be printed with rich: every string on one line with control
    characters escaped (display.line) and rich's markup escaped (`[link=...]` stays text)."""
    from rich.markup import escape

    if isinstance(value, str):
        return escape(line(value))
    if is_object(value):
        return {k: safe_to_show(v) for k, v in value.items()}
    if _is_sequence(value):
        return [safe_to_show(v) for v in value]
    return value


def _is_sequence(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return isinstance(value, (list, tuple))


# The status JSON as both paths make it (user/status.py's models): the accessors below narrow
# its values where a line formats or adds them; a value of another type reads as absent.


def _obj(value: object) -> JsonObject:
    return value if is_object(value) else {}


def _objs(value: object) -> list[JsonObject]:
    return [v for v in value if is_object(v)] if _is_sequence(value) else []


def _num(value: object) -> int | float | None:
    return value if isinstance(value, int | float) else None


def _figure(value: object, absent: int | float = 0) -> int | float:
    return value if isinstance(value, int | float) else absent


def spend_line(b: JsonObject) -> str:
    """`spend $0.0123 of $0.0500 (maxCostUsd) · 1,234 of 5,000 tokens (maxTokens)`."""
    cost = f"spend ${_figure(b.get('cost')):.4f}"
    if (cap := _num(b.get("max_cost_usd"))) is not None:
        cost += f" of ${cap:.4f} (maxCostUsd)"
    tokens = f"{_figure(b.get('tokens')):,}"
    limit = _num(b.get("max_tokens"))
    tokens += f" of {limit:,} tokens (maxTokens)" if limit is not None else " tokens"
    return f"{cost} · {tokens}"


def cap_line(p: JsonObject) -> str:
    """A participant's cost, with its cap when it has one."""
    out = f"${_figure(p.get('cost'), 0.0):.4f}"
    if (cap := _num(p.get("max_cost_usd"))) is not None:
        out += f" of ${cap:.4f}"
    if (limit := _num(p.get("max_tokens"))) is not None:
        out += f" ({_tokens(p):,} of {limit:,} tokens)"
    return out


def _tokens(p: JsonObject) -> int | float:
    return _figure(p.get("prompt_tokens")) + _figure(p.get("completion_tokens"))


def speaking_text(speaking: str, daemon_running: bool) -> str:
    """Who speaks: now, with a daemon running; else whose turn was open when the run stopped
    (it continues on the next start), never "speaking now" on a run nobody runs."""
    if daemon_running:
        return f"speaking now: {speaking}"
    return f"{speaking}'s turn was open when the run stopped: it continues on the next start"


MEMO = "status-text.json"  # in the run folder: the last renderings (user/rendered.py)
# The code a rendering comes from besides the status: a changed renderer renders again.
_SOURCES = ("user/statustext.py", "user/render.py", "guard/display.py")


def render(status: JsonObject, kept: Path | None = None) -> None:
    """Print the status JSON (`gather_json`, or the model's `to_json`). With `kept` (the run
    folder's MEMO), a status printed before on the same terminal is printed from there without
    importing rich, whose import is most of a cold status (issue 33)."""
    check = _next_check(status)
    if kept is None:
        from autodev.user.render import console

        _draw(console(), status, check)
        return
    from autodev.user.rendered import Kept, rendering_key

    memo = Kept(kept, most=4)
    root = Path(__file__).resolve().parent.parent
    seen = rendering_key(json.dumps(status, default=str), check, *((root / f).read_bytes() for f in _SOURCES))
    if (text := memo.get(seen)) is None:
        from autodev.user.render import console

        con = console()
        with con.capture() as out:
            _draw(con, status, check)
        text = out.get()
        memo.put(seen, text)
    sys.stdout.write(text)


def _next_check(status: JsonObject) -> str:
    """When a waiting run checks again, from now: part of what a rendering shows."""
    due = _num(_obj(status.get("wait")).get("due"))
    if not due:
        return ""
    import time

    return f"next check in {max(0, due - time.time()):.0f}s"


def _draw(con: Console, status: JsonObject, check: str) -> None:
    d = safe_to_show(status)  # every string escaped for rich, as printed
    _print_run(con, d, check)
    _print_attention(con, d)
    _print_table(con, d)


def _print_run(con: Console, d: JsonObject, check: str) -> None:
    """The run's state, why it stopped, its spend and evidence, who speaks next, the queue."""
    pid = d.get("daemon_pid")
    daemon = f"daemon pid {pid}" if pid else "no daemon running"
    if d.get("no_run_yet"):
        con.print(f"[bold]no run yet[/] in {d.get('repo', '')}\n  start one with: {d.get('start_with')}")
    else:
        con.print(
            f"[bold]{d.get('state', '?')}[/]  ({daemon})  turn {d.get('turn', 0)}  objective: {d.get('objective') or '-'}"
        )
    reason = _obj(d.get("reason"))
    if reason and d.get("state") not in ("running",):
        con.print(
            "\n[bold]The run stopped and why[/]" if d.get("state") != "complete" else "\n[bold]Outcome[/]"
        )
        con.print(f"  {reason.get('text', '')}")
        if d.get("continue"):
            con.print(f"  continue: {d['continue']}")
    if d.get("budget") and not d.get("no_run_yet"):
        con.print(f"\n{spend_line(_obj(d['budget']))}")
    if ev := _obj(d.get("evidence")):
        con.print(f"\ntests on done #{ev.get('of')}: {ev.get('summary', '')}  ({ev.get('command', '')})")
    if speaking := d.get("speaking"):
        con.print(f"\n{speaking_text(str(speaking), bool(pid))}")
    elif nxt := _obj(d.get("next")):
        con.print(f"\nnext: {nxt.get('speaker')} ({nxt.get('rule')}: {nxt.get('why')})")
    if check:
        con.print(check)
    if d.get("queued_text"):
        con.print(f"\n{d['queued_text']}")


def _print_attention(con: Console, d: JsonObject) -> None:
    """What needs the user, the sandbox, refused changes, team problems and warnings."""
    if needs := _objs(d.get("needs_you")):
        con.print("\n[bold yellow]Needs you[/]")
        for n in needs:
            ident = f" {n['id']}" if n.get("id") else ""
            hold = n.get("hold")
            held = f" \\[holds {hold}{', pinned' if n.get('pinned') else ''}]" if hold else ""
            sha = f" \\[text sha256 {n['digest']}]" if n.get("digest") else ""
            text = n.get("text")
            con.print(f"  {n.get('type')}{ident}{sha} from {n.get('from', '')}{held}: {_cut(text, 300)}")
            con.print(f"    → {n.get('do')}")
    sb = _obj(d.get("sandbox"))
    if sb and sb.get("warning"):
        con.print(f"\n[bold red]sandbox:[/] {sb['warning']}")
    elif sb:
        con.print(f"\nsandbox: {sb.get('describe')}")
    if d.get("config_refused"):
        con.print(f"\n[red]change to .autodev/ refused:[/] {d['config_refused']}")
    if d.get("team_error"):
        kept = "" if d.get("no_run_yet") else " (the old team is kept)"
        con.print(f"\n[red]team file problem{kept}:[/] {d['team_error']}")
    warnings = d.get("warnings")
    for w in warnings if _is_sequence(warnings) else []:
        con.print(f"[yellow]warning:[/] {w}")


def _cut(text: object, most: int) -> str:
    return text[:most] if isinstance(text, str) else str(text)


def _print_table(con: Console, d: JsonObject) -> None:
    """The participants' table and the cache and compaction totals under it."""
    from rich.table import Table

    t = Table(show_edge=False)
    for col in ("participant", "model", "write", "turns", "credited", "tokens", "cost"):
        t.add_column(col)
    for p in _objs(d.get("participants")):
        t.add_row(
            str(p.get("name")),
            str(p.get("model")),
            "yes" if p.get("write") else "no",
            str(p.get("turns", 0)),
            str(p.get("credited", 0)),
            str(_tokens(p)),
            cap_line(p),
        )
    con.print()
    con.print(t)
    tot = _obj(d.get("totals"))
    if tot.get("cached_tokens") or tot.get("compactions"):
        # Input tokens served from the provider's prompt cache; turns compacted to fit a window.
        con.print(
            f"cached input tokens: {tot.get('cached_tokens', 0)}  compacted: {tot.get('compactions', 0)} times"
        )
