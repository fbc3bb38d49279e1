"""The run folder: named after the repository's real path, under $AUTODEV_HOME as it is when
asked (the lookup is kept per process, keyed by both)."""

from __future__ import annotations

import hashlib

from autodev.store.paths import RunPaths


def test_the_run_folder_follows_the_real_path_and_the_home_of_the_moment(tmp_path, monkeypatch):
    repo = tmp_path / "proj"
    repo.mkdir()
    link = tmp_path / "link"
    link.symlink_to(repo)
    digest = hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:8]
    monkeypatch.setenv("AUTODEV_HOME", str(tmp_path / "one"))
    assert RunPaths(repo).run_dir == tmp_path / "one" / f"proj-{digest}"
    assert RunPaths(link).run_dir == RunPaths(repo).run_dir  # the same repository by another path
    monkeypatch.setenv("AUTODEV_HOME", str(tmp_path / "two"))
    assert RunPaths(repo).run_dir == tmp_path / "two" / f"proj-{digest}"
    assert RunPaths(repo).thread == tmp_path / "two" / f"proj-{digest}" / "thread.jsonl"
