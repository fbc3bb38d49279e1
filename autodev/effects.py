"""What a post does after it reaches the thread (the daemon's part): questions, waits, gates,
the audit of `done`, the talk limit and the other pause rules, and per-participant accounting.

Effects are applied exactly once: everything a post changes in state is written in one update
together with `applied_seq`, and the thread notes effects add are idempotent by id.
"""

from __future__ import annotations

import time

from autodev import reasons, scheduler
from autodev.errors import ProviderError
from autodev.harness import providers
from autodev.reasons import reason
from autodev.thread import TAIL

USAGE = ("prompt_tokens", "completion_tokens", "cost")


def _add_models(s: dict, used: dict[str, dict]) -> None:
    """Usage per model label, summed over the run (for `autodev runs stats`)."""
    models = s.setdefault("models", {})
    for label, u in used.items():
        m = models.setdefault(
            label, {"generations": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
        )
        m["generations"] += u.get("generations", 0)
        for k in USAGE:
            m[k] += u.get(k) or 0
        m["cost"] = round(m["cost"], 6)


def account(s: dict, name: str, turn: int, figures, post: dict | None) -> dict:
    """Add one turn's figures (anything with prompt_tokens, completion_tokens and cost) to its
    participant (pure). Once per turn: `accounted_turn` records the last turn counted."""
    if s.get("accounted_turn", 0) >= turn:
        return s
    ps = s.setdefault("participants", {})
    q = ps.setdefault(
        name,
        {
            "turns": 0,
            "credited": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost": 0.0,
            "silent_streak": 0,
        },
    )
    q["turns"] += 1
    q["prompt_tokens"] += figures.prompt_tokens
    q["completion_tokens"] += figures.completion_tokens
    q["cached_tokens"] = q.get("cached_tokens", 0) + (getattr(figures, "cached_tokens", 0) or 0)
    q["compactions"] = q.get("compactions", 0) + (getattr(figures, "compactions", 0) or 0)
    q["cost"] = round(q["cost"] + (figures.cost or 0.0), 6)
    q["last_turn"] = turn
    if post and post.get("kind") == "work_done" and post.get("credit"):
        q["credited"] += 1
    q["silent_streak"] = 0 if post else q.get("silent_streak", 0) + 1
    _add_models(s, getattr(figures, "models", None) or {})
    s["accounted_turn"] = turn
    return s


class EffectsMixin:
    def _gate_answer(self, msg: dict) -> None:
        st = self.state.read()
        gate = st.get("gate")
        if not gate or (msg.get("gate_id") and msg["gate_id"] != gate["id"]):
            self.events.emit("warning", message=f"no open gate {msg.get('gate_id') or ''} to {msg['kind']}")
            return
        approved = msg["kind"] == "approve"
        self._decide_gate(gate, approved, "the user", msg.get("reason") or "")

    def _gate_decision(self, gate: dict, approved: bool, by: str, why: str, st: dict) -> dict:
        """The system note for a gate decision (idempotent by id) and the state it leads to."""
        verb = "approved" if approved else "denied"
        text = f"Gate {gate['id']} by {gate['declarer']} {verb} by {by}" + (f": {why}" if why else "")
        self._note(
            "system",
            text,
            id=f"{self.run_id}:gate:{gate['id']}",
            gate={"id": gate["id"], "decision": verb, "declarer": gate["declarer"], "by": by},
        )
        self.events.emit("gate_decided", id=gate["id"], decision=verb, by=by)
        kept = [g for g in st.get("approved_gates", []) if g["id"] != gate["id"]]
        return {
            "gate": None,
            "state": "running",
            "reason": None,
            "approved_gates": kept + [gate] if approved else kept,
        }

    def _decide_gate(self, gate: dict, approved: bool, by: str, why: str) -> None:
        ch = self._gate_decision(gate, approved, by, why, self.state.read())
        self.state.update(lambda s: {**s, **ch})
        self._state_event("running", None)

    def _silent(self, name: str, why: str, turn: int, figures) -> None:
        """A turn that ended without a post: its figures, the silent streak and the pause rule,
        in one state update marked with `accounted_turn` (so a restart neither loses nor
        repeats it)."""
        paused = None

        def change(s: dict) -> dict:
            nonlocal paused
            if s.get("accounted_turn", 0) >= turn:
                return s
            s = account(s, name, turn, figures, None)
            n = s["participants"][name]["silent_streak"]
            if n >= self.config.max_silent_turns:
                paused = reason("silent", who=name, n=n)
                s["state"], s["reason"] = "paused", paused
            return s

        st = self.state.update(change)
        n = st["participants"].get(name, {}).get("silent_streak", 0)
        self.events.emit("silent_turn", participant=name, reason=why, streak=n)
        if paused:
            self._state_event("paused", paused)

    def _after_post(self, post: dict, author: str, turn: int | None = None, figures=None) -> None:
        """Apply a post's effects exactly once. Everything they change in state (with the
        turn's figures when given) is written in one update together with `applied_seq`, and
        the thread notes they add are idempotent by id, so a crash anywhere in here is repaired
        by applying them again on restart."""
        st = self.state.read()
        if post["seq"] <= st.get("applied_seq", 0):
            return
        kind = post["kind"]
        credited = kind == "work_done" and bool(post.get("credit"))
        talk = 0 if credited else st.get("talk_turns", 0) + 1
        ch: dict = {"talk_turns": talk}
        if kind != "wait" and (st.get("last_wait") or {}).get("author") == author:
            ch["last_wait"] = None  # the author moved on: the next wait starts a new series
        if (st.get("question") or {}).get("from") == author:
            ch["question"] = None  # the asker moved on without an answer: no longer open
        if self._stagnant(author):
            ch.update(state="paused", reason=reason("stagnation", who=author, kind=kind))
        elif kind == "say" and post.get("handoff") == "user":
            ch.update(
                state="awaiting_user",
                reason=reason("question", who=author),
                question={"from": author, "seq": post["seq"], "text": post["text"][:2000]},
            )
        elif kind == "done":
            ch.update(self._audit(post, st))
        elif kind == "wait":
            ch.update(self._start_wait(post, author, st))
        elif kind == "gate":
            ch.update(self._gate(post, author, st))
        elif talk > self.config.max_talk_turns:
            writers = {q.name for q in self.team.participants if q.write}
            handed_to_writer = author not in writers and post.get("handoff") in writers
            if not (handed_to_writer and talk == self.config.max_talk_turns + 1):
                ch.update(state="paused", reason=reason("talk_limit", n=talk))
        ch["applied_seq"] = post["seq"]
        if figures is None or turn is None:
            self.state.update(lambda s: {**s, **ch})
        else:
            self.state.update(lambda s: account({**s, **ch}, author, turn, figures, post))
        if "state" in ch:
            self._state_event(ch["state"], ch.get("reason"))

    def _stagnant(self, author: str) -> bool:
        """The author's last three posts are identical in kind and text."""
        mine = [p for p in self.thread.tail(TAIL) if p["from"] == author][-3:]
        return len(mine) == 3 and len({(p["kind"], p["text"].strip()) for p in mine}) == 1

    def _start_wait(self, post: dict, author: str, st: dict) -> dict:
        prev = st.get("last_wait") or {}
        streak = prev.get("streak", 0) + 1 if prev.get("author") == author else 1
        since = prev.get("since", time.time()) if streak > 1 else time.time()
        delay = min(self.config.wait_cap_sec, self.config.wait_first_sec * 2 ** (streak - 1))
        if time.time() + delay - since > self.config.max_wait_min * 60:
            return {
                "state": "paused",
                "reason": reason("wait_too_long", who=author),
                "wait": None,
                "last_wait": None,
            }
        wait = {
            "author": author,
            "seq": post["seq"],
            "due": time.time() + delay,
            "delay": delay,
            "streak": streak,
            "since": since,
        }
        self.events.emit("wait", participant=author, delay=delay, due=wait["due"], streak=streak)
        return {
            "state": "waiting",
            "wait": wait,
            "last_wait": wait,
            "reason": {
                "code": "wait",
                "text": f"{author} is waiting: {post['text'][:200]}",
                "continue": "the run continues by itself; autodev send ends the wait",
            },
        }

    def _gate(self, post: dict, author: str, st: dict) -> dict:
        from autodev import gates

        gate = {"id": str(post["seq"]), "declarer": author, "text": post["text"], "seq": post["seq"]}
        decision, rule = gates.decide(
            post["text"],
            auto_deny=self.config.gate_auto_deny,
            auto_approve=self.config.gate_auto_approve,
            mode=self.config.gate_mode,
        )
        if decision is not None:
            return self._gate_decision(gate, decision == "approved", rule, "", st)
        self.events.emit("gate_open", id=gate["id"], declarer=author, text=post["text"][:500])
        return {"state": "gated", "reason": reason("gated", who=author), "gate": gate}

    def _audit(self, post: dict, st: dict) -> dict:
        from autodev.audit import audit

        self._set("auditing", None)
        a = self.team.audit_model()
        targets = providers.targets_for(
            "audit",
            a.model,
            [],
            effort=a.effort,
            api_base=a.api_base,
            api_key_env=a.api_key_env,
            scripted_url=self.server.base_url if self.server else None,
            scripted_price=self.scripted_price,
            configured_output=self.config.max_output_tokens,
        )
        n = st.get("audits", 0) + 1
        audit_id = f"{self.run_id}:audit{post['seq']}"
        self.events.emit("audit_started", seq=post["seq"], n=n)
        try:
            v = audit(
                repo=self.paths.repo,
                objective="\n\n".join(st.get("user_messages") or []),
                done_post=post,
                base=st.get("base_head"),
                check=self.config.audit_check,
                check_timeout=self.config.command_timeout_sec,
                targets=targets,
                audit_id=audit_id,
                diff_chars=self.config.audit_diff_chars,
                overrides=self.overrides,
                secret_env=self.secret_env,
                room=self._room(),
                max_retries=self.config.max_retries,
                backoff_sec=self.config.retry_backoff_sec,
                on_retry=lambda attempt, delay, error: self.events.emit(
                    "retry",
                    participant="audit",
                    model=a.model,
                    attempt=attempt,
                    delay=delay,
                    error=error[:300],
                ),
            )
        except ProviderError as e:
            self.events.emit("error", participant="audit", message=str(e), detail=getattr(e, "detail", None))
            # The done post stays unaudited: resuming the run audits it before any turn.
            return {"state": "paused", "reason": reasons.provider(e), "audit_pending": post["seq"]}
        self._account_audit(v)
        self.state.update(lambda s: {**s, "audit_pending": None})
        self.events.emit("audit", seq=post["seq"], accept=v.accept, gap=v.gap[:1000], by=v.by)
        if v.accept:
            self._note("audit", f"Accepted. {v.gap}".strip(), id=f"{audit_id}:verdict", verdict="accept")
            return {
                "state": "complete",
                "audits": n,
                "reason": {
                    "code": "complete",
                    "text": "the audit accepted the work",
                    "continue": 'autodev send "..." to continue with more work',
                },
            }
        self._note(
            "audit", f"Reopened: {v.gap}", post["from"], id=f"{audit_id}:verdict", verdict="reopen", by=v.by
        )
        if n >= self.config.max_accept_checks:
            return {"state": "paused", "reason": reason("audit_limit", n=n), "audits": n}
        return {"state": "running", "reason": None, "audits": n}

    def _pending_audit(self, st: dict) -> None:
        """Audit a done post whose audit failed on its provider (the run was paused, then
        resumed): before any turn, as if it had just been posted."""
        seq = st["audit_pending"]
        [post] = self.thread.read(seq, seq, 1) or [None]
        if post is None or post.get("kind") != "done":
            self.state.update(lambda s: {**s, "audit_pending": None})
            return
        ch = self._audit(post, st)
        self.state.update(lambda s: {**s, **ch})
        if "state" in ch:
            self._state_event(ch["state"], ch.get("reason"))

    def _account_audit(self, v) -> None:
        def add(s: dict) -> dict:
            a = s.setdefault("audit_usage", {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0})
            a["prompt_tokens"] += v.prompt_tokens
            a["completion_tokens"] += v.completion_tokens
            a["cost"] = round(a["cost"] + v.cost, 6)
            model = self.team.audit_model().model
            _add_models(
                s, {model: {"generations": int(v.by == "model"), **{k: getattr(v, k) for k in USAGE}}}
            )
            return s

        self.state.update(add)

    def _plan_next(self) -> None:
        """Who speaks next, for status and the panel. While the run waits on the user, that is
        who the user's answer goes to (rule 1), not who would speak without one."""
        st = self.state.read()
        if st["state"] == "gated" and st.get("gate"):
            who = st["gate"]["declarer"]
            nxt = {
                "speaker": who,
                "rule": "gate_decision",
                "why": f"{who} speaks once you approve or deny gate {st['gate']['id']}",
            }
        elif st["state"] == "awaiting_user" and st.get("question"):
            who = st["question"]["from"]
            nxt = {"speaker": who, "rule": "user_message", "why": f"{who} gets your answer"}
        else:
            d = scheduler.next_speaker(self.team.names(), self.thread.tail(TAIL), self.thread.last_spoke)
            nxt = {"speaker": d.speaker, "rule": d.rule, "why": d.why}
        self.state.update(lambda s: {**s, "next": nxt})

    def _note(self, frm: str, text: str, handoff: str | None = None, **extra) -> dict:
        """A post by user, system or audit: on the thread (idempotent by id), copied into
        events, and echoed to the terminal."""
        rec = self.thread.append(frm, "say", text, handoff, **extra)
        self.events.emit("post", **{("post_id" if k == "id" else k): v for k, v in rec.items() if k != "ts"})
        self._echo(rec)
        return rec

    def _echo(self, post: dict) -> None:
        if self.out:
            self.out(post)
