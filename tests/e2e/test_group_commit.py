"""The daemon's group commit (issue 33), through a real daemon: a turn replaces state.json three
times (who speaks, the turn's end, its outcome with who is next), not five, and every record
still reaches its log: what is fsynced together is still written at once."""

from __future__ import annotations

import json

from tests.conftest import run_dir, write_team
from tests.e2e.helpers import done_accepted, post

TURNS = 10
OUTSIDE_TURNS = 8  # the daemon's start, the objective, the audit, the stop
TRIO = ("ann", "ben", "cat")  # handing round three never trips the A-B-A-B breaker
TEAM = "".join(f'[[participants]]\nname = "{n}"\nmodel = "scripted"\nwrite = true\n\n' for n in TRIO)
TEAM += '[audit]\nmodel = "scripted"\n\n[scripted]\npath = "script.toml"\n'


def test_a_turn_replaces_state_json_three_times(repo, autodev):
    who = [TRIO[t % 3] for t in range(TURNS)]
    script = "".join(
        post(who[t], "say", f"turn {t + 1}", handoff=TRIO[(t + 1) % 3]) for t in range(TURNS - 1)
    )
    write_team(repo, TEAM, script + done_accepted(who[-1]), config="maxTalkTurns = 50\n")
    r = autodev(repo, "start", "--foreground", "--until-idle", "talk in turns", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    rd = run_dir(repo)
    harness = [json.loads(x) for x in (rd / "harness.jsonl").read_text().splitlines()]
    started = [h for h in harness if h["type"] == "turn_started"]
    finished = [h for h in harness if h["type"] == "turn_finished"]
    assert len(started) == len(finished) == TURNS
    events = [json.loads(x) for x in (rd / "events.jsonl").read_text().splitlines()]
    assert sum(e["type"] == "turn_ended" for e in events) == TURNS
    # state.json's version counts its replacements: 5 a turn before the group commit
    version = json.loads((rd / "state.json").read_text())["version"]
    assert version <= 3 * TURNS + OUTSIDE_TURNS, version
