"""A finished turn's spans from its harness records (each a `HarnessRecord`, dispatched on its
type: a new record type fails the type check here until it is handled) and its events
(`turnevents`). Pure: no OpenTelemetry import, no I/O."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, assert_never

from autodev.records.harness_log import (
    AgentFinished,
    AgentStarted,
    Compacted,
    GenerationFailed,
    GenerationFinished,
    GenerationStarted,
    HarnessRecord,
    Nudged,
    PostCommitted,
    PostStarted,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStarted,
)
from autodev.store.journal import JsonObject, is_object
from autodev.telemetry.spans import (
    AGENT_PROVIDERS,
    Attr,
    Redact,
    Span,
    SpanEvent,
    Turn,
    as_json,
    input_messages,
    output_messages,
    provider_of,
    same,
    tool_outcome,
    tool_type,
    turn_key,
)
from autodev.telemetry.turnevents import apply_events

if TYPE_CHECKING:
    from autodev.records.events import Event


def turn_spans(
    run: str,
    records: Sequence[HarnessRecord],
    events: Sequence[Event],
    *,
    capture: bool = False,
    redact: Redact = same,
) -> list[Span]:
    """The spans of one finished turn: `invoke_agent {participant}` with its `chat`,
    `execute_tool` and agent-CLI children. `records` are the turn's harness records (every
    session's, in order), `events` its events. Empty when the turn has not finished."""
    if not records:
        return []
    number = records[0].turn
    t = Turn(run, number, turn_key(run, number), capture, redact)
    for rec in records:
        _see(t, rec)
    if t.finished is None or t.start is None:
        return []
    end = max(x for x in (t.end, t.last, t.start) if x is not None)
    turn = Span(t.key, f"invoke_agent {t.participant}", run, t.start, end)
    apply_events(t, turn, events)
    _turn_attributes(t, turn)
    spans = [turn, *t.chats.values(), *t.tools.values(), *t.agents, *([t.post] if t.post else [])]
    for s in spans:
        s.end = max(s.end, s.start)
        turn.end = max(turn.end, s.end)
    return spans


def _see(t: Turn, rec: HarnessRecord) -> None:
    ts = rec.ts or t.last
    if ts is not None:
        t.last = ts if t.last is None else max(t.last, ts)
    if isinstance(rec, TurnStarted):
        t.participant = rec.participant
        t.start = ts if t.start is None else t.start
        t.messages = rec.messages or t.messages
    elif t.start is None:
        t.start = ts
    if ts is None:
        return
    match rec:
        case TurnStarted() | Nudged():
            pass
        case GenerationStarted():
            _generation_started(t, rec, ts)
        case GenerationFinished():
            chat = t.chats.get(rec.step) or Span(f"{t.key}:g{rec.step}", "chat", t.key, ts, ts, kind="client")
            t.chats[rec.step] = chat
            _chat_done(t, chat, rec, ts)
        case GenerationFailed():
            t.failed = rec.error[:200]
            chat = t.chats.get(t.step)
            if chat is not None and "gen_ai.usage.input_tokens" not in chat.attributes:
                chat.end, chat.error = ts, "provider_error"
                chat.events.append(SpanEvent("generation_failed", ts, {"error.message": t.redact(t.failed)}))
        case ToolStarted():
            _tool_started(t, rec, ts)
        case ToolFinished():
            _tool_finished(t, rec, ts)
        case PostStarted():
            attrs: dict[str, Attr] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "post",
                "gen_ai.tool.call.id": rec.id,
                "gen_ai.tool.type": "function",
            }
            t.post = t.post or Span(f"{t.key}:post", "execute_tool post", t.key, ts, ts, attrs)
        case PostCommitted():
            if t.post is not None:
                t.post.end = ts
                t.post.attributes["autodev.post.seq"] = rec.seq
                t.post.attributes["autodev.tool.outcome"] = "ok"
        case AgentStarted():
            _agent_started(t, rec, ts)
        case AgentFinished():
            _agent_done(t, rec, ts)
        case Compacted():
            chat = t.chats.get(rec.step)
            if chat is not None:
                chat.events.append(SpanEvent("compacted", ts, {"autodev.compaction.hard": rec.hard}))
        case TurnFinished():
            t.finished, t.end = rec, ts
        case _:
            assert_never(rec)


def _generation_started(t: Turn, rec: GenerationStarted, ts: float) -> None:
    t.step = rec.step
    chat = t.chats.get(t.step)
    if chat is None:
        t.chats[t.step] = Span(
            f"{t.key}:g{t.step}",
            f"chat {rec.model}",
            t.key,
            ts,
            ts,
            {"autodev.step": t.step, "autodev.attempts": rec.attempt},
            kind="client",
        )
    else:  # another attempt at the same request (a retry, a failover, a resumed turn)
        chat.attributes["autodev.attempts"] = max(chat.count("autodev.attempts"), rec.attempt)


def _chat_done(t: Turn, chat: Span, rec: GenerationFinished, ts: float) -> None:
    provider, model = provider_of(rec.source, rec.model)
    chat.name = f"chat {model}" if model else "chat"
    chat.end = ts
    chat.error = None
    finish = rec.finish_reason or ("tool_calls" if rec.message.get("tool_calls") else "stop")
    chat.attributes.update(
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.response.model": rec.response_model or model,
            "gen_ai.usage.input_tokens": rec.prompt_tokens,
            "gen_ai.usage.output_tokens": rec.completion_tokens,
            "gen_ai.usage.cache_read.input_tokens": rec.cached_tokens,
            "gen_ai.response.finish_reasons": [finish],
            "autodev.model": rec.model or "",
        }
    )
    if rec.cost is not None:
        chat.attributes["autodev.cost_usd"] = float(rec.cost)
    if t.capture:
        chat.attributes["gen_ai.output.messages"] = as_json(output_messages(rec.message, finish), t.redact)


def _tool_started(t: Turn, rec: ToolStarted, ts: float) -> None:
    key = f"{t.key}:s{t.step}:{rec.call_id}"
    tool = t.tools.get(key)
    if tool is not None:  # started again by a resumed turn: the same call, one span
        tool.events.append(SpanEvent("resumed", ts))
        return
    attrs: dict[str, Attr] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": rec.name,
        "gen_ai.tool.call.id": rec.call_id,
        "gen_ai.tool.type": tool_type(rec.name),
        "autodev.tool.replay_safe": rec.replay_safe,
    }
    if t.capture:
        attrs["gen_ai.tool.call.arguments"] = as_json(rec.args, t.redact)
    t.tools[key] = Span(key, f"execute_tool {rec.name}", t.key, ts, ts, attrs)


def _tool_finished(t: Turn, rec: ToolFinished, ts: float) -> None:
    tool = t.tools.get(f"{t.key}:s{t.step}:{rec.call_id}")
    if tool is None:
        return
    outcome, err = tool_outcome(rec.result, rec.synthetic)
    tool.end, tool.error = ts, err
    tool.attributes["autodev.tool.outcome"] = outcome
    if t.capture:
        tool.attributes["gen_ai.tool.call.result"] = t.redact(rec.result)


def _agent_started(t: Turn, rec: AgentStarted, ts: float) -> None:
    attrs: dict[str, Attr] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": rec.agent,
        "gen_ai.provider.name": AGENT_PROVIDERS.get(rec.agent, rec.agent or "_OTHER"),
    }
    if rec.resume:
        attrs["autodev.agent.session_resumed"] = True
    key = f"{t.key}:a{len(t.agents)}"
    t.agents.append(Span(key, f"invoke_agent {rec.agent}", t.key, ts, ts, attrs, kind="client"))


def _extra(rec: HarnessRecord, name: str) -> object:
    """A field the record type does not declare (kept by `Open`): None when absent."""
    return (rec.model_extra or {}).get(name)


def _number(value: object) -> float:
    return value if isinstance(value, int | float) else 0.0


def _agent_done(t: Turn, rec: AgentFinished, ts: float) -> None:
    open_runs = [
        a
        for a in t.agents
        if a.attributes["gen_ai.agent.name"] == rec.agent and "autodev.agent.exit_code" not in a.attributes
    ]
    span = open_runs[0] if open_runs else None
    if span is None:  # a run a crash cut short, closed by recovery: its span starts where we know it did
        key = f"{t.key}:a{len(t.agents)}"
        span = Span(
            key, f"invoke_agent {rec.agent}", t.key, ts, ts, {"gen_ai.agent.name": rec.agent}, kind="client"
        )
        t.agents.append(span)
    span.end = ts
    span.attributes["autodev.agent.exit_code"] = rec.exit_code if rec.exit_code is not None else -1
    extra = _extra(rec, "usage")
    usage: JsonObject = extra if is_object(extra) else {}
    span.attributes.update(
        {
            "gen_ai.usage.input_tokens": int(_number(usage.get("prompt_tokens"))),
            "gen_ai.usage.output_tokens": int(_number(usage.get("completion_tokens"))),
            "gen_ai.usage.cache_read.input_tokens": int(_number(usage.get("cached_tokens"))),
            "autodev.cost_usd": float(_number(usage.get("cost"))),
        }
    )
    if _extra(rec, "recovered"):
        span.events.append(SpanEvent("recovered", ts))
    if rec.timed_out:
        span.error = "timeout"
    elif rec.limit:
        span.error = "usage_limit"
    elif rec.exit_code not in (0, None):
        span.error = "exit_code"


def _turn_attributes(t: Turn, turn: Span) -> None:
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
            "gen_ai.usage.input_tokens": sum(c.count("gen_ai.usage.input_tokens") for c in counted),
            "gen_ai.usage.output_tokens": sum(c.count("gen_ai.usage.output_tokens") for c in counted),
            "gen_ai.usage.cache_read.input_tokens": sum(
                c.count("gen_ai.usage.cache_read.input_tokens") for c in counted
            ),
            "autodev.cost_usd": round(sum(c.amount("autodev.cost_usd") for c in counted), 9),
            "autodev.turn.resumed": any(e.name in ("turn_resumed", "turn_recovered") for e in turn.events),
        }
    )
    model = first.get("gen_ai.request.model")
    if model:
        turn.attributes["gen_ai.request.model"] = model
    finished = t.finished
    if finished is not None and finished.reason:
        turn.attributes["autodev.turn.reason"] = t.redact(finished.reason[:500])
    if (finished is None or finished.seq is None) and t.failed:
        turn.error = "provider_error"
    if t.capture and t.messages:
        system, chat = input_messages(t.messages)
        turn.attributes["gen_ai.system_instructions"] = as_json(system, t.redact)
        turn.attributes["gen_ai.input.messages"] = as_json(chat, t.redact)
