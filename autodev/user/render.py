"""Plain terminal rendering of posts and status (rich), shared by `thread`, `status`, `start
--foreground` and `demo`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from rich.console import Console
from rich.text import Text

from autodev.guard.display import line, shown

STYLE = {
    "say": ("💬", "cyan"),
    "work_done": ("🔨", "green"),
    "handoff": ("➡", "blue"),
    "wait": ("⏳", "yellow"),
    "gate": ("🚧", "magenta"),
    "done": ("✅", "bold green"),
}
AUTHOR_STYLE = {"user": "bold yellow", "system": "dim", "audit": "bold red"}


Line = Mapping[str, object]
"""A thread line as read (the readers show posts without loading the records)."""


def _table(v: object) -> Line:
    return cast("Line", v) if isinstance(v, Mapping) else {}  # JSON: an object's keys are strings


def _items(v: object) -> list[object]:
    return cast("list[object]", v) if isinstance(v, list) else []


def credit_label(post: Line) -> str:
    if post.get("kind") != "work_done":
        return ""
    c = post.get("credit")
    if not c:
        return "  [not credited]"
    credit = _table(c)
    if commits := _items(credit.get("commits")):
        return "  [credited: " + ", ".join(line(s)[:7] for s in commits[:3]) + "]"
    return "  [credited: " + ", ".join(line(f) for f in _items(credit.get("files"))[:3]) + "]"


def evidence_label(post: Line) -> str:
    """The test evidence's one-line summary on the audit's verdict of a done (SPEC §22)."""
    ev = _table(post.get("evidence"))
    return line(str(ev.get("summary", ""))) if ev else ""


def post_text(post: Line, width: int | None = None, superseded: bool = False) -> Text:
    """One post; a post a rewind superseded is struck through and says so."""
    if superseded:
        t = post_text(post, width)
        t.stylize("strike dim")
        t.append("  [superseded by a rewind]", style="dim")
        return t
    icon, style = STYLE.get(str(post.get("kind", "")), ("•", "white"))
    if post.get("from") == "audit":
        icon = "🔎"
    t = Text()
    t.append(f"#{post['seq']:<4} ", style="dim")
    t.append(f"{icon} ")
    t.append(line(post["from"]), style=AUTHOR_STYLE.get(str(post["from"]), "bold"))
    t.append(f" {line(post['kind'])}", style=style)
    if post.get("handoff"):
        t.append(f" → {line(post['handoff'])}", style="blue")
    t.append(credit_label(post), style="green" if post.get("credit") else "red")
    summary = evidence_label(post)
    if summary:
        t.append(f"  [tests: {summary}]", style="red" if summary.startswith("✘") else "green")
    body = str(post.get("text", ""))
    if width and len(body) > width:
        body = body[:width] + "…"
    # every line of the body is indented under the header, so none can pass for a header
    t.append("\n      " + shown(body).replace("\n", "\n      "))
    return t


def console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=True)
