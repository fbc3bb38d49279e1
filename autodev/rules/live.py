"""Which posts are live after rewinds (pure): the thread the run continues from.

A rewind is a `system` note on the thread carrying `rewind = {"n", "to_seq", ...}`. Read as a
chain, every post follows the one before it, except a rewind note, which follows its `to_seq`:
the live posts are those reached walking back from the newest post. An undo is one more rewind
note whose `to_seq` is the post just before the rewind it undoes, so the walk passes through the
chain as it stood then. Everything else is superseded: still on the thread, shown struck
through, never in a prompt, the scheduler's tail or the last-spoke index.

The walk needs only the rewind notes (`(seq, to_seq)` pairs, few), never the posts themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeGuard

if TYPE_CHECKING:
    from autodev.records.post import Post


def rewind_of(post: Mapping[str, object]) -> tuple[int, int] | None:
    """(seq, to_seq) when `post` (a thread line) is a rewind note, else None."""
    rw = post.get("rewind")
    if post.get("from") != "system" or not _is_table(rw):
        return None
    to = _int(rw, "to_seq")
    seq = post["seq"]
    return (seq, to) if isinstance(seq, int) and to is not None else None


def rewind_note(post: Post) -> tuple[int, int] | None:
    """`rewind_of` for a post read as its model."""
    if post.from_ != "system" or post.rewind is None:
        return None
    return (post.seq, post.rewind.to_seq)


def _is_table(value: object) -> TypeGuard[Mapping[str, object]]:
    """A table on a thread line: parsed from JSON, whose keys are strings (store.jsonline's
    `is_object`, which this pure layer cannot import)."""
    return isinstance(value, Mapping)


def _int(table: Mapping[str, object], key: str) -> int | None:
    v = table.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class Live(NamedTuple):  # not a dataclass: see store/paths.RunPaths
    """The live stretches of a thread: inclusive (first, last) seq ranges, oldest first."""

    spans: tuple[tuple[int, int], ...]
    last_seq: int

    @classmethod
    def of(cls, rewinds: Iterable[tuple[int, int]], last_seq: int) -> Live:
        spans: list[tuple[int, int]] = []
        cur = last_seq
        for seq, to in sorted(rewinds, reverse=True):
            if seq > cur:
                continue  # a rewind that was itself superseded
            spans.append((seq, cur))
            cur = min(to, seq - 1)
        if cur >= 1:
            spans.append((1, cur))
        spans.reverse()
        return cls(tuple(_merge(spans)), last_seq)

    def is_live(self, seq: int) -> bool:
        # A post newer than the thread this was read from is live: only a later rewind (which a
        # reader sees as a new record, and reads again) could supersede it.
        return seq > self.last_seq or any(a <= seq <= b for a, b in self.spans)

    def superseded(self) -> list[tuple[int, int]]:
        """The superseded ranges (inclusive), oldest first."""
        out: list[tuple[int, int]] = []
        nxt = 1
        for a, b in self.spans:
            if a > nxt:
                out.append((nxt, a - 1))
            nxt = b + 1
        if nxt <= self.last_seq:
            out.append((nxt, self.last_seq))
        return out

    def newest_live_at_or_before(self, seq: int) -> int:
        """The newest live seq <= `seq` (0 when none)."""
        best = 0
        for a, b in self.spans:
            if a <= seq:
                best = min(b, seq)
        return best

    @property
    def trivial(self) -> bool:
        return self.spans in ((), ((1, self.last_seq),))


def _merge(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
