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

from autodev.config.base import MODEL_CONFIG, Effort, _check_env_name, _display, _toml, rule_error
from autodev.config.docs import _cell, _table_rows, _type_words, config_markdown, config_rows
from autodev.config.loading import (
    _TYPE_WORDS,
    _describe,
    _example_for,
    _field_by_key,
    _key_path,
    _model_at,
    _participant_hint,
    _read_toml,
    _toml_key,
    _unwrap,
    _validate,
    load_config,
    load_team,
)
from autodev.config.participant import RESERVED_NAMES, Participant
from autodev.config.providers import (
    _ANY_OF_PROVIDERS,
    _LOCAL_DEFAULT_PROVIDERS,
    _join,
    _litellm_missing,
    provider_problems,
)
from autodev.config.run import HookConfig, HookPoint, RunConfig
from autodev.config.team import BUILTIN_CAPABILITIES, AuditConfig, McpServer, ScriptedConfig, Team
from autodev.config.telemetry import TelemetryConfig

__all__ = [
    "BUILTIN_CAPABILITIES",
    "RESERVED_NAMES",
    "_ANY_OF_PROVIDERS",
    "_LOCAL_DEFAULT_PROVIDERS",
    "MODEL_CONFIG",
    "_TYPE_WORDS",
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
    "_cell",
    "_check_env_name",
    "_describe",
    "_display",
    "_example_for",
    "_field_by_key",
    "_join",
    "_key_path",
    "_litellm_missing",
    "_model_at",
    "_participant_hint",
    "_read_toml",
    "rule_error",
    "_table_rows",
    "_toml",
    "_toml_key",
    "_type_words",
    "_unwrap",
    "_validate",
    "config_markdown",
    "config_rows",
    "load_config",
    "load_team",
    "provider_problems",
]
