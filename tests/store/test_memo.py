"""A memo is never the truth: a missing or cut one reads as None, and a write that cannot land
leaves what was there and no temporary file behind."""

from __future__ import annotations

from autodev.store.memo import read_memo, write_memo


def test_a_memo_written_reads_back_and_a_missing_or_cut_one_is_none(tmp_path):
    memo = tmp_path / "memo.json"
    assert read_memo(memo) is None
    write_memo(memo, {"key": [1, 2], "why": ""})
    assert read_memo(memo) == {"key": [1, 2], "why": ""}
    memo.write_bytes(b'{"key": [1, 2], "wh')  # cut by a crash mid-write (by hand: the real write replaces)
    assert read_memo(memo) is None
    assert [p.name for p in tmp_path.iterdir()] == ["memo.json"]


def test_a_write_that_cannot_land_leaves_nothing_behind(tmp_path):
    taken = tmp_path / "memo.json"
    taken.mkdir()  # os.replace cannot put a file over a folder
    write_memo(taken, {"a": 1})
    assert taken.is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["memo.json"]
    write_memo(tmp_path / "gone" / "memo.json", {"a": 1})  # its folder was removed
    assert not (tmp_path / "gone").exists()
