"""`autodev replay`: a recorded run re-executed offline is "identical"; a changed prompt or a
changed tool result is reported as the first divergence."""

from __future__ import annotations

import pytest

from autodev.replay import replay as rp
from autodev.store.paths import RunPaths
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


def test_a_rewound_run_replays_identical_with_its_rewind(run_copy, autodev):
    """A run the user rewound (SPEC §20): the replay asks the daemon for the same rewind at the
    same post and goes on as the recording did, superseded posts included."""
    from autodev.timeline import rewind as rw
    from tests.conftest import thread_of

    rw.request(RunPaths(run_copy), 3)  # no daemon: done here, under the lock
    r = autodev(run_copy, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr
    posts = thread_of(run_copy)
    assert posts[5]["rewind"]["to_seq"] == 3 and posts[-1]["from"] == "audit"
    rec = rp.from_run(RunPaths(run_copy))
    assert rp.run(rec) is None
    # ...and the rewind is compared like any other post: a recording whose rewind note went
    # elsewhere diverges there.
    rec.posts[5] = rec.posts[5].but(text=rec.posts[5].text.replace("post 3", "post 2"))
    d = rp.run(rec)
    assert d is not None and d.step == "post (user, system or audit)" and "post 2" in d.expected
