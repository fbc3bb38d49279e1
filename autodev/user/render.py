"""Plain terminal rendering of posts and status (rich), shared by `thread`, `status`, `start
--foreground` and `demo`."""

from __future__ import annotations

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


def credit_label(post: dict) -> str:
    if post.get("kind") != "work_done":
        return ""
    c = post.get("credit")
    if not c:
        return "  [not credited]"
    if c.get("commits"):
        return "  [credited: " + ", ".join(line(s)[:7] for s in c["commits"][:3]) + "]"
    return "  [credited: " + ", ".join(line(f) for f in c.get("files", [])[:3]) + "]"


def evidence_label(post: dict) -> str:
    """The test evidence's one-line summary on the audit's verdict of a done (SPEC §22)."""
    ev = post.get("evidence")
    return line(str(ev.get("summary", ""))) if isinstance(ev, dict) else ""


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
