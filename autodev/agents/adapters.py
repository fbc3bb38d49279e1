"""One adapter per coding-agent CLI: how it is invoked for a turn, how autodev's MCP server is
handed to it, and how a line of its JSON stream becomes common `AgentEvent`s (what every
adapter shares is in autodev/agents/invocation.py, limit texts in autodev/agents/limits.py).

Versions the invocations follow are pinned in docs/agents.md ("Versions"). Every parser is
lenient about fields it does not use: a CLI that adds fields keeps working; an unknown event
type yields nothing (it is still in the raw stream kept in the run folder).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from autodev.agents.events import AgentEvent, Kind
from autodev.agents.gemini import (
    GEMINI_SETTINGS_ENV,
    GEMINI_SETTINGS_FIX,
    Gemini,
    gemini_settings_folder,
    world_writable_above,
)
from autodev.agents.invocation import SERVER, Adapter, Invocation, as_int, short_name
from autodev.agents.limits import error_events, is_limit_text, reset_from_text
from autodev.agents.lines import (
    ClaudeLine,
    ClaudeMessage,
    ClaudeRateLimit,
    ClaudeUsage,
    CodexError,
    CodexItem,
    CodexLine,
    CodexUsage,
    CopilotData,
    CopilotLine,
    load,
)
from autodev.store.journal import JsonObject, is_object

THREAD_TOOLS = ("post", "read_thread", "tell_user")
__all__ = [  # the Gemini CLI's settings folder too: doctor and start read it here
    "ADAPTERS",
    "GEMINI_SETTINGS_ENV",
    "GEMINI_SETTINGS_FIX",
    "THREAD_TOOLS",
    "Gemini",
    "adapter",
    "find_binary",
    "gemini_settings_folder",
    "world_writable_above",
]


def find_binary(agent: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The CLI's executable: $AUTODEV_<NAME>_BIN, else `agent` on PATH."""
    env = os.environ if environ is None else environ
    given = env.get(adapter(agent).bin_env)
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which(agent, path=env.get("PATH"))


# ------------------------------------------------------------------ Claude Code


class Claude(Adapter):
    """`claude -p PROMPT --output-format stream-json --verbose --mcp-config FILE
    --strict-mcp-config --tools ... --allowedTools ... --permission-mode ...` (stream-json needs
    --verbose with -p)."""

    name = "claude"
    key_vars = ("ANTHROPIC_API_KEY",)
    status_args = ("auth", "status")  # 2.1.332: JSON, exit 0 when logged in, 1 when not
    # 2.1.332, seen running: a resumed session's total_cost_usd (and modelUsage) count the runs
    # before it; its `usage` tokens are this run's only.
    session_totals = ("cost",)

    def builtin(self, inv: Invocation) -> list[str]:
        """Claude Code's own tools the turn may use (2.1.332 has no LS or MultiEdit)."""
        tools = ["Read", "Grep", "Glob"]
        if inv.write:
            tools += ["Edit", "Write"]
        if not inv.gated:
            tools.append("Bash")
        return tools

    def argv(self, binary: str, inv: Invocation) -> list[str]:
        cfg = inv.workdir / "claude-mcp.json"
        cfg.write_text(json.dumps({"mcpServers": {SERVER: {"type": "stdio", **inv.mcp.as_json()}}}))
        argv = [binary, "-p", inv.prompt, "--output-format", "stream-json", "--verbose"]
        # Only autodev's MCP server, and only the user's settings: the repository's .mcp.json and
        # .claude/settings*.json (hooks, apiKeyHelper, env) would run programs outside the sandbox.
        argv += ["--mcp-config", str(cfg), "--strict-mcp-config", "--setting-sources", "user"]
        # --tools is what exists at all: dontAsk alone still lets read-only shell commands (`ls`)
        # run, so gated leaves Bash out of the set. --allowedTools runs the rest without asking;
        # dontAsk refuses whatever would need a prompt (acceptEdits: edits go through).
        builtin = self.builtin(inv)
        argv += ["--tools", ",".join(builtin)]
        argv += ["--allowedTools", ",".join([f"mcp__{SERVER}__{t}" for t in THREAD_TOOLS] + builtin)]
        argv += ["--permission-mode", "dontAsk" if inv.gated else "acceptEdits"]
        return argv + self.common_tail(inv, "--effort")

    def read(self, line: str) -> list[AgentEvent]:
        obj = load(ClaudeLine, line)
        if obj is None:
            return []
        match obj.type:
            case "system" if obj.subtype == "init":
                return [AgentEvent("session", session=obj.session_id or "")]
            case "assistant":
                return _claude_answer(obj.message or ClaudeMessage())
            case "rate_limit_event":
                return _claude_limit(obj.rate_limit_info or ClaudeRateLimit())
            case "result":
                return _claude_result(obj)
            case _:
                return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        # not ~/.claude.json: any run writes it, logged in or not (seen with 2.1.332)
        return [home / ".claude" / ".credentials.json"]


def _claude_answer(msg: ClaudeMessage) -> list[AgentEvent]:
    out: list[AgentEvent] = []
    if msg.usage is not None and msg.id:
        out.append(_claude_usage("step", msg.usage, key=msg.id))
    for block in msg.content or []:
        if block.type == "text" and block.text:
            out.append(AgentEvent("text", text=block.text))
        elif block.type == "tool_use":
            out.append(AgentEvent("tool", name=short_name(str(block.name or ""))))
    return out


def _claude_limit(info: ClaudeRateLimit) -> list[AgentEvent]:
    if info.status != "rejected":
        return []
    reset = info.resetsAt
    return [
        AgentEvent(
            "limit",
            text=f"Claude usage limit ({info.rateLimitType})",
            reset_at=float(reset) if reset is not None else reset_from_text(""),
        )
    ]


def _claude_result(obj: ClaudeLine) -> list[AgentEvent]:
    out = [_claude_usage("usage", obj.usage or ClaudeUsage(), cost=obj.total_cost_usd)]
    text = obj.result or ""
    if obj.is_error and is_limit_text(text):
        out += error_events(text)
    out.append(
        AgentEvent("final", text=text[:500], session=obj.session_id or "", is_error=bool(obj.is_error))
    )
    return out


def _claude_usage(kind: Kind, u: ClaudeUsage, key: str = "", cost: float | None = None) -> AgentEvent:
    """Anthropic's input_tokens leave out the cache: the prompt is all three."""
    return AgentEvent(
        kind,
        key=key,
        input_tokens=as_int(u.input_tokens)
        + as_int(u.cache_creation_input_tokens)
        + as_int(u.cache_read_input_tokens),
        output_tokens=as_int(u.output_tokens),
        cached_tokens=as_int(u.cache_read_input_tokens),
        cost=cost,
    )


# ------------------------------------------------------------------ Codex


def _toml(v: object) -> str:
    """A TOML value for `-c key=value` (JSON strings and arrays are valid TOML)."""
    if is_object(v):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)


class Codex(Adapter):
    """`codex exec --json --sandbox workspace-write -c mcp_servers.autodev...=... PROMPT`;
    the nudge is `codex exec --json ... resume SESSION PROMPT`."""

    name = "codex"
    key_vars = ("CODEX_API_KEY", "OPENAI_API_KEY")  # exec reads CODEX_API_KEY
    status_args = ("login", "status")  # 0.171.0: "Not logged in" and exit 1 when not
    # 0.171.0, seen running: `exec resume`'s turn.completed usage is the whole session's.
    session_totals = ("input_tokens", "output_tokens", "cached_tokens")

    def argv(self, binary: str, inv: Invocation) -> list[str]:
        conf: JsonObject = {
            f"mcp_servers.{SERVER}.command": inv.mcp.command,
            f"mcp_servers.{SERVER}.args": inv.mcp.args,
            f"mcp_servers.{SERVER}.env": inv.mcp.env,
            # exec mode cancels MCP calls that would need an approval ("user cancelled MCP tool
            # call", openai/codex#16685): autodev's own server is approved up front (0.171.0 without
            # it: "MCP tool call requires approval, but approval policy is never").
            f"mcp_servers.{SERVER}.default_tools_approval_mode": "approve",
            # codex waits 10 s for an MCP server by default; autodev's (Python and the MCP SDK)
            # can take longer on a busy machine, and then `post` is an "unsupported call".
            f"mcp_servers.{SERVER}.startup_timeout_sec": 60,
            "approval_policy": "never",
        }
        if inv.effort:
            conf["model_reasoning_effort"] = inv.effort
        if not inv.gated:
            conf["sandbox_workspace_write.network_access"] = True
        argv = [binary, "exec", "--json", "--sandbox", "workspace-write" if inv.write else "read-only"]
        for k, v in conf.items():
            argv += ["-c", f"{k}={_toml(v)}"]
        if inv.model:
            argv += ["--model", inv.model]
        argv += list(inv.extra_args)
        if inv.resume:
            argv += ["resume", inv.resume]
        return argv + [inv.prompt]

    def read(self, line: str) -> list[AgentEvent]:
        obj = load(CodexLine, line)
        if obj is None:
            return []
        match obj.type:
            case "thread.started":
                return [AgentEvent("session", session=obj.thread_id or "")]
            case "item.started" | "item.completed":
                return _codex_item(obj.type == "item.started", obj.item or CodexItem())
            case "turn.completed":
                u = obj.usage or CodexUsage()
                return [
                    AgentEvent(
                        "usage",
                        input_tokens=as_int(u.input_tokens),
                        output_tokens=as_int(u.output_tokens),
                        cached_tokens=as_int(u.cached_input_tokens),
                    ),
                    AgentEvent("final"),
                ]
            case "turn.failed":
                return error_events((obj.error or CodexError()).message or "turn failed")
            case "error":
                return error_events(obj.message or "error")
            case _:
                return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        return [Path(environ.get("CODEX_HOME") or home / ".codex") / "auth.json"]


def _codex_item(started: bool, item: CodexItem) -> list[AgentEvent]:
    kind = item.type
    if not started and kind == "agent_message" and item.text:
        return [AgentEvent("text", text=item.text)]
    if started and kind == "mcp_tool_call":
        tool = str(item.tool)
        return [AgentEvent("tool", name=tool if item.server == SERVER else f"{item.server}__{tool}")]
    if started and kind == "command_execution":
        return [AgentEvent("tool", name="shell")]
    if not started and kind == "file_change":
        return [AgentEvent("tool", name="file_change")]
    return []


# ------------------------------------------------------------------ Copilot CLI


class Copilot(Adapter):
    """`copilot -p PROMPT --output-format json --allow-all-tools --additional-mcp-config JSON`
    (gated: only autodev's tools and file writes are allowed, the shell is denied)."""

    name = "copilot"
    key_vars = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")

    def argv(self, binary: str, inv: Invocation) -> list[str]:
        mcp = {"mcpServers": {SERVER: {"type": "local", **inv.mcp.as_json(), "tools": ["*"]}}}
        argv = [binary, "-p", inv.prompt, "--output-format", "json"]
        if inv.gated:
            argv += ["--allow-tool", SERVER, "--deny-tool", "shell"]
            if inv.write:
                argv += ["--allow-tool", "write"]
        else:
            argv.append("--allow-all-tools")
        argv += ["--additional-mcp-config", json.dumps(mcp)]
        return argv + self.common_tail(inv, "--reasoning-effort")

    def read(self, line: str) -> list[AgentEvent]:
        obj = load(CopilotLine, line)
        if obj is None:
            return []
        data = obj.fields
        match obj.type:
            case "session.start":
                return [AgentEvent("session", session=data.sessionId or data.session_id or "")]
            case "assistant.message" if data.content:
                return [AgentEvent("text", text=data.content)]
            case "tool.execution_start":
                return [AgentEvent("tool", name=short_name(data.toolName or data.name or ""))]
            case "assistant.usage" | "session.shutdown" | "result":
                return _copilot_usage(data, final=obj.type != "assistant.usage")
            case "error" | "session.error":
                return error_events(data.message or data.errorType or "error")
            case _:
                return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        return [home / ".copilot" / "config.json"]


def _copilot_usage(data: CopilotData, final: bool) -> list[AgentEvent]:
    u = data.usage if data.usage is not None else data
    out: list[AgentEvent] = []
    if u.has_tokens:
        out.append(
            AgentEvent(
                "usage",
                input_tokens=as_int(u.inputTokens),
                output_tokens=as_int(u.outputTokens),
                cached_tokens=as_int(u.cacheReadTokens),
            )
        )
    if final:
        out.append(AgentEvent("final", session=data.sessionId or ""))
    return out


# ------------------------------------------------------------------ the registry

ADAPTERS: dict[str, Adapter] = {a.name: a for a in (Claude(), Codex(), Copilot(), Gemini())}


def adapter(name: str) -> Adapter:
    return ADAPTERS[name]
