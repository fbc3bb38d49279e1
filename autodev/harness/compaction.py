"""Fitting a turn's messages into a model's context window, without a model call (pure).

Only tool results shrink: the system prompt, the turn prompt, every assistant message (sent back
verbatim, signatures intact) and the newest step stay as they are. An older tool result becomes
a one-line stub naming the call to repeat. The stubs chosen are written to the harness log
(`compacted`), and `apply()` replays them on resume, so a resumed turn sends exactly the
messages the original would have.

Normal compaction stubs the oldest results first until the request fits. Hard compaction (the
provider said the window was exceeded although our estimate fitted, or nothing else helps)
stubs every older result, then cuts the newest step's results to a short head.
"""

from __future__ import annotations

import json

from autodev.harness.messages import Message, ToolSpec, arguments, calls_of, estimate_tokens

STUB_MARK = "[compacted]"
HARD_HEAD = 2000  # characters kept of each newest tool result in hard compaction


def stub(name: str, arguments: str) -> str:
    args = arguments if len(arguments) <= 200 else arguments[:200] + "…"
    return (
        f"{STUB_MARK} The result of {name}({args}) was dropped to fit the context window; "
        "call it again if you still need it."
    )


def _calls(messages: list[Message]) -> dict[str, tuple[str, str]]:
    return {c["id"]: (c["function"]["name"], arguments(c)) for m in messages for c in calls_of(m)}


def _newest_step_start(messages: list[Message]) -> int:
    """Index of the newest assistant message: it and what follows is the newest step."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "assistant":
            return i
    return len(messages)


def plan(
    messages: list[Message], tools: list[ToolSpec], budget: int, *, hard: bool = False
) -> dict[str, str]:
    """Replacement contents by tool_call_id that bring the estimate within `budget` tokens
    (as close as possible). Empty when nothing needs to change or nothing can."""
    calls = _calls(messages)
    newest = _newest_step_start(messages)
    total = estimate_tokens(messages, tools)
    if total <= budget and not hard:
        return {}
    out: dict[str, str] = {}
    for m in messages[:newest]:
        if m["role"] != "tool" or m["content"].startswith(STUB_MARK):
            continue
        if total <= budget and not hard:
            break
        cid = m["tool_call_id"]
        name, args = calls.get(cid, ("a tool", "{}"))
        new = stub(name, args)
        total -= max(0, len(json.dumps(m["content"], ensure_ascii=False)) - len(json.dumps(new))) // 4
        out[cid] = new
    if hard or total > budget:
        for m in messages[newest:]:
            if m["role"] != "tool":
                continue
            content = m["content"]
            if len(content) > HARD_HEAD and not content.startswith(STUB_MARK):
                out[m["tool_call_id"]] = (
                    content[:HARD_HEAD] + f"\n{STUB_MARK} cut at {HARD_HEAD} of {len(content)} characters "
                    "to fit the context window; ask for less (a narrower path, range or pattern)."
                )
    return out


def apply(messages: list[Message], stubs: dict[str, str]) -> None:
    """Replace the contents of the named tool results, in place."""
    for i, m in enumerate(messages):
        if m["role"] == "tool" and m["tool_call_id"] in stubs:
            messages[i] = {**m, "content": stubs[m["tool_call_id"]]}
