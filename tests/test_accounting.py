"""A turn's figures reach state.json exactly once, whatever a crash interrupts.

Each test lays down the logs exactly as a `kill -9` right after a turn's last harness record
would leave them (any prefix of the logs is a state the daemon must continue from), then opens
the real daemon on them and checks what recovery wrote.
"""

from __future__ import annotations

from autodev.daemon import Daemon
from autodev.records import Post
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import Thread
from tests.conftest import write_team

TEAM = """
[[participants]]
name = "solo"
model = "openai/gpt-5-mini"
write = true
"""
RUN = "r1"


def _lay_down(repo, turn_records: list[dict], post: dict | None = None) -> RunPaths:
    write_team(repo, TEAM)
    paths = RunPaths(repo)
    paths.ensure()
    th = Thread(paths.thread)
    th.append(Post.draft("user", "say", "the objective", id="u1"))
    if post:
        th.append(
            Post.draft(
                "solo", post["kind"], post["text"], id=f"{RUN}:t1:post", turn=1, credit=post.get("credit")
            )
        )
    th.close()
    StateFile(paths.state).update(
        lambda s: s.but(run_id=RUN, turn=1, accounted_turn=0, state="running", objective="x")
    )
    hl = Journal(paths.harness_log)
    for rec in turn_records:
        hl.append({"run": RUN, "turn": 1, **rec})
    hl.close()
    return paths


def _turn(*, posted_seq: int | None) -> list[dict]:
    msg = {"role": "assistant", "content": "thinking"}
    return [
        {"type": "turn_started", "participant": "solo", "head": None, "baseline": {}, "messages": []},
        {"type": "generation_started", "step": 1, "attempt": 1, "model": "openai/gpt-5-mini"},
        {
            "type": "generation_finished",
            "step": 1,
            "message": msg,
            "model": "openai/gpt-5-mini",
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "cost": 0.5,
        },
        {"type": "nudged", "message": {"role": "user", "content": "post"}},
        {"type": "generation_started", "step": 2, "attempt": 1, "model": "openai/gpt-5-mini"},
        {
            "type": "generation_finished",
            "step": 2,
            "message": msg,
            "model": "openai/gpt-5-mini",
            "prompt_tokens": 7,
            "completion_tokens": 1,
            "cost": 0.25,
        },
        {"type": "turn_finished", "seq": posted_seq, "reason": "" if posted_seq else "silent"},
    ]


def _open_and_close(repo) -> dict:
    d = Daemon(repo)
    d.open()
    d.close()
    return StateFile(RunPaths(repo).state).read().dump()  # as state.json holds it


def test_a_silent_turn_finished_before_a_crash_is_accounted_once(repo):
    _lay_down(repo, _turn(posted_seq=None))
    st = _open_and_close(repo)
    q = st["participants"]["solo"]
    assert (q["turns"], q["prompt_tokens"], q["completion_tokens"], q["cost"], q["silent_streak"]) == (
        1,
        17,
        3,
        0.75,
        1,
    )
    assert st["accounted_turn"] == 1
    assert st["models"]["openai/gpt-5-mini"]["generations"] == 2
    again = _open_and_close(repo)  # a second restart adds nothing
    assert again["participants"] == st["participants"]


def test_a_posted_turn_finished_before_a_crash_gets_its_figures_with_its_effects(repo):
    post = {"kind": "work_done", "text": "did it", "credit": {"commits": ["abc"], "files": []}}
    _lay_down(repo, _turn(posted_seq=2), post)
    st = _open_and_close(repo)
    q = st["participants"]["solo"]
    assert (q["turns"], q["prompt_tokens"], q["cost"], q["credited"], q["silent_streak"]) == (
        1,
        17,
        0.75,
        1,
        0,
    )
    assert st["applied_seq"] == 2 and st["accounted_turn"] == 1
    assert _open_and_close(repo)["participants"] == st["participants"]


def test_a_state_from_before_turn_accounting_is_not_counted_again(repo):
    paths = _lay_down(repo, _turn(posted_seq=None))
    # Written by a version without `accounted_turn`: its turns were counted as they ended.
    StateFile(paths.state).update(
        lambda s: s.without("accounted_turn").but(
            participants={
                "solo": {
                    "turns": 1,
                    "credited": 0,
                    "prompt_tokens": 17,
                    "completion_tokens": 3,
                    "cost": 0.75,
                    "silent_streak": 1,
                }
            }
        )
    )
    st = _open_and_close(repo)
    assert st["participants"]["solo"]["turns"] == 1


def test_a_turn_killed_after_its_post_before_turn_finished_keeps_every_generations_figures(repo):
    # The post reached the thread, then kill -9: no turn_finished, nothing in state.json. What
    # the turn spent comes back from its harness records (the recovered turn's Resume).
    post = {"kind": "say", "text": "a note"}
    _lay_down(repo, _turn(posted_seq=2)[:-1], post)
    st = _open_and_close(repo)
    q = st["participants"]["solo"]
    assert (q["turns"], q["prompt_tokens"], q["completion_tokens"], q["cost"]) == (1, 17, 3, 0.75)
    assert st["applied_seq"] == 2 and st["accounted_turn"] == 1 and st["talk_turns"] == 1
    assert st["models"]["openai/gpt-5-mini"] == {
        "generations": 2,
        "prompt_tokens": 17,
        "completion_tokens": 3,
        "cost": 0.75,
    }
    assert _open_and_close(repo)["participants"] == st["participants"]
