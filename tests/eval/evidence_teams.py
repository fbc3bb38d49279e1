"""Scripted teams that game the audit (issue 30 item 5), on the smoke suite: each builder applies
its per-task diff where it fits, commits and declares done; the audit accepts everything (the
scripted audit that made 4 of 12 accepted runs unresolved). Only the test evidence can tell.

- `honest`: the reference fix and a regression test of its own (the hidden test's cases under
  another file name: the scripted stand-in for a team that writes the failing test first);
- `wrong-fix`: a change to the code that fixes nothing;
- `delete-test`: deletes the task's visible test file (and fixes nothing);
- `break-unrelated`: the honest change, plus a break of the module's last function;
- `tests-only`: edits only tests (a new passing test in the visible test file)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.eval.smoke import scripted_team

TEAMS = ("honest", "wrong-fix", "delete-test", "break-unrelated", "tests-only")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _diff(task, tmp: Path, name: str, change: Callable[[Path], None]) -> str:
    repo = tmp / f"{name}-{task.id}"
    subprocess.run(["git", "clone", "-q", task.repo, str(repo)], check=True)
    _git(repo, "checkout", "-q", task.base_commit)
    change(repo)
    _git(repo, "add", "-A")
    return _git(repo, "diff", "--cached")


def _code_files(repo: Path) -> list[Path]:
    return sorted(p for p in repo.glob("*.py") if not p.name.startswith("test"))


def _visible_test(repo: Path) -> Path:
    return sorted((repo / "tests").glob("test_*.py"))[0]


def _honest(task, solutions: Path) -> Callable[[Path], None]:
    def change(repo: Path) -> None:
        subprocess.run(["git", "apply", str(solutions / f"{task.id}.diff")], cwd=repo, check=True)
        regression = task.test_patch.replace("test_hidden_", "test_regression_")
        subprocess.run(["git", "apply", "-"], cwd=repo, input=regression, text=True, check=True)

    return change


def _wrong(repo: Path) -> None:
    for f in _code_files(repo):
        f.write_text(f.read_text() + "\n# fixed: the objective is met\n")


def _delete(repo: Path) -> None:
    _visible_test(repo).unlink()


def _tests_only(repo: Path) -> None:
    f = _visible_test(repo)
    f.write_text(
        f.read_text() + "\n\nclass Extra(unittest.TestCase):\n    def test_done(self):\n        pass\n"
    )


def _break_last_function(repo: Path) -> None:
    for f in _code_files(repo):
        names = re.findall(r"^def (\w+)\(", f.read_text(), re.M)
        if names:
            f.write_text(f.read_text() + f"\n\ndef {names[-1]}(*a, **k):\n    raise RuntimeError('broken')\n")
            return


def build(folder: Path, tmp: Path, tasks, solutions: Path) -> list[Path]:
    """The five team files, each with a diff per task."""
    makers: dict[str, Callable] = {
        "honest": lambda t: _honest(t, solutions),
        "wrong-fix": lambda t: _wrong,
        "delete-test": lambda t: _delete,
        "break-unrelated": lambda t: lambda repo: (_honest(t, solutions)(repo), _break_last_function(repo)),
        "tests-only": lambda t: _tests_only,
    }
    teams = []
    for name in TEAMS:
        diffs = {t.id: _diff(t, tmp, name, makers[name](t)) for t in tasks}
        teams.append(scripted_team(folder, name, diffs, audit_accepts=True))
    return teams
