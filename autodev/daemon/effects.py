"""What a post does once it is on the thread: the one place for it (pure).

`post_change(post, author, state, config, team, tail, audit)` → a `Change`: the state update
(question, wait, gate, the talk limit, stagnation and the other pause rules, the audit's
verdict) and, in order, the thread notes and events it makes. The audit of `done` is the one
effect that calls a model: it is passed in (`daemon/auditing.py` in the daemon, anything in a
test). `silent` is the same for a turn that ended without a post, and `account` adds a turn's
figures to its participant.

The loop applies a `Change` exactly once: its notes are idempotent by id and everything it
changes in state is written in one update together with `applied_seq` (and the turn's figures,
with `accounted_turn`), so a crash anywhere re-applies it once on restart (`daemon/recovery.py`).
Before that the post was checked (`moves.py`), credited (`credit.py`) and committed to the
thread (`harness/thread_tools.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, assert_never

from autodev.config import RunConfig, Team
from autodev.records.events import Event, GateDecidedEvent, GateOpenEvent, WaitEvent
from autodev.records.post import Post
from autodev.records.state import Gate, ModelUsage, Next, Question, RunState, Spent, StateChange, Wait
from autodev.rules import scheduler
from autodev.rules.reasons import reason
from autodev.store.state import blank_figures


@dataclass
class Note:
    """A system or audit post to add to the thread (idempotent by its id)."""

    frm: str
    text: str
    handoff: str | None = None
    id: str | None = None
    extra: dict[str, object] = field(default_factory=lambda: {})


@dataclass
class Change:
    """What applying a post (or a decision) changes: state fields, then notes and events in order."""

    state: StateChange = field(default_factory=lambda: StateChange())
    out: list[Note | Event] = field(default_factory=list)

    def merge(self, other: Change) -> Change:
        self.state.update(other.state)
        self.out.extend(other.out)
        return self

    def apply(self, s: RunState) -> RunState:
        """`s` with this change's fields."""
        return s.changed(**self.state)


class Figures(Protocol):
    """What a turn spent: a `TurnResult`, or the `Resume` of a turn a crash closed."""

    spent: Spent
    compactions: int


Audit = Callable[[Post, RunState], Change]  # (done post, state) -> the verdict's change


def add_models(s: RunState, used: Mapping[str, ModelUsage]) -> RunState:
    """Usage per model label, summed over the run (for `autodev runs stats`)."""
    models = dict(s.models)
    for label, u in used.items():
        had = models.get(label) or ModelUsage()
        models[label] = had.but(**(had + u).plain(6))  # extras a newer autodev wrote stay
    return s.changed(models=models)


def account(s: RunState, name: str, turn: int, figures: Figures, post: Post | None) -> RunState:
    """Add one turn's figures to its participant (pure). Once per turn: `accounted_turn` records the last turn counted."""
    if s.accounted_turn >= turn:
        return s
    q = (s.participants.get(name) or blank_figures()).plus(figures.spent.total)
    q.turns += 1
    q.compactions += figures.compactions or 0
    q.last_turn = turn
    if post and post.credited:
        q.credited += 1
    q.silent_streak = 0 if post else q.silent_streak + 1
    s = s.changed(participants={**s.participants, name: q}, accounted_turn=turn)
    return add_models(s, figures.spent.models)


def silent(
    s: RunState, name: str, turn: int, figures: Figures, max_silent: int
) -> tuple[RunState, dict[str, str] | None]:
    """A turn that ended without a post (pure): its figures, the silent streak and the pause
    rule, marked with `accounted_turn` (so a restart neither loses nor repeats it). Returns the
    new state and the pause reason when the streak reached `max_silent`."""
    if s.accounted_turn >= turn:
        return s, None
    s = account(s, name, turn, figures, None)
    n = s.participants[name].silent_streak
    if n < max_silent:
        return s, None
    paused = reason("silent", who=name, n=n)
    return s.changed(state="paused", reason=paused), paused


def stagnant(tail: Sequence[Post], author: str) -> bool:
    """The author's last three posts are identical in kind and text."""
    mine = [p for p in tail if p.from_ == author][-3:]
    return len(mine) == 3 and len({(p.kind, p.text.strip()) for p in mine}) == 1


def post_change(
    post: Post,
    author: str,
    st: RunState,
    *,
    config: RunConfig,
    team: Team,
    tail: Sequence[Post],
    audit: Audit,
    run_id: str,
    now: float,
) -> Change:
    """Everything `post` changes, given the state before it (`applied_seq` included)."""
    kind = post.kind
    talk = 0 if post.credited else st.talk_turns + 1
    ch = Change({"talk_turns": talk})
    if kind != "wait" and st.last_wait and st.last_wait.author == author:
        ch.state["last_wait"] = None  # the author moved on: the next wait starts a new series
    if st.question and st.question.from_ == author:
        ch.state["question"] = None  # the asker moved on without an answer: no longer open
    if stagnant(tail, author):
        ch.merge(Change({"state": "paused", "reason": reason("stagnation", who=author, kind=kind)}))
    else:
        ch.merge(_move(post, author, st, talk, config, team, audit, run_id, now))
    ch.state["applied_seq"] = post.seq
    return ch


def _move(
    post: Post,
    author: str,
    st: RunState,
    talk: int,
    config: RunConfig,
    team: Team,
    audit: Audit,
    run_id: str,
    now: float,
) -> Change:
    """What `post`'s move does (a new move must be handled here: the checker says so)."""
    kind = post.kind
    match kind:
        case "say" if post.handoff == "user":
            return Change(
                {
                    "state": "awaiting_user",
                    "reason": reason("question", who=author),
                    "question": Question.model_validate(
                        {"from": author, "seq": post.seq, "text": post.text[:2000]}
                    ),
                }
            )
        case "done":
            return audit(post, st)
        case "wait":
            return start_wait(post, author, st, config, now)
        case "gate":
            return open_gate(post, author, st, config, run_id)
        case "say" | "work_done" | "handoff":
            return talk_limit(post, author, talk, config, team)
        case _:
            assert_never(kind)


def talk_limit(post: Post, author: str, talk: int, config: RunConfig, team: Team) -> Change:
    """Past the talk limit the run pauses, except once for a handoff from a reader to a writer."""
    if talk <= config.max_talk_turns:
        return Change()
    writers = {q.name for q in team.participants if q.write}
    handed_to_writer = author not in writers and post.handoff in writers
    if handed_to_writer and talk == config.max_talk_turns + 1:
        return Change()
    return Change({"state": "paused", "reason": reason("talk_limit", n=talk)})


def start_wait(post: Post, author: str, st: RunState, config: RunConfig, now: float) -> Change:
    prev = st.last_wait
    streak = prev.streak + 1 if prev and prev.author == author else 1
    since = prev.since if prev and streak > 1 and prev.since is not None else now
    delay = min(config.wait_cap_sec, config.wait_first_sec * 2 ** (streak - 1))
    if now + delay - since > config.max_wait_min * 60:
        return Change(
            {
                "state": "paused",
                "reason": reason("wait_too_long", who=author),
                "wait": None,
                "last_wait": None,
            }
        )
    wait = Wait(author=author, seq=post.seq, due=now + delay, delay=delay, streak=streak, since=since)
    return Change(
        {
            "state": "waiting",
            "wait": wait,
            "last_wait": wait,
            "reason": reason("wait", who=author, text=post.text[:200]),
        },
        [WaitEvent(participant=author, delay=delay, due=now + delay, streak=streak)],
    )


def open_gate(post: Post, author: str, st: RunState, config: RunConfig, run_id: str) -> Change:
    """A gate post: decided at once by gateAutoDeny / gateAutoApprove / gateMode, else open."""
    from autodev.guard import gates

    gate = Gate(id=str(post.seq), declarer=author, text=post.text, seq=post.seq)
    decision, rule = gates.decide(
        post.text,
        auto_deny=config.gate_auto_deny,
        auto_approve=config.gate_auto_approve,
        mode=config.gate_mode,
    )
    if decision is not None:
        return gate_decision(gate, decision == "approved", rule, "", st, run_id)
    return Change(
        {"state": "gated", "reason": reason("gated", who=author), "gate": gate},
        [GateOpenEvent(id=gate.id, declarer=author, text=post.text[:500])],
    )


def gate_decision(gate: Gate, approved: bool, by: str, why: str, st: RunState, run_id: str) -> Change:
    """A gate decided by the user or a rule: its system note (idempotent by id) and the state it
    leads to; an approval covers one use."""
    verb = "approved" if approved else "denied"
    text = f"Gate {gate.id} by {gate.declarer} {verb} by {by}" + (f": {why}" if why else "")
    kept = [g for g in st.approved_gates if g.id != gate.id]
    note = Note(
        "system",
        text,
        id=f"{run_id}:gate:{gate.id}",
        extra={"gate": {"id": gate.id, "decision": verb, "declarer": gate.declarer, "by": by}},
    )
    return Change(
        {
            "gate": None,
            "state": "running",
            "reason": None,
            "approved_gates": kept + [gate] if approved else kept,
        },
        [note, GateDecidedEvent(id=gate.id, decision=verb, by=by)],
    )


def plan_next(st: RunState, names: list[str], tail: Sequence[Post], last_spoke: dict[str, int]) -> Next:
    """Who speaks next, for status and the panel. While the run waits on the user, that is
    who the user's answer goes to (rule 1), not who would speak without one."""
    if st.state == "gated" and st.gate:
        who = st.gate.declarer
        return Next(
            speaker=who, rule="gate_decision", why=f"{who} speaks once you approve or deny gate {st.gate.id}"
        )
    if st.state == "awaiting_user" and st.question:
        who = st.question.from_
        return Next(speaker=who, rule="user_message", why=f"{who} gets your answer")
    d = scheduler.next_speaker(names, tail, last_spoke)
    return Next(speaker=d.speaker, rule=d.rule, why=d.why)
