"""The thread: contiguous seq, idempotent appends, the rebuildable last-spoke index, ranged reads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autodev.errors import CorruptLogError
from autodev.records.post import Post
from autodev.store.thread import Thread, read_thread_tail

NAMES = ("ann", "bob", "cy", "user")


def fill(t: Thread, n: int, pad: int = 0) -> None:
    for i in range(n):
        t.append(Post.draft(NAMES[i % len(NAMES)], "say", f"post {t.last_seq + 1} " + "p" * pad))


def on_disk(p: Path) -> list[dict]:
    return [json.loads(line) for line in p.read_text().splitlines()]


def expected_last_spoke(posts: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in posts:
        if p["from"] != "system":
            out[p["from"]] = p["seq"]
    return out


def participants(spoke: dict[str, int]) -> dict[str, int]:
    # The index's "system" entry is irrelevant to scheduling (system notes are ignored).
    return {k: v for k, v in spoke.items() if k != "system"}


def test_seq_starts_at_one_and_is_contiguous(tmp_path):
    p = tmp_path / "thread.jsonl"
    t = Thread(p)
    assert t.last_seq == 0
    first = t.append(Post.draft("ann", "say", "hello", "bob"))
    assert first.seq == 1
    assert first.from_ == "ann" and first.kind == "say" and first.handoff == "bob"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first.ts)
    fill(t, 20)
    t.close()
    assert [r["seq"] for r in on_disk(p)] == list(range(1, 22))
    t2 = Thread(p)
    assert t2.last_seq == 21
    assert t2.append(Post.draft("bob", "say", "again")).seq == 22
    t2.close()


def test_extra_fields_kept_and_credit_none_written(tmp_path):
    t = Thread(tmp_path / "thread.jsonl")
    post = t.append(Post.draft("ann", "work_done", "did it", credit=None, turn="t-1", notice=None))
    rec = post.dump()
    assert rec["credit"] is None and "credit" in rec
    assert rec["turn"] == "t-1"
    assert "notice" not in rec  # other None extras are left out
    assert on_disk(t.path)[0] == rec
    t.close()


def test_append_with_same_id_twice_gives_one_post(tmp_path):
    p = tmp_path / "thread.jsonl"
    t = Thread(p)
    a = t.append(Post.draft("ann", "say", "once", id="post-1"))
    b = t.append(Post.draft("ann", "say", "twice?", id="post-1"))
    assert a == b
    assert t.last_seq == 1
    t.close()
    t2 = Thread(p)  # and after a restart
    c = t2.append(Post.draft("ann", "say", "thrice?", id="post-1"))
    assert c.text == "once" and c.seq == 1
    seen = t2.seen("post-1")
    assert seen is not None and seen.seq == 1
    assert t2.last_seq == 1
    t2.close()
    assert len(on_disk(p)) == 1


def test_last_spoke_is_correct_and_survives_reopen(tmp_path):
    p = tmp_path / "thread.jsonl"
    t = Thread(p)
    t.append(Post.draft("ann", "say", "a"))
    t.append(Post.draft("bob", "say", "b"))
    t.append(Post.draft("system", "say", "note"))
    t.append(Post.draft("ann", "work_done", "c", credit=None))
    t.append(Post.draft("user", "say", "hi"))
    assert t.last_spoke == {"ann": 4, "bob": 2, "user": 5}
    t.close()
    t2 = Thread(p)
    assert participants(t2.last_spoke) == {"ann": 4, "bob": 2, "user": 5}
    t2.close()


@pytest.mark.parametrize("damage", ["delete", "garbage", "wrong-shape", "ahead"])
def test_index_rebuilt_when_missing_or_corrupt(tmp_path, damage):
    p = tmp_path / "thread.jsonl"
    t = Thread(p)
    fill(t, 30)
    t.close()
    index = tmp_path / "thread-index.json"
    assert index.exists()
    if damage == "delete":
        index.unlink()
    elif damage == "garbage":
        index.write_text("{not json")
    elif damage == "wrong-shape":
        index.write_text(json.dumps({"seq": 5, "last_spoke": [1, 2, 3]}))
    else:  # claims more posts than the thread has: cannot be trusted
        index.write_text(json.dumps({"seq": 999, "last_spoke": {"ann": 999}}))
    t2 = Thread(p)
    assert participants(t2.last_spoke) == expected_last_spoke(on_disk(p))
    t2.close()
    # The rebuild wrote a fresh index.
    assert json.loads(index.read_text())["seq"] == 30


def test_index_caught_up_when_behind(tmp_path):
    p = tmp_path / "thread.jsonl"
    t = Thread(p)
    t.append(Post.draft("ann", "say", "1"))
    t.append(Post.draft("bob", "say", "2"))
    t.close()
    index = tmp_path / "thread-index.json"
    stale = index.read_text()
    t = Thread(p)
    t.append(Post.draft("cy", "say", "3"))
    t.append(Post.draft("ann", "say", "4"))
    t.append(Post.draft("system", "say", "5"))
    t.close()
    index.write_text(stale)  # as if the index writes after seq 2 were lost
    t2 = Thread(p)
    assert participants(t2.last_spoke) == {"ann": 4, "bob": 2, "cy": 3}
    t2.close()


def test_index_only_from_the_thread_matches_live_index(tmp_path):
    p = tmp_path / "thread.jsonl"
    t = Thread(p)
    fill(t, 57)
    live = dict(t.last_spoke)
    t.close()
    (tmp_path / "thread-index.json").unlink()
    t2 = Thread(p)
    assert participants(t2.last_spoke) == live
    t2.close()


@pytest.mark.parametrize("frm, to", [(1, 5), (3, 3), (1, None), (240, 250), (245, None), (100, 180)])
def test_read_ranges_from_both_ends_of_a_long_thread(tmp_path, frm, to):
    p = tmp_path / "thread.jsonl"
    # Written directly (no fsync per post) to keep the test fast; long enough to span many blocks.
    p.write_text(
        "".join(
            json.dumps(
                {
                    "seq": s,
                    "from": NAMES[s % 4],
                    "kind": "say",
                    "text": f"post {s} " + "p" * 400,
                    "handoff": None,
                    "ts": "2026-01-01T00:00:00.000Z",
                }
            )
            + "\n"
            for s in range(1, 251)
        )
    )
    t = Thread(p)
    got = t.read(frm, to, limit=50)
    hi = min(to or 250, 250, frm + 49)
    assert [r.seq for r in got] == list(range(frm, hi + 1))
    assert all(r.text.startswith(f"post {r.seq} ") for r in got)
    t.close()


def test_read_limit_past_end_and_reversed_range(tmp_path):
    t = Thread(tmp_path / "thread.jsonl")
    fill(t, 30)
    assert [r.seq for r in t.read(10, 30, limit=4)] == [10, 11, 12, 13]
    assert [r.seq for r in t.read(28, 400)] == [28, 29, 30]
    assert t.read(31) == []
    assert t.read(20, 10) == []
    assert [r.seq for r in t.read(29, limit=1)] == [29]
    t.close()


def test_posts_are_handed_out_as_the_post_model(tmp_path):
    from autodev.records import Post

    t = Thread(tmp_path / "thread.jsonl")
    t.append(
        Post.draft(
            "builder", "work_done", "did it", id="r:t1:post", turn=1, credit={"commits": ["abc"], "files": []}
        )
    )
    t.append(Post.draft("reviewer", "handoff", "yours", "builder"))
    first, second = t.read(1, 2)
    t.close()
    assert isinstance(first, Post) and first.credit and first.credit.commits == ["abc"]
    assert (second.seq, second.from_, second.kind, second.handoff) == (2, "reviewer", "handoff", "builder")
    assert [p.model_dump(by_alias=True, exclude_unset=True) for p in (first, second)] == on_disk(t.path)


def test_tail_and_reader_tail(tmp_path):
    p = tmp_path / "thread.jsonl"
    t = Thread(p)
    fill(t, 40)
    assert [r.seq for r in t.tail(3)] == [38, 39, 40]
    assert read_thread_tail(p, 3) == [r.dump() for r in t.tail(3)]
    t.close()


def test_the_kept_tail_grows_with_each_post_as_a_fresh_read_gives_it(tmp_path, monkeypatch):
    """After a post the tail is the kept one plus the post (no re-read), and it is exactly what
    reading the file gives: a redacted post as its line holds it, a rewind read again."""
    p = tmp_path / "thread.jsonl"
    t = Thread(p, redact=lambda rec: {**rec, "text": str(rec["text"]).replace("sk-secret", "[redacted]")})
    fill(t, 5)
    for n in (3, 100):
        t.tail(n)
        t.append(Post.draft("ann", "say", "key sk-secret here"))
        fill(t, 2)
        with monkeypatch.context() as m:
            m.setattr(t.journal, "tail", lambda n: pytest.fail("the tail was read again after a post"))
            kept = t.tail(n)
        fresh = Thread(p)
        assert kept == fresh.tail(n)
        assert [x.model_dump(by_alias=True) for x in kept] == [
            x.model_dump(by_alias=True) for x in fresh.tail(n)
        ]
        assert all("sk-secret" not in x.text for x in kept)
        fresh.close()
    assert len(t.tail(100)) == t.last_seq == 11
    t.journal.append(
        {
            "seq": 12,
            "from": "bob",
            "kind": "say",
            "text": "by another writer",
            "handoff": None,
            "ts": "2026-01-01T00:00:00.000Z",
        }
    )
    t.last_seq = 12
    t.append(Post.draft("cy", "say", "after it"))  # the kept tail was not the file's: read again
    assert [x.seq for x in t.tail(3)] == [11, 12, 13]
    t.close()


def _write_thread(p: Path, seqs: list[int]) -> bytes:
    body = b"".join(
        json.dumps(
            {
                "seq": s,
                "from": "ann",
                "kind": "say",
                "text": str(s),
                "handoff": None,
                "ts": "2026-01-01T00:00:00.000Z",
            }
        ).encode()
        + b"\n"
        for s in seqs
    )
    p.write_bytes(body)
    return body


def test_seq_gap_in_the_tail_is_corruption(tmp_path):
    p = tmp_path / "thread.jsonl"
    body = _write_thread(p, [1, 2, 3, 4, 6, 7])
    with pytest.raises(CorruptLogError, match="from 4 to 6"):
        Thread(p)
    assert p.read_bytes() == body


def test_repeated_seq_is_corruption(tmp_path):
    p = tmp_path / "thread.jsonl"
    _write_thread(p, [1, 2, 3, 3, 4])
    with pytest.raises(CorruptLogError):
        Thread(p)


def test_seq_gap_error_names_the_line(tmp_path):
    p = tmp_path / "thread.jsonl"
    _write_thread(p, [1, 2, 3, 4, 7])
    with pytest.raises(CorruptLogError, match=r"line 5\b"):
        Thread(p)


def test_duplicated_line_error_names_the_second_copy(tmp_path):
    p = tmp_path / "thread.jsonl"
    _write_thread(p, [1, 2, 3, 3, 4])
    with pytest.raises(CorruptLogError, match=r"line 4\b"):
        Thread(p)


def test_torn_tail_of_thread_dropped_and_seq_continues(tmp_path):
    p = tmp_path / "thread.jsonl"
    body = _write_thread(p, [1, 2, 3])
    p.write_bytes(body + b'{"seq": 4, "from": "ann", "ki')
    t = Thread(p)
    assert t.last_seq == 3
    assert t.append(Post.draft("bob", "say", "four")).seq == 4
    t.close()
    assert [r["seq"] for r in on_disk(p)] == [1, 2, 3, 4]


PREVIOUS = Path(__file__).parent / "fixtures" / "run-2026-12-01-demo" / "thread.jsonl"


def test_a_thread_the_previous_release_wrote_reads_as_posts_and_grows_in_the_same_form(tmp_path):
    """tests/fixtures/run-2026-12-01-demo is a real run of the release before posts became
    `Post` end to end: its lines read as the posts they are, each exactly as written, and a post
    appended now is written in the old lines' form (same keys in the same order, compact)."""
    from autodev.records import Post
    from autodev.rules.scheduler import next_speaker

    p = tmp_path / "thread.jsonl"
    old = PREVIOUS.read_bytes()
    p.write_bytes(old)
    t = Thread(p)
    posts = t.read(1, limit=100)
    assert all(isinstance(q, Post) for q in posts) and [q.seq for q in posts] == list(range(1, 17))
    assert [q.dump() for q in posts] == on_disk(PREVIOUS)  # nothing lost, nothing added
    assert [q.credited for q in posts if q.kind == "work_done"] == [True, False, True, True]
    assert next_speaker(["builder", "reviewer", "tester"], t.tail(), t.last_spoke).rule == "silent_longest"
    new = t.append(
        Post.draft(
            "builder",
            "work_done",
            "more",
            "reviewer",
            id="3556ffe3:t14:post",
            turn=14,
            credit={"commits": ["abc"], "files": ["greet.py"]},
        )
    )
    t.close()
    written = p.read_bytes()
    assert written.startswith(old)
    line = written[len(old) :].decode()
    like = old.decode().splitlines()[1]  # the first credited work_done the old release wrote
    assert list(json.loads(line)) == list(json.loads(like))  # the same keys in the same order
    assert line.endswith("\n") and line.count("\n") == 1 and ", " not in line  # compact, one line
    assert json.loads(line) == new.dump() and new.seq == 17


def test_readers_catch_up_a_stale_index_without_reading_the_whole_thread(tmp_path, monkeypatch):
    from autodev.store import thread as thread_module
    from autodev.store.thread import Thread, read_live

    path = tmp_path / "thread.jsonl"
    th = Thread(path)
    for i in range(5):
        th.append(Post.draft("alice", "say", f"post {i}"))
    stale = (tmp_path / "thread-index.json").read_text()  # the cache as of seq 5
    th.append(Post.draft("system", "say", "rewound to 2", rewind={"n": 1, "to_seq": 2}))
    th.append(Post.draft("alice", "say", "after the rewind"))
    th.close()
    (tmp_path / "thread-index.json").write_text(stale)  # e.g. a crash before the cache was saved

    def whole_thread(*_a, **_k):
        raise AssertionError("a reader scanned the whole thread although the index was there")

    monkeypatch.setattr(thread_module, "iter_records", whole_thread)
    live = read_live(path)
    assert [s for s in range(1, 8) if live.is_live(s)] == [1, 2, 6, 7]
