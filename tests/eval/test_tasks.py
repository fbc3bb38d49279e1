"""Task files: autodev's fields and SWE-bench's as they are, repositories found (relative to the
tasks file, or under --repos for owner/name), and every bad line named with its key and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autodev.eval.tasks import PYTEST_DEFAULT, TaskError, load_tasks
from tests.conftest import git

OWN = {
    "id": "t-1",
    "repo": "repos/one",
    "base_commit": "main",
    "problem_statement": "fix it",
    "test_command": "true",
}


def write(path: Path, *lines) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


@pytest.fixture
def tasks_dir(tmp_path) -> Path:
    r = tmp_path / "repos" / "one"
    r.mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    return tmp_path


def test_own_fields_with_a_path_relative_to_the_tasks_file(tasks_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)  # not the tasks file's folder
    f = write(
        tasks_dir / "tasks.jsonl", "# a comment", "", {**OWN, "setup": "pip install -e .", "test_patch": "x"}
    )
    [t] = load_tasks(f)
    assert (t.id, t.repo, t.base_commit, t.setup, t.test_patch) == (
        "t-1", str(tasks_dir / "repos" / "one"), "main", "pip install -e .", "x"
    )  # fmt: skip
    assert (
        t.digest() != load_tasks(write(tasks_dir / "b.jsonl", {**OWN, "test_command": "false"}))[0].digest()
    )


@pytest.mark.parametrize(
    "line, says",
    [
        ("{not json", "tasks.jsonl:2: not JSON"),
        ("[1]", "tasks.jsonl:2: a task is a JSON object"),
        ({**OWN, "id": "t-2", "problem_statement": None}, "key 'problem_statement' is missing"),
        ({**OWN, "id": "t-2", "test_command": 3}, "key 'test_command' must be a string"),
        ({**OWN, "id": "t-2", "hints": "x"}, "unknown key 'hints'"),
        ({**OWN, "id": "t 2"}, "key 'id' = 't 2' is not a usable id"),
        ({**OWN, "id": "t-2", "repo": "nowhere"}, "key 'repo':"),
        (OWN, "id 't-1' is also the task on line 1"),
        ({"instance_id": "a__b-1", "repo": "a/b", "base_commit": "x", "problem_statement": "p", "test_patch": ""},
         "key 'test_patch' is empty"),
    ],
)  # fmt: skip
def test_a_bad_line_is_named_with_its_key_and_fix(tasks_dir, line, says):
    f = write(tasks_dir / "tasks.jsonl", OWN, line)
    with pytest.raises(TaskError) as e:
        load_tasks(f)
    assert says in e.value.message and e.value.fix and e.value.exit_code == 2
    assert str(f) in e.value.message


SWE = {
    "instance_id": "acme__widgets-42",
    "repo": "acme/widgets",
    "base_commit": "abc123",
    "problem_statement": "widgets break",
    "test_patch": "diff --git a/t.py b/t.py\n",
    "FAIL_TO_PASS": '["tests/test_w.py::test_new"]',
    "PASS_TO_PASS": ["tests/test_w.py::test_old"],
    "patch": "the gold patch: never used",
    "hints_text": "",
    "created_at": "2023-01-01",
    "version": "1.0",
    "environment_setup_commit": "abc123",
}


def test_swe_bench_lines_as_they_are_with_local_mirrors(tmp_path):
    (tmp_path / "mirrors" / "acme" / "widgets").mkdir(parents=True)
    (tmp_path / "mirrors" / "django__django").mkdir(parents=True)
    django = {
        **SWE,
        "instance_id": "django__django-1",
        "repo": "django/django",
        "FAIL_TO_PASS": ["a.b.T"],
        "PASS_TO_PASS": "[]",
    }
    f = write(tmp_path / "swe.jsonl", SWE, django)
    w, d = load_tasks(f, repos=tmp_path / "mirrors")
    assert w.id == "acme__widgets-42" and w.repo == str(tmp_path / "mirrors" / "acme" / "widgets")
    assert w.test_command == PYTEST_DEFAULT.replace(
        "{tests}", "tests/test_w.py::test_new tests/test_w.py::test_old"
    )
    assert w.test_patch == SWE["test_patch"] and "gold" not in repr(w)
    assert d.repo == str(tmp_path / "mirrors" / "django__django")
    assert d.test_command.startswith("./tests/runtests.py") and d.test_command.endswith(" a.b.T")
    [t, _] = load_tasks(f, repos=tmp_path / "mirrors", test_command="make test ARGS='{tests}'")
    assert t.test_command.startswith("make test ARGS='")


def test_swe_bench_repos_need_a_mirror(tmp_path):
    f = write(tmp_path / "swe.jsonl", SWE)
    with pytest.raises(TaskError, match="no --repos folder was given") as e:
        load_tasks(f)
    assert "--repos DIR" in e.value.fix
    with pytest.raises(TaskError, match="has no mirror under") as e:
        load_tasks(f, repos=tmp_path)
    assert "acme/widgets" in e.value.fix


def test_no_tasks_and_no_file(tmp_path):
    with pytest.raises(TaskError, match="no such tasks file"):
        load_tasks(tmp_path / "none.jsonl")
    with pytest.raises(TaskError, match="no tasks in the file"):
        load_tasks(write(tmp_path / "empty.jsonl", "# nothing"))
