"""What makes a bundle's `.autodev/` safe to run (shared by `bundle` and `replay`): no hooks or
notifications, the sandbox required, no MCP servers, no agent CLI arguments or keys."""

from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w

from autodev.errors import UsageError

__all__ = ["BundleRefused", "safe_config"]


class BundleRefused(UsageError):
    """A bundle that is not safe or not whole (exit 2)."""


def safe_config(config_dir: Path) -> None:
    """A bundle's .autodev/ made safe to run: no hooks, no notifications, the sandbox required;
    no MCP servers; no participant's tools, api_base, agent_args or api_key_env (an agent CLI
    participant's turns are played by replay's stand-in, which runs no CLI)."""
    cfg = config_dir / "config.toml"
    data = tomllib.loads(cfg.read_text()) if cfg.exists() else {}
    for key in ("hooks", "notifyCommand", "notifyUrl", "sandboxExpose", "sandboxRead"):
        data.pop(key, None)
    data["sandbox"] = "bwrap"
    cfg.write_text(tomli_w.dumps(data))
    team_file = config_dir / "team.toml"
    team = tomllib.loads(team_file.read_text())
    team.pop("mcp", None)
    for p in team.get("participants") or []:
        # A coding-agent CLI participant stays: replay runs the stand-in that plays its recorded
        # streams, never a CLI; its own arguments and the key it would be given go.
        for key in ("tools", "api_base", "agent_args", "api_key_env"):
            p.pop(key, None)
    team_file.write_text(tomli_w.dumps(team))
