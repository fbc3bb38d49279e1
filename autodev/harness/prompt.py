"""The bounded turn prompt: its size does not depend on how long the thread is.

A participant sees an index of the posts new to it (the newest 8, one line each, cut at 90
characters), a count plus the `read_thread` call for older new posts, the user's newest messages
in full (up to 4000 characters each, with a visible cut), and short notes from the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.config import prompts

if TYPE_CHECKING:
    from autodev.records.post import Post

INDEX_LINES = 8
LINE_CHARS = 90
USER_CHARS = 4000
USER_MESSAGES = 3
OBJECTIVE_CHARS = 4000


def cut(text: str, limit: int, hint: str = "") -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[cut at {limit} characters{hint}]"


def index_line(post: Post) -> str:
    arrow = f"→{post.handoff}" if post.handoff else ""
    credit = ""
    if post.kind == "work_done":
        credit = " (credited)" if post.credited else " (not credited)"
    first = " ".join(post.text.split())
    line = f"#{post.seq} {post.from_} {post.kind}{arrow}{credit}: {first}"
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def render_index(new_posts: Sequence[Post], new_count: int, cursor: int) -> str:
    if new_count <= 0:
        return "(nothing new)"
    shown = list(new_posts)[-INDEX_LINES:]
    lines: list[str] = []
    older = new_count - len(shown)
    if older > 0:
        first_shown = shown[0].seq if shown else cursor + new_count + 1
        lines.append(
            f"({older} earlier new posts: read_thread(from_seq={cursor + 1}, to_seq={first_shown - 1}))"
        )
    lines.extend(index_line(p) for p in shown)
    return "\n".join(lines)


def render_user_messages(new_posts: Sequence[Post]) -> str:
    msgs = [p for p in new_posts if p.from_ == "user"][-USER_MESSAGES:]
    if not msgs:
        return ""
    parts = ["Messages from the user since your last turn (newest last):"]
    for p in msgs:
        parts.append(
            f"--- #{p.seq} ---\n" + cut(p.text, USER_CHARS, f"; read_thread(from_seq={p.seq}) for all of it")
        )
    return "\n".join(parts) + "\n\n"


def build_turn_prompt(
    *,
    name: str,
    turn: int,
    last_seq: int,
    cursor: int,
    objective: str,
    tail: Sequence[Post],
    notes: Sequence[str] = (),
    overrides: Path | None = None,
) -> str:
    """`tail` is the thread's newest records; posts with seq > cursor are new to `name`."""
    new_posts = [p for p in tail if p.seq > cursor]
    new_count = max(0, last_seq - cursor)
    return prompts.render(
        "turn.md",
        {
            "name": name,
            "turn": turn,
            "last_seq": last_seq,
            "objective": cut(objective or "(none given yet)", OBJECTIVE_CHARS),
            "user_messages": render_user_messages(new_posts),
            "index": render_index(new_posts, new_count, cursor),
            "notes": "".join(f"\nNote: {n}" for n in notes),
        },
        overrides,
    )
