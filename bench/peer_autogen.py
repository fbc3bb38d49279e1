"""The peer's side of the side-by-side benchmark: AutoGen AgentChat's own teams driving a recording
model client. Runs only in the peer's virtual environment (`.venv-peers`, made by bench/peers.py),
never in autodev's, so it imports nothing from autodev.

    .venv-peers/bin/python bench/peer_autogen.py IN.json OUT.json

IN.json: {"agents": [...], "systems": {agent: text}, "objective": str, "lanes": {agent: text},
          "runs": [{"team": "round_robin"|"selector", "context": "default"|"buffered",
                    "buffer": 8, "bad_selector": bool, "replies": [text, ...]}]}
OUT.json: {"versions": {...}, "runs": [{..., "messages": [oai dict], "calls": [{"who", "ids"}],
           "turns", "wall_s", "model_s", "stored": {agent: n}}]}

Every request the teams make is recorded as the OpenAI-style messages autogen-ext's OpenAI client
would send for a gpt-4o-family model (user messages carry `name`, assistant and system messages
do not), so bench/peers.py counts both sides' prompts with one tokenizer. Messages are stored
once and calls refer to them by index: a 1,000-message run repeats each message hundreds of times.
"""

from __future__ import annotations

import asyncio
import json
import platform
import sys
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from importlib.metadata import version
from typing import Any, Literal

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from autogen_core import CancellationToken
from autogen_core.model_context import BufferedChatCompletionContext, UnboundedChatCompletionContext
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelFamily,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

# A selector answer that names no participant: SelectorGroupChat asks again with feedback.
BAD_ANSWER = "The next role should be whoever is best placed to continue the work."


class Recorder:
    """What the clients of one run saw: a message table and one entry per request."""

    def __init__(self) -> None:
        self.messages: list[dict] = []
        self.ids: dict[tuple, int] = {}
        self.calls: list[dict] = []
        self.model_s = 0.0
        self.replies_made = 0  # agent replies so far: the turn counter both scripts follow

    def oai(self, m: LLMMessage) -> dict:
        """The message as autogen-ext's OpenAI client sends it for a gpt-4o-family model."""
        if isinstance(m, SystemMessage):
            return {"role": "system", "content": m.content}
        if isinstance(m, UserMessage):
            return {"role": "user", "name": m.source, "content": m.content}
        if isinstance(m, AssistantMessage):
            return {"role": "assistant", "content": m.content}
        raise TypeError(f"unexpected message type in a text-only run: {type(m).__name__}")

    def record(self, who: str, messages: Sequence[LLMMessage]) -> None:
        ids = []
        for m in messages:
            d = self.oai(m)
            key = (d["role"], d.get("name"), str(d["content"]))
            i = self.ids.get(key)
            if i is None:
                i = self.ids[key] = len(self.messages)
                self.messages.append(d)
            ids.append(i)
        self.calls.append({"who": who, "ids": ids})


class RecordingClient(ChatCompletionClient):
    """A ChatCompletionClient that answers from a script and records every request. The time
    spent inside `create` (recording included) is summed apart, so that it counts as model time,
    not framework time."""

    def __init__(self, who: str, rec: Recorder, answer):
        self._who = who
        self._rec = rec
        self._answer = answer  # (messages) -> reply text
        self._usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        t = time.perf_counter()
        if tools:
            raise RuntimeError("the benchmark's agents have no tools; a request carried some")
        self._rec.record(self._who, messages)
        text = self._answer(messages)
        # Usage is a rough estimate for AutoGen's own bookkeeping; the benchmark counts tokens
        # itself, on the recorded messages.
        self._usage = RequestUsage(
            prompt_tokens=sum(len(str(m.content)) for m in messages) // 4,
            completion_tokens=len(text) // 4,
        )
        self._total = RequestUsage(
            prompt_tokens=self._total.prompt_tokens + self._usage.prompt_tokens,
            completion_tokens=self._total.completion_tokens + self._usage.completion_tokens,
        )
        result = CreateResult(finish_reason="stop", content=text, usage=self._usage, cached=False)
        self._rec.model_s += time.perf_counter() - t
        return result

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        yield await self.create(messages, tools=tools, json_output=json_output)

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return self._usage

    def total_usage(self) -> RequestUsage:
        return self._total

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return sum(len(str(m.content)) for m in messages) // 4

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []
    ) -> int:
        return max(0, 128_000 - self.count_tokens(messages))

    @property
    def capabilities(self) -> Any:  # deprecated in autogen-core; model_info replaces it
        return self.model_info

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=False,
            function_calling=False,
            json_output=False,
            family=ModelFamily.GPT_4O,
            structured_output=False,
            multiple_system_messages=True,
        )


def _io() -> dict[str, int]:
    """This process's I/O counters (Linux): write syscalls and bytes written, to report what the
    team wrote while it ran (measured, not assumed)."""
    try:
        text = open("/proc/self/io", encoding="ascii").read()
    except OSError:
        return {}
    return {k: int(v) for k, v in (line.split(": ") for line in text.splitlines())}


def _context(spec: dict):
    if spec["context"] == "default":
        return UnboundedChatCompletionContext()
    if spec["context"] == "buffered":
        return BufferedChatCompletionContext(buffer_size=int(spec["buffer"]))
    raise ValueError(f"run spec: context must be 'default' or 'buffered', not {spec['context']!r}")


async def one_run(cfg: dict, spec: dict) -> dict:
    agents_names: list[str] = cfg["agents"]
    replies: list[str] = spec["replies"]
    rec = Recorder()

    def agent_answer(_messages) -> str:
        rec.replies_made += 1
        if rec.replies_made > len(replies):
            raise RuntimeError(f"the team asked for reply {rec.replies_made}; the script has {len(replies)}")
        return replies[rec.replies_made - 1]

    def selector_answer(messages) -> str:
        # The same rotation autodev's script follows: builder, reviewer, tester, builder, ...
        # A bad selector first answers with no name; the retry carries SelectorGroupChat's
        # feedback, so the request is longer than the one-message first attempt.
        if spec.get("bad_selector") and len(messages) == 1:
            return BAD_ANSWER
        return agents_names[rec.replies_made % len(agents_names)]

    contexts = {n: _context(spec) for n in agents_names}
    agents = [
        AssistantAgent(
            name=n,
            model_client=RecordingClient(n, rec, agent_answer),
            system_message=cfg["systems"][n],
            description=cfg["lanes"][n],
            model_context=contexts[n],
        )
        for n in agents_names
    ]
    turns = len(replies)
    if spec["team"] == "round_robin":
        team = RoundRobinGroupChat(agents, max_turns=turns)
    elif spec["team"] == "selector":
        team = SelectorGroupChat(
            agents, model_client=RecordingClient("selector", rec, selector_answer), max_turns=turns
        )
    else:
        raise ValueError(f"run spec: team must be 'round_robin' or 'selector', not {spec['team']!r}")
    io = _io()
    t = time.perf_counter()
    result = await team.run(task=cfg["objective"])
    wall = time.perf_counter() - t
    io_after = _io()
    spoken = [m.source for m in result.messages if m.source in contexts]
    if len(spoken) != turns or rec.replies_made != turns:
        raise RuntimeError(
            f"{spec['team']} run: expected {turns} agent replies, saw {len(spoken)} "
            f"({rec.replies_made} model replies); stop reason: {result.stop_reason}"
        )
    stored = {n: len((await c.save_state())["messages"]) for n, c in contexts.items()}
    return {
        **{k: v for k, v in spec.items() if k != "replies"},
        "turns": turns,
        "speakers": spoken[:6],
        "wall_s": wall,
        "model_s": rec.model_s,
        "stored": stored,
        "write_syscalls": io_after["syscw"] - io["syscw"] if io else None,
        "messages": rec.messages,
        "calls": rec.calls,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: peer_autogen.py IN.json OUT.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        cfg = json.load(f)
    runs = [asyncio.run(one_run(cfg, spec)) for spec in cfg["runs"]]
    out = {
        "versions": {p: version(p) for p in ("autogen-agentchat", "autogen-core", "autogen-ext", "pydantic")}
        | {"python": platform.python_version()},
        "runs": runs,
    }
    with open(argv[1], "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
