"""Build the smoke suite: a git repository per task (from the sources in smoke_tasks.py) and the
tasks file evals/smoke.jsonl that points at them (`repo` relative to the tasks file).

    python evals/build_smoke.py                      # repositories in evals/smoke-repos/
    python evals/build_smoke.py --repos DIR --tasks DIR/smoke.jsonl --solutions DIR/solutions
    python evals/build_smoke.py --check              # smoke.jsonl is what the sources give

Commits carry a fixed identity and date, so the same sources give the same commits anywhere. The
reference fixes go to --solutions (one diff per task) only when asked: they are for tests and for
checking the tasks, never part of the tasks file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from smoke_tasks import TASKS, TEST_COMMAND  # noqa: E402

FIXED = {
    "GIT_AUTHOR_NAME": "autodev smoke",
    "GIT_AUTHOR_EMAIL": "smoke@autodev.invalid",
    "GIT_COMMITTER_NAME": "autodev smoke",
    "GIT_COMMITTER_EMAIL": "smoke@autodev.invalid",
    "GIT_AUTHOR_DATE": "2026-12-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-12-01T00:00:00+00:00",
}


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, **FIXED}
    r = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} in {repo} failed: {r.stderr}")
    return r.stdout


def _write(repo: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = repo / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def build_repo(task: dict, root: Path) -> tuple[str, str]:
    """The task's repository at root/<id>, tagged `base`; returns (test patch, reference fix)."""
    repo = root / task["id"]
    if repo.exists():
        shutil.rmtree(repo)
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, {".gitignore": "__pycache__/\n*.pyc\n", "README.md": f"# {task['id']}\n", **task["files"]})
    _write(repo, {"tests/__init__.py": ""})
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", f"{task['id']}: base")
    _git(repo, "tag", "base")
    _write(repo, task["hidden"])
    _git(repo, "add", "-A")
    test_patch = _git(repo, "diff", "--cached", "base")
    _git(repo, "rm", "-q", "--cached", *task["hidden"])
    for rel in task["hidden"]:
        (repo / rel).unlink()
    _write(repo, task["fix"])
    fix = _git(repo, "diff")
    _git(repo, "checkout", "-q", "--", ".")
    return test_patch, fix


def tasks_lines(root: Path, tasks_file: Path, patches: dict[str, str]) -> str:
    rel = os.path.relpath(root, tasks_file.resolve().parent)
    lines = []
    for task in TASKS:
        line = {
            "id": task["id"],
            "repo": f"{rel}/{task['id']}",
            "base_commit": "base",
            "problem_statement": task["statement"],
            "test_patch": patches[task["id"]],
            "test_command": TEST_COMMAND,
        }
        lines.append(json.dumps(line, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def build(repos: Path, tasks_file: Path, solutions: Path | None = None) -> str:
    repos.mkdir(parents=True, exist_ok=True)
    patches: dict[str, str] = {}
    for task in TASKS:
        test_patch, fix = build_repo(task, repos)
        patches[task["id"]] = test_patch
        if solutions is not None:
            solutions.mkdir(parents=True, exist_ok=True)
            (solutions / f"{task['id']}.diff").write_text(fix)
    return tasks_lines(repos, tasks_file, patches)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repos", type=Path, default=HERE / "smoke-repos")
    ap.add_argument("--tasks", type=Path, default=HERE / "smoke.jsonl")
    ap.add_argument("--solutions", type=Path, default=None)
    ap.add_argument("--check", action="store_true", help="fail if the tasks file differs from the sources")
    a = ap.parse_args()
    text = build(a.repos, a.tasks, a.solutions)
    if a.check:
        if not a.tasks.exists() or a.tasks.read_text() != text:
            print(f"{a.tasks} is out of date: run python evals/build_smoke.py", file=sys.stderr)
            return 1
        print(f"{a.tasks}: {len(TASKS)} tasks, up to date; repositories in {a.repos}")
        return 0
    a.tasks.write_text(text)
    print(f"{len(TASKS)} tasks: {a.tasks}; repositories in {a.repos}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
