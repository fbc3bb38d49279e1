"""A scripted participant past its last step: the run pauses saying which step its script lacks
(a real daemon, the real scripted server), not that it "ended 3 turns without posting"."""

from __future__ import annotations

import pytest

from tests.conftest import write_team
from tests.e2e.helpers import SOLO, call, status_json, step

pytestmark = pytest.mark.e2e


def test_a_participant_out_of_steps_is_told_as_such(repo, autodev, inproc):
    write_team(repo, SOLO, step("solo", call("write_file", path="a.txt", content="a\n")))
    r = autodev(repo, "start", "--foreground", "--until-idle", "add a.txt", timeout=90)
    assert r.returncode == 3, r.stdout + r.stderr
    said = (
        "solo's scripted model ran out of script: the script for solo has no step 2 (it has 1 step for solo)"
    )
    assert said in r.stdout + r.stderr
    assert "without posting" not in r.stdout + r.stderr
    st = status_json(inproc, repo)
    assert st["state"] == "paused" and said in str(st), st
    assert "add the participant's next steps to the script" in str(st)
