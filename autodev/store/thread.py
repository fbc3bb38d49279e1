"""The shared thread: posts on top of the journal, plus the derived index the scheduler needs.

Seq numbers start at 1 and grow by exactly 1, so a post's seq is also its line number. The index
(each participant's newest seq) lives in a small side file that is only a cache: it is rebuilt
from thread.jsonl whenever it is missing or behind.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from autodev.errors import CorruptLogError
from autodev.rules.live import Live, rewind_of
from autodev.store.journal import (
    Journal,
    JsonObject,
    is_object,
    iter_records,
    iter_records_reverse,
    read_tail,
)

if TYPE_CHECKING:
    from autodev.records.post import Post

TAIL = 100  # records the scheduler and the prompt builder look at


def now_ts() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def seq_of(rec: JsonObject) -> int:
    """A thread line's seq. Every line the thread appends fits `Post` (an int from 1): a line
    that does not was edited by hand."""
    seq = rec["seq"]
    if not isinstance(seq, int):
        raise CorruptLogError(
            f"a line of the thread has the seq {seq!r}, not a number",
            "the thread was edited by hand; restore it or move the run folder aside",
        )
    return seq


def head_of(rec: JsonObject) -> str | None:
    """The repository's HEAD a thread line recorded (a participant's post, or a rewind note)."""
    head = rec.get("head")
    if not head and is_object(rw := rec.get("rewind")):
        head = rw.get("head")
    return head if isinstance(head, str) and head else None


class Thread:
    def __init__(self, path: Path, redact: Callable[[JsonObject], JsonObject] | None = None):
        self.path = Path(path)
        from autodev.records import check_post  # pydantic: only the daemon opens a Thread

        self.journal = Journal(self.path, redact=redact, schema=check_post)
        self._index_path = self.path.with_name("thread-index.json")
        last = self.journal.last()
        self.last_seq: int = seq_of(last) if last else 0
        self._check_tail_contiguous()
        self.rewinds: list[tuple[int, int]] = []
        self.last_spoke: dict[str, int] = self._load_index()
        # The last tail read, by (file size, rewinds, n): a turn reads the same tail three or four
        # times (scheduler, prompt, effects, who is next), and posts cost a model each (issue 33).
        self._tail: tuple[tuple[int, int, int], list[Post]] | None = None

    @property
    def live(self) -> Live:
        """Which posts the run continues from (`rules.live`): all of them until a rewind."""
        return Live.of(self.rewinds, self.last_seq)

    def _check_tail_contiguous(self) -> None:
        tail = self.journal.tail(TAIL)
        for a, b in zip(tail, tail[1:]):
            if seq_of(b) != seq_of(a) + 1:
                line = self._line_of(a, b)
                raise CorruptLogError(
                    f"{self.path}: line {line}: seq jumps from {a.get('seq')} to {b.get('seq')}",
                    "the thread was edited by hand; restore it or move the run folder aside",
                )

    def _line_of(self, prev: JsonObject, rec: JsonObject) -> int:
        """Line number of `rec` right after `prev` (error path only: reads from the start)."""
        before = None
        for n, r in enumerate(iter_records(self.path), 1):
            if r == rec and before == prev:
                return n
            before = r
        return -1

    # -- the derived index -------------------------------------------------------------------

    def _load_index(self) -> dict[str, int]:
        try:
            idx = json.loads(self._index_path.read_text())
            upto = int(idx["seq"])
            spoke = {str(name): int(seq) for name, seq in idx["last_spoke"].items()}
            rewinds = [(int(a), int(b)) for a, b in idx.get("rewinds", [])]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return self._rebuild_index()
        if upto > self.last_seq:
            return self._rebuild_index()
        for rec in iter_records_reverse(self.path):
            if seq_of(rec) <= upto:
                break
            if rewind_of(rec):
                return self._rebuild_index()  # a rewind changes who spoke last: walk it again
            p = _post(rec)
            if p.from_ != "system":
                spoke[p.from_] = max(spoke.get(p.from_, 0), p.seq)
        self.rewinds = rewinds
        return spoke

    def _rebuild_index(self) -> dict[str, int]:
        authors: list[tuple[int, str]] = []
        self.rewinds = []
        for rec in iter_records(self.path):
            rw = rewind_of(rec)
            if rw:
                self.rewinds.append(rw)
            elif (p := _post(rec)).from_ != "system":
                authors.append((p.seq, p.from_))
        live = self.live
        spoke: dict[str, int] = {}
        for seq, frm in authors:
            if live.trivial or live.is_live(seq):
                spoke[frm] = seq
        self._save_index(spoke)
        return spoke

    def _save_index(self, spoke: dict[str, int]) -> None:
        # A cache, so no fsync: a lost or stale copy is caught up from the thread on open.
        tmp = self._index_path.with_suffix(".tmp")
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(json.dumps({"seq": self.last_seq, "last_spoke": spoke, "rewinds": self.rewinds}))
        os.replace(tmp, self._index_path)

    # -- appending ---------------------------------------------------------------------------

    def append(self, draft: Post) -> Post:
        """Append a drafted post (`Post.draft`) durably, numbered and timed, and return it (the
        earlier one if its `id` was already used).

        The line is the post's `dump`: its fields in the model's order (`handoff`, and a
        work_done's `credit`, even when null), then any extra note."""
        if draft.id is not None:
            seen = self.seen(draft.id)
            if seen is not None:
                return seen
        post = draft.stamped(self.last_seq + 1, now_ts())
        line = post.dump()
        before = self.journal.size()
        rec = self.journal.append(line)
        if rec != line:  # redacted, or made valid UTF-8: the post is what the line holds
            post = _post(rec)
        self.last_seq = post.seq
        if rewind_of(rec):
            self.last_spoke = self._rebuild_index()
        else:
            if post.from_ != "system":
                self.last_spoke[post.from_] = post.seq
            self._save_index(self.last_spoke)
            self._extend_tail(before, post)
        return post

    def _extend_tail(self, before: int, post: Post) -> None:
        """The kept tail, when it was the file's up to this post, with the post added: the next
        `tail` reads nothing (it re-read and re-validated TAIL posts after every post)."""
        if self._tail is None:
            return
        (size, rewinds, n), posts = self._tail
        if size == before and rewinds == len(self.rewinds) and not self.rewinds:
            self._tail = ((self.journal.size(), rewinds, n), [*posts, post][-n:])

    def seen(self, id: str) -> Post | None:
        """The post appended under the provisioned `id`, if it is in the recent window."""
        rec = self.journal.seen(id)
        return _post(rec) if rec is not None else None

    # -- reading -----------------------------------------------------------------------------

    def tail(self, n: int = TAIL) -> list[Post]:
        """The newest `n` live posts (superseded ones left out), oldest first."""
        key = (self.journal.size(), len(self.rewinds), n)
        if self._tail is not None and self._tail[0] == key:
            return list(self._tail[1])
        recs = self.journal.tail(n) if not self.rewinds else live_tail(self.path, self.live, n)
        posts = [_post(r) for r in recs]
        self._tail = (key, posts)
        return list(posts)

    def read(self, from_seq: int, to_seq: int | None = None, limit: int = 50) -> list[Post]:
        """Live posts with from_seq <= seq <= to_seq, at most `limit` read, oldest first."""
        posts = [_post(r) for r in self._read(from_seq, to_seq, limit)]
        if self.rewinds:
            live = self.live
            posts = [p for p in posts if live.is_live(p.seq)]
        return posts

    def _read(self, from_seq: int, to_seq: int | None, limit: int) -> list[JsonObject]:
        to_seq = min(to_seq or self.last_seq, self.last_seq, from_seq + limit - 1)
        if from_seq > to_seq:
            return []
        out: list[JsonObject] = []
        if self.last_seq - from_seq < from_seq:  # nearer the end: walk backwards
            for rec in iter_records_reverse(self.path):
                if seq_of(rec) < from_seq:
                    break
                if seq_of(rec) <= to_seq:
                    out.append(rec)
            out.reverse()
            return out
        for rec in iter_records(self.path):
            if seq_of(rec) > to_seq:
                break
            if seq_of(rec) >= from_seq:
                out.append(rec)
        return out

    def close(self) -> None:
        self.journal.close()


def _post(rec: JsonObject) -> Post:
    """A thread line as the `Post` it is (the journal checked it against the model on write)."""
    from autodev.records.post import Post  # pydantic: only the daemon opens a Thread

    return Post.model_validate(rec)


def live_tail(path: Path, live: Live, n: int) -> list[JsonObject]:
    """The newest `n` live records of the thread at `path`, oldest first."""
    out: list[JsonObject] = []
    for rec in iter_records_reverse(path):
        seq = seq_of(rec)
        if seq > live.last_seq:
            continue
        if live.is_live(seq):
            out.append(rec)
            if len(out) >= n:
                break
        elif not live.spans or seq < live.spans[0][0]:
            break  # nothing older is live
    out.reverse()
    return out


def read_live(path: Path) -> Live:
    """For readers: which posts are live, from the index cache when it is current, else from
    the thread itself (its rewind notes). Writes nothing."""
    last = read_tail(path, 1)
    last_seq = seq_of(last[0]) if last else 0
    try:
        idx = json.loads(path.with_name("thread-index.json").read_text())
        upto = int(idx["seq"])
        rewinds = [(int(a), int(b)) for a, b in idx.get("rewinds", [])]
    except (OSError, ValueError, KeyError, TypeError):
        upto, rewinds = -1, []
    if 0 <= upto <= last_seq:  # the cache, caught up with the posts written since (a few, at most)
        newer: list[tuple[int, int]] = []
        for rec in iter_records_reverse(path):
            if seq_of(rec) <= upto:
                break
            if rw := rewind_of(rec):
                newer.append(rw)
        return Live.of(rewinds + newer[::-1], last_seq)
    return Live.of([rw for rec in iter_records(path) if (rw := rewind_of(rec))], last_seq)


def read_thread_tail(path: Path, n: int = TAIL) -> list[JsonObject]:
    """For readers (status, thread, panel): the tail without opening the journal for writing."""
    return read_tail(path, n)
