"""Replay re-checks a done's test evidence like a tool's result (issue 30 item 6): the tests run
again on the replay's clone, and a recorded summary that the tests no longer give is the first
divergence."""

from __future__ import annotations

import json

import pytest

from autodev.guard import sandbox
from autodev.replay import replay as rp
from autodev.store.paths import RunPaths
from tests.conftest import git, run_dir, write_team
from tests.e2e.helpers import ACCEPT, BUILDER, run_until_idle
from tests.e2e.test_evidence import CALC, COMMAND, READ, RIGHT, TESTS, WRONG, fix

pytestmark = pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")


def test_a_run_with_evidence_replays_identical_and_a_changed_summary_diverges(repo, autodev):
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug in add")
    config = f'testCommand = "{COMMAND}"\ndoneEvidence = "required"\nsandboxRead = {READ}\n'
    write_team(repo, BUILDER, fix(WRONG, "fixed add") + fix(RIGHT, "fixed add, mul intact") + ACCEPT, config)
    run_until_idle(autodev, repo, "add(2, 3) must be 5", expect=0)

    assert rp.run(rp.from_run(RunPaths(repo))) is None

    thread = run_dir(repo) / "thread.jsonl"
    posts = [json.loads(line) for line in thread.read_text().splitlines()]
    [accept] = [p for p in posts if p.get("verdict") == "accept"]
    accept["evidence"]["summary"] = "✔ 2 now pass, 0 broke"  # not what the tests say
    thread.write_text("".join(json.dumps(p) + "\n" for p in posts))
    d = rp.run(rp.from_run(RunPaths(repo)))
    assert d is not None and d.step == "post (user, system or audit)"
    assert "[tests: ✔ 2 now pass, 0 broke]" in d.expected and "[tests: ✔ 1 now pass, 0 broke]" in d.got
