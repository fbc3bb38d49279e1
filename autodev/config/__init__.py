"""The two files a user edits: `.autodev/config.toml` (run settings) and `.autodev/team.toml`.

One pydantic model per TOML section. Every field carries a description, which is the single
source for `autodev config`, docs/CONFIG.md and error fixes, so the three cannot disagree.

- `base`: what every model shares (strictness, rule errors, values in TOML spelling)
- `run`: config.toml (`RunConfig`, `HookConfig`); `telemetry`: its `[telemetry]` table (`TelemetryConfig`)
- `participant`, `team`: team.toml (`Participant`; `Team`, `AuditConfig`, `ScriptedConfig`, `McpServer`)
- `loading`: reading both files, pydantic's errors rewritten in TOML terms
- `docs`: `autodev config` rows and docs/CONFIG.md
- `providers`: the keys and endpoints the team's models need

Everything is importable from `autodev.config`. Regenerate the docs with:
python -m autodev.config > docs/CONFIG.md
"""

from __future__ import annotations

from autodev.config.base import MODEL_CONFIG, Effort, rule_error
from autodev.config.docs import config_markdown, config_rows
from autodev.config.loading import load_config, load_team
from autodev.config.participant import RESERVED_NAMES, Participant
from autodev.config.providers import provider_problems
from autodev.config.run import HookConfig, HookPoint, RunConfig
from autodev.config.team import BUILTIN_CAPABILITIES, AuditConfig, McpServer, ScriptedConfig, Team
from autodev.config.telemetry import TelemetryConfig

__all__ = [
    "BUILTIN_CAPABILITIES",
    "RESERVED_NAMES",
    "MODEL_CONFIG",
    "AuditConfig",
    "Effort",
    "HookConfig",
    "HookPoint",
    "McpServer",
    "Participant",
    "RunConfig",
    "TelemetryConfig",
    "ScriptedConfig",
    "Team",
    "rule_error",
    "config_markdown",
    "config_rows",
    "load_config",
    "load_team",
    "provider_problems",
]
