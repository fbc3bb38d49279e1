"""Participant kinds: one registry gives each participant's turn to the runner of its kind, and a
kind added in a test (a real `TurnRunner` of its own, no model) runs a turn through the daemon."""

from __future__ import annotations

import json

from autodev.config import Participant
from autodev.daemon import Daemon, kinds
from autodev.harness import credit, policy
from autodev.harness.context import Seat, TurnContext, TurnResult, TurnToolEnv
from autodev.harness.recovery import Resume
from autodev.harness.thread_tools import POST
from autodev.store import inbox
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import Thread
from tests.conftest import write_team

TEXT = "the same words every turn"

TEAM = """
[[participants]]
name = "parrot"
model = "openai/gpt-5-mini"
lane = "says one thing"
"""


class FixedSay:
    """A participant kind of its own: each turn posts one fixed `say` to the user, under the
    shared policy's records (started, the post's own intent records, finished)."""

    def __init__(self) -> None:
        self.seats: list[Seat] = []

    def run(self, ctx: TurnContext, seat: Seat, resume: Resume | None) -> TurnResult:
        self.seats.append(seat)
        policy.check_stop(ctx)
        result, baseline = TurnResult(None), credit.take_baseline(ctx.who.repo, ctx.who.branch)
        policy.log_turn_started(ctx, baseline, [{"role": "user", "content": ctx.models.turn_prompt}])
        env = TurnToolEnv(
            workspace=ctx.tools.workspace, turn=ctx, result=result, baseline=baseline, call_id="fixed-1"
        )
        POST.call(env, {"kind": "say", "text": TEXT, "handoff": "user"})
        result.steps = 1
        policy.log_turn_finished(ctx, result)
        return result


def test_the_built_in_kinds_take_agents_and_models() -> None:
    assert kinds.kind_of(Participant(name="a", agent="claude")).name == "agent"
    assert kinds.kind_of(Participant(name="m", model="openai/gpt-5-mini")).name == "model"
    # an agent with model failovers is still an agent
    both = Participant(name="b", agent="codex", failover=["openai/gpt-5-mini"])
    assert kinds.kind_of(both).name == "agent"


def test_a_registered_kind_is_asked_first_and_leaves_with_its_context() -> None:
    p = Participant(name="parrot", model="openai/gpt-5-mini")
    with kinds.registered(kinds.Kind("fixed", FixedSay(), lambda q: q.name == "parrot")):
        assert kinds.kind_of(p).name == "fixed"
        assert kinds.kind_of(Participant(name="other", model="openai/gpt-5-mini")).name == "model"
    assert kinds.kind_of(p).name == "model"


def test_a_kind_registered_in_a_test_takes_a_turn_through_the_daemon(repo) -> None:
    write_team(repo, TEAM)
    paths = RunPaths(repo)
    paths.ensure()
    staged = inbox.stage(paths.inbox, "send", text="say something", objective=True)
    runner = FixedSay()
    with kinds.registered(kinds.Kind("fixed", runner, lambda p: p.name == "parrot")):
        Daemon(repo, until_idle=True, staged=staged).run()
    (seat,) = runner.seats
    assert seat.participant.name == "parrot" and seat.run_dir == paths.run_dir and seat.resumed == []
    posts = Thread(paths.thread).read(1, 10)
    assert [(p.from_, p.kind, p.text) for p in posts] == [
        ("user", "say", "say something"),
        ("parrot", "say", TEXT),
    ]
    st = StateFile(paths.state).read()
    assert st.state == "awaiting_user" and st.turn == 1
    records = [json.loads(line) for line in paths.harness_log.read_text().splitlines()]
    assert [r["type"] for r in records] == ["turn_started", "post_started", "post_committed", "turn_finished"]
    assert records[-1]["seq"] == posts[-1].seq
