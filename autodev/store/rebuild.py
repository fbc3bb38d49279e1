"""A lost state.json rebuilt from the logs: never a silent fresh run.

state.json is a summary; the logs are the record. When it is missing but the run folder holds a
thread, the run's identity (run id, turn number), its figures (turns, credited work, tokens and
cost per participant and per model), the objective, the open question, the open gate, approved
gates not yet used, the notices, a wait still running (its timer and backoff series) and the
usage-limit resets of models still limited come back from thread.jsonl, events.jsonl and
harness.jsonl. Readers (status, the CLI's checks) see the rebuilt state without writing it; the
daemon writes it (`daemon/recovery.py`). Control requests queued but not yet applied live only in
state.json (the CLI writes no log): they are lost with it, and the user asks again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from pydantic import ValidationError

from autodev.errors import RecordError
from autodev.records import harness as read_harness
from autodev.records.harness_log import HarnessRecord, TurnStarted
from autodev.records.post import GateNote, Post
from autodev.records.state import Figures, ModelUsage, RunState, Usage
from autodev.rules.reasons import reason
from autodev.store.journal import JsonObject, iter_records
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile, blank_figures, blank_state, lost
from autodev.store.thread import now_ts

if TYPE_CHECKING:
    from autodev.records.events import Event

USER_KEEP = 10


def missing(paths: RunPaths) -> bool:
    """state.json is gone but the run left a thread behind."""
    return lost(paths.state, paths.thread)


def read_state(paths: RunPaths) -> RunState:
    """state.json, or what the logs say it was when it is missing."""
    return rebuild(paths) if missing(paths) else StateFile(paths.state).read()


def _records(path: Path) -> list[JsonObject]:
    return list(iter_records(path)) if path.exists() else []


def rebuild(paths: RunPaths) -> RunState:
    try:
        return from_records(_records(paths.thread), _records(paths.events), _records(paths.harness_log))
    except ValidationError as e:  # a line edited or damaged by hand: say which record, not a traceback
        first = e.errors()[0]
        title, loc = _record_of(e.title, first["loc"])
        where = ".".join(str(part) for part in loc) or "the line"
        raise RecordError(
            f"{paths.run_dir}: state.json is missing, and a line of the run's logs that rebuilds it "
            f"does not fit its record ({title}: {where}: {first['msg']})",
            "restore the damaged line of thread.jsonl or harness.jsonl (or move the run folder "
            "aside to start afresh)",
        ) from None


def _record_of(title: str, loc: tuple[int | str, ...]) -> tuple[str, tuple[int | str, ...]]:
    """The record an error is about, by its model's name: a harness line is read into the union
    of records, whose errors start their `loc` with the record's `type`."""
    if title.startswith("tagged-union[") and loc:
        kinds = {
            get_args(m.model_fields["type"].annotation)[0]: m for m in get_args(get_args(HarnessRecord)[0])
        }
        if (model := kinds.get(loc[0])) is not None:
            return model.__name__, loc[1:]
    return title, loc


def from_records(posts: list[JsonObject], events: list[JsonObject], harness: list[JsonObject]) -> RunState:
    """The state these records say the run is in (a rewind passes the prefix it keeps)."""
    # The event kinds load here: status reads a state.json, and only a lost one needs them.
    from autodev.records.events import readable

    thread = [Post.model_validate(p) for p in posts]
    # Leniently, as the panel does: a line a kind does not fit loses that field, not the rebuild.
    evs: list[Event] = [ev for e in events if (ev := readable(e)) is not None]
    return _state(thread, evs, harness)


def _state(posts: list[Post], events: list[Event], harness: list[JsonObject]) -> RunState:
    run_id = next((e.run for e in reversed(events) if e.run), None)
    if run_id is None:  # no events: the participants' post ids carry it ("<run>:t<turn>:post")
        run_id = next((p.id.split(":")[0] for p in posts if p.id is not None and ":t" in p.id), None)
    # Of the harness log only the turn_started records' turn and head are used (and passed on).
    starts = [h for r in harness if isinstance(h := read_harness(r), TurnStarted)]
    turns = [s.turn for s in starts]
    turns += [t for e in events if isinstance(t := e.set_fields().get("turn"), int)]
    turn = max(turns, default=0)
    users = [p for p in posts if p.from_ == "user"]
    talk_turns = 0
    for p in reversed(posts):
        if p.from_ == "user" or p.credited:
            break
        if p.turn is not None:
            talk_turns += 1
    last_user = users[-1].seq if users else 0
    participants, models = _figures(events)
    st = blank_state().but(
        run_id=run_id,
        started_at=events[0].ts if events else now_ts(),
        base_head=starts[0].head if starts else None,
        turn=turn,
        accounted_turn=turn,
        applied_seq=posts[-1].seq if posts else 0,
        objective=users[0].text if users else "",
        user_messages=[p.text[:4000] for p in users][-USER_KEEP:],
        rebuilt_from_logs=now_ts(),
        warnings=["state.json was missing: the run's state was rebuilt from its logs"],
        participants=participants,
        models=models,
    )
    st = _open_items(st, posts, events)
    st = _timers(st, posts, events, time.time())
    return st.but(
        talk_turns=talk_turns,
        audits=sum(1 for p in posts if p.from_ == "audit" and p.seq > last_user),
        cursors={p.from_: p.seq for p in posts if p.turn is not None},
    )


def _figures(events: list[Event]) -> tuple[dict[str, Figures], dict[str, ModelUsage]]:
    """Each participant's figures and each model's usage, from the events."""
    from autodev.records.events import GenerationEvent, PostEvent, TurnEndedEvent

    parts: dict[str, Figures] = {}
    spent: dict[str, Usage] = {}  # a participant's tokens and cost (figures count no generations)
    models: dict[str, ModelUsage] = {}

    def who(name: str) -> Figures:
        return parts.setdefault(name, blank_figures())

    for e in events:
        if isinstance(e, GenerationEvent) and e.participant:
            who(e.participant)
            used = e.dump()
            spent[e.participant] = spent.get(e.participant, Usage()) + Usage.of(used)
            label = str(e.model)
            models[label] = models.get(label, ModelUsage()) + ModelUsage.of({**used, "generations": 1})
        elif isinstance(e, TurnEndedEvent) and e.participant:
            q = who(e.participant)
            parts[e.participant] = q.but(
                turns=q.turns + 1, last_turn=e.turn, silent_streak=0 if e.posted else q.silent_streak + 1
            )
        elif isinstance(e, PostEvent) and e.post.turn is not None and e.post.credited:
            q = who(e.post.from_)
            parts[e.post.from_] = q.but(credited=q.credited + 1)
    # Cost rounded once, when it is all added up (as state.json has always kept it).
    figures = {name: q.but(**spent.get(name, Usage()).plain(6)) for name, q in parts.items()}
    return figures, {label: m.but(cost=round(m.cost, 6)) for label, m in models.items()}


def _open_items(st: RunState, posts: list[Post], events: list[Event]) -> RunState:
    """The question, gate, approved gates and notices the run left open."""
    decided = {p.gate.id: p.gate for p in posts if p.gate is not None}
    notices = _notices(posts, events)
    return st.but(
        approved_gates=_approved(posts, events, decided),
        **_left_open(posts, decided),
        notices=notices,
        notice_seq=max((int(k) for k in notices if k.isdigit()), default=0),
    )


def _approved(posts: list[Post], events: list[Event], decided: Mapping[str, GateNote]) -> list[JsonObject]:
    """The gates approved and not yet used, as state.json lists them."""
    from autodev.records.events import GateUsedEvent

    by_seq = {p.seq: p for p in posts}
    used = {i for e in events if isinstance(e, GateUsedEvent) for i in e.ids}
    return [
        {"id": gid, "declarer": g.declarer, "text": by_seq[int(gid)].text, "seq": int(gid)}
        for gid, g in decided.items()
        if g.decision == "approved" and gid not in used and gid.isdigit() and int(gid) in by_seq
    ]


def _left_open(posts: list[Post], decided: Mapping[str, GateNote]) -> JsonObject:
    """The run's state by its newest posts since the user's last: complete, a question, a gate
    no one decided, else stopped."""
    opened: JsonObject = {"state": "stopped", "reason": reason("rebuilt")}
    for p in reversed(posts):
        if p.from_ == "user":
            break
        if p.from_ == "audit" and p.verdict == "accept":
            opened = {"state": "complete", "reason": reason("complete")}
            break
        if p.turn is None:
            continue
        if p.kind == "say" and p.handoff == "user":
            opened["question"] = {"from": p.from_, "seq": p.seq, "text": p.text[:2000]}
            opened.update(state="awaiting_user", reason=reason("question", who=p.from_))
        elif p.kind == "gate" and str(p.seq) not in decided:
            opened["gate"] = {"id": str(p.seq), "declarer": p.from_, "text": p.text, "seq": p.seq}
            opened.update(state="gated", reason=reason("gated", who=p.from_))
        break
    return opened


def _notices(posts: list[Post], events: list[Event]) -> dict[str, JsonObject]:
    """The notices as their events left them: answered, pinned, released, or let go by a post of
    the user's."""
    from autodev.records.events import (
        NoticeAnsweredEvent,
        NoticeEvent,
        NoticePinnedEvent,
        NoticeReleasedEvent,
        PostEvent,
    )

    notices: dict[str, JsonObject] = {}
    for e in events:
        if isinstance(e, NoticeEvent):
            nid = str(e.id)
            notices[nid] = {
                "id": nid,
                "from": e.participant,
                "text": e.text or "",
                "hold": e.hold,
                "pinned": False,
                "answer": None,
                "delivered": False,
                "ts": e.ts,
            }
        elif isinstance(e, NoticeAnsweredEvent | NoticePinnedEvent | NoticeReleasedEvent):
            n = notices.get(str(e.id))
            if n is None:
                continue
            if isinstance(e, NoticeAnsweredEvent):
                n["answer"] = _answer_text(posts, str(e.id)) or "(answered)"
                if not n["pinned"]:
                    n["hold"] = None
            elif isinstance(e, NoticePinnedEvent):
                n["pinned"] = True
            else:
                n.update(pinned=False, hold=None)
        elif isinstance(e, PostEvent) and e.post.from_ == "user":
            for n in notices.values():
                if not n["pinned"]:
                    n["hold"] = None
    return notices


def _answer_text(posts: list[Post], nid: str) -> str | None:
    for p in reversed(posts):
        n = p.notice
        if n is not None and n.id == nid and n.answered:
            return p.text.split(": ", 1)[-1]
    return None


def _epoch(ts: object) -> float | None:
    """An event's time (`thread.now_ts`) in seconds since the epoch."""
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _timers(st: RunState, posts: list[Post], events: list[Event], now: float) -> RunState:
    """Usage-limit resets still ahead (from `failover` events: when and for how long), and the
    wait the run was in when the logs end (its last `state` event is `waiting`)."""
    from autodev.records.events import FailoverEvent, StateEvent, WaitEvent

    limited: dict[str, float] = {}
    owner: dict[str, str] = {}
    for e in events:
        at = _epoch(e.ts)
        if isinstance(e, FailoverEvent) and e.model and at is not None:
            until = at + float(e.retry_after or 0)
            limited[e.model] = max(limited.get(e.model, 0.0), until)
            owner[e.model] = str(e.participant)
    ahead = {m: t for m, t in limited.items() if t > now}
    st = st.but(limited_until=ahead)
    last = next((e for e in reversed(events) if isinstance(e, StateEvent)), None)
    if st.state != "stopped" or last is None or last.state != "waiting":
        return st
    why = last.reason
    if why is None:
        return st
    if why.code == "usage_limit":
        who = next((owner[m] for m in reversed(list(owner)) if m in ahead), None)
        resets = [t for m, t in ahead.items() if owner[m] == who]
        if who is None or not resets:
            return st
        return st.but(
            wait={"author": who, "due": min(resets), "usage_limit": True}, state="waiting", reason=why
        )
    if why.code == "wait":
        waits = [(e, e.due) for e in events if isinstance(e, WaitEvent) and e.due is not None]
        if not waits:
            return st
        w, due = waits[-1]
        who = w.participant
        mine = [p for p in posts if p.from_ == who and p.kind == "wait"]
        series = [(e, d) for e, d in waits if e.participant == who][-int(w.streak or 1) :]
        first, first_due = series[0]
        wait = {
            "author": who,
            "seq": mine[-1].seq if mine else None,
            "due": due,
            "delay": w.delay,
            "streak": w.streak or 1,
            "since": first_due - (first.delay or 0),
        }
        return st.but(wait=wait, last_wait=wait, state="waiting", reason=why)
    return st
