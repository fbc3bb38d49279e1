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
from dataclasses import dataclass
from pathlib import Path

HEX = re.compile(r"\b[0-9a-f]{7,40}\b")  # a commit id, full or abbreviated, if the records name it
TIME = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
# An agent turn's thread-tool call id names the CLI's pid (autodev/agents/stream.py): masked.
AGENT_CALL = re.compile(r"^(claude|codex|copilot|gemini)-\d+-(\d+)$")
TIMED_TOOLS = ("read_thread",)  # results that show autodev's post times


@dataclass
class Recording:
    posts: list[dict]
    events: list[dict]
    harness: list[dict]
    config_dir: Path  # team.toml, config.toml, prompts/, a scripted team's script
    base: str
    source: Path  # a git repository, or a git bundle file, holding the base and the run's commits
    untrusted: bool = False  # a bundle: no hooks, MCP servers or agent CLI args; commands sandboxed
    repo_path: str = ""  # where the recorded repository was (masked in comparisons)
    run_dir: Path | None = None  # the run folder: agents/ (CLI runs' raw streams), team-history/
    forked_at: int | None = None  # a fork: the post it was made at (its replay starts there)


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


def _named(r: Recording) -> dict[tuple, tuple[str, int | None]]:
    """Every commit the records name, by its place: (what, where) -> (sha, turn), in order."""
    out: dict[tuple, tuple[str, int | None]] = {}
    for h in r.harness:
        if h.get("type") == "turn_started" and isinstance(t := h.get("turn"), int) and h.get("head"):
            out.setdefault(("the HEAD turn", t, "started on"), (str(h["head"]), t))
    for p in r.posts:
        turn = p.get("turn") if isinstance(p.get("turn"), int) else None
        credit, rw = p.get("credit"), p.get("rewind")
        commits = (credit.get("commits") if isinstance(credit, dict) else None) or []
        for i, c in enumerate(reversed(commits)):  # oldest first
            out[("credited commit", i + 1, f"of post {p['seq']}")] = (str(c), turn)
        for head in (p.get("head"), rw.get("head") if isinstance(rw, dict) else None):
            if isinstance(head, str) and head:
                out[("the HEAD of post", p["seq"], "")] = (head, turn)
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

        def one(m: re.Match) -> str:
            tok = m.group(0)
            hits = {label for sha, label in known.items() if sha.startswith(tok)}
            return hits.pop() if len(hits) == 1 else tok

        return HEX.sub(one, s)


# -- comparing -----------------------------------------------------------------------------------


def _credit(post: dict) -> str:
    c = post.get("credit")
    if post.get("kind") != "work_done":
        return "-"
    if not c:
        return "not credited"
    return f"{len(c.get('commits') or [])} commit(s), files {sorted(c.get('files') or [])}"


def _turns(r: Recording) -> dict[int, dict]:
    out: dict[int, dict] = {}
    for e in r.events:
        if e.get("type") == "scheduled" and isinstance(e.get("turn"), int):
            out.setdefault(e["turn"], {})["scheduled"] = f"{e.get('participant')} ({e.get('rule')})"
    names: dict[tuple[int, str], str] = {}
    for h in r.harness:
        t = h.get("turn")
        if not isinstance(t, int):
            continue
        slot = out.setdefault(t, {})
        if h.get("type") == "turn_started" and "prompt" not in slot:
            slot["prompt"] = "\n".join(str(m.get("content")) for m in h.get("messages") or [])
        elif h.get("type") == "tool_started":
            names[(t, str(h.get("call_id")))] = str(h.get("name"))
        elif h.get("type") == "tool_finished":
            call = str(h["call_id"])
            timed = names.get((t, call)) in TIMED_TOOLS
            slot.setdefault("tools", []).append((AGENT_CALL.sub(r"\1-\2", call), h["result"], timed))
        elif h.get("type") == "agent_started":
            slot.setdefault("agents", []).append(str(h.get("agent")))
    for p in r.posts:
        if isinstance(p.get("turn"), int):
            out.setdefault(p["turn"], {})["post"] = p
    return out


def _post_line(p: dict | None, norm, tests: bool = False) -> str:
    if p is None:
        return "(no post)"
    handoff = f" -> {p['handoff']}" if p.get("handoff") else ""
    # The evidence of a done is re-checked like a tool's result: its tests ran again on the clone.
    ev = p.get("evidence")
    shown = f" [tests: {ev.get('summary')}]" if tests and isinstance(ev, dict) else ""
    return f"#{p['seq']} {p['from']} {p['kind']}{handoff}: {norm(p.get('text', ''))[:300]}{shown}"


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
        x, y = a.get(turn, {}), b.get(turn, {})
        if x.get("scheduled") != y.get("scheduled"):
            return Divergence(turn, "scheduler decision", str(x.get("scheduled")), str(y.get("scheduled")))
        px, py = nx(x.get("prompt", "")), ny(y.get("prompt", ""))
        if px != py:
            return Divergence(turn, "turn prompt", *_first_difference(px, py))
        if x.get("agents", []) != y.get("agents", []):
            runs = (", ".join(z.get("agents", [])) or "(none)" for z in (x, y))
            return Divergence(turn, "agent CLI runs", *runs)
        if tools:
            tx, ty = x.get("tools", []), y.get("tools", [])
            for i in range(max(len(tx), len(ty))):
                ex = f"{tx[i][0]}: {nx(tx[i][1], tx[i][2])}" if i < len(tx) else "(no call)"
                gy = f"{ty[i][0]}: {ny(ty[i][1], ty[i][2])}" if i < len(ty) else "(no call)"
                if ex != gy:
                    return Divergence(turn, f"tool result {i + 1}", ex[:600], gy[:600])
        lx, ly = _post_line(x.get("post"), nx), _post_line(y.get("post"), ny)
        if lx != ly:
            return Divergence(turn, "post", lx, ly)
        if x.get("post") and _credit(x["post"]) != _credit(y["post"]):
            return Divergence(turn, "credit", _credit(x["post"]), _credit(y["post"]))
        if ids.conflict is not None and ids.conflict.turn == turn:
            return ids.conflict
    others = [p for p in want.posts if not isinstance(p.get("turn"), int)]
    mine = [p for p in got.posts if not isinstance(p.get("turn"), int)]
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


def _first_difference(a: str, b: str) -> tuple[str, str]:
    """The first differing line of two texts, with its number."""
    la, lb = a.splitlines(), b.splitlines()
    for i in range(max(len(la), len(lb))):
        if (la[i] if i < len(la) else None) != (lb[i] if i < len(lb) else None):
            x = " / ".join(la[i : i + 3]) or "(end)"
            y = " / ".join(lb[i : i + 3]) or "(end)"
            return f"line {i + 1}: {x[:300]}", f"line {i + 1}: {y[:300]}"
    return a[:300], b[:300]
