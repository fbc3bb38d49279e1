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

from autodev.agents.events import AgentEvent
from autodev.agents.invocation import SERVER, Adapter, Invocation, as_int, short_name
from autodev.agents.limits import error_events, is_limit_text, reset_from_text

THREAD_TOOLS = ("post", "read_thread", "tell_user")


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

    def parse(self, obj: dict) -> list[AgentEvent]:
        t = obj.get("type")
        if t == "system" and obj.get("subtype") == "init":
            return [AgentEvent("session", session=str(obj.get("session_id") or ""))]
        if t == "assistant":
            msg = obj.get("message") or {}
            out = []
            u = msg.get("usage")
            if isinstance(u, dict) and msg.get("id"):
                out.append(AgentEvent("step", key=str(msg["id"]), **_claude_usage(u)))
            for block in msg.get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    out.append(AgentEvent("text", text=block["text"]))
                elif block.get("type") == "tool_use":
                    out.append(AgentEvent("tool", name=short_name(str(block.get("name", "")))))
            return out
        if t == "rate_limit_event":
            info = obj.get("rate_limit_info") or {}
            if info.get("status") == "rejected":
                reset = info.get("resetsAt")
                return [
                    AgentEvent(
                        "limit",
                        text=f"Claude usage limit ({info.get('rateLimitType', 'unknown window')})",
                        reset_at=float(reset) if isinstance(reset, int | float) else reset_from_text(""),
                    )
                ]
            return []
        if t == "result":
            cost = obj.get("total_cost_usd")
            out = [
                AgentEvent(
                    "usage",
                    **_claude_usage(obj.get("usage") or {}),
                    cost=cost if isinstance(cost, int | float) else None,
                )
            ]
            text = str(obj.get("result") or "")
            if obj.get("is_error") and is_limit_text(text):
                out += error_events(text)
            out.append(
                AgentEvent(
                    "final",
                    text=text[:500],
                    session=str(obj.get("session_id") or ""),
                    is_error=bool(obj.get("is_error")),
                )
            )
            return out
        return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        # not ~/.claude.json: any run writes it, logged in or not (seen with 2.1.332)
        return [home / ".claude" / ".credentials.json"]


def _claude_usage(u: dict) -> dict:
    """Anthropic's input_tokens leave out the cache: the prompt is all three."""
    return {
        "input_tokens": as_int(u.get("input_tokens"))
        + as_int(u.get("cache_creation_input_tokens"))
        + as_int(u.get("cache_read_input_tokens")),
        "output_tokens": as_int(u.get("output_tokens")),
        "cached_tokens": as_int(u.get("cache_read_input_tokens")),
    }


# ------------------------------------------------------------------ Codex


def _toml(v) -> str:
    """A TOML value for `-c key=value` (JSON strings and arrays are valid TOML)."""
    if isinstance(v, dict):
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
        conf = {
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

    def parse(self, obj: dict) -> list[AgentEvent]:
        t = obj.get("type")
        if t == "thread.started":
            return [AgentEvent("session", session=str(obj.get("thread_id") or ""))]
        if t in ("item.started", "item.completed"):
            item = obj.get("item") or {}
            kind = item.get("type")
            if t == "item.completed" and kind == "agent_message" and item.get("text"):
                return [AgentEvent("text", text=str(item["text"]))]
            if t == "item.started" and kind == "mcp_tool_call":
                server = item.get("server")
                tool = str(item.get("tool", ""))
                return [AgentEvent("tool", name=tool if server == SERVER else f"{server}__{tool}")]
            if t == "item.started" and kind == "command_execution":
                return [AgentEvent("tool", name="shell")]
            if t == "item.completed" and kind == "file_change":
                return [AgentEvent("tool", name="file_change")]
            return []
        if t == "turn.completed":
            u = obj.get("usage") or {}
            return [
                AgentEvent(
                    "usage",
                    input_tokens=as_int(u.get("input_tokens")),
                    output_tokens=as_int(u.get("output_tokens")),
                    cached_tokens=as_int(u.get("cached_input_tokens")),
                ),
                AgentEvent("final"),
            ]
        if t == "turn.failed":
            return error_events(str((obj.get("error") or {}).get("message") or "turn failed"))
        if t == "error":
            return error_events(str(obj.get("message") or "error"))
        return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        return [Path(environ.get("CODEX_HOME") or home / ".codex") / "auth.json"]


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

    def parse(self, obj: dict) -> list[AgentEvent]:
        t = str(obj.get("type") or "")
        inner = obj.get("data")
        data = inner if isinstance(inner, dict) else obj
        if t == "session.start":
            return [AgentEvent("session", session=str(data.get("sessionId") or data.get("session_id") or ""))]
        if t == "assistant.message" and data.get("content"):
            return [AgentEvent("text", text=str(data["content"]))]
        if t == "tool.execution_start":
            return [AgentEvent("tool", name=short_name(str(data.get("toolName") or data.get("name") or "")))]
        if t in ("assistant.usage", "session.shutdown", "result"):
            usage = data.get("usage")
            u = usage if isinstance(usage, dict) else data
            out = []
            if any(k in u for k in ("inputTokens", "outputTokens")):
                out.append(
                    AgentEvent(
                        "usage",
                        input_tokens=as_int(u.get("inputTokens")),
                        output_tokens=as_int(u.get("outputTokens")),
                        cached_tokens=as_int(u.get("cacheReadTokens")),
                    )
                )
            if t != "assistant.usage":
                out.append(AgentEvent("final", session=str(data.get("sessionId") or "")))
            return out
        if t in ("error", "session.error"):
            return error_events(str(data.get("message") or data.get("errorType") or "error"))
        return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        return [home / ".copilot" / "config.json"]


# ------------------------------------------------------------------ Gemini CLI


GEMINI_SETTINGS_ENV = "AUTODEV_GEMINI_SETTINGS_DIR"  # a private folder for Gemini's settings file
GEMINI_SETTINGS_FIX = (
    f"set AUTODEV_HOME to a folder that is not below a world-writable one (e.g. ~/.autodev), or "
    f"{GEMINI_SETTINGS_ENV} to a private folder for the Gemini CLI's settings file"
)


def world_writable_above(path: Path) -> Path | None:
    """The nearest folder at or above `path` that anyone may write to (like /tmp), or None."""
    p = Path(os.path.abspath(path))
    for q in (p, *p.parents):
        try:
            if q.stat().st_mode & 0o002:
                return q
        except OSError:
            continue  # not created yet: it will be private (0700)
    return None


def gemini_settings_folder(
    run_folder: Path, environ: Mapping[str, str] | None = None
) -> tuple[Path, Path | None]:
    """Where the Gemini CLI's settings file can go: Gemini CLI 0.61.0 ignores one below a
    world-writable folder (so an AUTODEV_HOME under /tmp would silently lose autodev's MCP
    server). The first of $AUTODEV_GEMINI_SETTINGS_DIR, the run folder, $XDG_RUNTIME_DIR/autodev
    and ~/.cache/autodev/agents that is not; else (the run folder, the world-writable folder
    above it), which `doctor` and `start` refuse."""
    env = os.environ if environ is None else environ
    candidates = [Path(env[GEMINI_SETTINGS_ENV])] if env.get(GEMINI_SETTINGS_ENV) else []
    candidates.append(Path(run_folder))
    if env.get("XDG_RUNTIME_DIR"):
        candidates.append(Path(env["XDG_RUNTIME_DIR"]) / "autodev")
    if env.get("HOME"):
        candidates.append(Path(env["HOME"]) / ".cache" / "autodev" / "agents")
    for c in candidates:
        if world_writable_above(c) is None:
            return c, None
    return Path(run_folder), world_writable_above(run_folder)


class Gemini(Adapter):
    """`gemini -p PROMPT --output-format stream-json`; autodev's MCP server reaches it through a
    settings file of this run (GEMINI_CLI_SYSTEM_SETTINGS_PATH), so neither the repository's nor
    the user's .gemini/settings.json is touched. The file goes where Gemini reads it
    (`gemini_settings_folder`)."""

    name = "gemini"
    key_vars = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

    def _settings_path(self, inv: Invocation) -> Path:
        folder, _ = gemini_settings_folder(inv.settings_dir or inv.workdir)
        return folder / f"gemini-settings-{inv.workdir.name}.json"

    def settings(self, inv: Invocation) -> Path:
        path = self._settings_path(inv)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # System settings outrank the workspace's: of the MCP servers, only autodev's connects (a
        # .gemini/settings.json planted in the repository would start its own outside the sandbox).
        settings: dict = {
            "mcpServers": {SERVER: {**inv.mcp.as_json(), "trust": True}},
            "mcp": {"allowed": [SERVER]},
        }
        if inv.key_mode:
            # 0.61.0 takes GOOGLE_GEMINI_BASE_URL as a "gateway" login it then refuses ("Invalid
            # auth method selected"): API-key mode is named, not inferred.
            settings["security"] = {"auth": {"selectedType": "gemini-api-key"}}
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the turn's token
        with os.fdopen(fd, "w") as f:
            json.dump(settings, f)
        return path

    def argv(self, binary: str, inv: Invocation) -> list[str]:
        argv = [binary, "-p", inv.prompt, "--output-format", "stream-json"]
        # gated: tools that need a confirmation are refused in headless mode; autodev's own
        # server is trusted in its settings. auto_edit lets file edits through.
        mode = ("auto_edit" if inv.write else "default") if inv.gated else "yolo"
        argv += ["--approval-mode", mode]
        if mode != "default":
            # 0.61.0 turns any mode back to "default" in a folder it does not trust
            argv.append("--skip-trust")
        return argv + self.common_tail(inv)

    def env(self, inv: Invocation) -> dict[str, str]:
        return {"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(self.settings(inv))}

    def cleanup(self, inv: Invocation) -> None:
        self._settings_path(inv).unlink(missing_ok=True)

    def parse(self, obj: dict) -> list[AgentEvent]:
        t = obj.get("type")
        if t == "init":
            return [AgentEvent("session", session=str(obj.get("session_id") or obj.get("sessionId") or ""))]
        if t == "message" and obj.get("role") == "assistant" and obj.get("content"):
            return [AgentEvent("text", text=str(obj["content"]))]
        if t == "tool_use":
            return [AgentEvent("tool", name=short_name(str(obj.get("tool_name") or obj.get("name") or "")))]
        if t == "error":
            return error_events(str(obj.get("message") or "error"))
        if t == "result":
            stats = obj.get("stats") or {}
            out = [
                AgentEvent(
                    "usage",
                    input_tokens=as_int(stats.get("input_tokens")),
                    output_tokens=as_int(stats.get("output_tokens")),
                    cached_tokens=as_int(stats.get("cached")),
                )
            ]
            err = obj.get("error") or {}
            if obj.get("status") == "error" and err:
                out += error_events(str(err.get("message") or err))
            return [*out, AgentEvent("final", is_error=obj.get("status") == "error")]
        return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        return [home / ".gemini" / "oauth_creds.json"]


ADAPTERS: dict[str, Adapter] = {a.name: a for a in (Claude(), Codex(), Copilot(), Gemini())}


def adapter(name: str) -> Adapter:
    return ADAPTERS[name]
