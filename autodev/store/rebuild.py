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
from datetime import datetime
from pathlib import Path

from autodev.records.state import Figures, ModelUsage, RunState
from autodev.rules.reasons import reason
from autodev.store.journal import iter_records
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile, blank_figures, blank_state
from autodev.store.thread import now_ts

USER_KEEP = 10


def missing(paths: RunPaths) -> bool:
    """state.json is gone but the run left a thread behind."""
    return not paths.state.exists() and paths.thread.exists() and paths.thread.stat().st_size > 0


def read_state(paths: RunPaths) -> RunState:
    """state.json, or what the logs say it was when it is missing."""
    return rebuild(paths) if missing(paths) else StateFile(paths.state).read()


def _records(path: Path) -> list[dict]:
    return list(iter_records(path)) if path.exists() else []


def rebuild(paths: RunPaths) -> RunState:
    return from_records(_records(paths.thread), _records(paths.events), _records(paths.harness_log))


def from_records(posts: list[dict], events: list[dict], harness: list[dict]) -> RunState:
    """The state these records say the run is in (a rewind passes the prefix it keeps)."""
    run_id = next((e["run"] for e in reversed(events) if isinstance(e.get("run"), str)), None)
    if run_id is None:  # no events: the participants' post ids carry it ("<run>:t<turn>:post")
        run_id = next((str(p["id"]).split(":")[0] for p in posts if ":t" in str(p.get("id", ""))), None)
    turns = [r["turn"] for r in harness if r.get("type") == "turn_started" and isinstance(r.get("turn"), int)]
    turns += [e["turn"] for e in events if isinstance(e.get("turn"), int)]
    turn = max(turns, default=0)
    users = [p for p in posts if p["from"] == "user"]
    first_start = next((r for r in harness if r.get("type") == "turn_started"), {})
    talk_turns = 0
    for p in reversed(posts):
        if p["from"] == "user" or (p["kind"] == "work_done" and p.get("credit")):
            break
        if p.get("turn") is not None:
            talk_turns += 1
    last_user = users[-1]["seq"] if users else 0
    participants, models = _figures(events)
    st = blank_state().but(
        run_id=run_id,
        started_at=events[0]["ts"] if events else now_ts(),
        base_head=first_start.get("head"),
        turn=turn,
        accounted_turn=turn,
        applied_seq=posts[-1]["seq"] if posts else 0,
        objective=users[0]["text"] if users else "",
        user_messages=[p["text"][:4000] for p in users][-USER_KEEP:],
        rebuilt_from_logs=now_ts(),
        warnings=["state.json was missing: the run's state was rebuilt from its logs"],
        participants=participants,
        models=models,
    )
    st = _open_items(st, posts, events)
    st = _timers(st, posts, events, time.time())
    return st.but(
        talk_turns=talk_turns,
        audits=sum(1 for p in posts if p["from"] == "audit" and p["seq"] > last_user),
        cursors={p["from"]: p["seq"] for p in posts if p.get("turn") is not None},
    )


def _figures(events: list[dict]) -> tuple[dict[str, Figures], dict[str, ModelUsage]]:
    """Each participant's figures and each model's usage, from the events."""
    parts: dict[str, Figures] = {}
    models: dict[str, ModelUsage] = {}

    def who(name: str) -> Figures:
        return parts.setdefault(name, blank_figures())

    for e in events:
        t, name = e.get("type"), e.get("participant")
        if t == "generation" and name:
            q = who(name)
            label = str(e.get("model"))
            models[label] = models.get(label, ModelUsage()) + ModelUsage.of({**e, "generations": 1})
            q.prompt_tokens += e.get("prompt_tokens") or 0
            q.completion_tokens += e.get("completion_tokens") or 0
            q.cost += e.get("cost") or 0
        elif t == "turn_ended" and name:
            q = who(name)
            q.turns += 1
            q.last_turn = e.get("turn")
            q.silent_streak = 0 if e.get("posted") else q.silent_streak + 1
        elif t == "post" and e.get("kind") == "work_done" and e.get("credit") and e.get("turn") is not None:
            who(e["from"]).credited += 1
    for q in [*parts.values(), *models.values()]:
        q.cost = round(q.cost, 6)
    return parts, models


def _open_items(st: RunState, posts: list[dict], events: list[dict]) -> RunState:
    """The question, gate, approved gates and notices the run left open."""
    by_seq = {p["seq"]: p for p in posts}
    decided = {str(p["gate"]["id"]): p["gate"] for p in posts if isinstance(p.get("gate"), dict)}
    used = {str(i) for e in events if e.get("type") == "gate_used" for i in e.get("ids") or []}
    approved = [
        {"id": gid, "declarer": g.get("declarer"), "text": by_seq[int(gid)]["text"], "seq": int(gid)}
        for gid, g in decided.items()
        if g.get("decision") == "approved" and gid not in used and gid.isdigit() and int(gid) in by_seq
    ]
    opened: dict[str, object] = {"state": "stopped", "reason": reason("rebuilt")}
    for p in reversed(posts):
        if p["from"] == "user":
            break
        if p["from"] == "audit" and p.get("verdict") == "accept":
            opened = {"state": "complete", "reason": reason("complete")}
            break
        if p.get("turn") is None:
            continue
        if p["kind"] == "say" and p.get("handoff") == "user":
            opened["question"] = {"from": p["from"], "seq": p["seq"], "text": p["text"][:2000]}
            opened.update(state="awaiting_user", reason=reason("question", who=p["from"]))
        elif p["kind"] == "gate" and str(p["seq"]) not in decided:
            opened["gate"] = {"id": str(p["seq"]), "declarer": p["from"], "text": p["text"], "seq": p["seq"]}
            opened.update(state="gated", reason=reason("gated", who=p["from"]))
        break
    notices: dict[str, dict] = {}
    for e in events:
        t, nid = e.get("type"), str(e.get("id"))
        if t == "notice":
            notices[nid] = {
                "id": nid,
                "from": e.get("participant"),
                "text": e.get("text") or "",
                "hold": e.get("hold"),
                "pinned": False,
                "answer": None,
                "delivered": False,
                "ts": e.get("ts"),
            }
        elif nid in notices and t == "notice_answered":
            n = notices[nid]
            n["answer"] = _answer_text(posts, nid) or "(answered)"
            if not n["pinned"]:
                n["hold"] = None
        elif nid in notices and t == "notice_pinned":
            notices[nid]["pinned"] = True
        elif nid in notices and t == "notice_released":
            notices[nid].update(pinned=False, hold=None)
        elif t == "post" and e.get("from") == "user":
            for n in notices.values():
                if not n["pinned"]:
                    n["hold"] = None
    return st.but(
        approved_gates=approved,
        **opened,
        notices=notices,
        notice_seq=max((int(k) for k in notices if k.isdigit()), default=0),
    )


def _answer_text(posts: list[dict], nid: str) -> str | None:
    for p in reversed(posts):
        n = p.get("notice")
        if isinstance(n, dict) and str(n.get("id")) == nid and n.get("answered"):
            return p["text"].split(": ", 1)[-1]
    return None


def _epoch(ts: object) -> float | None:
    """An event's time (`thread.now_ts`) in seconds since the epoch."""
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _timers(st: RunState, posts: list[dict], events: list[dict], now: float) -> RunState:
    """Usage-limit resets still ahead (from `failover` events: when and for how long), and the
    wait the run was in when the logs end (its last `state` event is `waiting`)."""
    limited: dict[str, float] = {}
    owner: dict[str, str] = {}
    for e in events:
        at = _epoch(e.get("ts"))
        if e.get("type") == "failover" and e.get("model") and at is not None:
            until = at + float(e.get("retry_after") or 0)
            limited[e["model"]] = max(limited.get(e["model"], 0.0), until)
            owner[e["model"]] = str(e.get("participant"))
    ahead = {m: t for m, t in limited.items() if t > now}
    st = st.but(limited_until=ahead)
    last = next((e for e in reversed(events) if e.get("type") == "state"), None)
    if st.state != "stopped" or last is None or last.get("state") != "waiting":
        return st
    why = last.get("reason") or {}
    if why.get("code") == "usage_limit":
        who = next((owner[m] for m in reversed(list(owner)) if m in ahead), None)
        resets = [t for m, t in ahead.items() if owner[m] == who]
        if who is None or not resets:
            return st
        return st.but(
            wait={"author": who, "due": min(resets), "usage_limit": True}, state="waiting", reason=why
        )
    if why.get("code") == "wait":
        waits = [e for e in events if e.get("type") == "wait" and isinstance(e.get("due"), int | float)]
        if not waits:
            return st
        w = waits[-1]
        who = w.get("participant")
        mine = [p for p in posts if p["from"] == who and p["kind"] == "wait"]
        series = [e for e in waits if e.get("participant") == who][-int(w.get("streak") or 1) :]
        first = series[0]
        wait = {
            "author": who,
            "seq": mine[-1]["seq"] if mine else None,
            "due": w["due"],
            "delay": w.get("delay"),
            "streak": w.get("streak") or 1,
            "since": first["due"] - (first.get("delay") or 0),
        }
        return st.but(wait=wait, last_wait=wait, state="waiting", reason=why)
    return st
