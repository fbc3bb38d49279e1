"""Following events.jsonl: a bounded tail first, then only what is appended; a torn append is
read once it is whole; a replaced file starts again from its tail."""

from __future__ import annotations

import json
import os

from autodev.panel.feed import EventTail
from autodev.user.events_view import FOLD_CHARS, event_text


def append(path, *recs, raw: bytes = b"") -> None:
    with open(path, "ab") as f:
        for r in recs:
            f.write((json.dumps(r) + "\n").encode())
        f.write(raw)


def test_bounded_tail_then_follow(tmp_path):
    p = tmp_path / "events.jsonl"
    append(p, *({"type": "tool", "n": i} for i in range(1000)))
    t = EventTail(p, tail_records=50)
    first = t.read_new()
    assert [r["n"] for r in first] == list(range(950, 1000))
    assert t.read_new() == []
    append(p, {"type": "tool", "n": 1000}, raw=b'{"type": "to')  # the next append is torn
    assert [r["n"] for r in t.read_new()] == [1000]
    append(p, raw=b'ol", "n": 1001}\n')
    assert [r["n"] for r in t.read_new()] == [1001]


def test_byte_bound_cuts_the_first_partial_line(tmp_path):
    p = tmp_path / "events.jsonl"
    append(p, *({"type": "tool", "pad": "x" * 100, "n": i} for i in range(100)))
    got = EventTail(p, tail_records=1000, tail_bytes=1000).read_new()
    assert 0 < len(got) < 10 and got[-1]["n"] == 99
    assert [r["n"] for r in got] == list(range(100 - len(got), 100))


def test_missing_then_replaced_file(tmp_path):
    p = tmp_path / "events.jsonl"
    t = EventTail(p)
    assert t.read_new() == []
    append(p, {"type": "state", "n": 1}, {"type": "state", "n": 2})
    assert [r["n"] for r in t.read_new()] == [1, 2]
    tmp = tmp_path / "new.jsonl"
    append(tmp, {"type": "state", "n": 9})
    os.replace(tmp, p)
    assert [r["n"] for r in t.read_new()] == [9]


def test_feed_folds_long_posts_until_expanded():
    post = {
        "type": "post",
        "seq": 3,
        "from": "builder",
        "kind": "work_done",
        "handoff": "reviewer",
        "text": "y" * (FOLD_CHARS + 50),
        "credit": {"commits": ["abcdef1234"], "files": []},
    }
    folded, full = event_text(post).plain, event_text(post, expanded=True).plain
    assert "[credited: abcdef1]" in folded and "→ reviewer" in folded
    assert "folded" in folded and "y" * (FOLD_CHARS + 50) not in folded
    assert "y" * (FOLD_CHARS + 50) in full and "folded" not in full
    assert event_text({"type": "generation", "participant": "b"}) is None
    wait = event_text({"type": "wait", "participant": "b", "delay": 30, "due": 0}).plain
    assert "b waits 30s" in wait


def test_compaction_is_a_feed_line():
    line = event_text(
        {
            "type": "compacted",
            "participant": "b",
            "model": "openai/x",
            "hard": False,
            "stubbed": 3,
            "tokens_before": 9000,
            "tokens_after": 4000,
        }
    ).plain
    assert "b: compacted to fit openai/x's window" in line and "3 results" in line and "9000" in line
    hard = event_text({"type": "compacted", "participant": "b", "model": "m", "hard": True}).plain
    assert "hard" in hard


def _kinds() -> list[type]:
    from autodev.records import events

    return [
        c
        for c in vars(events).values()
        if isinstance(c, type) and issubclass(c, events.Event) and "type" in c.model_fields
        and isinstance(c.model_fields["type"].default, str)
    ]  # fmt: skip


def test_every_event_kind_reads_as_words_in_the_feed():
    from autodev.user.events_view import event_text

    kinds = _kinds()
    assert len(kinds) > 40
    for kind in kinds:
        name = kind.model_fields["type"].default
        rec = {"type": name, "run": "r1", "ts": "2026-12-03T10:00:00.000Z", "participant": "builder",
               "turn": 3, "seq": 4, "n": 1, "to_seq": 2, "server": "github", "agent": "claude"}  # fmt: skip
        line = event_text(rec)
        if line is None:  # generations: summed in the header, not a line
            continue
        assert name not in line.plain or "_" not in name, (name, line.plain)
    unknown = event_text({"type": "brand_new_thing", "run": "r1", "ts": "2026-12-03T10:00:00.000Z"})
    assert (
        unknown is not None and "brand new thing" in unknown.plain and "brand_new_thing" not in unknown.plain
    )
    stopped = event_text({"type": "turn_stopped", "run": "r1", "ts": "2026-12-03T10:00:00.000Z",
                          "participant": "builder", "turn": 3})  # fmt: skip
    assert (
        stopped is not None
        and stopped.plain == "■ turn 3 of builder cut by stop: it continues on the next start"
    )
