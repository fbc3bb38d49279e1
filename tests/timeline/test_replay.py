"""`autodev replay`: a recorded run re-executed offline is "identical"; a changed prompt or a
changed tool result is reported as the first divergence."""

from __future__ import annotations

import pytest

from autodev.store.paths import RunPaths
from autodev.timeline import replay as rp
from tests.timeline.conftest import copy_run


@pytest.fixture
def run_copy(recorded_run, tmp_path):
    return copy_run(recorded_run, tmp_path / "repo")


def test_replay_is_identical_with_real_and_recorded_tools(run_copy, tmp_path):
    rec = rp.from_run(RunPaths(run_copy))
    assert rp.run(rec) is None
    assert rp.run(rec, recorded_tools=True) is None


def test_a_changed_prompt_is_the_first_divergence(run_copy):
    prompts = run_copy / ".autodev" / "prompts"
    prompts.mkdir(parents=True, exist_ok=True)
    from autodev.store.paths import shipped

    turn = (shipped("prompts") / "turn.md").read_text()
    (prompts / "turn.md").write_text(turn + "\nAlways add tests.\n")
    d = rp.run(rp.from_run(RunPaths(run_copy)))
    assert d is not None and d.turn == 1 and d.step == "turn prompt"
    assert "Always add tests." in d.got and "Always add tests." not in d.expected
