"""What a run left, read from its machine side (state.json, events.jsonl) once its daemon is gone:
end state and reason, the audit's verdicts, turns, tokens and cost per participant."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from autodev.eval.rows import EvalResult, Figures, RowEvidence
from autodev.records.events import AuditEvent, EvidenceEvent, parse
from autodev.store.journal import is_object
from autodev.store.state import StateFile


@dataclass
class Outcome:
    state: str | None = None
    reason: str | None = None
    reason_code: str | None = None
    audits: list[bool] = field(default_factory=list[bool])  # each verdict in order: True = accepted
    participants: dict[str, Figures] = field(default_factory=dict[str, Figures])
    evidence: RowEvidence | None = None  # the last done's test evidence (summary, outcome, counts): SPEC §22

    @property
    def audit(self) -> str:
        """The last verdict: what the team concluded about its own work."""
        if not self.audits:
            return "none"
        return "accepted" if self.audits[-1] else "reopened"

    def fill(self, row: EvalResult) -> None:
        """The run's figures into its results line (its evidence only when it has some)."""
        row.state, row.reason, row.reason_code = self.state, self.reason, self.reason_code
        row.audit = self.audit
        row.audits = ["accepted" if a else "reopened" for a in self.audits]
        row.turns = sum(p["turns"] for p in self.participants.values())
        row.tokens = sum(p["tokens"] for p in self.participants.values())
        row.cost_usd = round(sum(p["cost"] for p in self.participants.values()), 6)
        row.participants = self.participants
        if self.evidence is not None:
            row.evidence = self.evidence


def read_outcome(home: Path) -> Outcome:
    """The run under `home` (its own AUTODEV_HOME: one project folder); an empty Outcome if it never
    wrote its state."""
    states = sorted(home.glob("*/state.json"))
    if not states:
        return Outcome()
    run_dir = states[0].parent
    st = StateFile(states[0]).read()
    people: dict[str, Figures] = {}
    for name, f in sorted(st.participants.items()):
        people[name] = {
            "turns": f.turns,
            "tokens": f.prompt_tokens + f.completion_tokens,
            "cost": round(f.cost, 6),
        }
    a = st.audit_usage
    if a:
        people["audit"] = {
            "turns": st.audits,
            "tokens": a.prompt_tokens + a.completion_tokens,
            "cost": round(a.cost, 6),
        }
    return Outcome(
        state=st.state,
        reason=(st.reason.text if st.reason else "") or None,
        reason_code=st.reason.code if st.reason else None,
        audits=_verdicts(run_dir / "events.jsonl"),
        participants=people,
        evidence=_evidence(run_dir / "events.jsonl"),
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
            e: object = json.loads(line)
        except json.JSONDecodeError:
            if n == len(lines):
                continue  # a torn final line (the daemon was killed mid-append): never completed
            raise
        if is_object(e) and isinstance(ev := parse(e), AuditEvent):
            out.append(ev.accept)
    return out


def _evidence(events: Path) -> RowEvidence | None:
    """The last `evidence` event's summary, outcome, command and counts (never the tests' ids)."""
    last = None
    if not events.exists():
        return None
    for line in events.read_text(errors="replace").splitlines():
        if '"evidence"' not in line:
            continue
        try:
            e: object = json.loads(line)
        except json.JSONDecodeError:
            continue  # a torn final line; _verdicts names any other
        if is_object(e) and isinstance(ev := parse(e), EvidenceEvent):
            last = ev
    if last is None:
        return None
    # the keys the event carried (an event holds the fields its emitter set), None for the others
    told = last.model_fields_set
    return RowEvidence(
        seq=last.seq,
        summary=last.summary if "summary" in told else None,
        outcome=last.outcome if "outcome" in told else None,
        command=last.command if "command" in told else None,
        counts=last.counts if "counts" in told else None,
    )
