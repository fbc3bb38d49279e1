"""The evidence's runs, for real: a git repository with pytest, the tests run in bubblewrap in
scratch copies (base commit; head plus working tree), cached, capped by the timeout (SPEC §22).

pytest inside the sandbox: the system's python3 here has no pytest, so the test command is this
checkout's venv python, made visible with the room's `expose` (what config `sandboxRead` gives
it): `sandbox.own_python()`, the venv and its base installation."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from autodev.guard import sandbox
from autodev.harness import evidence
from autodev.store.paths import RunPaths
from tests.conftest import git

PYTEST = f"{sys.executable} -m pytest -q"
EXPOSE = sandbox.own_python()
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)


@pytest.fixture
def project(repo: Path, autodev_home) -> Path:
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug")
    return repo


def setup(repo: Path, command: str = PYTEST, timeout: float = 120, stopping=lambda: False):
    box = sandbox.resolve("auto")
    if not box.active:
        pytest.skip(f"no working bubblewrap here: {box.problem}")
    run_dir = RunPaths(repo).run_dir
    return evidence.TestSetup(
        repo=repo,
        folder=run_dir / "evidence",
        command=command,
        chosen="config",
        timeout=timeout,
        room_for=lambda work: box.room(work, hide=sandbox.hidden(run_dir), expose=EXPOSE),
        stopping=stopping,
    )


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_fix_in_the_working_tree_reads_as_now_pass_and_the_base_run_is_cached(project):
    base = head(project)
    (project / "calc.py").write_text(CALC.replace("a - b", "a + b"))  # uncommitted: the working tree
    s = setup(project)
    ev = evidence.evidence(s, base, "done-1")
    assert ev.outcome == "ran", ev.reason
    assert ev.fail_to_pass == ["tests/test_calc.py::test_add"]
    assert ev.pass_to_pass == ["tests/test_calc.py::test_mul"]
    assert ev.pass_to_fail == [] and ev.code_changed == ["calc.py"] and not ev.base_cached
    assert ev.summary() == "✔ 1 now pass, 0 broke"
    assert not list(s.folder.glob("copy-*")), "scratch copies are removed"
    # a second done on the same base: the base run is read from the cache
    (project / "calc.py").write_text(CALC.replace("a * b", "a ** b"))
    again = evidence.evidence(s, base, "done-2")
    assert again.base_cached
    assert again.pass_to_fail == ["tests/test_calc.py::test_mul"]
    assert again.still_failing == ["tests/test_calc.py::test_add"]
    # the same done asked again (a restart) reads its evidence back, unchanged
    assert evidence.evidence(s, base, "done-1") == ev


def test_a_deleted_test_counts_as_broken_and_the_changed_test_file_is_listed(project):
    base = head(project)
    (project / "tests" / "test_calc.py").write_text(TESTS.split("\n\n\ndef test_mul")[0] + "\n")
    ev = evidence.evidence(setup(project), base, "d")
    assert ev.pass_to_fail == ["tests/test_calc.py::test_mul"]
    assert ev.tests_changed == ["tests/test_calc.py"]


def test_the_tests_run_without_network_or_the_hosts_home(project):
    base = head(project)
    probe = (
        "import os, socket\n\n\ndef test_offline():\n"
        "    s = socket.socket()\n    s.settimeout(2)\n"
        "    assert s.connect_ex(('1.1.1.1', 53)) != 0\n\n\n"
        "def test_no_keys():\n    assert 'AUTODEV_HOME' not in os.environ\n"
        "    assert not [k for k in os.environ if k.endswith('_API_KEY')]\n"
    )
    (project / "tests" / "test_probe.py").write_text(probe)
    import os

    os.environ["OPENAI_API_KEY"] = "sk-evidence-test"
    try:
        ev = evidence.evidence(setup(project), base, "p")
    finally:
        del os.environ["OPENAI_API_KEY"]
    assert "tests/test_probe.py::test_offline" in ev.fail_to_pass
    assert "tests/test_probe.py::test_no_keys" in ev.fail_to_pass


def test_a_hanging_test_run_ends_as_a_named_timeout(project):
    base = head(project)
    start = time.monotonic()
    ev = evidence.evidence(setup(project, "sleep 60", timeout=1), base, "t")
    assert time.monotonic() - start < 30
    assert ev.outcome == "timeout" and "testTimeoutSec = 1" in ev.reason
    assert ev.gaps() and "could not run (timeout)" in ev.gaps()[0]


def test_a_command_without_machine_results_is_an_error_that_says_so(project):
    ev = evidence.evidence(setup(project, "echo 3 passed"), head(project), "e")
    assert ev.outcome == "error" and "left no readable results" in ev.reason and "3 passed" in ev.reason


def test_pytest_anywhere_in_a_compound_command_writes_its_results(project):
    """PYTEST_ADDOPTS, not arguments appended: `cd … && pytest …; true` is read all the same."""
    base = head(project)
    (project / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    ev = evidence.evidence(setup(project, f"cd tests && cd .. && {PYTEST} tests; true"), base, "c")
    assert ev.outcome == "ran", ev.reason
    assert ev.fail_to_pass == ["tests/test_calc.py::test_add"]


def test_a_stop_during_the_tests_caches_nothing(project):
    s = setup(project, "sleep 60", stopping=lambda: True)
    with pytest.raises(evidence.EvidenceStopped):
        evidence.evidence(s, head(project), "s")
    assert not list(s.folder.glob("done-*")) and not list(s.folder.glob("run-*"))


def test_a_new_test_that_passes_without_the_code_change_does_not_show_it(project):
    """The gamed done the two runs cannot see: a change to the code that fixes nothing, plus the
    failing test rewritten to pass. A third run (the run's tests on the base's code) shows that
    the test passes whatever the code does; the gate reopens it. The honest done (the fix and a
    regression test of its own) keeps its evidence."""
    base = head(project)
    (project / "calc.py").write_text(CALC + "\n# fixed\n")
    (project / "tests" / "test_calc.py").write_text(TESTS.replace("add(2, 3) == 5", "add(2, 3) == -1"))
    s = setup(project)
    gamed = evidence.evidence(s, base, "done-1")
    assert gamed.fail_to_pass == ["tests/test_calc.py::test_add"] and gamed.code_changed == ["calc.py"]
    assert gamed.pass_without_code == ["tests/test_calc.py::test_add"] and gamed.without_code_sec > 0
    assert gamed.summary() == "✘ 1 now pass without the code change, 0 broke"
    assert gamed.gaps() == [
        "no test newly passes because of the code change: tests/test_calc.py::test_add pass on the "
        "base's code with the run's tests too"
    ]

    (project / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    (project / "tests" / "test_calc.py").write_text(TESTS)
    (project / "tests" / "test_regression.py").write_text(
        "from calc import add\n\n\ndef test_neg():\n    assert add(-1, 1) == 0\n"
    )
    honest = evidence.evidence(s, base, "done-2")
    assert honest.fail_to_pass == ["tests/test_calc.py::test_add", "tests/test_regression.py::test_neg"]
    assert honest.pass_without_code == [] and honest.gaps() == []
    assert honest.summary() == "✔ 2 now pass, 0 broke"


UNITTESTS = (
    "import unittest\n\nfrom calc import add, mul\n\n\nclass Calc(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n"
    "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n\n"
    "    @unittest.skip('later')\n    def test_div(self):\n        pass\n"
)


def test_a_unittest_repository_gets_per_test_evidence_from_the_sandboxs_own_python(repo):
    """The detected `python3 -m unittest` runs in the sandbox with the system's python3 (no
    pytest there) through harness/unittest_junit.py, and its per-test results are the evidence,
    with the same ids pytest would give."""
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(UNITTESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug")
    base = head(repo)
    (repo / "calc.py").write_text(CALC.replace("a - b", "a + b"))
    command, chosen = evidence.command_for(repo, "")
    assert (command, chosen) == ("python3 -m unittest", "detected")
    ev = evidence.evidence(setup(repo, command), base, "done-1")
    assert ev.outcome == "ran", ev.reason
    assert ev.fail_to_pass == ["test_calc.py::Calc::test_add"]
    assert ev.pass_to_pass == ["test_calc.py::Calc::test_mul"]
    assert ev.summary() == "✔ 1 now pass, 0 broke"
    assert not (repo / ".autodev-evidence-unittest.py").exists(), "the runner goes only into the scratch copy"
