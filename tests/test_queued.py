"""What is queued with no daemon: listed in order, summarised as status shows it, and replaced
(with a word saying so) by a later request that asks the run to go on."""

from __future__ import annotations

from autodev.store import queued
from autodev.store.paths import RunPaths
from autodev.user import actions
from autodev.user.status import gather


def test_everything_queued_is_listed_in_the_order_it_was_asked(repo):
    paths = RunPaths(repo)
    actions.control(paths, "pause")
    actions.notice(paths, "4", "hold")
    actions.control(paths, "stop")
    actions.answer(paths, "3", "yes")  # cancels the pause and the stop queued before it
    actions.send(paths, "one")
    actions.control(paths, "stop")
    actions.approve(paths, "2")  # cancels that stop too
    actions.send(paths, "two")
    actions.control(paths, "pause")
    assert [i.label for i in queued.items(paths)] == [
        "hold 4",
        "answer 3",
        "message",
        "approve 2",
        "message",
        "pause",
    ]
    assert queued.summary(queued.items(paths)) == "hold 4, answer 3, 2 messages, approve 2, pause"
    d = gather(paths)
    assert d.queued_text == (
        "queued: hold 4, answer 3, 2 messages, approve 2, pause "
        "(no daemon is running: `autodev start` applies them in order)"
    )
    assert [q.label for q in d.queued] == [
        "hold 4",
        "answer 3",
        "message",
        "approve 2",
        "message",
        "pause",
    ]


def test_a_message_after_a_queued_stop_replaces_it_and_says_so(repo):
    paths = RunPaths(repo)
    actions.control(paths, "stop")
    assert queued.summary(queued.items(paths)) == "stop"
    msg = actions.send(paths, "one more thing")
    assert msg.cancelled == ["stop"]
    assert queued.replaced_text(msg.cancelled, "message").startswith(
        "this message cancels the queued stop: the run continues at the next `autodev start`"
    )
    assert queued.summary(queued.items(paths)) == "1 message"
    # A notice hold does not ask the run to go on: a stop queued before it stays.
    actions.control(paths, "stop")
    assert actions.notice(paths, "1", "release").cancelled == []
    assert queued.summary(queued.items(paths)) == "1 message, stop, release 1"
    assert actions.control(paths, "resume").cancelled == ["stop"]
    # Replaced requests are counted, so every request made is accounted for (applied or replaced).
    from autodev.store.state import StateFile

    st = StateFile(paths.state).read().dump()
    assert st["controls_cancelled"] == 2 and st["control_seq"] == 3


def test_nothing_queued_says_nothing(repo):
    d = gather(RunPaths(repo))
    assert d.queued == [] and d.queued_text == ""
