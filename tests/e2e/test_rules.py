"""The scheduler's rules and the post rules, each reached in a real run of the real CLI.

Every test drives a scripted team through `autodev start --foreground --until-idle` and checks
the exact thread, the rule the daemon logged for each turn (`scheduled` events), and where it
matters what the scripted model server was sent (scripted-requests.jsonl).
"""

from __future__ import annotations

import pytest

from tests.conftest import shape, thread_of, write_team
from tests.e2e.helpers import SOLO, events_of, requests_of, scheduled, status_json

# Listed out of name order on purpose: ties among never-spoken participants break by *name*,
# not by their place in the team file.
TRIO = """
[[participants]]
name = "carol"
model = "scripted"
write = false

[[participants]]
name = "bob"
model = "scripted"
write = false

[[participants]]
name = "alice"
model = "scripted"
write = true

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""

# One run that walks through the rules; the comment above each step says which rule gave the
# turn to that participant.
TRIO_SCRIPT = """
# turn 1 - silent_longest: nobody has spoken, alice is first by name.
# Two posts in one step: only the first may reach the thread.
[[step]]
participant = "alice"
calls = [
  { tool = "post", args = { kind = "say", text = "plan: bob first", handoff = "bob" } },
  { tool = "post", args = { kind = "say", text = "SECOND POST", handoff = "carol" } },
]

# turn 2 - handoff: bob cannot write, so its work_done is refused; it then says something valid.
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "work_done", text = "BOB CLAIMS WORK" } }]
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "say", text = "ok, over to alice", handoff = "alice" } }]

# turns 3 and 4 - handoff: alice and bob bounce the turn (A-B-A-B with bob's post above).
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "say", text = "back to bob", handoff = "bob" } }]
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "say", text = "back to alice", handoff = "alice" } }]

# turn 5 - abab_breaker gives it to carol, who hands off to herself (no credited work).
[[step]]
participant = "carol"
calls = [{ tool = "post", args = { kind = "say", text = "me again", handoff = "carol" } }]

# turn 6 - self_handoff_refused picked alice (silent longer than bob). An uncredited
# work_done handed to herself is refused too.
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "work_done", text = "nothing changed really", handoff = "alice" } }]

# turn 7 - self_handoff_refused picked bob; bob hands off to a name not on the team.
[[step]]
participant = "bob"
calls = [{ tool = "post", args = { kind = "handoff", text = "zed should look", handoff = "zed" } }]

# turn 8 - the unknown name is ignored; silent_longest without bob picks carol.
[[step]]
participant = "carol"
calls = [{ tool = "post", args = { kind = "say", text = "nothing to add" } }]

# turn 9 - silent_longest without carol picks alice, who makes real (credited) work.
[[step]]
participant = "alice"
calls = [
  { tool = "write_file", args = { path = "a.txt", content = "a\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm a" } },
]
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "work_done", text = "a.txt added", handoff = "alice" } }]

# turn 10 - self_handoff after credited work: alice again.
[[step]]
participant = "alice"
calls = [{ tool = "post", args = { kind = "done", text = "finished" } }]

[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""

# The default talk limit (6) would restrict this deliberately talkative run.
ROOMY = "maxTalkTurns = 50\n"


def test_trio_run_reaches_each_rule(repo, autodev):
    """One scripted run (about 5 s) checked three ways: the rules, the second post in a turn,
    and the non-writer's refused work_done."""
    write_team(repo, TRIO, TRIO_SCRIPT, ROOMY)
    r = autodev(repo, "start", "--foreground", "--until-idle", "walk through the rules")
    assert r.returncode == 0, r.stdout + r.stderr
    check_each_scheduler_rule(repo)
    check_second_post_in_a_turn_never_reaches_the_thread(repo)
    check_non_writer_work_done_is_refused_and_the_model_reads_why(repo)


def check_each_scheduler_rule(repo):
    thread = thread_of(repo)
    assert shape(thread) == [
        ("user", "say", None, None),
        ("alice", "say", "bob", None),
        ("bob", "say", "alice", None),
        ("alice", "say", "bob", None),
        ("bob", "say", "alice", None),
        ("carol", "say", "carol", None),
        ("alice", "work_done", "alice", False),
        ("bob", "handoff", "zed", None),
        ("carol", "say", None, None),
        ("alice", "work_done", "alice", True),
        ("alice", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert [p["seq"] for p in thread] == list(range(1, 13))
    assert scheduled(repo) == [
        ("alice", "silent_longest"),  # never-spoken tie: first by name, not file order
        ("bob", "handoff"),
        ("alice", "handoff"),
        ("bob", "handoff"),
        ("carol", "abab_breaker"),  # alice, bob, alice, bob without work
        ("alice", "self_handoff_refused"),  # carol -> carol refused; alice silent longest
        ("bob", "self_handoff_refused"),  # uncredited work_done -> self refused too
        ("carol", "silent_longest"),  # 'zed' ignored; bob sits out as last speaker
        ("alice", "silent_longest"),
        ("alice", "self_handoff"),  # credited work_done may hand off to itself
    ]
    warnings = [e["message"] for e in events_of(repo) if e["type"] == "warning"]
    assert any("zed" in w and "not on the team" in w for w in warnings), warnings


def check_second_post_in_a_turn_never_reaches_the_thread(repo):
    thread = thread_of(repo)
    turn1 = [p for p in thread if p.get("turn") == 1]
    assert [(p["from"], p["text"], p["handoff"]) for p in turn1] == [("alice", "plan: bob first", "bob")]
    assert not any("SECOND POST" in p["text"] for p in thread)
    # The refused second post did not steer the scheduler either: bob (the first post's
    # handoff) spoke next, not carol.
    assert scheduled(repo)[1] == ("bob", "handoff")


def check_non_writer_work_done_is_refused_and_the_model_reads_why(repo):
    thread = thread_of(repo)
    assert not any("BOB CLAIMS WORK" in p["text"] for p in thread)
    assert not any(p["from"] == "bob" and p["kind"] == "work_done" for p in thread)
    bob_turn2 = [p for p in thread if p["from"] == "bob" and p.get("turn") == 2]
    assert [(p["kind"], p["text"]) for p in bob_turn2] == [("say", "ok, over to alice")]

    # bob's second request in that turn carries the refusal as the post call's tool result.
    bob = [q for q in requests_of(repo) if q["participant"] == "bob"]
    first_turn = bob[0]["turn"]
    same_turn = [q for q in bob if q["turn"] == first_turn]
    assert len(same_turn) == 2
    tools = [m for m in same_turn[1]["body"]["messages"] if m.get("role") == "tool"]
    assert len(tools) == 1
    assert tools[0]["content"].startswith("refused:")
    assert "work_done" in tools[0]["content"] and "bob" in tools[0]["content"]
    # ...and the first request of the turn had no tool result yet.
    assert not [m for m in same_turn[0]["body"]["messages"] if m.get("role") == "tool"]


# A team of one always speaks, even after a refused self-handoff. Then it answers with plain
# text (no tool call) twice per turn: each turn ends silent, and the third pauses the run.
SOLO_SCRIPT = """
[[step]]
participant = "solo"
calls = [{ tool = "post", args = { kind = "say", text = "thinking aloud" } }]
[[step]]
participant = "solo"
calls = [{ tool = "post", args = { kind = "work_done", text = "no change", handoff = "solo" } }]
""" + "".join(f'[[step]]\nparticipant = "solo"\ntext = "hmm, let me think ({i})"\n' for i in range(1, 7))


@pytest.mark.full
def test_team_of_one_always_speaks_and_three_silent_turns_pause(repo, autodev, inproc):
    write_team(repo, SOLO, SOLO_SCRIPT)
    r = autodev(repo, "start", "--foreground", "--until-idle", "do it alone")
    assert r.returncode == 3, r.stdout + r.stderr

    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("solo", "say", None, None),
        ("solo", "work_done", "solo", False),
    ]
    assert scheduled(repo) == [("solo", "only_member")] * 5

    ev = events_of(repo)
    silent = [(e["participant"], e["streak"]) for e in ev if e["type"] == "silent_turn"]
    assert silent == [("solo", 1), ("solo", 2), ("solo", 3)]
    ended = [e for e in ev if e["type"] == "turn_ended"]
    assert [e["posted"] for e in ended] == [2, 3, None, None, None]
    assert [e["steps"] for e in ended[2:]] == [2, 2, 2]

    # Each silent turn: plain text, a nudge, plain text again, then the turn gives up.
    reqs = [q for q in requests_of(repo) if q["participant"] == "solo"]
    silent_turns = [t for t in dict.fromkeys(q["turn"] for q in reqs)][2:]
    for t in silent_turns:
        pair = [q for q in reqs if q["turn"] == t]
        assert len(pair) == 2
        last = pair[1]["body"]["messages"][-1]
        assert last["role"] == "user" and "without posting" in last["content"]

    st = status_json(inproc, repo)
    assert st["state"] == "paused"
    assert st["reason"]["code"] == "silent"
    assert "solo" in st["reason"]["text"]
    assert [(p["name"], p["silent_streak"], p["turns"]) for p in st["participants"]] == [("solo", 3, 5)]


MALFORMED_SCRIPT = """
[[step]]
participant = "solo"
calls = [{ tool = "post", raw_args = '{"kind": "done", "text": "unterminated' }]
[[step]]
participant = "solo"
calls = [{ tool = "post", args = { kind = "done", text = "fixed my JSON" } }]
[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = true, gap = "" } }]
"""


@pytest.mark.full
def test_malformed_tool_call_json_gets_an_error_the_model_can_correct(repo, autodev):
    write_team(repo, SOLO, MALFORMED_SCRIPT)
    r = autodev(repo, "start", "--foreground", "--until-idle", "finish")
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("solo", "done", None, None),
        ("audit", "say", None, None),
    ]
    second = [q for q in requests_of(repo) if q["participant"] == "solo"][1]
    results = [m["content"] for m in second["body"]["messages"] if m["role"] == "tool"]
    assert len(results) == 1 and "not valid JSON" in results[0]
