"""HEAD read from the ref files (host/gitrefs.py): the same answer as git's in every layout, from
the files alone in the plain ones, and git asked for everything else."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from autodev.host import gitrefs, hostgit
from tests.conftest import git


@pytest.fixture(autouse=True)
def _no_pins():
    yield
    hostgit._run_pins.clear()


def gits_answer(repo: Path) -> str | None:
    r = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=repo, capture_output=True, text=True
    )
    return r.stdout.strip() or None


def from_files(repo: Path) -> object:
    ident = hostgit.identify(repo)
    return gitrefs._from_files(ident.git_dir, ident.common_dir)


def test_a_branch_with_a_loose_ref_is_read_from_the_files(repo):
    want = gits_answer(repo)
    assert want is not None and len(want) == 40
    assert from_files(repo) == want
    assert gitrefs.head(repo) == want


def test_a_branch_with_no_commit_yet_is_none(tmp_path):
    git(tmp_path, "init", "-q", "-b", "main")
    assert gits_answer(tmp_path) is None
    assert from_files(tmp_path) is None
    assert gitrefs.head(tmp_path) is None


def test_packed_refs_are_read(repo):
    want = gits_answer(repo)
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert "refs/heads/main" in (repo / ".git" / "packed-refs").read_text()
    assert from_files(repo) == want
    assert gitrefs.head(repo) == want


def test_a_detached_head_is_read(repo):
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    first = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "checkout", "-q", "--detach", first)
    assert from_files(repo) == first == gits_answer(repo)


def test_a_git_worktree_reads_its_own_head_and_the_shared_branches(repo, tmp_path):
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt), "HEAD~1")
    want = gits_answer(wt)
    assert want != gits_answer(repo)
    assert from_files(wt) == want
    assert gitrefs.head(wt) == want
    assert gitrefs.head(repo) == gits_answer(repo)


@pytest.mark.parametrize(
    "plant",
    [
        "symlinked ref",  # git follows it as a legacy symbolic ref
        "ref to a ref",
        "head outside refs/heads",
        "garbage in the ref",
        "a folder where the ref is",
    ],
)
def test_what_the_files_do_not_say_plainly_is_gits_to_answer(repo, plant):
    heads = repo / ".git" / "refs" / "heads"
    sha = gits_answer(repo)
    if plant == "symlinked ref":
        (heads / "other").write_text(f"{sha}\n")
        (heads / "main").unlink()
        os.symlink("other", heads / "main")
    elif plant == "ref to a ref":
        (heads / "other").write_text(f"{sha}\n")
        (heads / "main").write_text("ref: refs/heads/other\n")
    elif plant == "head outside refs/heads":
        git(repo, "tag", "t1")
        (repo / ".git" / "HEAD").write_text("ref: refs/tags/t1\n")
    elif plant == "garbage in the ref":
        (heads / "main").write_text("not a commit id\n")
    else:
        (heads / "main").unlink()
        (heads / "main").mkdir()
        (heads / "main" / "x").write_text(f"{sha}\n")
    assert from_files(repo) is gitrefs._ASK
    assert gitrefs.head(repo) == gits_answer(repo)


def test_a_fifo_planted_as_a_ref_file_is_not_opened_for_reading(tmp_path):
    fifo = tmp_path / "main"
    os.mkfifo(fifo)
    t = time.monotonic()
    assert gitrefs._read(fifo) is None  # a blocking open would wait for a writer forever
    assert time.monotonic() - t < 1


def test_a_reftable_repository_is_gits_to_answer(repo):
    (repo / ".git" / "reftable").mkdir()
    assert from_files(repo) is gitrefs._ASK


def test_a_replaced_git_folder_is_refused_as_by_every_git_command(repo, tmp_path):
    hostgit.pin_run(repo)
    os.rename(repo / ".git", tmp_path / "moved")
    git(tmp_path, "init", "-q", str(repo))
    with pytest.raises(hostgit.GitRefused):
        gitrefs.head(repo)
