"""The durable JSONL journal: appends, idempotency by id, torn tails, corruption, tail reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autodev.errors import CorruptLogError
from autodev.store.journal import Journal, iter_records, iter_records_reverse, read_tail

BLOCK = 64 * 1024


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_append_is_on_disk_and_returns_the_record(tmp_path):
    p = tmp_path / "log.jsonl"
    with Journal(p) as j:
        rec = j.append({"n": 1, "text": "héllo"})
        assert rec == {"n": 1, "text": "héllo"}
        # Visible to another reader right away, before close.
        assert lines(p) == [{"n": 1, "text": "héllo"}]
        j.append({"n": 2})
        assert j.size() == p.stat().st_size
    assert lines(p) == [{"n": 1, "text": "héllo"}, {"n": 2}]
    assert p.read_bytes().endswith(b"\n")


def test_new_journal_creates_parent_folders(tmp_path):
    p = tmp_path / "a" / "b" / "log.jsonl"
    with Journal(p) as j:
        j.append({"x": 1})
    assert lines(p) == [{"x": 1}]


def test_append_is_idempotent_by_id(tmp_path):
    p = tmp_path / "log.jsonl"
    with Journal(p) as j:
        first = j.append({"id": "t-1", "v": "first"})
        size = p.stat().st_size
        again = j.append({"id": "t-1", "v": "second"})
        assert again == first
        assert p.stat().st_size == size
        assert j.seen("t-1") == first
        assert j.seen("t-2") is None
    assert lines(p) == [{"id": "t-1", "v": "first"}]


def test_idempotency_survives_reopen(tmp_path):
    p = tmp_path / "log.jsonl"
    with Journal(p) as j:
        j.append({"id": "a", "v": 1})
        j.append({"v": 2})
    before = p.read_bytes()
    with Journal(p) as j:
        assert j.append({"id": "a", "v": "retry"}) == {"id": "a", "v": 1}
        assert j.seen("a") == {"id": "a", "v": 1}
    assert p.read_bytes() == before


def test_records_without_string_id_are_always_written(tmp_path):
    p = tmp_path / "log.jsonl"
    with Journal(p) as j:
        j.append({"v": 1})
        j.append({"v": 1})
        j.append({"id": 5, "v": 1})
        j.append({"id": 5, "v": 1})
    assert len(lines(p)) == 4


def test_torn_final_line_is_dropped_and_file_truncated(tmp_path):
    p = tmp_path / "log.jsonl"
    good = b'{"n":1}\n{"n":2}\n'
    p.write_bytes(good + b'{"n":3,"te')
    with Journal(p) as j:
        assert j.dropped_torn_tail is True
        assert p.read_bytes() == good
        j.append({"n": 3})
    assert lines(p) == [{"n": 1}, {"n": 2}, {"n": 3}]


def test_torn_only_line_truncates_to_empty(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"n":1, "half')
    with Journal(p) as j:
        assert j.dropped_torn_tail
        assert j.tail(5) == []
    assert p.read_bytes() == b""


def test_torn_tail_longer_than_a_block_is_dropped_on_open(tmp_path):
    p = tmp_path / "log.jsonl"
    good = b'{"n":1}\n'
    p.write_bytes(good + b'{"big":"' + b"x" * (BLOCK * 2 + 17))
    with Journal(p) as j:
        assert j.dropped_torn_tail
        assert j.tail(3) == [{"n": 1}]
    assert p.read_bytes() == good


def test_clean_file_is_not_touched_on_open(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"n":1}\n')
    mtime = p.stat().st_mtime_ns
    with Journal(p) as j:
        assert j.dropped_torn_tail is False
    assert p.read_bytes() == b'{"n":1}\n'
    assert p.stat().st_mtime_ns == mtime


@pytest.mark.parametrize(
    "bad, line",
    [
        (b"not json", 3),
        (b"[1, 2]", 3),  # valid JSON but not an object
        (b'{"n": ', 3),
    ],
)
def test_malformed_middle_line_refuses_and_changes_nothing(tmp_path, bad, line):
    p = tmp_path / "log.jsonl"
    content = b'{"n":1}\n{"n":2}\n' + bad + b'\n{"n":4}\n{"n":5}\n'
    p.write_bytes(content)
    with pytest.raises(CorruptLogError) as e:
        Journal(p)
    assert f"line {line}" in str(e.value)
    assert str(p) in e.value.message
    assert e.value.fix
    assert p.read_bytes() == content


def test_malformed_line_number_is_right_past_block_boundaries(tmp_path):
    # Long lines push the bad one past the first 64 KiB block of the tail that is checked.
    p = tmp_path / "log.jsonl"
    recs = [json.dumps({"n": i, "pad": "y" * 30000}).encode() + b"\n" for i in range(6)]
    content = b"".join(recs[:4]) + b"{oops\n" + b"".join(recs[4:])
    p.write_bytes(content)
    with pytest.raises(CorruptLogError, match=r"line 5 is corrupt"):
        Journal(p)
    assert p.read_bytes() == content


def test_malformed_final_complete_line_is_corruption_not_a_torn_tail(tmp_path):
    p = tmp_path / "log.jsonl"
    content = b'{"n":1}\ngarbage\n'
    p.write_bytes(content)
    with pytest.raises(CorruptLogError, match="line 2"):
        Journal(p)
    assert p.read_bytes() == content


def test_corrupt_middle_with_torn_tail_changes_nothing(tmp_path):
    p = tmp_path / "log.jsonl"
    content = b'{"n":1}\nxx\n{"n":3}\n{"n":'
    p.write_bytes(content)
    with pytest.raises(CorruptLogError, match="line 2"):
        Journal(p)
    assert p.read_bytes() == content


def _write_records(p: Path, recs: list[dict]) -> None:
    with Journal(p) as j:
        for r in recs:
            j.append(r)


def test_tail_on_missing_and_empty_files(tmp_path):
    assert read_tail(tmp_path / "nope.jsonl", 5) == []
    assert list(iter_records(tmp_path / "nope.jsonl")) == []
    assert list(iter_records_reverse(tmp_path / "nope.jsonl")) == []
    p = tmp_path / "empty.jsonl"
    with Journal(p) as j:
        assert j.tail(5) == []
        assert j.last() is None
        assert j.tail(0) == []


def test_tail_returns_newest_n_in_order(tmp_path):
    p = tmp_path / "log.jsonl"
    _write_records(p, [{"n": i} for i in range(1, 101)])
    with Journal(p) as j:
        assert [r["n"] for r in j.tail(5)] == [96, 97, 98, 99, 100]
        assert [r["n"] for r in j.tail(1000)] == list(range(1, 101))
        assert j.last() == {"n": 100}
        assert j.tail(-1) == []


@pytest.mark.parametrize("pad", [10, 1000, 40000, BLOCK - 12, BLOCK, 150000])
def test_tail_across_block_boundaries(tmp_path, pad):
    # Line lengths around and beyond 64 KiB so lines straddle the reader's block edges.
    p = tmp_path / "log.jsonl"
    recs = [{"n": i, "pad": "z" * (pad + i * 7)} for i in range(12)]
    _write_records(p, recs)
    for n in (1, 3, 12, 20):
        assert read_tail(p, n) == recs[-n:]
    assert list(iter_records(p)) == recs
    assert list(iter_records_reverse(p)) == recs[::-1]


def test_iter_forward_and_reverse_agree_on_mixed_lengths(tmp_path):
    p = tmp_path / "log.jsonl"
    recs = [{"n": i, "t": "é" * ((i * 7919) % 20000)} for i in range(60)]
    _write_records(p, recs)
    assert list(iter_records(p)) == recs
    assert list(iter_records_reverse(p)) == list(reversed(recs))


def test_readers_skip_a_torn_tail_without_repairing(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"n":1}\n{"n":2}\n{"n":3,"x')
    assert read_tail(p, 2) == [{"n": 1}, {"n": 2}]
    assert list(iter_records(p)) == [{"n": 1}, {"n": 2}]
    assert list(iter_records_reverse(p)) == [{"n": 2}, {"n": 1}]
    assert p.read_bytes().endswith(b'{"n":3,"x')  # readers never write


def test_reverse_reader_skips_a_torn_tail_longer_than_a_block(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"n":1}\n' + b'{"big":"' + b"x" * (BLOCK + 100))
    assert read_tail(p, 2) == [{"n": 1}]


def test_forward_reader_names_the_corrupt_line(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"n":1}\n{"n":2}\n{bad\n{"n":4}\n')
    it = iter_records(p)
    assert next(it) == {"n": 1}
    assert next(it) == {"n": 2}
    with pytest.raises(CorruptLogError, match="line 3"):
        next(it)


def test_reverse_reader_refuses_a_corrupt_line(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"n":1}\n{bad\n{"n":3}\n')
    it = iter_records_reverse(p)
    assert next(it) == {"n": 3}
    with pytest.raises(CorruptLogError):
        next(it)


def test_file_mode_is_private(tmp_path):
    p = tmp_path / "log.jsonl"
    Journal(p).close()
    assert os.stat(p).st_mode & 0o077 == 0


# -- any text: a write never fails on what it carries ------------------------------------------


def test_undecodable_bytes_and_lone_surrogates_are_escaped_not_fatal(tmp_path):
    p = tmp_path / "log.jsonl"
    with Journal(p) as j:
        # A Latin-1 file name as Python sees it (surrogateescape), and a lone surrogate from JSON.
        rec = j.append({"id": "a", "text": "caf\udce9 \ud800", "args": {"p\udcff": ["\udcfe"]}})
        assert rec == {"id": "a", "text": "caf\\xe9 \\ud800", "args": {"p\\xff": ["\\xfe"]}}
        assert j.seen("a") == rec  # what the log holds is what is remembered
        j.append({"n": 2, "text": "plain"})
    raw = p.read_bytes()
    raw.decode("utf-8")  # strictly valid UTF-8
    assert lines(p)[0] == rec and lines(p)[1] == {"n": 2, "text": "plain"}
    with Journal(p) as j:  # and it opens again
        assert j.seen("a") == rec


def test_logs_are_private_to_the_user(tmp_path):
    p = tmp_path / "log.jsonl"
    Journal(p).close()
    assert p.stat().st_mode & 0o777 == 0o600
    os.chmod(p, 0o644)  # left readable by an older version
    Journal(p).close()
    assert p.stat().st_mode & 0o777 == 0o600


# -- the group commit (issue 33) -------------------------------------------------------------------


def _counting_fsync(monkeypatch) -> list[str]:
    """os.fsync as it is, each call's file named (the daemon's group commit is counted in fsyncs)."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_group_commit_writes_at_once_and_fsyncs_together(tmp_path, monkeypatch):
    j = Journal(tmp_path / "events.jsonl", idempotent=False)
    synced = _counting_fsync(monkeypatch)
    j.append({"type": "a"}, durable=False)
    j.append({"type": "b"}, durable=False)
    # Written at once: a reader (and a kill -9, which leaves the page cache) sees both lines.
    assert [r["type"] for r in iter_records(j.path)] == ["a", "b"]
    assert synced == []
    j.sync()
    assert synced == [str(j.path)]
    j.sync()  # nothing written since: no fsync
    assert len(synced) == 1
    j.append({"type": "c"}, durable=False)
    j.append({"type": "d"})  # a durable append's fsync takes the lines before it along
    assert len(synced) == 2
    j.sync()
    assert len(synced) == 2
    j.append({"type": "e"}, durable=False)
    j.close()  # closing fsyncs what is pending
    assert len(synced) == 3
    assert [r["type"] for r in iter_records(j.path)] == ["a", "b", "c", "d", "e"]
