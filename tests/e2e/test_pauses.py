"""Every pause reason reached in a real run of the real CLI, and shown by `autodev status`: the
text under "The run stopped and why" with the command that continues the run, and the stable
code in `status --json`. Then a user message resuming a paused run with fresh scope."""

from __future__ import annotations

import pytest

from tests.conftest import light, shape, thread_of, write_team
from tests.e2e.helpers import (
    PAIR,
    SOLO,
    call,
    cli,
    events,
    post,
    run_until_idle,
    scheduled,
    status_json,
    status_text,
    step,
)

# name -> (team, script, config, CLI commands run before the start, code, sentence in status)
CASES = {
    "talk_limit": (
        PAIR,
        post("alice", "say", "bob, thoughts?", "bob")
        + post("bob", "say", "looks fine", "alice")
        + post("alice", "work_done", "nothing changed yet"),
        "maxTalkTurns = 2\n",
        [],
        "talk_limit",
        "3 turns passed without credited work, even after the talk limit applied",
    ),
    "silent": (
        SOLO,
        "".join(step("solo", text=f"thinking ({i})") for i in range(6)),
        "",
        [],
        "silent",
        "solo ended 3 turns in a row without posting",
    ),
    "audit_limit": (
        PAIR,
        post("alice", "done", "all done") + step("audit", call("verdict", accept=False, gap="no tests")),
        "maxAcceptChecks = 1\n",
        [],
        "audit_limit",
        "the audit reopened the work 1 times (maxAcceptChecks)",
    ),
    "wait_too_long": (
        PAIR,
        "".join(post("alice", "wait", f"still deploying ({i})") for i in range(8)),
        "waitFirstSec = 0.2\nwaitCapSec = 0.8\nmaxWaitMin = 0.01\n",
        [],
        "wait_too_long",
        "alice's wait ran past maxWaitMin",
    ),
    "stagnation": (
        SOLO,
        post("solo", "say", "still looking into it") * 3,
        "",
        [],
        "stagnation",
        "solo's last three posts were identical (say)",
    ),
    "user": (PAIR, post("alice", "say", "hello", "bob"), "", [["pause"]], "user", "you paused the run"),
    "provider": (
        SOLO,
        step("solo", error=500) * 3,
        "maxRetries = 2\nretryBackoffSec = 0.05\n",
        [],
        "provider",
        "a model failed: solo's model failed 3 times",
    ),
}


@pytest.mark.parametrize("name", light(CASES, keep={"user", "silent"}))
def test_each_pause_reason_is_reached_and_shown_by_status(repo, autodev, inproc, name):
    team, script, config, before, code, sentence = CASES[name]
    write_team(repo, team, script, config)
    for args in before:
        cli(autodev, repo, *args)
    # A pending objective is a user message, which would resume the paused run at once (a user
    # message resumes a paused run): the user pause is requested before a start without one.
    objective = [] if name == "user" else [f"objective for {name}"]
    run_until_idle(autodev, repo, *objective, expect=3)

    st = status_json(inproc, repo)
    assert st["state"] == "paused"
    assert st["reason"]["code"] == code, st["reason"]
    assert sentence in st["reason"]["text"]
    text = status_text(inproc, repo)
    assert "The run stopped and why" in text
    assert sentence in text
    assert "continue: " + " ".join(st["continue"].split()) in text
    assert "autodev" in st["reason"]["continue"]
    # No daemon runs after --until-idle: the line that continues starts one (SPEC §13).
    assert st["continue"] == "autodev start, then " + st["reason"]["continue"]

    if name == "wait_too_long":
        # The series was rechecked before it ran too long, on the doubling schedule.
        delays = [e["delay"] for e in events(repo, "wait")]
        assert delays and delays == [min(0.8, 0.2 * 2**i) for i in range(len(delays))]
        assert st["wait"] is None
    if name == "user":
        assert thread_of(repo) == [] and scheduled(repo) == [], "a turn ran although the run was paused"
        assert "continue: autodev start, then autodev resume" in text
    if name == "stagnation":
        assert shape(thread_of(repo)) == [("user", "say", None, None)] + [("solo", "say", None, None)] * 3


@pytest.mark.full
def test_send_resumes_a_run_paused_for_review_with_fresh_scope(repo, autodev, inproc):
    script = (
        post("alice", "say", "bob, thoughts?", "bob")
        + post("bob", "say", "looks fine", "alice")
        + post("alice", "work_done", "nothing changed yet")
        + post("bob", "say", "What should we try instead?", "user")
    )
    write_team(repo, PAIR, script, "maxTalkTurns = 2\n")
    run_until_idle(autodev, repo, "improve the docs", expect=3)
    st = status_json(inproc, repo)
    assert (st["state"], st["reason"]["code"], st["talk_turns"]) == ("paused", "talk_limit", 3)

    cli(inproc, repo, "send", "FRESH-SCOPE: rewrite the intro instead")
    run_until_idle(autodev, repo, expect=3)
    st = status_json(inproc, repo)
    assert st["state"] == "awaiting_user" and st["reason"]["code"] == "question"
    # The message reset the talk count: bob's turn was not restricted and counts as the first.
    assert st["talk_turns"] == 1
    assert scheduled(repo)[-1] == ("bob", "silent_longest")
    assert shape(thread_of(repo))[-2:] == [("user", "say", None, None), ("bob", "say", "user", None)]
