"""The move rules (SPEC §4): every refusal and every acceptance of the `post` tool's arguments."""

from __future__ import annotations

import pytest

from autodev.errors import PostRefused
from autodev.rules.moves import MOVES, check_post

TEAM = {"builder": True, "reviewer": False, "tester": False}


def post(args, *, author="builder", restricted=False, team=TEAM):
    return check_post(
        args, author=author, can_write=team.get(author, False), team=team, restricted=restricted
    )


def move(draft) -> tuple[str, str, str | None]:
    return draft.kind, draft.text, draft.handoff


def refused(args, **kw) -> str:
    with pytest.raises(PostRefused) as info:
        post(args, **kw)
    return str(info.value)


# -- acceptances -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k in MOVES if k != "handoff"])
def test_every_kind_is_accepted_without_handoff(kind):
    assert move(post({"kind": kind, "text": "hello"})) == (kind, "hello", None)


def test_moves_are_the_six_of_the_spec():
    assert MOVES == ("say", "work_done", "handoff", "wait", "gate", "done")


def test_handoff_kind_with_target_is_accepted():
    assert move(post({"kind": "handoff", "text": "your turn", "handoff": "reviewer"})) == (
        "handoff",
        "your turn",
        "reviewer",
    )


@pytest.mark.parametrize("kind", MOVES)
def test_handoff_to_a_teammate_is_accepted_on_any_kind(kind):
    assert post({"kind": kind, "text": "x", "handoff": "tester"}).handoff == "tester"


def test_say_to_user_is_accepted():
    assert move(post({"kind": "say", "text": "which db?", "handoff": "user"})) == ("say", "which db?", "user")


def test_handoff_to_name_not_on_team_is_accepted():
    # The scheduler warns and falls through; the post itself is fine.
    assert post({"kind": "say", "text": "x", "handoff": "bob"}).handoff == "bob"


@pytest.mark.parametrize("empty", [None, "", "  "])
def test_empty_handoff_means_none(empty):
    assert post({"kind": "say", "text": "x", "handoff": empty}).handoff is None


def test_handoff_is_stripped():
    assert post({"kind": "say", "text": "x", "handoff": " reviewer "}).handoff == "reviewer"


def test_self_handoff_is_accepted_here():
    # Whether it takes effect is the scheduler's business (rule 3).
    assert post({"kind": "say", "text": "x", "handoff": "builder"}).handoff == "builder"


def test_text_is_kept_as_sent():
    assert post({"kind": "say", "text": "  two\nlines  "}).text == "  two\nlines  "


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["talk", "SAY", "", None, 3, ["say"]])
def test_unknown_kind_is_refused_and_lists_the_moves(kind):
    msg = refused({"kind": kind, "text": "x"})
    assert "unknown kind" in msg
    for move in MOVES:
        assert move in msg


def test_missing_kind_is_refused():
    assert "unknown kind nothing" in refused({"text": "x"})


@pytest.mark.parametrize("text", [None, "", "   \n", 5, ["a"], {"t": 1}])
def test_missing_empty_or_non_string_text_is_refused(text):
    args = {"kind": "say"} if text is None else {"kind": "say", "text": text}
    msg = refused(args)
    assert "text is required" in msg


def test_unknown_argument_is_refused_and_named():
    msg = refused({"kind": "say", "text": "x", "to": "reviewer", "mood": "happy"})
    assert "'mood'" in msg and "'to'" in msg
    assert "kind, text and optional handoff" in msg


def test_arguments_that_are_not_an_object_are_refused():
    msg = refused(["say", "x"])
    assert "must be an object" in msg


@pytest.mark.parametrize("handoff", [3, ["reviewer"], {"name": "reviewer"}, True])
def test_non_string_handoff_is_refused(handoff):
    msg = refused({"kind": "say", "text": "x", "handoff": handoff})
    assert "handoff must be a participant's name as a string" in msg


@pytest.mark.parametrize("kind", [k for k in MOVES if k != "say"])
def test_handoff_to_user_is_refused_on_anything_but_say(kind):
    msg = refused({"kind": kind, "text": "x", "handoff": "user"})
    assert "only say may hand off to 'user'" in msg
    assert kind in msg


@pytest.mark.parametrize("name", ["system", "audit"])
def test_handoff_to_other_reserved_names_is_refused(name):
    msg = refused({"kind": "say", "text": "x", "handoff": name})
    assert f"'{name}' is reserved" in msg


def test_work_done_from_a_participant_that_cannot_write_is_refused():
    msg = refused({"kind": "work_done", "text": "reviewed"}, author="reviewer")
    assert "reviewer cannot write" in msg
    assert "builder" in msg  # names who can


def test_work_done_refusal_when_nobody_can_write():
    team = {"a": False, "b": False}
    msg = refused({"kind": "work_done", "text": "x"}, author="a", team=team)
    assert "no one on the team can write" in msg


def test_handoff_kind_without_target_is_refused_and_names_teammates():
    for args in ({"kind": "handoff", "text": "x"}, {"kind": "handoff", "text": "x", "handoff": ""}):
        msg = refused(args)
        assert "needs a handoff argument" in msg
        assert "reviewer" in msg and "tester" in msg


# -- the talk limit ----------------------------------------------------------------------------


def test_restricted_accepts_work_done_from_a_writer():
    assert post({"kind": "work_done", "text": "fixed"}, restricted=True).kind == "work_done"


def test_restricted_accepts_say_to_user():
    for author in ("builder", "reviewer"):
        move = post(
            {"kind": "say", "text": "stuck: which api?", "handoff": "user"}, author=author, restricted=True
        )
        assert move.handoff == "user"


@pytest.mark.parametrize("kind", ["handoff", "say"])
def test_restricted_accepts_non_writer_handing_off_to_writer(kind):
    move = post(
        {"kind": kind, "text": "please fix", "handoff": "builder"}, author="reviewer", restricted=True
    )
    assert move.handoff == "builder"


@pytest.mark.parametrize(
    "author,args",
    [
        ("builder", {"kind": "say", "text": "thinking"}),
        ("builder", {"kind": "handoff", "text": "you", "handoff": "reviewer"}),
        ("builder", {"kind": "wait", "text": "ci"}),
        ("builder", {"kind": "gate", "text": "git push"}),
        ("builder", {"kind": "done", "text": "all done"}),
        ("reviewer", {"kind": "handoff", "text": "you", "handoff": "tester"}),  # tester cannot write
        ("reviewer", {"kind": "handoff", "text": "you", "handoff": "ghost"}),  # not on the team
        ("reviewer", {"kind": "say", "text": "hmm"}),
        ("reviewer", {"kind": "wait", "text": "x", "handoff": "builder"}),
        ("reviewer", {"kind": "done", "text": "x", "handoff": "builder"}),
    ],
)
def test_restricted_refuses_everything_else_and_explains(author, args):
    msg = refused(args, author=author, restricted=True)
    assert "talk limit" in msg
    assert "say with handoff 'user'" in msg
    if author == "builder":
        assert "work_done" in msg and "handoff to a participant that can write" not in msg
    else:
        assert "handoff to a participant that can write (builder)" in msg and "work_done" not in msg


def test_restricted_still_refuses_work_done_from_non_writer_for_the_write_reason():
    msg = refused({"kind": "work_done", "text": "x"}, author="reviewer", restricted=True)
    assert "cannot write" in msg


def test_unrestricted_allows_what_the_talk_limit_refuses():
    assert post({"kind": "say", "text": "thinking"}).kind == "say"
    assert (
        post({"kind": "handoff", "text": "you", "handoff": "tester"}, author="reviewer").handoff == "tester"
    )


def test_moves_imports_nothing_that_does_io():
    import ast
    import inspect

    import autodev.rules.moves as module

    tree = ast.parse(inspect.getsource(module))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {
        "__future__",
        "collections.abc",
        "dataclasses",
        "typing",
        "autodev.errors",
        "autodev.records.base",  # the Literal the moves are defined by: shapes, no I/O
        "autodev.records.post",  # a move checked is a drafted Post
        "autodev.rules.names",
    }
