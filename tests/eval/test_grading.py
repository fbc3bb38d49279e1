"""Every smoke task is real: its hidden tests fail at the base commit and pass with its reference
fix, graded the way an eval grades (a fresh clone, the test patch applied only then). The shipped
evals/smoke.jsonl is what its sources build. In-process: no daemon. `make test` checks a subset of
the tasks (tests/eval/smoke.py: SUBSET); AUTODEV_EVAL_FULL=1 (`make eval-smoke`) checks them all."""

from __future__ import annotations

import subprocess

import pytest

from autodev.eval.tasks import load_tasks
from autodev.eval.workspace import clone, grade, model_patch, patch_files, shell_for
from autodev.guard.sandbox import resolve
from tests.eval.smoke import ROOT, smoke_tasks

# Grading as an eval grades: in the sandbox (real bwrap), no keys, no network; unsandboxed only on
# a machine without bubblewrap (tests/security/test_eval.py needs it).
SHELL = shell_for(not resolve("auto").active)


def test_the_shipped_tasks_file_is_what_the_sources_build(suite):
    tasks, _ = suite
    assert (ROOT / "evals" / "smoke.jsonl").read_text() == tasks.read_text()
    assert len(load_tasks(tasks)) >= 10


def test_each_task_fails_at_base_and_its_fix_resolves_it(suite, tmp_path):
    tasks, solutions = suite
    for t in smoke_tasks(tasks):
        repo = tmp_path / t.id
        base = clone(t.repo, t.base_commit, repo)
        assert model_patch(repo, base) == ""
        g = grade(repo, base, t.test_patch, t.test_command, tmp_path / f"{t.id}-base.log", 60, SHELL)
        assert (g.resolved, g.error) == (False, None), t.id
        assert g.test_exit not in (0, None)

        fix = solutions / f"{t.id}.diff"
        subprocess.run(["git", "apply", str(fix)], cwd=repo, check=True)
        assert fix.read_text() in model_patch(repo, base)  # beside the hidden tests the grade left
        g = grade(repo, base, t.test_patch, t.test_command, tmp_path / f"{t.id}-fixed.log", 60, SHELL)
        assert (g.resolved, g.test_exit) == (True, 0), (tmp_path / f"{t.id}-fixed.log").read_text()


def test_a_team_cannot_pass_by_writing_the_hidden_tests_itself(suite, tmp_path):
    [t] = [t for t in load_tasks(suite[0]) if t.id == "semver-compare"]
    repo = tmp_path / "repo"
    base = clone(t.repo, t.base_commit, repo)
    [hidden] = patch_files(t.test_patch)
    (repo / hidden).write_text(
        "import unittest\n\nclass Hidden(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
    )
    (repo / "tests" / "test_versions.py").write_text("")  # and an edit of a visible test
    (repo / ".autodev").mkdir()
    (repo / ".autodev" / "team.toml").write_text("")  # the run's own files are not the work
    patch = model_patch(repo, base)
    assert hidden in patch and ".autodev" not in patch
    g = grade(repo, base, t.test_patch, t.test_command, tmp_path / "grade.log", 60, SHELL)
    assert g.resolved is False and g.error is None


@pytest.mark.parametrize("bad", ["no-such-ref"])
def test_a_missing_base_commit_is_a_workspace_error(suite, tmp_path, bad):
    from autodev.eval.workspace import WorkspaceError

    t = load_tasks(suite[0])[0]
    with pytest.raises(WorkspaceError, match="git rev-parse"):
        clone(t.repo, bad, tmp_path / "repo")


def test_what_the_team_planted_in_the_clones_git_config_never_runs(suite, tmp_path):
    """After the run the clone holds what the team left; collecting its patch and grading it run
    the host's pinned git (issue 20), so an fsmonitor planted in .git/config leaves no mark."""
    [t] = [t for t in load_tasks(suite[0]) if t.id == "semver-compare"]
    repo = tmp_path / "repo"
    base = clone(t.repo, t.base_commit, repo)
    mark = tmp_path / "ran-on-the-host"
    payload = tmp_path / "payload.sh"
    payload.write_text(f"#!/bin/sh\ntouch {mark}\n")
    payload.chmod(0o755)
    subprocess.run(["git", "config", "core.fsmonitor", str(payload)], cwd=repo, check=True)
    (repo / "new.txt").write_text("left by the team\n")
    assert "new.txt" in model_patch(repo, base)
    grade(repo, base, t.test_patch, t.test_command, tmp_path / "grade.log", 60, SHELL)
    assert not mark.exists()
