"""The Gemini CLI's adapter, and where its settings file can go (a folder Gemini CLI 0.61.0 does
not ignore: none of its ancestors world-writable)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from autodev.agents.events import AgentEvent
from autodev.agents.invocation import SERVER, Adapter, Invocation, as_int, short_name
from autodev.agents.limits import error_events
from autodev.agents.lines import GeminiLine, GeminiStats, load
from autodev.store.journal import JsonObject

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
        settings: JsonObject = {
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

    def read(self, line: str) -> list[AgentEvent]:
        obj = load(GeminiLine, line)
        if obj is None:
            return []
        match obj.type:
            case "init":
                return [AgentEvent("session", session=obj.session_id or obj.sessionId or "")]
            case "message" if obj.role == "assistant" and obj.content:
                return [AgentEvent("text", text=obj.content)]
            case "tool_use":
                return [AgentEvent("tool", name=short_name(obj.tool_name or obj.name or ""))]
            case "error":
                return error_events(obj.message or "error")
            case "result":
                return _result(obj)
            case _:
                return []

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        return [home / ".gemini" / "oauth_creds.json"]


def _result(obj: GeminiLine) -> list[AgentEvent]:
    stats = obj.stats or GeminiStats()
    out = [
        AgentEvent(
            "usage",
            input_tokens=as_int(stats.input_tokens),
            output_tokens=as_int(stats.output_tokens),
            cached_tokens=as_int(stats.cached),
        )
    ]
    err = obj.error
    if obj.status == "error" and err is not None and (err.model_fields_set or err.model_extra):
        out += error_events(err.message or str(err.model_dump(exclude_unset=True)))
    return [*out, AgentEvent("final", is_error=obj.status == "error")]
