"""`autodev eval` at the command line: bad input is exit 2 with the file, line, key and fix, and
neither that nor --help imports litellm (each run's own `autodev start` does)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if "|" in line}


def test_bad_tasks_line_exits_2_naming_it_without_litellm(tmp_path, inproc):
    (tmp_path / "tasks.jsonl").write_text('{"id": "a", "repo": ".", "base_commit": "main"}\n')
    (tmp_path / "team.toml").write_text(
        '[[participants]]\nname = "solo"\nmodel = "openai/gpt-5"\nwrite = true\n'
    )
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autodev", "eval", "tasks.jsonl", "--team", "team.toml",
         "--out", "out", "--max-wall-min", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr[-2000:]
    assert "tasks.jsonl:1: key 'problem_statement' is missing" in r.stderr
    assert "fix: add 'problem_statement'" in r.stderr
    assert "autodev.eval.tasks" in imported(r.stderr) and "litellm" not in imported(r.stderr)

    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autodev", "eval", "--help"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0 and "--max-cost-usd" in r.stdout and "--executor" in r.stdout
    assert "litellm" not in imported(r.stderr)

    r = inproc(tmp_path, "eval", "tasks.jsonl", "--team", "team.toml", "--out", "o", "--max-tokens", "0")
    assert r.returncode == 2 and "--max-tokens 0 is not a cap" in r.stderr


@pytest.mark.parametrize(
    "args, says, fix",
    [
        (["--limit", "0"], "--limit 0 is not a number of tasks", "give --limit 1 or more"),
        (["--shard", "5/4"], "--shard 5/4 is not a shard", "give --shard I/N with 1 <= I <= N"),
        (["--shard", "two"], "--shard two is not a shard", "e.g. --shard 1/4"),
        (["-i", "nope-*"], "--instance-ids 'nope-*' matches no task of tasks.jsonl", "-i 'django__*'"),
        (["--shard", "3/3"], "--shard 3/3 leaves no task of tasks.jsonl to run", "no larger than"),
        (["--best-of", "0"], "--best-of 0: give 1 or more runs per task and team", "e.g. --best-of 3"),
    ],
)
def test_a_bad_subset_option_is_exit_2_naming_it(tmp_path, inproc, args, says, fix):
    line = {"repo": ".", "base_commit": "main", "problem_statement": "p", "test_command": "true"}
    (tmp_path / "tasks.jsonl").write_text("".join(json.dumps({"id": i, **line}) + "\n" for i in ("a", "b")))
    (tmp_path / "team.toml").write_text(
        '[[participants]]\nname = "solo"\nmodel = "openai/gpt-5"\nwrite = true\n'
    )
    r = inproc(tmp_path, "eval", "tasks.jsonl", "--team", "team.toml", "--out", "o", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    said, fixed = r.stderr.splitlines()
    assert said == f"autodev: {says}" and fixed.startswith("  fix: ") and fix in fixed
    assert not (tmp_path / "o").exists()  # nothing ran
