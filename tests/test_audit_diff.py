"""audit.change_since on real git repositories: what the stateless audit sees of the work."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from autodev.harness.audit import change_since


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def test_committed_uncommitted_and_untracked_changes_all_appear(repo):
    base = head(repo)
    (repo / "committed.py").write_text("print('committed')\n")
    git(repo, "add", "committed.py")
    git(repo, "commit", "-qm", "work")
    (repo / "README.md").write_text("# test repo\nedited but not committed\n")
    (repo / "untracked.txt").write_text("brand new file\n")
    (repo / ".autodev").mkdir()
    (repo / ".autodev" / "team.toml").write_text("excluded = true\n")

    stat, diff = change_since(repo, base, 100_000)

    for name in ("committed.py", "README.md", "untracked.txt"):
        assert name in stat, stat
        assert f"b/{name}" in diff
    assert "+print('committed')" in diff
    assert "+edited but not committed" in diff
    assert "+brand new file" in diff
    assert "3 files changed" in stat
    assert ".autodev" not in stat and "excluded = true" not in diff  # ignored files stay out
    assert "[diff cut" not in diff


def test_deleted_files_appear(repo):
    base = head(repo)
    (repo / "README.md").unlink()
    stat, diff = change_since(repo, base, 100_000)
    assert "README.md" in stat
    assert "deleted file" in diff and "-# test repo" in diff


def test_no_change(repo):
    stat, diff = change_since(repo, head(repo), 10_000)
    assert stat == "(no change)"
    assert diff == ""


def test_diff_is_cut_at_the_limit_with_a_note(repo):
    base = head(repo)
    (repo / "big.txt").write_text("".join(f"line number {i}\n" for i in range(2_000)))
    stat, diff = change_since(repo, base, 1_000)
    note = "\n[diff cut at 1000 characters]"
    assert diff.endswith(note)
    assert len(diff) == 1_000 + len(note)
    assert re.search(r"big\.txt \| 2000 \+", stat), stat
    full_stat, full = change_since(repo, base, 10**7)
    assert diff[:1_000] == full[:1_000]
    assert full_stat == stat


def test_users_real_index_is_untouched(repo):
    base = head(repo)
    (repo / "staged.txt").write_text("the user staged this\n")
    git(repo, "add", "staged.txt")
    (repo / "README.md").write_text("# test repo\nunstaged edit\n")
    (repo / "loose.txt").write_text("not staged\n")
    index = repo / ".git" / "index"
    before_bytes = index.read_bytes()
    before_cached = git(repo, "diff", "--cached", "--name-only")
    before_status = git(repo, "status", "--porcelain")

    stat, diff = change_since(repo, base, 100_000)

    assert "loose.txt" in stat and "staged.txt" in stat and "README.md" in stat
    assert git(repo, "diff", "--cached", "--name-only") == before_cached == "staged.txt\n"
    assert git(repo, "status", "--porcelain") == before_status
    assert "?? loose.txt" in before_status
    assert index.read_bytes() == before_bytes


def test_base_none_shows_everything_from_the_empty_tree(repo):
    (repo / "new.txt").write_text("new\n")
    stat, diff = change_since(repo, None, 100_000)
    assert "README.md" in stat and "new.txt" in stat
    assert "+# test repo" in diff and "+new" in diff
    assert "new file mode" in diff


def test_base_none_in_a_repository_without_commits(tmp_path):
    r = tmp_path / "fresh"
    r.mkdir()
    git(r, "init", "-q")
    (r / "a.txt").write_text("alpha\n")
    stat, diff = change_since(r, None, 100_000)
    assert "a.txt" in stat
    assert "+alpha" in diff
    assert not (r / ".git" / "index").exists()  # still nothing staged for the user
