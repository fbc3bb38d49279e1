"""A `Model` over a recording: each generation answered with the assistant message the harness
log kept for that turn and step, so a replay needs no provider, no key and no network.

The step of a request is the number of assistant messages already in it (as the scripted model
counts), so a retried request gets the answer it got the first time. The audit is answered with
a `verdict` call carrying the recorded `audit` event's verdict and gap. With `--tools recorded`
each tool call gets its recorded result instead of running, and the repository takes the commit
each post (and each notice, raised mid-turn) was made on. A request the recording has no answer
for raises `Refused`: the replayed run pauses there, and the comparison names the turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from autodev.harness import providers
from autodev.harness.messages import AssistantMessage, Message, ToolSpec, assistant
from autodev.records import GenerationFinished, HarnessRecord, Post, ToolFinished, ToolStarted
from autodev.records.events import AuditEvent, Event

NOT_RECORDED = "not in the recording"


@dataclass
class RecordedModel:
    generations: dict[tuple[int, int], GenerationFinished]  # (turn, step) -> its record
    audits: list[AuditEvent]  # the audit's `audit` events that asked its model, in order
    results: dict[tuple[int, str], str] | None = None  # --tools recorded: (turn, call id) -> result
    heads: dict[int, str] = field(default_factory=lambda: {})  # turn -> HEAD when its post was made
    repo: Path | None = None
    missing: list[str] = field(default_factory=lambda: [])  # requests it could not answer
    notice_heads: dict[int, str] = field(
        default_factory=lambda: {}
    )  # turn -> HEAD when its notice was raised
    _audits_used: dict[str, int] = field(default_factory=lambda: {})

    @classmethod
    def of(
        cls,
        harness: list[HarnessRecord],
        posts: list[Post],
        events: list[Event],
        *,
        recorded_tools: bool,
        repo: Path,
    ) -> RecordedModel:
        gens = {(r.turn, r.step): r for r in harness if isinstance(r, GenerationFinished)}
        # an `audit` event without `by` is the model's (written before `by` was)
        audits = [
            e
            for e in events
            if isinstance(e, AuditEvent) and (e.by == "model" or "by" not in e.model_fields_set)
        ]
        results = None
        if recorded_tools:
            results = {(r.turn, r.call_id): r.result for r in harness if isinstance(r, ToolFinished)}
        heads = {p.turn: p.head for p in posts if isinstance(p.turn, int) and p.head}
        return cls(gens, audits, results, heads, repo, notice_heads=_notice_heads(harness, posts))

    @property
    def tools(self) -> Callable[[int, str, str], str] | None:
        """With --tools recorded: what answers each tool call instead of running it."""
        return self._result if self.results is not None else None

    def _result(self, turn: int, call_id: str, name: str) -> str:
        if self.results is None or (turn, call_id) not in self.results:
            self.missing.append(f"turn {turn}: the result of {name} ({call_id})")
            return f"error: the result of {name} is {NOT_RECORDED}"
        return self.results[(turn, call_id)]

    def complete(
        self,
        target: providers.Target,
        messages: list[Message],
        tools: list[ToolSpec],
        *,
        turn_id: str,
        timeout: float,
        origins: Mapping[int, str] | None = None,
    ) -> providers.Generation:
        if ":audit" in turn_id:
            return self._audit(turn_id)
        turn = int(turn_id.rsplit(":", 1)[-1])
        step = 1 + sum(1 for m in messages if m.get("role") == "assistant")  # steps count from 1
        rec = self.generations.get((turn, step))
        if rec is None:
            self.missing.append(f"turn {turn}, step {step}")
            raise providers.Refused("request", f"turn {turn}, step {step}: {NOT_RECORDED}")
        names = _called(rec.message)
        if self.results is not None and self.repo:
            # The recorded tools changed nothing here: the repository takes the commit the
            # notice (a mid-turn post) or the post was made on, so its HEAD and credit are the
            # recorded ones.
            head = None
            if "tell_user" in names and turn in self.notice_heads:
                head = self.notice_heads[turn]
            elif "post" in names and turn in self.heads:
                head = self.heads[turn]
            if head:
                from autodev.timeline import git

                git.git(self.repo, "reset", "-q", "--hard", head)
        return providers.Generation(
            message=assistant(rec.message),
            prompt_tokens=0,
            completion_tokens=0,
            cost=0.0,
            model=str(rec.model or target.label),
            source=str(rec.source or ""),
        )

    def _audit(self, audit_id: str) -> providers.Generation:
        n = self._audits_used.setdefault(audit_id, len(self._audits_used))
        if n >= len(self.audits):
            self.missing.append(f"audit {audit_id.rsplit(':', 1)[-1]}")
            raise providers.Refused("request", f"the audit {NOT_RECORDED}")
        event = self.audits[n]
        accept, gap = event.accept, event.gap
        call = {
            "id": f"replay-audit-{n}",
            "type": "function",
            "function": {"name": "verdict", "arguments": json.dumps({"accept": accept, "gap": gap})},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return providers.Generation(
            message=assistant(message), prompt_tokens=0, completion_tokens=0, cost=0.0, model="replay"
        )


def _called(message: AssistantMessage) -> set[str]:
    """The names of the tools an assistant message calls."""
    return {c["function"]["name"] for c in message.get("tool_calls") or []}


def _notice_heads(harness: list[HarnessRecord], posts: list[Post]) -> dict[int, str]:
    """turn -> the HEAD its `tell_user` notice recorded (the result names the notice)."""
    calls = {r.call_id: r.turn for r in harness if isinstance(r, ToolStarted) and r.name == "tell_user"}
    raised: dict[str, int] = {}
    for r in harness:
        if isinstance(r, ToolFinished) and r.call_id in calls:
            words = r.result.split()
            if len(words) > 1 and words[0] == "notice":
                raised[words[1]] = calls[r.call_id]
    out: dict[int, str] = {}
    for p in posts:
        n = p.notice
        if n is not None and n.id in raised and p.head and not n.answered:
            out[raised[n.id]] = p.head
    return out
