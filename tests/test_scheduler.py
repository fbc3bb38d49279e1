"""The scheduler (SPEC §5): every rule, every tie, and properties over generated threads."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autodev.records import Post
from autodev.rules.scheduler import RULES, Decision, next_speaker
from tests.conftest import examples

TS = "2026-12-01T00:00:00.000Z"


def line(**fields) -> Post:
    """A thread line (the scheduler reads the `Post`s the thread hands out)."""
    return Post.model_validate({"ts": TS, **fields})


def thread(*posts: tuple) -> list[Post]:
    """Build posts from (from, kind[, handoff[, extra]]) tuples, numbering seq from 1."""
    out = []
    for seq, post in enumerate(posts, start=1):
        author, kind, *rest = post
        rec = {"seq": seq, "from": author, "kind": kind, "text": f"post {seq}"}
        if rest:
            rec["handoff"] = rest[0]
        if len(rest) > 1:
            rec.update(rest[1])
        out.append(line(**rec))
    return out


def last_spoke_of(tail: list[Post]) -> dict[str, int]:
    index: dict[str, int] = {}
    for post in tail:
        index[post.from_] = post.seq
    return index


def pick(team, tail, last_spoke=None) -> Decision:
    return next_speaker(team, tail, last_spoke_of(tail) if last_spoke is None else last_spoke)


CREDIT = {"credit": {"commits": ["abc123"], "files": ["a.py"]}}
NO_CREDIT = {"credit": None}


def decided(gate_id: str, declarer: str, decision: str = "approved") -> tuple:
    return ("system", "say", None, {"gate": {"id": gate_id, "decision": decision, "declarer": declarer}})


# -- empty thread, team of one, silent longest ------------------------------------------------


def test_empty_tail_goes_to_first_by_name():
    d = next_speaker(["reviewer", "builder", "tester"], [], {})
    assert (d.speaker, d.rule) == ("builder", "silent_longest")
    assert "builder" in d.why


def test_team_of_one_always_speaks():
    assert next_speaker(["solo"], [], {}).speaker == "solo"
    assert next_speaker(["solo"], [], {}).rule == "only_member"
    tail = thread(("solo", "say"))
    d = pick(["solo"], tail)
    assert (d.speaker, d.rule) == ("solo", "only_member")


def test_empty_team_is_an_error():
    with pytest.raises(ValueError):
        next_speaker([], [], {})


def test_silent_longest_skips_the_last_speaker():
    tail = thread(("alice", "say"), ("bob", "say"), ("carol", "say"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("alice", "silent_longest")


def test_last_speaker_is_excluded_even_when_it_is_the_most_silent_by_index():
    # The index says bob spoke long ago, but the tail shows bob posted last.
    tail = thread(("alice", "say"), ("bob", "say"))
    d = next_speaker(["alice", "bob"], tail, {"alice": 1})
    assert d.speaker == "alice"


def test_never_spoken_is_most_silent_and_ties_break_by_name():
    tail = thread(("alice", "say"))
    d = pick(["alice", "zed", "mia"], tail)
    assert (d.speaker, d.rule) == ("mia", "silent_longest")
    assert "not spoken" in d.why


def test_team_order_does_not_matter():
    tail = thread(("alice", "say"))
    assert pick(["zed", "mia", "alice"], tail).speaker == pick(["alice", "mia", "zed"], tail).speaker


def test_last_spoke_index_beyond_the_tail_is_used():
    # The tail shows only carol; the index remembers older posts by alice and bob.
    tail = [line(seq=100, **{"from": "carol"}, kind="say", text="x")]
    d = next_speaker(["alice", "bob", "carol"], tail, {"alice": 90, "bob": 40, "carol": 100})
    assert d.speaker == "bob"


def test_last_spoke_names_off_the_team_are_ignored():
    tail = thread(("alice", "say"))
    d = next_speaker(["alice", "bob"], tail, {"alice": 1, "ghost": 0})
    assert d.speaker == "bob"


def test_work_done_lets_the_last_speaker_go_again():
    # alice has been silent longest and just delivered work: she may go again.
    tail = thread(("bob", "say"), ("alice", "work_done", None, NO_CREDIT))
    d = next_speaker(["alice", "bob"], tail, {"alice": 2, "bob": 1})
    assert d.speaker == "bob"  # bob is more silent
    d = next_speaker(["alice", "bob"], tail, {"alice": 2, "bob": 3})
    assert (d.speaker, d.rule) == ("alice", "silent_longest")


def test_without_work_done_the_last_speaker_never_goes_again():
    tail = thread(("bob", "say"), ("alice", "say"))
    d = next_speaker(["alice", "bob"], tail, {"alice": 2, "bob": 3})
    assert d.speaker == "bob"


# -- handoffs --------------------------------------------------------------------------------


def test_handoff_gives_the_turn():
    tail = thread(("builder", "work_done", "reviewer", CREDIT))
    d = pick(["builder", "reviewer", "tester"], tail)
    assert (d.speaker, d.rule) == ("reviewer", "handoff")
    assert d.why == "builder handed off to reviewer"
    assert d.warnings == ()


@pytest.mark.parametrize("kind", ["say", "handoff", "wait", "gate", "done"])
def test_handoff_works_from_any_kind(kind):
    tail = thread(("builder", kind, "tester"))
    assert pick(["builder", "reviewer", "tester"], tail).speaker == "tester"


def test_handoff_to_unknown_name_warns_and_falls_through():
    tail = thread(("alice", "say"), ("bob", "say", "zoe"))
    d = pick(["alice", "bob", "carol"], tail)
    assert d.rule == "silent_longest"
    assert d.speaker == "carol"
    assert d.warnings == ("handoff to 'zoe' ignored: not on the team",)


def test_handoff_to_unknown_name_then_wait_rule_applies():
    tail = thread(("bob", "wait", "zoe"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("bob", "after_wait")
    assert any("zoe" in w for w in d.warnings)


def test_handoff_to_user_is_not_a_warning():
    tail = thread(("alice", "say", "user"))
    d = pick(["alice", "bob"], tail)
    assert d.warnings == ()
    assert d.speaker == "bob"


def test_audit_reopen_hands_off_to_the_done_author():
    tail = thread(("builder", "done"), ("audit", "say", "builder"))
    d = pick(["builder", "reviewer"], tail)
    assert (d.speaker, d.rule) == ("builder", "handoff")


def test_audit_post_without_handoff_excludes_no_one():
    tail = thread(("reviewer", "say"), ("builder", "done"), ("audit", "say"))
    d = pick(["builder", "reviewer"], tail)
    assert (d.speaker, d.rule) == ("reviewer", "silent_longest")
    # reviewer spoke at 1, builder at 2: reviewer is more silent, and nobody is excluded.
    d = next_speaker(["builder", "reviewer"], tail, {"builder": 2, "reviewer": 5})
    assert d.speaker == "builder"


def test_departed_author_is_never_returned_but_its_handoff_counts():
    tail = thread(("ghost", "say", "bob"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("bob", "handoff")
    d = pick(["alice", "bob"], thread(("ghost", "say", "ghost")))
    assert d.speaker in ("alice", "bob")


# -- handoff to self -------------------------------------------------------------------------


def test_self_handoff_after_credited_work_is_accepted():
    tail = thread(("reviewer", "say"), ("builder", "work_done", "builder", CREDIT))
    d = pick(["builder", "reviewer"], tail)
    assert (d.speaker, d.rule) == ("builder", "self_handoff")


def test_self_handoff_after_uncredited_work_is_refused():
    tail = thread(("reviewer", "say"), ("tester", "say"), ("builder", "work_done", "builder", NO_CREDIT))
    d = pick(["builder", "reviewer", "tester"], tail)
    assert (d.speaker, d.rule) == ("reviewer", "self_handoff_refused")


def test_self_handoff_on_work_done_without_credit_field_is_refused():
    tail = thread(("builder", "work_done", "builder"))
    d = pick(["builder", "reviewer"], tail)
    assert (d.speaker, d.rule) == ("reviewer", "self_handoff_refused")


def test_self_handoff_from_say_is_refused_and_goes_to_silent_longest_other():
    tail = thread(("carol", "say"), ("alice", "say"), ("bob", "say", "bob"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("carol", "self_handoff_refused")
    # a never-spoken member beats everybody, ties by name
    d = pick(["alice", "bob", "carol", "dan", "dave"], tail)
    assert d.speaker == "dan"


def test_self_handoff_refused_in_team_of_one_keeps_the_one():
    d = pick(["solo"], thread(("solo", "say", "solo")))
    assert (d.speaker, d.rule) == ("solo", "only_member")


def test_self_handoff_credited_in_team_of_one_names_the_rule():
    d = pick(["solo"], thread(("solo", "work_done", "solo", CREDIT)))
    assert (d.speaker, d.rule) == ("solo", "self_handoff")


# -- wait ------------------------------------------------------------------------------------


def test_after_wait_its_author_speaks_again():
    tail = thread(("alice", "say"), ("bob", "wait"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("bob", "after_wait")


def test_wait_by_departed_author_falls_through_with_warning():
    tail = thread(("alice", "say"), ("ghost", "wait"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("bob", "silent_longest")
    assert d.warnings


# -- user messages ---------------------------------------------------------------------------


def test_user_answer_goes_to_the_open_question():
    tail = thread(("alice", "say"), ("bob", "say", "user"), ("user", "say"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("bob", "user_message")
    assert "question" in d.why


def test_several_user_messages_still_reach_the_question():
    tail = thread(("bob", "say", "user"), ("user", "say"), ("user", "say"), ("user", "say"))
    assert pick(["alice", "bob"], tail).speaker == "bob"


def test_user_message_goes_to_the_open_gate():
    tail = thread(("alice", "say"), ("bob", "gate"), ("user", "say"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("bob", "user_message")


def test_user_message_goes_to_the_open_wait():
    tail = thread(("alice", "say"), ("bob", "wait"), ("user", "say"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("bob", "user_message")


def test_user_message_otherwise_goes_to_silent_longest_excluding_no_one():
    tail = thread(("alice", "say"), ("bob", "say", "alice"), ("user", "say"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("carol", "silent_longest")
    # bob spoke last but a user post excludes nobody: bob can be the most silent
    d = next_speaker(["alice", "bob"], tail, {"alice": 9, "bob": 2})
    assert d.speaker == "bob"


def test_user_message_ignores_a_handoff_after_the_question_would_have_closed_it():
    # The question was followed by another participant post: it is no longer the newest.
    tail = thread(("bob", "say", "user"), ("alice", "say"), ("user", "say"))
    d = pick(["alice", "bob", "carol"], tail)
    assert d.rule == "silent_longest"


def test_user_message_first_on_the_thread():
    tail = thread(("user", "say"))
    d = pick(["reviewer", "builder"], tail)
    assert (d.speaker, d.rule) == ("builder", "silent_longest")


def test_user_message_after_audit_falls_through():
    tail = thread(("builder", "done"), ("audit", "say", "builder"), ("user", "say"))
    d = pick(["builder", "reviewer"], tail)
    assert d.rule == "silent_longest"


def test_user_answer_to_departed_participant_falls_through_with_warning():
    tail = thread(("alice", "say"), ("ghost", "say", "user"), ("user", "say"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("bob", "silent_longest")
    assert d.warnings


def test_user_message_beats_the_breaker():
    tail = thread(("alice", "say"), ("bob", "say"), ("alice", "say"), ("bob", "say", "user"), ("user", "say"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("bob", "user_message")


# -- gate decisions and system notes -----------------------------------------------------------


@pytest.mark.parametrize("decision", ["approved", "denied"])
def test_gate_decision_goes_to_the_declarer(decision):
    tail = thread(("alice", "say"), ("bob", "gate"), decided("g1", "bob", decision))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("bob", "gate_decision")
    assert decision in d.why


def test_gate_decision_followed_by_user_message_still_goes_to_declarer():
    tail = thread(("bob", "gate"), decided("g1", "bob"), ("user", "say"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("bob", "gate_decision")


def test_gate_decision_for_departed_declarer_falls_through():
    tail = thread(("alice", "say"), ("ghost", "gate"), decided("g1", "ghost"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("bob", "silent_longest")
    assert d.warnings


def test_system_notes_are_ignored():
    note = ("system", "say", None, {"notice": {"id": "n1"}})
    tail = thread(("alice", "say", "bob"), note, note)
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("bob", "handoff")


def test_system_note_with_open_gate_but_no_decision_is_ignored():
    note = ("system", "say", None, {"gate": {"id": "g1", "declarer": "alice"}})
    tail = thread(("bob", "say", "carol"), note)
    assert pick(["alice", "bob", "carol"], tail).speaker == "carol"


def test_system_notes_do_not_break_or_make_the_abab_pattern():
    note = ("system", "say")
    tail = thread(("alice", "say"), note, ("bob", "say"), note, ("alice", "say"), ("bob", "say"), note)
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("carol", "abab_breaker")


# -- the A-B-A-B breaker -----------------------------------------------------------------------


def test_breaker_sends_the_turn_to_a_third_participant():
    tail = thread(("alice", "say"), ("bob", "say", "alice"), ("alice", "say", "bob"), ("bob", "say", "alice"))
    d = pick(["alice", "bob", "carol", "dave"], tail)
    assert (d.speaker, d.rule) == ("carol", "abab_breaker")
    assert "alice" in d.why and "bob" in d.why


def test_breaker_picks_silent_longest_third():
    tail = thread(("carol", "say"), ("alice", "say"), ("bob", "say"), ("alice", "say"), ("bob", "say"))
    d = pick(["alice", "bob", "carol", "dave"], tail)
    assert d.speaker == "dave"  # never spoken beats carol
    # once dave has spoken more recently than carol, carol is the silent-longest third
    d = next_speaker(["alice", "bob", "carol", "dave"], tail, {"dave": 3} | last_spoke_of(tail))
    assert d.speaker == "carol"


def test_breaker_without_a_third_participant_does_not_apply():
    tail = thread(("alice", "say"), ("bob", "say"), ("alice", "say"), ("bob", "say", "alice"))
    d = pick(["alice", "bob"], tail)
    assert (d.speaker, d.rule) == ("alice", "handoff")


def test_breaker_does_not_apply_with_work_done_among_the_four():
    tail = thread(
        ("alice", "work_done", None, CREDIT), ("bob", "say"), ("alice", "say"), ("bob", "say", "alice")
    )
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("alice", "handoff")


def test_breaker_needs_four_posts_and_two_different_authors():
    tail = thread(("bob", "say"), ("alice", "say"), ("bob", "say", "alice"))
    assert pick(["alice", "bob", "carol"], tail).rule == "handoff"
    tail = thread(("alice", "say"), ("alice", "say"), ("alice", "say"), ("alice", "say", "bob"))
    assert pick(["alice", "bob", "carol"], tail).rule == "handoff"


@pytest.mark.parametrize(
    "order",
    [["alice", "bob", "carol", "bob"], ["alice", "bob", "bob", "alice"], ["bob", "bob", "alice", "bob"]],
)
def test_breaker_needs_strict_alternation(order):
    tail = thread(*[(name, "say") for name in order[:-1]], (order[-1], "say", "dave"))
    d = pick(["alice", "bob", "carol", "dave"], tail)
    assert (d.speaker, d.rule) == ("dave", "handoff")


def test_breaker_ignores_audit_or_user_among_the_four():
    tail = thread(("alice", "say"), ("audit", "say"), ("alice", "say"), ("bob", "say", "alice"))
    assert pick(["alice", "bob", "carol"], tail).rule == "handoff"


def test_breaker_counts_a_departed_participant():
    tail = thread(("ghost", "say"), ("bob", "say"), ("ghost", "say"), ("bob", "say", "alice"))
    d = pick(["alice", "bob", "carol"], tail)
    assert (d.speaker, d.rule) == ("alice", "abab_breaker")


def test_breaker_beats_self_handoff_and_handoff():
    tail = thread(("alice", "say"), ("bob", "say"), ("alice", "say"), ("bob", "say", "bob"))
    assert pick(["alice", "bob", "carol"], tail).rule == "abab_breaker"


# -- properties ------------------------------------------------------------------------------

NAMES = ["alice", "bob", "carol", "dave", "eve"]
KINDS = ["say", "work_done", "handoff", "wait", "gate", "done"]

teams = st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True)
authors = st.sampled_from(NAMES + ["ghost", "user", "system", "audit"])
handoffs = st.one_of(st.none(), st.sampled_from(NAMES + ["ghost", "user", "audit", "nobody"]))
credits = st.one_of(st.none(), st.just({"commits": ["c1"], "files": []}))
gates = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "id": st.sampled_from(["g1", "g2"]),
            "decision": st.sampled_from(["approved", "denied"]),
            "declarer": st.sampled_from(NAMES + ["ghost"]),
        }
    ),
)


@st.composite
def records(draw, max_size=30):
    posts = draw(
        st.lists(st.tuples(authors, st.sampled_from(KINDS), handoffs, credits, gates), max_size=max_size)
    )
    out = []
    for seq, (author, kind, handoff, credit, gate) in enumerate(posts, start=1):
        rec = {"seq": seq, "from": author, "kind": kind, "text": "t", "handoff": handoff}
        if kind == "work_done":
            rec["credit"] = credit
        if author == "system" and gate is not None:
            rec["gate"] = gate
        out.append(line(**rec))
    return out


last_spokes = st.dictionaries(st.sampled_from(NAMES + ["ghost"]), st.integers(min_value=1, max_value=100))


@settings(max_examples=examples(100), deadline=None)
@given(teams, records(), last_spokes)
def test_property_answer_is_a_team_member_and_a_known_rule(team, tail, last_spoke):
    d = next_speaker(team, tail, last_spoke)
    assert d.speaker in team
    assert d.rule in RULES
    assert d.why


@settings(max_examples=examples(100), deadline=None)
@given(teams, records(), last_spokes)
def test_property_deterministic(team, tail, last_spoke):
    first = next_speaker(team, tail, last_spoke)
    again = next_speaker(list(team), copy.deepcopy(tail), dict(last_spoke))
    assert first == again
    assert next_speaker(list(reversed(team)), tail, last_spoke) == first


@settings(max_examples=examples(100), deadline=None)
@given(st.sampled_from(NAMES), records(), last_spokes)
def test_property_team_of_one_gets_that_one(name, tail, last_spoke):
    assert next_speaker([name], tail, last_spoke).speaker == name


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(st.sampled_from(NAMES), min_size=3, max_size=5, unique=True),
    records(max_size=10),
    st.sampled_from(NAMES + ["ghost"]),
    st.sampled_from(NAMES + ["ghost"]),
    st.lists(
        st.tuples(st.sampled_from(["say", "handoff", "wait", "gate", "done"]), handoffs),
        min_size=4,
        max_size=4,
    ),
    last_spokes,
)
def test_property_abab_never_goes_to_a_or_b(team, prefix, a, b, last_four, last_spoke):
    if a == b or not [m for m in team if m not in (a, b)]:
        return
    tail = list(prefix)
    for author, (kind, handoff) in zip([a, b, a, b], last_four):
        tail.append(line(seq=len(tail) + 1, **{"from": author}, kind=kind, text="t", handoff=handoff))
    d = next_speaker(team, tail, last_spoke)
    assert d.speaker not in (a, b)
    assert d.rule == "abab_breaker"


def test_scheduler_imports_nothing_that_does_io():
    import ast
    import inspect

    import autodev.rules.scheduler as module

    tree = ast.parse(inspect.getsource(module))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    # the `Post` it reads is a type only: the scheduler runs on any object with its fields
    assert imported <= {
        "__future__",
        "collections.abc",
        "dataclasses",
        "typing",
        "autodev.rules.names",
        "autodev.records.post",
    }
