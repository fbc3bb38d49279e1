"""Task files (SPEC §18): one task a JSON line, in autodev's fields or SWE-bench's as they are.

autodev's: `id`, `repo` (a path relative to the tasks file, an absolute path or a git URL),
`base_commit` (a sha or a ref), `problem_statement`, optional `setup`, `setup_network` (true:
the setup command gets the network; it never has it otherwise), `test_patch`, `test_command`. SWE-bench's: `instance_id`, `repo` as `owner/name` (found under `--repos DIR`),
`base_commit`, `problem_statement`, `test_patch`, `FAIL_TO_PASS`, `PASS_TO_PASS`; the test command
comes from `--test-command` (a template with `{tests}`) or the repository's default. A bad line
is a `TaskError` naming the file, the line, the key and the fix (exit 2).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeGuard

from autodev.errors import UsageError
from autodev.store.journal import JsonObject, is_object

# Tuples, not sets: the first missing key reported must not depend on the interpreter's hash seed.
OWN_REQUIRED = ("id", "repo", "base_commit", "problem_statement", "test_command")
OWN_TEXT = (*OWN_REQUIRED, "setup", "test_patch")
OWN_KEYS = (*OWN_TEXT, "setup_network")
SWE_REQUIRED = ("instance_id", "repo", "base_commit", "problem_statement", "test_patch")

# What SWE-bench's own harness runs per repository, with {tests} the FAIL_TO_PASS and PASS_TO_PASS
# tests; anything else runs pytest on them.
SWE_DEFAULTS = {
    "django/django": "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 {tests}",
    "sympy/sympy": "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose {tests}",
}
PYTEST_DEFAULT = "pytest -rA {tests}"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+@-]{0,199}$")
_OWNER_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class TaskError(UsageError):
    """A line of a tasks file is wrong: names the file, the line, the key and the fix."""


@dataclass(frozen=True)
class Task:
    """One task, whatever format it came in: what a run and its grading need."""

    id: str
    repo: str  # a local path (absolute) or a git URL: what `git clone` gets
    base_commit: str
    problem_statement: str
    test_command: str
    setup: str = ""
    test_patch: str = ""
    setup_network: bool = False  # the setup command runs with the network (the sandbox's default: none)

    def digest(self) -> str:
        """Changes when anything the run or the grade depends on changes (resume re-runs it)."""
        fields = asdict(self)
        if not self.setup_network:  # the digests of tasks written before the key existed hold
            del fields["setup_network"]
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Selection:
    """Which tasks of the file run (`--instance-ids`, `--shard`, `--limit`, applied in that order):
    ids matching any glob, then every N-th of those from the I-th on (a shard: the same file
    always splits the same way, and the N shards together are every task once), then the first
    `limit` of what is left."""

    ids: tuple[str, ...] = ()
    shard: tuple[int, int] | None = None  # (I, N), 1 <= I <= N
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise UsageError(f"--limit {self.limit} is not a number of tasks", "give --limit 1 or more")
        for glob in self.ids:
            if not glob.strip():
                raise UsageError(
                    "--instance-ids '' matches nothing", "give a task id or a glob, e.g. -i 'django__*'"
                )

    def pick(self, ids: list[str], tasks_file: Path) -> list[str]:
        chosen = ids
        if self.ids:
            chosen = [i for i in ids if any(fnmatch.fnmatchcase(i, g) for g in self.ids)]
            for glob in self.ids:
                if not any(fnmatch.fnmatchcase(i, glob) for i in ids):
                    raise UsageError(
                        f"--instance-ids {glob!r} matches no task of {tasks_file}",
                        "give an id of the file or a glob that matches one (e.g. -i 'django__*')",
                    )
        if self.shard:
            i, n = self.shard
            chosen = chosen[i - 1 :: n]
        if self.limit is not None:
            chosen = chosen[: self.limit]
        return chosen


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` → (I, N); anything else names --shard and the fix."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 1 <= int(m[1]) <= int(m[2]):
        raise UsageError(
            f"--shard {text} is not a shard", "give --shard I/N with 1 <= I <= N, e.g. --shard 1/4"
        )
    return int(m[1]), int(m[2])


def load_tasks(
    path: Path,
    repos: Path | None = None,
    test_command: str | None = None,
    selection: Selection | None = None,
) -> list[Task]:
    """The selected tasks of `path`, checked; a bad line, a missing repository or a repeated id is
    an error. Every line is checked for its JSON and its id; only the selected ones are read whole
    (a SWE-bench file needs mirrors of the selected tasks' repositories only)."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: no such tasks file", "name a JSONL file with one task a line")
    lines: list[tuple[str, str, JsonObject]] = []  # (id, where, raw)
    seen: dict[str, int] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path}:{n}"
        try:
            raw: object = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskError(
                f"{where}: not JSON ({e.msg} at column {e.colno})", "one JSON object a line"
            ) from e
        if not is_object(raw):
            raise TaskError(
                f"{where}: a task is a JSON object, not {type(raw).__name__}", "one JSON object a line"
            )
        key = "instance_id" if "instance_id" in raw else "id"
        task_id = _checked_id(_text(raw, key, where, True), where, key)
        if task_id in seen:
            raise TaskError(
                f"{where}: id {task_id!r} is also the task on line {seen[task_id]}",
                "give every task its own id",
            )
        seen[task_id] = n
        lines.append((task_id, where, raw))
    if not lines:
        raise TaskError(f"{path}: no tasks in the file", "add one JSON task a line (docs/eval.md)")
    sel = selection or Selection()
    chosen = set(sel.pick([i for i, _, _ in lines], path))
    if not chosen and sel.shard:  # ids matched and limit >= 1: only a shard can leave nothing
        raise UsageError(
            f"--shard {sel.shard[0]}/{sel.shard[1]} leaves no task of {path} to run",
            "give --shard an N no larger than the number of tasks",
        )
    tasks = [
        _swe_task(raw, where, repos, test_command) if "instance_id" in raw else _own_task(raw, where, path)
        for task_id, where, raw in lines
        if task_id in chosen
    ]
    return tasks


def _text(raw: JsonObject, key: str, where: str, required: bool) -> str:
    value = raw.get(key)
    if value is None:
        if required:
            raise TaskError(
                f"{where}: key {key!r} is missing", f"add {key!r} (docs/eval.md lists the fields)"
            )
        return ""
    if not isinstance(value, str):
        raise TaskError(
            f"{where}: key {key!r} must be a string, not {type(value).__name__}", f"quote {key!r}"
        )
    if required and not value.strip():
        raise TaskError(f"{where}: key {key!r} is empty", f"give {key!r} a value")
    return value


def _checked_id(value: str, where: str, key: str) -> str:
    if not _ID.match(value):
        raise TaskError(
            f"{where}: key {key!r} = {value!r} is not a usable id",
            "use letters, digits and . _ - : + @ (it names the task's folder)",
        )
    return value


def _own_task(raw: JsonObject, where: str, tasks_file: Path) -> Task:
    unknown = sorted(set(raw) - set(OWN_KEYS))
    if unknown:
        raise TaskError(
            f"{where}: unknown key {unknown[0]!r}",
            f"remove it; a task's keys are {', '.join(sorted(OWN_KEYS))} (or SWE-bench's, with instance_id)",
        )
    fields = {k: _text(raw, k, where, k in OWN_REQUIRED) for k in OWN_TEXT}
    fields["id"] = _checked_id(fields["id"], where, "id")
    fields["repo"] = _own_repo(fields["repo"], where, tasks_file)
    return Task(**fields, setup_network=_flag(raw, "setup_network", where))


def _flag(raw: JsonObject, key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise TaskError(
            f"{where}: key {key!r} must be true or false, not {json.dumps(value)}",
            f"write {key!r}: true (or leave it out for false)",
        )
    return value


def _own_repo(repo: str, where: str, tasks_file: Path) -> str:
    if re.match(r"^[a-z][a-z0-9+.-]*://", repo) or re.match(r"^[\w.-]+@[\w.-]+:", repo):
        return repo  # a git URL: cloned as it is
    p = Path(repo).expanduser()
    if not p.is_absolute():
        p = tasks_file.resolve().parent / p
    if not p.exists():
        raise TaskError(
            f"{where}: key 'repo': {p} does not exist",
            "give a git repository's path (relative paths are relative to the tasks file) or a git URL",
        )
    return str(p)


def _swe_task(raw: JsonObject, where: str, repos: Path | None, template: str | None) -> Task:
    fields = {k: _text(raw, k, where, True) for k in SWE_REQUIRED}
    name = fields["repo"]
    if not _OWNER_NAME.match(name):
        raise TaskError(f"{where}: key 'repo' = {name!r} is not owner/name", "SWE-bench's repo is owner/name")
    tests = [*_test_list(raw, "FAIL_TO_PASS", where), *_test_list(raw, "PASS_TO_PASS", where)]
    command = _text(raw, "test_command", where, False) or template or SWE_DEFAULTS.get(name, PYTEST_DEFAULT)
    if "{tests}" in command:
        command = command.replace("{tests}", " ".join(shlex.quote(t) for t in tests))
    return Task(
        id=_checked_id(fields["instance_id"], where, "instance_id"),
        repo=_mirror(name, repos, where),
        base_commit=fields["base_commit"],
        problem_statement=fields["problem_statement"],
        test_command=command,
        setup=_text(raw, "setup", where, False),
        test_patch=fields["test_patch"],
        setup_network=_flag(raw, "setup_network", where),
    )


def _test_list(raw: JsonObject, key: str, where: str) -> list[str]:
    value: object = raw.get(key, [])
    if isinstance(value, str):  # the datasets on the hub carry these lists as JSON text
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError as e:
            raise TaskError(
                f"{where}: key {key!r} is text but not a JSON list", "a list of test names"
            ) from e
    names = [t for t in value if isinstance(t, str)] if _is_list(value) else []
    if not _is_list(value) or len(names) != len(value):
        raise TaskError(f"{where}: key {key!r} must be a list of test names", "a list of strings")
    return names


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def _mirror(name: str, repos: Path | None, where: str) -> str:
    if repos is None:
        raise TaskError(
            f"{where}: repo {name!r} is a SWE-bench owner/name and no --repos folder was given",
            "pass --repos DIR, with a local mirror of each repository at DIR/owner/name (or DIR/owner__name)",
        )
    owner, repo = name.split("/")
    candidates = [repos / owner / repo, repos / f"{owner}__{repo}", repos / repo]
    for c in candidates:
        if c.exists():
            return str(c.resolve())
    raise TaskError(
        f"{where}: repo {name!r} has no mirror under {repos}",
        f"clone it there first (git clone --mirror ... {candidates[0]}); looked for "
        + ", ".join(str(c) for c in candidates),
    )
