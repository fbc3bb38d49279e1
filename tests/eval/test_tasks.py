"""Task files: autodev's fields and SWE-bench's as they are, repositories found (relative to the
tasks file, or under --repos for owner/name), and every bad line named with its key and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autodev.errors import UsageError
from autodev.eval.tasks import PYTEST_DEFAULT, Selection, TaskError, load_tasks, parse_shard
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


def test_a_subset_by_id_globs_shard_and_limit(tmp_path):
    # SWE-bench lines whose repositories have no mirror: only the selected ones need one.
    ids = [f"acme__widgets-{n}" for n in range(1, 8)] + ["other__thing-1"]
    (tmp_path / "mirrors" / "acme" / "widgets").mkdir(parents=True)
    f = write(
        tmp_path / "swe.jsonl",
        *({**SWE, "instance_id": i, "repo": i.split("-")[0].replace("__", "/")} for i in ids),
    )
    pick = lambda **kw: [t.id for t in load_tasks(f, tmp_path / "mirrors", selection=Selection(**kw))]  # noqa: E731
    assert pick(ids=("acme__*",)) == ids[:7]
    assert pick(ids=("acme__widgets-1", "*-7")) == [ids[0], ids[6]]
    assert pick(ids=("acme__*",), limit=2) == ids[:2]
    shards = [pick(ids=("acme__*",), shard=(i, 3)) for i in (1, 2, 3)]
    assert shards == [[ids[0], ids[3], ids[6]], [ids[1], ids[4]], [ids[2], ids[5]]]
    assert shards == [pick(ids=("acme__*",), shard=(i, 3)) for i in (1, 2, 3)]  # the same split each time
    assert pick(ids=("acme__*",), shard=(2, 3), limit=1) == [ids[1]]
    with pytest.raises(TaskError, match="has no mirror under"):
        pick(ids=("other__*",))
    with pytest.raises(UsageError, match=r"--instance-ids 'zzz\*' matches no task of .*swe.jsonl") as e:
        pick(ids=("acme__*", "zzz*"))
    assert e.value.exit_code == 2 and "-i 'django__*'" in e.value.fix
    with pytest.raises(UsageError, match="--shard 3/3 leaves no task") as e:
        pick(ids=("*-1",), shard=(3, 3))
    assert "no larger than the number of tasks" in e.value.fix


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "1", "1/0", "-1/2", ""])
def test_a_shard_is_i_of_n(text):
    with pytest.raises(UsageError, match=f"--shard {text} is not a shard") as e:
        parse_shard(text)
    assert e.value.fix == "give --shard I/N with 1 <= I <= N, e.g. --shard 1/4"
    assert parse_shard("2/4") == (2, 4)


def test_limit_is_a_positive_number():
    with pytest.raises(UsageError, match="--limit 0 is not a number of tasks") as e:
        Selection(limit=0)
    assert e.value.fix == "give --limit 1 or more"
