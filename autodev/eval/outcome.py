"""What a run left, read from its machine side (state.json, events.jsonl) once its daemon is gone:
end state and reason, the audit's verdicts, turns, tokens and cost per participant."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Outcome:
    state: str | None = None
    reason: str | None = None
    reason_code: str | None = None
    audits: list[bool] = field(default_factory=list)  # each verdict in order: True = accepted
    participants: dict[str, dict] = field(default_factory=dict)

    @property
    def audit(self) -> str:
        """The last verdict: what the team concluded about its own work."""
        if not self.audits:
            return "none"
        return "accepted" if self.audits[-1] else "reopened"

    def fields(self) -> dict:
        turns = sum(p.get("turns", 0) for p in self.participants.values())
        return {
            "state": self.state,
            "reason": self.reason,
            "reason_code": self.reason_code,
            "audit": self.audit,
            "audits": ["accepted" if a else "reopened" for a in self.audits],
            "turns": turns,
            "tokens": sum(p["tokens"] for p in self.participants.values()),
            "cost_usd": round(sum(p["cost"] for p in self.participants.values()), 6),
            "participants": self.participants,
        }


def read_outcome(home: Path) -> Outcome:
    """The run under `home` (its own AUTODEV_HOME: one project folder); an empty Outcome if it never
    wrote its state."""
    states = sorted(home.glob("*/state.json"))
    if not states:
        return Outcome()
    run_dir = states[0].parent
    st = json.loads(states[0].read_text())
    reason = st.get("reason") or {}
    people: dict[str, dict] = {}
    for name, f in sorted((st.get("participants") or {}).items()):
        people[name] = {
            "turns": f.get("turns", 0),
            "tokens": f.get("prompt_tokens", 0) + f.get("completion_tokens", 0),
            "cost": round(f.get("cost", 0.0), 6),
        }
    a = st.get("audit_usage")
    if a:
        people["audit"] = {
            "turns": st.get("audits", 0),
            "tokens": a.get("prompt_tokens", 0) + a.get("completion_tokens", 0),
            "cost": round(a.get("cost", 0.0), 6),
        }
    return Outcome(
        state=st.get("state"),
        reason=reason.get("text") or None,
        reason_code=reason.get("code"),
        audits=_verdicts(run_dir / "events.jsonl"),
        participants=people,
    )


def _verdicts(events: Path) -> list[bool]:
    out: list[bool] = []
    if not events.exists():
        return out
    lines = events.read_text(errors="replace").splitlines()
    for n, line in enumerate(lines, start=1):
        if '"audit"' not in line:
            continue
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                continue  # a torn final line (the daemon was killed mid-append): never completed
            raise
        if e.get("type") == "audit":
            out.append(bool(e.get("accept")))
    return out
