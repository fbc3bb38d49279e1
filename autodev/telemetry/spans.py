"""A run's spans as plain data, and what deriving them shares (pure: no OpenTelemetry import,
no I/O).

The harness log gives the shape and the times (turn, generations, tool calls, agent-CLI runs,
each with `ts`); events.jsonl gives what the harness log does not hold (the scheduler's rule, the
post's kind and credit, the audit, failovers, retries, compactions, notices, state changes). Each
span is named by a `key` made of the run, the turn and the call, and its ids are hashes of that
key (`ids`), so deriving a turn twice — before and after a `kill -9`, or in `autodev trace
export` — gives the same spans with the same ids: a turn interrupted and resumed is one span
(its resume marked by an event), never two. A turn's spans: `turn` (from its harness records)
and `turnevents` (what its events add).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

from autodev.rules.names import is_scripted
from autodev.store.journal import JsonObject, is_object

if TYPE_CHECKING:
    from autodev.records.events import Event
    from autodev.records.harness_log import TurnFinished
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

# An attribute's value, as OpenTelemetry takes it (scalars, or a list of strings).
Attr: TypeAlias = "str | bool | int | float | list[str]"
Redact: TypeAlias = Callable[[str], str]


def same(text: str) -> str:
    """No redaction (a caller that has no masker)."""
    return text


@dataclass
class SpanEvent:
    name: str
    ts: float
    attributes: dict[str, Attr] = field(default_factory=dict[str, "Attr"])


@dataclass
class Span:
    """One span, as plain data: `key` names it (its id is a hash of the key), `parent` its
    parent's key (None: the root)."""

    key: str
    name: str
    parent: str | None
    start: float
    end: float
    attributes: dict[str, Attr] = field(default_factory=dict[str, "Attr"])
    events: list[SpanEvent] = field(default_factory=list[SpanEvent])
    kind: str = "internal"  # or "client": a request that leaves the process (a model, a CLI)
    error: str | None = None  # error.type; the span's status is then ERROR

    def count(self, key: str) -> int:
        """An integer attribute (0 when it is not set)."""
        v = self.attributes.get(key, 0)
        return v if isinstance(v, int) else 0

    def amount(self, key: str) -> float:
        """A number attribute (0.0 when it is not set)."""
        v = self.attributes.get(key, 0.0)
        return v if isinstance(v, int | float) else 0.0


@dataclass
class Turn:
    """What a turn's records say, gathered in one pass (`turn`, `turnevents`)."""

    run: str
    number: int
    key: str
    capture: bool = False
    redact: Redact = same
    participant: str = ""
    start: float | None = None
    end: float | None = None
    last: float | None = None
    finished: TurnFinished | None = None
    messages: Sequence[Mapping[str, object]] = ()
    chats: dict[int, Span] = field(default_factory=dict[int, Span])
    tools: dict[str, Span] = field(default_factory=dict[str, Span])
    agents: list[Span] = field(default_factory=list[Span])
    post: Span | None = None
    step: int = 0
    failed: str | None = None


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
    if isinstance(ts, int | float):
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


def turn_of(ev: Event) -> int | None:
    """The turn an event names (a field of most kinds, an extra of some), else None."""
    t: object = getattr(ev, "turn", None)
    return t if isinstance(t, int) and not isinstance(t, bool) else None


def group_events(events: Iterable[Event]) -> dict[int | None, list[Event]]:
    """events.jsonl by turn: an event with a `turn` moves the current turn there; one without
    (the post, the audit, a state change) belongs to the turn current when it was written, until
    the next turn is scheduled. Events before the first turn are the run's (key None)."""
    out: dict[int | None, list[Event]] = {}
    current: int | None = None
    for ev in events:
        t = turn_of(ev)
        if t is not None:
            current = t
        out.setdefault(current, []).append(ev)
    return out


def as_json(value: object, redact: Redact) -> str:
    return redact(json.dumps(value, ensure_ascii=False, default=str))


def scalar(value: object, redact: Redact) -> bool | int | float | str:
    """An event field as an attribute value (OTel takes scalars and lists of one scalar type)."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact(value[:1000])
    return redact(json.dumps(value, default=str)[:1000])


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def output_messages(message: Mapping[str, object], finish: str | None) -> list[JsonObject]:
    """An assistant message in the GenAI output-messages shape (role, parts, finish_reason)."""
    parts: list[JsonObject] = []
    content = message.get("content")
    if isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    elif _is_list(content):
        parts += [{"type": "text", "content": c.get("text", "")} for c in content if is_object(c)]
    calls = message.get("tool_calls")
    for call in calls if _is_list(calls) else ():
        if not is_object(call):
            continue
        function = call.get("function")
        fn: JsonObject = function if is_object(function) else {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": fn.get("name"),
                "arguments": fn.get("arguments"),
            }
        )
    return [{"role": "assistant", "parts": parts, "finish_reason": finish or "stop"}]


def input_messages(messages: Sequence[Mapping[str, object]]) -> tuple[list[JsonObject], list[JsonObject]]:
    """(system instructions, input messages) in the GenAI shapes, from a turn's first messages."""
    system: list[JsonObject] = []
    chat: list[JsonObject] = []
    for m in messages:
        content = m.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
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


def workflow_span(run: str, start: float, end: float, state: RunState | None, name: str = "autodev") -> Span:
    """The run's root: `invoke_workflow`, from its first record to its last (or now)."""
    attrs: dict[str, Attr] = {
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
