"""The tests a `done`'s evidence runs are the team's code (SPEC §21, §22): they run in the
sandbox, and nothing they leave is followed or believed on the host beyond its JUnit XML."""

from __future__ import annotations

import pytest

from autodev.harness import evidence
from tests.conftest import git
from tests.harness.test_evidence import CALC, PYTEST, TESTS, head, setup


@pytest.fixture
def project(repo, autodev_home):
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc")
    return repo


def test_a_results_file_linked_to_a_host_file_is_not_read(project, tmp_path):
    secret = tmp_path / "host-secret.xml"
    secret.write_text('<testsuite><testcase classname="x" name="FORGED_PASS"/></testsuite>')
    link = f"ln -sf {secret} .autodev-evidence-junit.xml"
    command = f"{PYTEST}; rm -f .autodev-evidence-junit.xml; {link}"
    ev = evidence.evidence(setup(project, command), head(project), "l")
    assert ev.outcome == "error"
    assert "FORGED_PASS" not in ev.model_dump_json()


def test_the_tests_cannot_write_the_real_repository_or_its_git_folder(project):
    probe = (
        "import pathlib\n\n\ndef test_write_real_repo():\n"
        f"    for p in ({str(project / 'planted.txt')!r}, {str(project / '.git' / 'planted')!r}):\n"
        "        try:\n            pathlib.Path(p).write_text('x')\n        except OSError:\n            continue\n"
        "        raise AssertionError(p)\n"
    )
    (project / "tests" / "test_probe.py").write_text(probe)
    ev = evidence.evidence(setup(project), head(project), "w")
    assert "tests/test_probe.py::test_write_real_repo" in ev.fail_to_pass, ev
    assert not (project / "planted.txt").exists() and not (project / ".git" / "planted").exists()
    assert not (project / ".git" / "worktrees").exists(), "no worktree is registered in the real .git"
