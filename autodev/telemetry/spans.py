"""A run's spans, derived from its durable record (pure: no OpenTelemetry import, no I/O).

The harness log gives the shape and the times (turn, generations, tool calls, agent-CLI runs,
each with `ts`); events.jsonl gives what the harness log does not hold (the scheduler's rule, the
post's kind and credit, the audit, failovers, retries, compactions, notices, state changes). Each
span is named by a `key` made of the run, the turn and the call, and its ids are hashes of that
key (`ids`), so deriving a turn twice — before and after a `kill -9`, or in `autodev trace
export` — gives the same spans with the same ids: a turn interrupted and resumed is one span
(its resume marked by an event), never two.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from autodev.rules.names import is_scripted

if TYPE_CHECKING:
    from autodev.records.state import RunState

# litellm's provider prefix -> gen_ai.provider.name's well-known value (else the prefix itself)
PROVIDERS = {
    "openai": "openai",
    "text-completion-openai": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "mistral": "mistral_ai",
    "groq": "groq",
    "deepseek": "deepseek",
    "xai": "x_ai",
    "cohere": "cohere",
    "cohere_chat": "cohere",
    "perplexity": "perplexity",
    "watsonx": "ibm.watsonx.ai",
}
SCRIPTED_PROVIDER = "autodev.scripted"
# an agent CLI -> the provider behind it
AGENT_PROVIDERS = {"claude": "anthropic", "codex": "openai", "gemini": "gcp.gemini", "copilot": "github"}

# Events of a turn that become events of its span (the rest are spans or attributes already).
TURN_EVENTS = {
    "turn_resumed",
    "turn_recovered",
    "tool_crashed",
    "tool_interrupted",
    "nudged",
    "notice",
    "notice_answered",
    "gate_used",
    "tool_refused",
    "command_refused",
    "git_quarantined",
    "branch_moved_back",
    "budget_reached",
    "silent_turn",
    "turn_stopped",
    "error",
    "warning",
    "state",
}
# Events of a model request: on its chat span.
CHAT_EVENTS = {"failover", "retry", "compacted", "context_exceeded"}


@dataclass
class SpanEvent:
    name: str
    ts: float
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class Span:
    """One span, as plain data: `key` names it (its id is a hash of the key), `parent` its
    parent's key (None: the root)."""

    key: str
    name: str
    parent: str | None
    start: float
    end: float
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    kind: str = "internal"  # or "client": a request that leaves the process (a model, a CLI)
    error: str | None = None  # error.type; the span's status is then ERROR


def trace_id(run: str) -> int:
    """The run's trace id: 128 bits of a hash of the run id (never 0, which is invalid)."""
    return int(hashlib.sha256(f"autodev:trace:{run}".encode()).hexdigest()[:32], 16) or 1


def span_id(key: str) -> int:
    """A span's id: 64 bits of a hash of its key (never 0)."""
    return int(hashlib.sha256(f"autodev:span:{key}".encode()).hexdigest()[:16], 16) or 1


def turn_key(run: str, turn: int) -> str:
    return f"{run}:t{turn}"


def epoch(ts: object) -> float | None:
    """A record's time: `ts` as epoch seconds (harness log) or ISO text (events)."""
    if isinstance(ts, (int, float)):
        return float(ts)
    if isinstance(ts, str) and ts:
        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def provider_of(source: str | None, model: str | None = None) -> tuple[str, str]:
    """(gen_ai.provider.name, the model as the provider names it) from litellm's model string.
    The scripted model is named as team.toml names it: its requests go to an OpenAI-compatible
    server of ours with the participant as the model id, which is neither its provider nor its
    model."""
    if model and is_scripted(model):
        return SCRIPTED_PROVIDER, model
    text = source or model or ""
    prefix, _, rest = text.partition("/")
    if not rest:
        return ("openai" if text else "_OTHER"), text
    return PROVIDERS.get(prefix, prefix), rest


def group_events(events: Iterable[dict]) -> dict[int | None, list[dict]]:
    """events.jsonl by turn: an event with a `turn` moves the current turn there; one without
    (the post, the audit, a state change) belongs to the turn current when it was written, until
    the next turn is scheduled. Events before the first turn are the run's (key None)."""
    out: dict[int | None, list[dict]] = {}
    current: int | None = None
    for ev in events:
        t = ev.get("turn")
        if isinstance(t, int) and not isinstance(t, bool):
            current = t
        out.setdefault(current, []).append(ev)
    return out


def _json(value: object, redact: Callable[[str], str]) -> str:
    return redact(json.dumps(value, ensure_ascii=False, default=str))


def output_messages(message: dict, finish: str | None) -> list[dict]:
    """An assistant message in the GenAI output-messages shape (role, parts, finish_reason)."""
    parts: list[dict] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        parts += [{"type": "text", "content": c.get("text", "")} for c in content if isinstance(c, dict)]
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": fn.get("name"),
                "arguments": fn.get("arguments"),
            }
        )
    return [{"role": "assistant", "parts": parts, "finish_reason": finish or "stop"}]


def input_messages(messages: list[dict]) -> tuple[list[dict], list[dict]]:
    """(system instructions, input messages) in the GenAI shapes, from a turn's first messages."""
    system, chat = [], []
    for m in messages:
        text = m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        if m.get("role") == "system":
            system.append({"type": "text", "content": text})
        else:
            chat.append({"role": m.get("role", "user"), "parts": [{"type": "text", "content": text}]})
    return system, chat


def tool_outcome(result: str, synthetic: bool) -> tuple[str, str | None]:
    """(outcome, error.type or None) of a tool call from its recorded result."""
    if synthetic:
        return "interrupted", "interrupted"
    if result.startswith("error:"):
        return "error", "tool_error"
    if result.startswith("blocked by a before_tool hook"):
        return "blocked", "blocked"
    if result.startswith("skipped:"):
        return "skipped", None
    return "ok", None


def tool_type(name: str) -> str:
    """gen_ai.tool.type: an MCP server's tool (`server__tool`) is an extension; ours are functions."""
    return "extension" if "__" in name else "function"


@dataclass
class _Turn:
    """What a turn's records say, gathered in one pass."""

    run: str
    number: int
    key: str
    participant: str = ""
    start: float | None = None
    end: float | None = None
    last: float | None = None
    finished: dict | None = None
    messages: list[dict] = field(default_factory=list)
    chats: dict[int, Span] = field(default_factory=dict)
    tools: dict[str, Span] = field(default_factory=dict)
    agents: list[Span] = field(default_factory=list)
    post: Span | None = None
    step: int = 0
    failed: str | None = None


def turn_spans(
    run: str,
    records: list[dict],
    events: list[dict],
    *,
    capture: bool = False,
    redact: Callable[[str], str] = lambda s: s,
) -> list[Span]:
    """The spans of one finished turn: `invoke_agent {participant}` with its `chat`,
    `execute_tool` and agent-CLI children. `records` are the turn's harness records (every
    session's, in order), `events` its events. Empty when the turn has not finished."""
    if not records:
        return []
    t = _Turn(run, int(records[0]["turn"]), turn_key(run, int(records[0]["turn"])))
    for rec in records:
        _see(t, rec, capture, redact)
    if t.finished is None or t.start is None:
        return []
    end = max(x for x in (t.end, t.last, t.start) if x is not None)
    turn = Span(t.key, f"invoke_agent {t.participant}", run, t.start, end)
    _apply_events(t, turn, events, redact)
    _turn_attributes(t, turn, capture, redact)
    spans = [turn, *t.chats.values(), *t.tools.values(), *t.agents, *([t.post] if t.post else [])]
    for s in spans:
        s.end = max(s.end, s.start)
        turn.end = max(turn.end, s.end)
    return spans


def _see(t: _Turn, rec: dict, capture: bool, redact: Callable[[str], str]) -> None:
    ts = epoch(rec.get("ts")) or t.last
    kind = rec.get("type")
    if ts is not None:
        t.last = ts if t.last is None else max(t.last, ts)
    if kind == "turn_started":
        t.participant = rec.get("participant", t.participant)
        t.start = ts if t.start is None else t.start
        t.messages = rec.get("messages") or t.messages
    elif t.start is None:
        t.start = ts
    if ts is None:
        return
    if kind == "generation_started":
        t.step = int(rec.get("step", 0))
        chat = t.chats.get(t.step)
        if chat is None:
            t.chats[t.step] = Span(
                f"{t.key}:g{t.step}",
                f"chat {rec.get('model', '')}",
                t.key,
                ts,
                ts,
                {"autodev.step": t.step, "autodev.attempts": int(rec.get("attempt", 1))},
                kind="client",
            )
        else:  # another attempt at the same request (a retry, a failover, a resumed turn)
            chat.attributes["autodev.attempts"] = max(
                chat.attributes["autodev.attempts"], int(rec.get("attempt", 1))
            )
    elif kind == "generation_finished":
        step = int(rec.get("step", t.step))
        chat = t.chats.get(step) or Span(f"{t.key}:g{step}", "chat", t.key, ts, ts, kind="client")
        t.chats[step] = chat
        _chat_done(chat, rec, ts, capture, redact)
    elif kind == "generation_failed":
        t.failed = str(rec.get("error", ""))[:200]
        chat = t.chats.get(t.step)
        if chat is not None and "gen_ai.usage.input_tokens" not in chat.attributes:
            chat.end, chat.error = ts, "provider_error"
            chat.events.append(SpanEvent("generation_failed", ts, {"error.message": redact(t.failed)}))
    elif kind == "tool_started":
        key = f"{t.key}:s{t.step}:{rec.get('call_id')}"
        tool = t.tools.get(key)
        if tool is None:
            name = str(rec.get("name", ""))
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": str(rec.get("call_id", "")),
                "gen_ai.tool.type": tool_type(name),
                "autodev.tool.replay_safe": bool(rec.get("replay_safe")),
            }
            if capture:
                attrs["gen_ai.tool.call.arguments"] = _json(rec.get("args"), redact)
            t.tools[key] = Span(key, f"execute_tool {name}", t.key, ts, ts, attrs)
        else:  # started again by a resumed turn: the same call, one span
            tool.events.append(SpanEvent("resumed", ts))
    elif kind == "tool_finished":
        key = f"{t.key}:s{t.step}:{rec.get('call_id')}"
        tool = t.tools.get(key)
        if tool is not None:
            result = str(rec.get("result", ""))
            outcome, err = tool_outcome(result, bool(rec.get("synthetic")))
            tool.end, tool.error = ts, err
            tool.attributes["autodev.tool.outcome"] = outcome
            if capture:
                tool.attributes["gen_ai.tool.call.result"] = redact(result)
    elif kind == "post_started":
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "post",
            "gen_ai.tool.call.id": str(rec.get("id", "")),
            "gen_ai.tool.type": "function",
        }
        t.post = t.post or Span(f"{t.key}:post", "execute_tool post", t.key, ts, ts, attrs)
    elif kind == "post_committed" and t.post is not None:
        t.post.end = ts
        t.post.attributes["autodev.post.seq"] = int(rec.get("seq", 0))
        t.post.attributes["autodev.tool.outcome"] = "ok"
    elif kind == "agent_started":
        agent = str(rec.get("agent", ""))
        attrs = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent,
            "gen_ai.provider.name": AGENT_PROVIDERS.get(agent, agent or "_OTHER"),
        }
        if rec.get("resume"):
            attrs["autodev.agent.session_resumed"] = True
        t.agents.append(
            Span(f"{t.key}:a{len(t.agents)}", f"invoke_agent {agent}", t.key, ts, ts, attrs, kind="client")
        )
    elif kind == "agent_finished":
        _agent_done(t, rec, ts)
    elif kind == "compacted":
        chat = t.chats.get(int(rec.get("step", t.step)))
        if chat is not None:
            chat.events.append(SpanEvent("compacted", ts, {"autodev.compaction.hard": bool(rec.get("hard"))}))
    elif kind == "turn_finished":
        t.finished, t.end = rec, ts


def _chat_done(chat: Span, rec: dict, ts: float, capture: bool, redact: Callable[[str], str]) -> None:
    provider, model = provider_of(rec.get("source"), rec.get("model"))
    chat.name = f"chat {model}" if model else "chat"
    chat.end = ts
    chat.error = None
    finish = rec.get("finish_reason") or (
        "tool_calls" if (rec.get("message") or {}).get("tool_calls") else "stop"
    )
    chat.attributes.update(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.response.model": rec.get("response_model") or model,
            "gen_ai.usage.input_tokens": int(rec.get("prompt_tokens") or 0),
            "gen_ai.usage.output_tokens": int(rec.get("completion_tokens") or 0),
            "gen_ai.usage.cache_read.input_tokens": int(rec.get("cached_tokens") or 0),
            "gen_ai.response.finish_reasons": [str(finish)],
            "autodev.model": str(rec.get("model") or ""),
        }
    )
    if rec.get("cost") is not None:
        chat.attributes["autodev.cost_usd"] = float(rec["cost"])
    if capture:
        chat.attributes["gen_ai.output.messages"] = _json(
            output_messages(rec.get("message") or {}, finish), redact
        )


def _agent_done(t: _Turn, rec: dict, ts: float) -> None:
    agent = str(rec.get("agent", ""))
    open_runs = [
        a
        for a in t.agents
        if a.attributes["gen_ai.agent.name"] == agent and "autodev.agent.exit_code" not in a.attributes
    ]
    span = open_runs[0] if open_runs else None
    if span is None:  # a run a crash cut short, closed by recovery: its span starts where we know it did
        span = Span(
            f"{t.key}:a{len(t.agents)}",
            f"invoke_agent {agent}",
            t.key,
            ts,
            ts,
            {"gen_ai.agent.name": agent},
            kind="client",
        )
        t.agents.append(span)
    span.end = ts
    span.attributes["autodev.agent.exit_code"] = (
        rec.get("exit_code") if rec.get("exit_code") is not None else -1
    )
    usage = rec.get("usage") or {}
    span.attributes.update(
        {
            "gen_ai.usage.input_tokens": int(usage.get("prompt_tokens") or 0),
            "gen_ai.usage.output_tokens": int(usage.get("completion_tokens") or 0),
            "gen_ai.usage.cache_read.input_tokens": int(usage.get("cached_tokens") or 0),
            "autodev.cost_usd": float(usage.get("cost") or 0.0),
        }
    )
    if rec.get("recovered"):
        span.events.append(SpanEvent("recovered", ts))
    if rec.get("timed_out"):
        span.error = "timeout"
    elif rec.get("limit"):
        span.error = "usage_limit"
    elif rec.get("exit_code") not in (0, None):
        span.error = "exit_code"


def _apply_events(t: _Turn, turn: Span, events: list[dict], redact: Callable[[str], str]) -> None:
    audits: dict[Any, Span] = {}
    for ev in events:
        ts = epoch(ev.get("ts"))
        kind = ev.get("type")
        if ts is None:
            continue
        if kind == "scheduled":
            turn.attributes["autodev.rules.scheduler.rule"] = str(ev.get("rule", ""))
        elif kind == "post":
            for k in ("kind", "handoff", "seq"):
                if ev.get(k) is not None:
                    turn.attributes[f"autodev.post.{k}"] = ev[k]
            credit = ev.get("credit") or {}
            if ev.get("kind") == "work_done":
                turn.attributes["autodev.harness.credit"] = (
                    f"commits:{len(credit['commits'])}"
                    if credit.get("commits")
                    else f"files:{len(credit['files'])}"
                    if credit.get("files")
                    else "none"
                )
        elif kind == "audit_started":
            key = f"{t.key}:audit:{ev.get('seq')}"
            audits[ev.get("seq")] = Span(
                key, "audit", t.key, ts, ts, {"autodev.harness.audit.seq": ev.get("seq")}
            )
        elif kind == "audit" and ev.get("seq") in audits:
            span = audits[ev["seq"]]
            span.end = ts
            span.attributes["autodev.harness.audit.accept"] = bool(ev.get("accept"))
            span.attributes["autodev.harness.audit.by"] = str(ev.get("by") or "")
            if ev.get("model") and (ev.get("by") == "model" or ev.get("prompt_tokens")):
                # its model call: tokens and cost, so the trace adds up to `status`
                provider, model = provider_of(None, str(ev["model"]))
                span.attributes.update(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.agent.name": "audit",
                        "gen_ai.provider.name": provider,
                        "gen_ai.request.model": model,
                        "gen_ai.usage.input_tokens": int(ev.get("prompt_tokens") or 0),
                        "gen_ai.usage.output_tokens": int(ev.get("completion_tokens") or 0),
                        "autodev.cost_usd": float(ev.get("cost") or 0.0),
                    }
                )
        elif kind == "evidence" and ev.get("seq") in audits:
            # counts and the outcome, never the tests' output or ids (SPEC §22)
            attrs = audits[ev["seq"]].attributes
            attrs["autodev.evidence.outcome"] = str(ev.get("outcome") or "")
            attrs["autodev.evidence.command"] = redact(str(ev.get("command") or ""))
            counts = ev.get("counts")
            for k, v in (counts if isinstance(counts, dict) else {}).items():
                if isinstance(v, int):
                    attrs[f"autodev.evidence.{k}"] = v
        elif kind == "audit_stopped" and ev.get("seq") in audits:
            audits[ev["seq"]].end, audits[ev["seq"]].error = ts, "stopped"
        elif kind in CHAT_EVENTS:
            step = ev.get("step", t.step)
            chat = t.chats.get(step) if isinstance(step, int) else None
            target = chat or turn
            attrs = {
                f"autodev.{k}": _attr(v, redact)
                for k, v in ev.items()
                if k not in ("type", "ts", "run", "schema", "participant", "turn")
            }
            target.events.append(SpanEvent(kind, ts, attrs))
        elif kind in TURN_EVENTS:
            attrs = {
                f"autodev.{k}": _attr(v, redact)
                for k, v in ev.items()
                if k not in ("type", "ts", "run", "schema", "turn")
            }
            turn.events.append(SpanEvent(kind, ts, attrs))
    t.last = max([t.last or 0.0, *(a.end for a in audits.values())])
    for span in audits.values():
        t.agents.append(span)  # children of the turn like an agent run (exported with it)


def _attr(value: object, redact: Callable[[str], str]) -> bool | int | float | str:
    """An event field as an attribute value (OTel takes scalars and lists of one scalar type)."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact(value[:1000])
    return redact(json.dumps(value, default=str)[:1000])


def _turn_attributes(t: _Turn, turn: Span, capture: bool, redact: Callable[[str], str]) -> None:
    chats = [c for c in t.chats.values() if "gen_ai.usage.input_tokens" in c.attributes]
    # The turn's own requests: an audit in it is the audit's (its span carries its figures).
    counted = chats + [
        a for a in t.agents if "gen_ai.usage.input_tokens" in a.attributes and a.name != "audit"
    ]
    first = chats[0].attributes if chats else {}
    agent_provider = t.agents[0].attributes.get("gen_ai.provider.name") if t.agents else None
    turn.attributes.update(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": t.participant,
            "gen_ai.conversation.id": t.run,
            "gen_ai.provider.name": first.get("gen_ai.provider.name") or agent_provider or "_OTHER",
            "autodev.turn": t.number,
            "gen_ai.usage.input_tokens": sum(c.attributes["gen_ai.usage.input_tokens"] for c in counted),
            "gen_ai.usage.output_tokens": sum(c.attributes["gen_ai.usage.output_tokens"] for c in counted),
            "gen_ai.usage.cache_read.input_tokens": sum(
                c.attributes.get("gen_ai.usage.cache_read.input_tokens", 0) for c in counted
            ),
            "autodev.cost_usd": round(sum(c.attributes.get("autodev.cost_usd", 0.0) for c in counted), 9),
            "autodev.turn.resumed": any(e.name in ("turn_resumed", "turn_recovered") for e in turn.events),
        }
    )
    if first.get("gen_ai.request.model"):
        turn.attributes["gen_ai.request.model"] = first["gen_ai.request.model"]
    finished = t.finished or {}
    if finished.get("reason"):
        turn.attributes["autodev.turn.reason"] = redact(str(finished["reason"])[:500])
    if finished.get("seq") is None and t.failed:
        turn.error = "provider_error"
    if capture and t.messages:
        system, chat = input_messages(t.messages)
        turn.attributes["gen_ai.system_instructions"] = _json(system, redact)
        turn.attributes["gen_ai.input.messages"] = _json(chat, redact)


def workflow_span(run: str, start: float, end: float, state: RunState | None, name: str = "autodev") -> Span:
    """The run's root: `invoke_workflow`, from its first record to its last (or now)."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_workflow",
        "gen_ai.workflow.name": name,
        "gen_ai.conversation.id": run,
        "autodev.run.state": state.state if state else "",
        "autodev.run.turns": state.turn if state else 0,
    }
    span = Span(run, f"invoke_workflow {name}", None, start, max(start, end), attrs)
    if state and state.state == "faulted":
        span.error = "faulted"
    return span
