"""`autodev eval` at the command line: bad input is exit 2 with the file, line, key and fix, and
neither that nor --help imports litellm (each run's own `autodev start` does)."""

from __future__ import annotations

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
