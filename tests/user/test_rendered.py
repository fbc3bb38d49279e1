"""Kept renderings (user/rendered.py): the key follows everything rich reads, and the memo file
is only a cache."""

from __future__ import annotations

import json

from autodev.user.rendered import Kept, rendering_key


def test_the_key_follows_the_parts_and_what_rich_reads(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    base = rendering_key("sources", b"data")
    assert rendering_key("sources", b"data") == base
    assert rendering_key("other sources", b"data") != base
    assert rendering_key("sources", b"data", "") != base  # one more part is another rendering
    assert rendering_key("sourcesdata") != rendering_key("sources", "data")
    for name, value in (
        ("COLUMNS", "61"),
        ("NO_COLOR", "1"),
        ("FORCE_COLOR", "1"),
        ("CLICOLOR_FORCE", "1"),  # not in VARIABLES: its name says COLOR
        ("TERM", "dumb"),
        ("MY_TTY_MODE", "x"),
    ):
        with monkeypatch.context() as m:
            m.setenv(name, value)
            assert rendering_key("sources", b"data") != base, name
    with monkeypatch.context() as m:
        m.setenv("UNRELATED_SETTING", "1")
        assert rendering_key("sources", b"data") == base


def test_kept_texts_come_back_and_only_the_newest_stay(tmp_path):
    path = tmp_path / "kept.json"
    kept = Kept(path, most=2)
    assert kept.get("a") is None
    for k in ("a", "b", "c"):
        kept.put(k, f"text {k}\n\x1b[1mbold\x1b[0m")
    again = Kept(path, most=2)
    assert again.get("a") is None
    assert again.get("b") == "text b\n\x1b[1mbold\x1b[0m"
    assert again.get("c") == "text c\n\x1b[1mbold\x1b[0m"
    again.put("b", "b again")  # a rendering used again becomes the newest
    again.put("d", "d")
    assert list(json.loads(path.read_text())) == ["b", "d"]


def test_a_cut_or_foreign_file_holds_nothing_and_is_replaced(tmp_path):
    path = tmp_path / "kept.json"
    for junk in ('{"a": "te', "[1, 2]", '{"a": 5}', "\xff\xfe"):
        path.write_text(junk, encoding="latin-1")
        kept = Kept(path)
        assert kept.get("a") is None
        kept.put("a", "fresh")
        assert Kept(path).get("a") == "fresh"


def test_a_folder_that_cannot_hold_the_file_leaves_nothing_behind(tmp_path):
    missing = tmp_path / "no such folder" / "kept.json"
    kept = Kept(missing)
    kept.put("a", "text")  # only a cache: the next call renders again
    assert not missing.parent.exists()
    assert Kept(missing).get("a") is None
