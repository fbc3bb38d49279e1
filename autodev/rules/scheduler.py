"""Who speaks next: a pure function of the team and the thread's tail (SPEC §5).

No model call, no I/O, no clock: the same team, tail and last-spoke index always give the same
answer, so the daemon can show "who speaks next and why" before the turn runs and a restart
picks the same speaker.

Vocabulary used below:
- a *relevant* record is any thread record except a `system` note; a system note that carries a
  gate decision (`gate.decision` approved/denied) is relevant too, because it hands the turn back
  to the gate's declarer.
- a *participant* is any non-reserved author, on the team or not: posts by someone who has left
  the team still shape the rules, but such a name is never returned.
"""

# pyright: strict
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autodev.rules.names import RESERVED

if TYPE_CHECKING:
    from autodev.records.post import Post

RULES = (
    "user_message",
    "gate_decision",
    "abab_breaker",
    "self_handoff_refused",
    "handoff",
    "after_wait",
    "silent_longest",
    "self_handoff",
    "only_member",
)


@dataclass(frozen=True)
class Decision:
    speaker: str  # always a team member
    rule: str  # one of RULES
    why: str  # one human sentence, shown in status
    warnings: tuple[str, ...] = ()  # e.g. a handoff to a name not on the team


def next_speaker(team: Sequence[str], tail: Sequence[Post], last_spoke: Mapping[str, int]) -> Decision:
    """Pick the next speaker from `team` given the newest thread posts `tail` (in seq order).

    `last_spoke` maps a participant to the seq of its newest post on the whole thread; it is
    merged with what the tail itself shows, so a slightly stale index cannot pick someone who
    just spoke.
    """
    members = sorted(set(team))
    if not members:
        raise ValueError("next_speaker needs a non-empty team")
    return _Pick(members, tail, last_spoke).decide()


class _Pick:
    """One scheduling decision; a class only to share the inputs between the rule helpers."""

    def __init__(self, members: list[str], tail: Sequence[Post], last_spoke: Mapping[str, int]):
        self.members = members
        self.on_team = set(members)
        self.relevant = [r for r in tail if _is_relevant(r)]
        self.warnings: list[str] = []
        self.last = _merged_last_spoke(self.on_team, tail, last_spoke)

    # -- the rules, in order; each returns a Decision or None (does not apply) ---------------

    def decide(self) -> Decision:
        if not self.relevant:
            return self._silent_longest(exclude=None)
        newest = self.relevant[-1]

        if newest.from_ == "user":
            return self._user_message() or self._silent_longest(exclude=None)
        if _is_gate_decision(newest):
            picked = self._gate_decision(newest, after_user=False)
            if picked:
                return picked

        for rule in (self._breaker, self._self_handoff, self._handoff, self._after_wait):
            picked = rule(newest)
            if picked:
                return picked

        # Rule 6: the last speaker sits out unless it just delivered work; a post by the user,
        # the audit or the system belongs to nobody on the team, so nobody sits out.
        author = newest.from_
        sits_out = None if author in RESERVED or newest.kind == "work_done" else author
        return self._silent_longest(exclude=sits_out)

    def _user_message(self) -> Decision | None:
        """Rule 1: the user spoke; route it to what the user was presumably answering."""
        before = next((r for r in reversed(self.relevant) if r.from_ != "user"), None)
        if before is None:
            return None
        if _is_gate_decision(before):
            # The decision was made but its declarer has not spoken since: still its turn.
            return self._gate_decision(before, after_user=True)
        author, kind = before.from_, before.kind
        if author in RESERVED:
            return None
        if kind == "say" and before.handoff == "user":
            why = f"the user answered {author}'s question"
        elif kind == "gate":
            why = f"the user wrote while {author}'s gate was open"
        elif kind == "wait":
            why = f"the user wrote during {author}'s wait"
        else:
            return None
        if author not in self.on_team:
            self.warnings.append(f"the user's message would go to '{author}', who is not on the team")
            return None
        return self._decision(author, "user_message", why)

    def _gate_decision(self, note: Post, *, after_user: bool) -> Decision | None:
        gate = note.gate
        assert gate is not None, "a gate decision carries its gate"
        declarer = gate.declarer
        if declarer is None or declarer not in self.on_team:
            self.warnings.append(f"gate {gate.id} was declared by '{declarer}', who is not on the team")
            return None
        why = f"{declarer}'s gate {gate.id} was {gate.decision}"
        if after_user:
            why += " and the user wrote since"
        return self._decision(declarer, "gate_decision", why)

    def _breaker(self, newest: Post) -> Decision | None:
        """Rule 2: two participants bouncing the turn without work get interrupted by a third."""
        four = self.relevant[-4:]
        if len(four) < 4 or any(r.kind == "work_done" for r in four):
            return None
        authors = [r.from_ for r in four]
        if any(a in RESERVED for a in authors):
            return None
        a, b = authors[0], authors[1]
        if a == b or authors != [a, b, a, b]:
            return None
        others = [m for m in self.members if m not in (a, b)]
        if not others:
            return None
        pick = self._most_silent(others)
        why = f"{a} and {b} alternated four posts without work; {self._silence(pick)}"
        return self._decision(pick, "abab_breaker", why)

    def _self_handoff(self, newest: Post) -> Decision | None:
        """Rule 3: handing off to yourself is only allowed right after credited work."""
        author = newest.from_
        if author in RESERVED or newest.handoff != author:
            return None
        if newest.kind == "work_done" and newest.credit is not None:
            if author in self.on_team:
                why = f"{author} handed off to itself after credited work"
                return self._decision(author, "self_handoff", why)
            self.warnings.append(f"handoff to '{author}' ignored: not on the team")
            return None
        others = [m for m in self.members if m != author]
        if not others:
            return self._only_member()
        pick = self._most_silent(others)
        why = f"{author} handed off to itself without credited work; {self._silence(pick)}"
        return self._decision(pick, "self_handoff_refused", why)

    def _handoff(self, newest: Post) -> Decision | None:
        """Rule 4: a handoff to a team member gives it the turn (the audit's reopen included)."""
        target = newest.handoff
        if newest.from_ == "system" or not target or target == "user":
            return None
        if target not in self.on_team:
            self.warnings.append(f"handoff to '{target}' ignored: not on the team")
            return None
        return self._decision(target, "handoff", f"{newest.from_} handed off to {target}")

    def _after_wait(self, newest: Post) -> Decision | None:
        """Rule 5: after a wait its author speaks again; the daemon decides when."""
        author = newest.from_
        if newest.kind != "wait" or author in RESERVED:
            return None
        if author not in self.on_team:
            self.warnings.append(f"the wait by '{author}' has no one to resume it: not on the team")
            return None
        return self._decision(author, "after_wait", f"{author}'s wait is over")

    def _silent_longest(self, exclude: str | None) -> Decision:
        """Rule 6, and the end of every fall-through."""
        if len(self.members) == 1:
            return self._only_member()
        pool = [m for m in self.members if m != exclude]
        pick = self._most_silent(pool)
        why = self._silence(pick)
        if exclude in self.on_team:
            why += f" ({exclude} spoke last)"
        return self._decision(pick, "silent_longest", why)

    # -- helpers ---------------------------------------------------------------------------------

    def _only_member(self) -> Decision:
        only = self.members[0]
        return self._decision(only, "only_member", f"{only} is the only member of the team")

    def _most_silent(self, pool: Sequence[str]) -> str:
        # Never spoken sorts before any seq (seqs start at 1); remaining ties break by name.
        return min(pool, key=lambda m: (self.last.get(m, 0), m))

    def _silence(self, name: str) -> str:
        if name not in self.last:
            return f"{name} has not spoken yet"
        return f"{name} has been silent longest (last spoke at #{self.last[name]})"

    def _decision(self, speaker: str, rule: str, why: str) -> Decision:
        return Decision(speaker=speaker, rule=rule, why=why, warnings=tuple(self.warnings))


def _is_gate_decision(post: Post) -> bool:
    return post.from_ == "system" and post.gate is not None and post.gate.decision in ("approved", "denied")


def _is_relevant(post: Post) -> bool:
    return post.from_ != "system" or _is_gate_decision(post)


def _merged_last_spoke(
    on_team: set[str], tail: Sequence[Post], last_spoke: Mapping[str, int]
) -> dict[str, int]:
    """Each team member's newest seq, from the index and the tail, whichever is newer."""
    last: dict[str, int] = {}
    for name, seq in last_spoke.items():
        if name in on_team:
            last[name] = seq
    for post in tail:
        name, seq = post.from_, post.seq
        if name in on_team and seq > last.get(name, 0):
            last[name] = seq
    return last
