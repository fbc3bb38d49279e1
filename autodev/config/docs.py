"""`autodev config` rows and docs/CONFIG.md, both generated from the models' field descriptions."""

from __future__ import annotations

import types
import typing
from typing import Literal

from pydantic import BaseModel

from autodev.config.base import as_toml
from autodev.config.participant import Participant
from autodev.config.run import HookConfig, RunConfig
from autodev.config.team import AuditConfig, McpServer, ScriptedConfig
from autodev.config.telemetry import TelemetryConfig


def config_rows(cfg: RunConfig) -> list[tuple[str, str, str, str]]:
    """(key, current value, default, meaning) for every key of config.toml, in file order."""
    rows: list[tuple[str, str, str, str]] = []
    for name, info in RunConfig.model_fields.items():
        default = info.get_default(call_default_factory=True)
        rows.append(
            (info.alias or name, as_toml(getattr(cfg, name)), as_toml(default), info.description or "")
        )
    return rows


def _type_words(annotation: object) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(_type_words(a) for a in inner)
    if origin is Literal:
        return " \\| ".join(as_toml(a) for a in args)
    if origin is list:
        return f"list of {_type_words(args[0])}s"
    words: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
    return words.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table_rows(model: type[BaseModel]) -> list[str]:
    out = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        value = None if info.is_required() else info.get_default(call_default_factory=True)
        default = "required" if info.is_required() else "not set" if value is None else f"`{as_toml(value)}`"
        out.append(
            f"| `{info.alias or name}` | {_type_words(info.annotation)} | "
            f"{_cell(default)} | {_cell(info.description or '')} |"
        )
    return out


def config_markdown() -> str:
    """docs/CONFIG.md: every key of config.toml and team.toml, generated from the models."""
    lines = [
        "# Configuration",
        "",
        "<!-- Generated from autodev/config/ by `python -m autodev.config > docs/CONFIG.md`;",
        "     do not edit by hand (a test keeps this file equal to the models). -->",
        "",
        "autodev reads two files in the repository, both created by `autodev init`:",
        "",
        "- `.autodev/config.toml` — run settings. Every key is optional.",
        "- `.autodev/team.toml` — the participants, and optionally the audit's model.",
        "",
        "Unknown keys and values of the wrong type are errors that name the file, the key and",
        "the fix. `autodev config` prints every run setting with its current value, default and",
        "meaning.",
        "",
        "## `.autodev/config.toml`",
        "",
        "Keys are camelCase as written below (the snake_case spelling is also accepted). Keys",
        "marked *(autodev addition)* go beyond the product contract's list.",
        "",
        "| key | default | meaning |",
        "|---|---|---|",
    ]
    for key, _current, default, meaning in config_rows(RunConfig()):
        lines.append(f"| `{key}` | `{_cell(default)}` | {_cell(meaning)} |")
    return "\n".join([*lines, *_tables_section(), *_keys_section()])


def _tables_section() -> list[str]:
    """The tables of config.toml after its keys, then team.toml's tables."""
    return [
        "",
        "### `[[hooks]]` (optional, any number)",
        "",
        *_table_rows(HookConfig),
        "",
        "### `[telemetry]` (optional)",
        "",
        *_table_rows(TelemetryConfig),
        "",
        "## `.autodev/team.toml`",
        "",
        "Keys are snake_case. Edits are picked up at the next turn boundary; an invalid edit keeps",
        "the old team and shows the error in status and events.",
        "",
        "### `[[participants]]` (one table per participant, at least one)",
        "",
        *_table_rows(Participant),
        "",
        "### `[audit]` (optional)",
        "",
        *_table_rows(AuditConfig),
        "",
        '### `[scripted]` (required when any model is `"scripted"`)',
        "",
        *_table_rows(ScriptedConfig),
        "",
        "### `[mcp.NAME]` (optional: one table per stdio MCP server)",
        "",
        "Its tools are offered as `NAME__TOOL` to the participants whose `tools` name its capability.",
        "",
        *_table_rows(McpServer),
        "",
    ]


def _keys_section() -> list[str]:
    """Which provider keys the check before a run asks for."""
    return [
        "## Provider keys",
        "",
        "Before a run starts, autodev checks that every model it may call — each participant's",
        "model and failover models, and the audit's model — has what its provider needs:",
        "",
        '- `"scripted"` needs nothing.',
        "- With `api_key_env`, the variable it names must be set.",
        "- Else with `api_base` (a local or proxy endpoint), nothing is required.",
        "- Else the provider's usual variable must be set, as litellm knows it (for example",
        "  `OPENAI_API_KEY` for `openai/...`, `ANTHROPIC_API_KEY` for `anthropic/...`).",
        "  Ollama models need no key: litellm defaults them to the local server.",
        "",
        "Failover models are reached with the participant's `api_base` and `api_key_env`, so",
        "they are checked the same way. The variables holding keys are removed from the",
        "environment of every command a participant runs.",
        "",
    ]
