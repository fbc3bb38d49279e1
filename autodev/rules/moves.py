"""What a post may be (SPEC §4): checks the raw arguments of the `post` tool. Pure, no I/O.

Every refusal is a `PostRefused` whose message goes back to the model inside the same turn, so
it says what was wrong and what would be accepted instead.
"""

# pyright: strict
from __future__ import annotations

from collections.abc import Mapping
from typing import assert_never, cast, get_args

from autodev.errors import PostRefused
from autodev.records.base import Move
from autodev.records.post import Post
from autodev.rules.names import RESERVED

MOVES: tuple[Move, ...] = get_args(Move)  # the one definition is the Literal `records.Move`

ARGUMENTS = ("kind", "text", "handoff")


def meaning(move: Move) -> str:
    """What a move means, as a refused post's message lists it (a new move must say it here:
    the checker points at this `match`)."""
    match move:
        case "say":
            return "discussion (handoff 'user' asks the user a question)"
        case "work_done":
            return "you changed the repository"
        case "handoff":
            return "pass the turn to the participant named in handoff"
        case "wait":
            return "something outside must happen first"
        case "gate":
            return "an irreversible action needs the user's approval"
        case "done":
            return "the objective is complete"
        case _:
            assert_never(move)


MAX_POST_CHARS = 50_000  # a post is read by people and every later prompt: docs/security.md


def check_post(
    args: object, *, author: str, can_write: bool, team: Mapping[str, bool], restricted: bool
) -> Post:
    """Validate one `post(kind, text, handoff?)` call by `author` and return the move: a drafted
    `Post` (the thread numbers it when it appends it).

    `team` maps each participant to whether it can write. `restricted` is the talk limit.
    A handoff to a name not on the team is accepted: the scheduler warns and falls through.
    """
    if not isinstance(args, Mapping):
        raise PostRefused(
            "post refused: arguments must be an object with kind, text and optional handoff, "
            f"got {type(args).__name__}."
        )
    args = cast(Mapping[object, object], args)  # JSON: any keys, any values, checked below
    extra = sorted(str(k) for k in args if k not in ARGUMENTS)
    if extra:
        raise PostRefused(
            f"post refused: unknown argument(s) {', '.join(map(repr, extra))}. "
            "post takes only kind, text and optional handoff."
        )

    kind = _check_kind(args.get("kind"))
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise PostRefused(
            f"post refused: text is required and must be a non-empty string (got {_shown(text)}). "
            "Say in a sentence or more what this post is about."
        )
    if len(text) > MAX_POST_CHARS:
        raise PostRefused(
            f"post refused: text is {len(text)} characters, more than the {MAX_POST_CHARS} a post may have. "
            "Post a summary; put long material in a file of the repository and name it."
        )
    handoff = _check_handoff(args.get("handoff"), kind)

    if kind == "work_done" and not can_write:
        raise PostRefused(
            f"post refused: {author} cannot write to the repository, so it cannot post work_done. "
            f"Use say to discuss, or handoff to a participant that can write{_writers(team, author)}."
        )
    if kind == "handoff" and handoff is None:
        raise PostRefused(
            "post refused: kind 'handoff' needs a handoff argument naming the participant who speaks next"
            f"{_teammates(team, author)}."
        )
    if restricted:
        _check_talk_limit(kind, handoff, author=author, can_write=can_write, team=team)
    return Post.draft(author, kind, text, handoff)


def _check_kind(kind: object) -> Move:
    for move in MOVES:
        if kind == move:
            return move
    listed = "; ".join(f"{k}: {meaning(k)}" for k in MOVES)
    raise PostRefused(f"post refused: unknown kind {_shown(kind)}. kind must be one of: {listed}.")


def _check_handoff(handoff: object, kind: str) -> str | None:
    # Models often fill an optional field with "" rather than leaving it out.
    if handoff is None or (isinstance(handoff, str) and not handoff.strip()):
        return None
    if not isinstance(handoff, str):
        raise PostRefused(
            f"post refused: handoff must be a participant's name as a string, got {_shown(handoff)}. "
            "Leave it out to let the scheduler choose."
        )
    handoff = handoff.strip()
    if handoff == "user" and kind != "say":
        raise PostRefused(
            f"post refused: only say may hand off to 'user' (this post is {kind}). "
            "To ask the user a question, post kind 'say' with handoff 'user'."
        )
    if handoff in RESERVED and handoff != "user":
        raise PostRefused(
            f"post refused: '{handoff}' is reserved and cannot take a turn. "
            "Hand off to a participant, to 'user' with kind 'say', or leave handoff out."
        )
    return handoff


def _check_talk_limit(
    kind: str, handoff: str | None, *, author: str, can_write: bool, team: Mapping[str, bool]
) -> None:
    if kind == "work_done":
        return  # only writers get here: the write check ran first
    if kind == "say" and handoff == "user":
        return
    if not can_write and kind in ("handoff", "say") and handoff is not None and team.get(handoff) is True:
        return
    allowed = [
        "work_done after changing the repository" if can_write else None,
        "say with handoff 'user' to ask the user",
        None if can_write else f"handoff to a participant that can write{_writers(team, author)}",
    ]
    raise PostRefused(
        "post refused: talk limit reached - the team has taken too many turns without credited work. "
        f"Allowed now: {'; '.join(a for a in allowed if a)}."
    )


def _writers(team: Mapping[str, bool], author: str) -> str:
    names = sorted(n for n, w in team.items() if w and n != author)
    return f" ({', '.join(names)})" if names else " (no one on the team can write)"


def _teammates(team: Mapping[str, bool], author: str) -> str:
    names = sorted(n for n in team if n != author)
    return f" (one of: {', '.join(names)})" if names else ""


def _shown(value: object) -> str:
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
