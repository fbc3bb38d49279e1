"""host/folderwalk.py on real folders: listings are reused while a folder is unchanged, and the
kept listings stay bounded however many folders come and go."""

from __future__ import annotations

import os

from autodev.host import folderwalk


def test_listings_kept_stay_bounded_when_folders_come_and_go(tmp_path, monkeypatch):
    monkeypatch.setattr(folderwalk, "RACY_NS", 0)  # keep folders that changed just now
    monkeypatch.setattr(folderwalk, "MAX_KEPT", 5)
    for i in range(12):  # a command that leaves a folder with a new name each time
        made = tmp_path / f"tmp{i}" / "inner"
        made.mkdir(parents=True)
        assert folderwalk.dotgits(tmp_path) == []
        assert len(folderwalk._KEPT) <= 5
    os.mkfifo(tmp_path / "tmp11" / "inner" / "fifo")
    (tmp_path / "tmp3" / ".git").mkdir()
    assert folderwalk.odd_entries(tmp_path) == [tmp_path / "tmp11" / "inner" / "fifo"]
    assert folderwalk.dotgits(tmp_path) == [tmp_path / "tmp3" / ".git"]
