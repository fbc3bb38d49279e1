"""A recorded run and its replay compared turn by turn (`autodev replay`): who was scheduled and
by which rule, the turn prompt, each tool result, the post and its credit; then the remaining
posts (user, system, audit).

The texts are compared as they are, but for what autodev itself makes different in a replay:

- the repository's path (the replay's clone lives elsewhere): `<repo>`;
- the commits the run made. Each commit the records name (a turn's starting HEAD, a credit's
  commits, the HEAD a post or a rewind recorded) is paired with the replay's commit in the same
  place; the pair reads `<commit N>` on both sides wherever it appears, abbreviated or not. A
  recorded commit paired with two different replayed ones (or two with one) is a divergence;
- the times `read_thread` shows: the posts' times, which autodev writes (in its results only).

Everything else is compared as it is: a hex string or a number that is not one of those commits
(a hash in a test's output, a UUID, a clock's nanoseconds) must be the same, or the replay
diverged there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import assert_never

from autodev.records import (
    AgentFinished,
    AgentStarted,
    Compacted,
    GenerationFailed,
    GenerationFinished,
    GenerationStarted,
    Nudged,
    Post,
    PostCommitted,
    PostStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from autodev.records.events import ScheduledEvent
from autodev.replay.recording import Recording, extra

HEX = re.compile(r"\b[0-9a-f]{7,40}\b")  # a commit id, full or abbreviated, if the records name it
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
# An agent turn's thread-tool call id names the CLI's pid (autodev/agents/stream.py): masked.
AGENT_CALL = re.compile(r"^(claude|codex|copilot|gemini)-\d+-(\d+)$")
TIMED_TOOLS = ("read_thread",)  # results that show autodev's post times

__all__ = ["Divergence", "Recording", "compare"]

Place = tuple[str, int, str]  # where the records name a commit: (what, number, of what)
Norm = Callable[[object, bool], str]  # text, and whether it shows post times -> masked


@dataclass
class Divergence:
    turn: int | None
    step: str
    expected: str
    got: str

    def __str__(self) -> str:
        from autodev.guard.display import line

        # what a recording (a bundle from anyone) and its replay hold, shown as it is: a
        # terminal control sequence in a post or a tool's output is escaped, one line each
        where = f"turn {self.turn}, " if self.turn is not None else ""
        return f"diverged at {where}{line(self.step)}\n  expected: {line(self.expected)}\n  got:      {line(self.got)}"


# -- commits, by their mapping -------------------------------------------------------------------


def _named(r: Recording) -> dict[Place, tuple[str, int | None]]:
    """Every commit the records name, by its place: (what, where) -> (sha, turn), in order."""
    out: dict[Place, tuple[str, int | None]] = {}
    for h in r.harness:
        if isinstance(h, TurnStarted) and h.head:
            out.setdefault(("the HEAD turn", h.turn, "started on"), (h.head, h.turn))
    for p in r.posts:
        turn = p.turn if isinstance(p.turn, int) else None
        commits = p.credit.commits if p.credit is not None else []
        for i, c in enumerate(reversed(commits)):  # oldest first
            out[("credited commit", i + 1, f"of post {p.seq}")] = (str(c), turn)
        for head in (p.head, p.rewind.head if p.rewind is not None else None):
            if isinstance(head, str) and head:
                out[("the HEAD of post", p.seq, "")] = (head, turn)
    return out


class Commits:
    """The recorded commits paired with the replayed ones, place by place, each pair labelled
    `<commit N>` in the order the recording names them."""

    def __init__(self, want: Recording, got: Recording):
        self.sides: tuple[dict[str, str], dict[str, str]] = ({}, {})
        self.conflict: Divergence | None = None
        a, b = _named(want), _named(got)
        first: tuple[dict[str, str], dict[str, str]] = ({}, {})  # sha -> where it was first paired
        for place, (x, turn) in a.items():
            if place not in b:
                continue
            y = b[place][0]
            where = " ".join(str(w) for w in place if w != "")
            lx, ly = self.sides[0].get(x), self.sides[1].get(y)
            if lx is None and ly is None:
                label = f"<commit {len(self.sides[0]) + 1}>"
                self.sides[0][x], self.sides[1][y] = label, label
                first[0][x], first[1][y] = where, where
            elif lx != ly and self.conflict is None:  # one of them is already paired elsewhere

                def seen(side: int, sha: str) -> str:
                    at = first[side].get(sha)
                    return f"{sha[:12]}, " + (f"the commit of {at}" if at else "a commit not named before")

                self.conflict = Divergence(turn, f"commit id ({where})", seen(0, x), seen(1, y))

    def norm(self, text: object, side: int, paths: list[str], times: bool = False) -> str:
        """`text` with the repository's path and the paired commits masked (and, for a result
        that shows post times, those)."""
        s = str(text)
        for m in paths:
            if m:
                s = s.replace(m, "<repo>")
        if times:
            s = TIME.sub("<time>", s)
        known = self.sides[side]

        def one(m: re.Match[str]) -> str:
            tok = m.group(0)
            hits = {label for sha, label in known.items() if sha.startswith(tok)}
            return hits.pop() if len(hits) == 1 else tok

        return HEX.sub(one, s)


# -- comparing -----------------------------------------------------------------------------------


def _credit(post: Post) -> str:
    c = post.credit
    if post.kind != "work_done":
        return "-"
    if c is None or not c.dump():
        return "not credited"
    return f"{len(c.commits)} commit(s), files {sorted(c.files)}"


@dataclass
class _Turn:
    """What a turn did, as the comparison reads it."""

    scheduled: str | None = None  # who, and by which rule
    prompt: str | None = None
    tools: list[tuple[str, str, bool]] = field(default_factory=lambda: [])  # (call, result, timed)
    agents: list[str] = field(default_factory=lambda: [])
    post: Post | None = None


def _turns(r: Recording) -> dict[int, _Turn]:
    out: dict[int, _Turn] = {}
    for e in r.events:
        if isinstance(e, ScheduledEvent) and e.turn is not None:
            out.setdefault(e.turn, _Turn()).scheduled = f"{e.participant} ({e.rule})"
    names: dict[tuple[int, str], str] = {}
    for h in r.harness:
        slot = out.setdefault(h.turn, _Turn())
        match h:
            case TurnStarted():
                if slot.prompt is None:
                    slot.prompt = "\n".join(str(m.get("content")) for m in h.messages)
            case ToolStarted():
                names[(h.turn, h.call_id)] = h.name
            case ToolFinished():
                timed = names.get((h.turn, h.call_id)) in TIMED_TOOLS
                slot.tools.append((AGENT_CALL.sub(r"\1-\2", h.call_id), h.result, timed))
            case AgentStarted():
                slot.agents.append(h.agent)
            case (
                GenerationStarted()
                | GenerationFinished()
                | GenerationFailed()
                | PostStarted()
                | PostCommitted()
                | TurnFinished()
                | Compacted()
                | Nudged()
                | AgentFinished()
            ):
                pass  # not compared: the model's answers are the recording's own
            case _:
                assert_never(h)
    for p in r.posts:
        if isinstance(p.turn, int):
            out.setdefault(p.turn, _Turn()).post = p
    return out


def _post_line(p: Post | None, norm: Norm, tests: bool = False) -> str:
    if p is None:
        return "(no post)"
    handoff = f" -> {p.handoff}" if p.handoff else ""
    # The evidence of a done is re-checked like a tool's result: its tests ran again on the clone.
    ev = extra(p, "evidence")
    shown = f" [tests: {ev.get('summary')}]" if tests and ev is not None else ""
    return f"#{p.seq} {p.from_} {p.kind}{handoff}: {norm(p.text, False)[:300]}{shown}"


def compare(
    want: Recording, got: Recording, *, paths: list[str], tools: bool = True, missing: list[str] | None = None
) -> Divergence | None:
    """The first difference between the recorded run `want` and its replay `got`."""
    ids = Commits(want, got)

    def nx(text: object, times: bool = False) -> str:
        return ids.norm(text, 0, paths, times)

    def ny(text: object, times: bool = False) -> str:
        return ids.norm(text, 1, paths, times)

    a, b = _turns(want), _turns(got)
    for turn in sorted(set(a) | set(b)):
        d = _turn_differs(turn, a.get(turn, _Turn()), b.get(turn, _Turn()), nx, ny, tools)
        if d is not None:
            return d
        if ids.conflict is not None and ids.conflict.turn == turn:
            return ids.conflict
    others = [p for p in want.posts if not isinstance(p.turn, int)]
    mine = [p for p in got.posts if not isinstance(p.turn, int)]
    for i in range(max(len(others), len(mine))):
        lx = _post_line(others[i] if i < len(others) else None, nx, tools)
        ly = _post_line(mine[i] if i < len(mine) else None, ny, tools)
        if lx != ly:
            return Divergence(None, "post (user, system or audit)", lx, ly)
    if ids.conflict is not None:
        return ids.conflict
    if missing:
        return Divergence(None, "the recording", "an answer for every request", f"none for {missing[0]}")
    return None


def _turn_differs(turn: int, x: _Turn, y: _Turn, nx: Norm, ny: Norm, tools: bool) -> Divergence | None:
    """The first difference between a recorded turn `x` and its replay `y`."""
    if x.scheduled != y.scheduled:
        return Divergence(turn, "scheduler decision", str(x.scheduled), str(y.scheduled))
    px, py = nx(x.prompt or "", False), ny(y.prompt or "", False)
    if px != py:
        return Divergence(turn, "turn prompt", *_first_difference(px, py))
    if x.agents != y.agents:
        return Divergence(
            turn, "agent CLI runs", ", ".join(x.agents) or "(none)", ", ".join(y.agents) or "(none)"
        )
    if tools:
        tx, ty = x.tools, y.tools
        for i in range(max(len(tx), len(ty))):
            ex = f"{tx[i][0]}: {nx(tx[i][1], tx[i][2])}" if i < len(tx) else "(no call)"
            gy = f"{ty[i][0]}: {ny(ty[i][1], ty[i][2])}" if i < len(ty) else "(no call)"
            if ex != gy:
                return Divergence(turn, f"tool result {i + 1}", ex[:600], gy[:600])
    lx, ly = _post_line(x.post, nx), _post_line(y.post, ny)
    if lx != ly:
        return Divergence(turn, "post", lx, ly)
    if x.post is not None and y.post is not None and _credit(x.post) != _credit(y.post):
        return Divergence(turn, "credit", _credit(x.post), _credit(y.post))
    return None


def _first_difference(a: str, b: str) -> tuple[str, str]:
    """The first differing line of two texts, with its number."""
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        if (la[i] if i < len(la) else None) != (lb[i] if i < len(lb) else None):
            x = " / ".join(la[i : i + 3]) or "(end)"
            y = " / ".join(lb[i : i + 3]) or "(end)"
            return f"line {i + 1}: {x[:300]}", f"line {i + 1}: {y[:300]}"
    return a[:300], b[:300]
