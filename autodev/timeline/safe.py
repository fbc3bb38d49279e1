"""What makes a bundle's `.autodev/` safe to run (shared by `bundle` and `replay`): no hooks or
notifications, the sandbox required, no MCP servers, no coding-agent CLI participant."""

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
    no MCP servers; a coding-agent CLI participant refused (its configuration runs programs)."""
    cfg = config_dir / "config.toml"
    data = tomllib.loads(cfg.read_text()) if cfg.exists() else {}
    for key in ("hooks", "notifyCommand", "notifyUrl", "sandboxExpose"):
        data.pop(key, None)
    data["sandbox"] = "bwrap"
    cfg.write_text(tomli_w.dumps(data))
    team_file = config_dir / "team.toml"
    team = tomllib.loads(team_file.read_text())
    team.pop("mcp", None)
    for p in team.get("participants") or []:
        if p.get("agent"):
            raise BundleRefused(
                f"the bundle's participant {p.get('name')!r} is a coding-agent CLI ({p['agent']})",
                "replay of agent CLI participants from a bundle is not supported",
            )
        p.pop("tools", None)
        p.pop("api_base", None)
    team_file.write_text(tomli_w.dumps(team))
