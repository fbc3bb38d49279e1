#!/usr/bin/env python3
"""A fake coding-agent CLI for the tests: installed as `claude`, `codex`, `copilot` or `gemini`
(its name says which), it reads the MCP configuration autodev passes the way that CLI does,
starts autodev's MCP server and calls its tools for real through the SDK, edits files and
commits, and writes its stream in that CLI's documented JSON format.

What a run does comes from $FAKE_AGENT_SCENARIO (JSON: {"<agent>": [run, run, ...]}; a run is a
list of steps; the n-th invocation of an agent plays its n-th run, the last one repeats):
  ["text", "..."]                 say something
  ["edit", "path", "content"]     write a file and commit it
  ["write", "path", "content"]    write a file (no git: `.git/commondir` too)
  ["post", {"kind": ..., ...}]    call autodev's post
  ["read", 1]                     call read_thread(from_seq)
  ["tell", "..."]                 call tell_user
  ["env", "NAME"]                 print the variable's value (stdout and stderr)
  ["limit", "message"]            report a usage limit and exit 1
  ["sleep", seconds]              sleep, with a child `sleep` in the group (pid in $FAKE_AGENT_CHILD)
  ["exit", code]                  exit now
Every invocation appends {"agent", "argv", "resume", "mcp"} to $FAKE_AGENT_LOG.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

AGENT = Path(sys.argv[0]).name.lstrip(".")
ARGS = sys.argv[1:]


def opt(name: str) -> str | None:
    return ARGS[ARGS.index(name) + 1] if name in ARGS else None


def mcp_config() -> dict:
    """autodev's server ({command, args, env}) as this CLI would find it."""
    if AGENT == "claude":
        return json.loads(Path(opt("--mcp-config")).read_text())["mcpServers"]["autodev"]
    if AGENT == "copilot":
        return json.loads(opt("--additional-mcp-config"))["mcpServers"]["autodev"]
    if AGENT == "gemini":
        path = os.environ["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]
        return json.loads(Path(path).read_text())["mcpServers"]["autodev"]
    conf = {}
    for i, a in enumerate(ARGS):
        if a == "-c":
            key, _, value = ARGS[i + 1].partition("=")
            conf[key] = tomllib.loads(f"v = {value}")["v"]
    p = "mcp_servers.autodev."
    assert conf.get(p + "default_tools_approval_mode") == "approve", "exec mode would cancel the tools"
    return {"command": conf[p + "command"], "args": conf[p + "args"], "env": conf[p + "env"]}


def resume_id() -> str | None:
    if AGENT == "codex":
        return ARGS[ARGS.index("resume") + 1] if "resume" in ARGS else None
    return opt("--resume")


def emit(obj: dict) -> None:
    print(json.dumps(obj), flush=True)


SESSION = f"{AGENT}-session-{os.getpid()}"
ANSWERS = iter(range(1, 1000))
# One model answer as Claude Code 2.1.332 reports it on the way (fixtures/claude-2.1.332-*.jsonl):
# the final `result` has the run's own tokens, but the cost of the whole session, so a resumed
# session's cost includes the run before it.
STEP_USAGE = {"input_tokens": 30, "cache_read_input_tokens": 10, "output_tokens": 7}
RUN_COST = 0.0123


def claude_answer(content: list) -> dict:
    return {
        "type": "assistant",
        "message": {
            "id": f"msg_{os.getpid()}_{next(ANSWERS)}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "usage": STEP_USAGE,
        },
        "session_id": SESSION,
    }


def say_start() -> None:
    if AGENT == "claude":
        emit(
            {
                "type": "system",
                "subtype": "init",
                "session_id": SESSION,
                "model": "fake",
                "tools": [],
                "mcp_servers": [{"name": "autodev", "status": "connected"}],
            }
        )
    elif AGENT == "codex":
        emit({"type": "thread.started", "thread_id": SESSION})
        emit({"type": "turn.started"})
    elif AGENT == "copilot":
        emit({"type": "session.start", "data": {"sessionId": SESSION}})
    else:
        emit({"type": "init", "session_id": SESSION, "model": "fake"})


def say_text(text: str) -> None:
    if AGENT == "claude":
        emit(claude_answer([{"type": "text", "text": text}]))
    elif AGENT == "codex":
        emit({"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": text}})
    elif AGENT == "copilot":
        emit({"type": "assistant.message", "data": {"content": text}})
    else:
        emit({"type": "message", "role": "assistant", "content": text, "delta": True})


def say_tool(name: str, args: dict) -> None:
    if AGENT == "claude":
        emit(
            claude_answer([{"type": "tool_use", "id": "tu", "name": f"mcp__autodev__{name}", "input": args}])
        )
    elif AGENT == "codex":
        emit(
            {
                "type": "item.started",
                "item": {
                    "id": "i1",
                    "type": "mcp_tool_call",
                    "server": "autodev",
                    "tool": name,
                    "arguments": args,
                    "status": "in_progress",
                },
            }
        )
    elif AGENT == "copilot":
        emit({"type": "tool.execution_start", "data": {"toolName": f"autodev-{name}", "arguments": args}})
    else:
        emit({"type": "tool_use", "tool_name": name, "tool_id": "t1", "parameters": args})


def say_limit(text: str) -> None:
    if AGENT == "claude":
        emit(
            {
                "type": "rate_limit_event",
                "rate_limit_info": {
                    "status": "rejected",
                    "resetsAt": int(time.time()) + 3600,
                    "rateLimitType": "five_hour",
                },
            }
        )
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "result": text,
                "session_id": SESSION,
                "usage": {},
                "total_cost_usd": 0,
            }
        )
    elif AGENT == "codex":
        emit({"type": "error", "message": text})
        emit({"type": "turn.failed", "error": {"message": text}})
    elif AGENT == "copilot":
        emit({"type": "session.error", "data": {"errorType": "rate_limit", "message": text}})
    else:
        emit({"type": "error", "severity": "error", "message": text})
        emit({"type": "result", "status": "error", "error": {"message": text}, "stats": {}})


def say_end() -> None:
    if AGENT == "claude":
        emit(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": "done",
                "session_id": SESSION,
                "num_turns": 3,
                "total_cost_usd": RUN_COST * (2 if resume_id() else 1),
                "usage": {"input_tokens": 100, "cache_read_input_tokens": 50, "output_tokens": 20},
            }
        )
    elif AGENT == "codex":
        # 0.171.0 (fixtures/codex-0.171.0-*.jsonl): a resumed session's usage is the session's
        k = 2 if resume_id() else 1
        emit(
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 150 * k, "cached_input_tokens": 50 * k, "output_tokens": 20 * k},
            }
        )
    elif AGENT == "copilot":
        emit(
            {
                "type": "result",
                "data": {"sessionId": SESSION, "usage": {"inputTokens": 150, "outputTokens": 20}},
            }
        )
    else:
        emit(
            {
                "type": "result",
                "status": "success",
                "stats": {"total_tokens": 170, "input_tokens": 150, "output_tokens": 20, "cached": 50},
            }
        )


async def call_tools(server: dict, calls: list[tuple[str, dict]]) -> list[str]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=server["command"], args=server["args"], env={**os.environ, **server["env"]}
    )
    out = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            hints = {t.name: bool(t.annotations and t.annotations.read_only_hint) for t in listed.tools}
            assert hints.get("read_thread") is True and hints.get("post") is False, hints
            for name, args in calls:
                res = await session.call_tool(name, args)
                out.append(res.content[0].text)
    return out


def scenario_run() -> list:
    spec = json.loads(Path(os.environ["FAKE_AGENT_SCENARIO"]).read_text())
    runs = spec.get(AGENT) or [[["exit", 0]]]
    counter = Path(os.environ["FAKE_AGENT_SCENARIO"] + f".{AGENT}.n")
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    return runs[min(n, len(runs) - 1)]


def project_hooks() -> None:
    """Claude Code runs the hooks of the settings sources it reads (`--setting-sources`, by default
    user, project and local): the SessionStart hooks of the working directory's .claude/settings*.json
    run here as the real CLI would run them, outside any sandbox."""
    if AGENT != "claude":
        return
    sources = (opt("--setting-sources") or "user,project,local").split(",")
    for source, name in (("project", "settings.json"), ("local", "settings.local.json")):
        f = Path(".claude") / name
        if source in sources and f.is_file():
            for group in json.loads(f.read_text()).get("hooks", {}).get("SessionStart", []):
                for hook in group.get("hooks", []):
                    subprocess.run(hook["command"], shell=True, check=False)


def main() -> int:
    project_hooks()
    server = mcp_config()
    with open(os.environ["FAKE_AGENT_LOG"], "a") as f:
        f.write(
            json.dumps(
                {
                    "agent": AGENT,
                    "argv": ARGS,
                    "resume": resume_id(),
                    "mcp": server["command"],
                    "cwd": os.getcwd(),
                    "stdin_closed": _stdin_closed(),
                }
            )
            + "\n"
        )
    say_start()
    for step in scenario_run():
        what = step[0]
        if what == "text":
            say_text(step[1])
        elif what == "env":
            say_text(f"{step[1]}={os.environ.get(step[1])}")
            print(f"stderr has {os.environ.get(step[1])}", file=sys.stderr)
        elif what == "tell":
            say_tool("tell_user", {"text": step[1]})
            say_text("autodev: " + asyncio.run(call_tools(server, [("tell_user", {"text": step[1]})]))[0])
        elif what == "edit":
            Path(step[1]).parent.mkdir(parents=True, exist_ok=True)
            Path(step[1]).write_text(step[2])
            subprocess.run(["git", "add", step[1]], check=True)
            subprocess.run(["git", "commit", "-qm", f"{AGENT}: {step[1]}"], check=False)
        elif what == "write":
            Path(step[1]).parent.mkdir(parents=True, exist_ok=True)
            Path(step[1]).write_text(step[2])
        elif what in ("post", "read"):
            name, args = ("post", step[1]) if what == "post" else ("read_thread", {"from_seq": step[1]})
            say_tool(name, args)
            answer = asyncio.run(call_tools(server, [(name, args)]))[0]
            say_text(f"autodev: {answer}")
        elif what == "limit":
            say_limit(step[1])
            return 1
        elif what == "sleep":
            child = subprocess.Popen(["sleep", str(step[1] + 60)])
            Path(os.environ["FAKE_AGENT_CHILD"]).write_text(f"{child.pid}\n{os.getpid()}\n")
            time.sleep(step[1])
        elif what == "exit":
            say_end()
            return int(step[1])
    say_end()
    return 0


def _stdin_closed() -> bool:
    try:
        return sys.stdin.read() == ""
    except (OSError, ValueError):
        return True


if __name__ == "__main__":
    sys.exit(main())
