"""The whole of `.autodev/team.toml` (`Team`) and its other tables: `[audit]`, `[scripted]`, `[mcp.NAME]`."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field, field_validator, model_validator

from autodev.config.base import MODEL_CONFIG, Effort, as_toml, check_env_name, display_path, rule_error
from autodev.config.participant import Participant
from autodev.errors import ConfigError
from autodev.rules.names import NAME_PATTERN, is_scripted


class AuditConfig(BaseModel):
    """The optional `[audit]` table: the model of the stateless audit after `done`."""

    model_config = MODEL_CONFIG

    model: str = Field(
        min_length=1,
        description='A litellm model string, or "scripted". Without an [audit] table the audit '
        "uses the first participant's model, effort, api_base and api_key_env.",
    )
    effort: Effort | None = Field(
        default=None, description="Reasoning effort for the audit: low, medium or high."
    )
    api_base: str | None = Field(default=None, description="Endpoint URL for a local or proxy server.")
    api_key_env: str | None = Field(
        default=None, description="Name of the environment variable holding the audit's API key."
    )

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        return check_env_name(v)


class ScriptedConfig(BaseModel):
    """The `[scripted]` table, needed when any model is "scripted"."""

    model_config = MODEL_CONFIG

    path: str = Field(
        default="script.toml",
        min_length=1,
        description="The script file for the scripted model, relative to team.toml.",
    )


BUILTIN_CAPABILITIES = ("read", "write", "commands", "thread")


class McpServer(BaseModel):
    """One `[mcp.NAME]` table of team.toml: a stdio MCP server started with the daemon."""

    model_config = MODEL_CONFIG

    command: str = Field(min_length=1, description="The program that runs the server (found on PATH).")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: list[str] = Field(
        default_factory=list,
        description="Names of environment variables passed to the server; no other variable of "
        "autodev's environment reaches it (PATH, HOME and the locale excepted).",
    )
    cwd: str | None = Field(
        default=None,
        description="Folder the server runs in, relative to the repository root. Unset: the root.",
    )
    capability: str | None = Field(
        default=None,
        description="The capability its tools belong to, granted with a participant's tools and "
        "held by a notice's hold. Unset: the server's name.",
    )
    timeout_sec: float = Field(default=120, gt=0, description="Seconds a call to one of its tools may take.")
    network: bool | None = Field(
        default=None,
        description="May the server reach the network? Unset: the config's commandNetwork. false "
        "starts it in a network namespace of its own (bubblewrap; not even the host's loopback), "
        'as commands run; with no sandbox (sandbox = "off" or none found) it is not confined.',
    )
    restart_sec: float = Field(
        default=1.0,
        gt=0,
        description="Seconds before a server that died is started again (doubling, up to a minute).",
    )

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: list[str]) -> list[str]:
        for name in v:
            check_env_name(name)
        return v


class Team(BaseModel):
    """The whole of team.toml."""

    model_config = MODEL_CONFIG

    participants: list[Participant] = Field(
        min_length=1, description="The team, one [[participants]] table each."
    )
    audit: AuditConfig | None = Field(default=None, description="The audit's model.")
    scripted: ScriptedConfig | None = Field(default=None, description="The scripted model's script.")
    mcp: dict[str, McpServer] = Field(
        default_factory=dict, description="MCP servers, one [mcp.NAME] table each; tools are NAME__TOOL."
    )

    @field_validator("participants")
    @classmethod
    def _unique_names(cls, v: list[Participant]) -> list[Participant]:
        first: dict[str, int] = {}
        for i, p in enumerate(v):
            if p.name in first:
                raise rule_error(
                    f'name "{p.name}" is used by participants[{first[p.name]}] and participants[{i}]',
                    "give every participant its own name",
                )
            first[p.name] = i
        return v

    @model_validator(mode="after")
    def _scripted_has_script(self) -> Team:
        if self.uses_scripted() and self.scripted is None:
            raise rule_error(
                'a model is "scripted" but there is no [scripted] table',
                'add\n    [scripted]\n    path = "script.toml"\n  to the team file',
            )
        return self

    @model_validator(mode="after")
    def _tools_are_known(self) -> Team:
        for name, server in self.mcp.items():
            if not re.match(NAME_PATTERN, name) or "__" in name:
                raise rule_error(
                    f"mcp.{name}: {as_toml(name)} is not a valid server name",
                    'start with a lowercase letter, then use a-z, 0-9, "-" or single "_"',
                )
            if server.capability in BUILTIN_CAPABILITIES:
                raise rule_error(
                    f"mcp.{name}.capability: {as_toml(server.capability)} is a built-in capability",
                    "leave capability unset (the server's name) or pick another name",
                )
        known = ["browser", *sorted(self.capabilities())]
        for p in self.participants:
            for t in p.tools:
                if t not in known:
                    raise rule_error(
                        f'participant "{p.name}": tools: {as_toml(t)} is not a capability',
                        f"use one of {', '.join(known)} (an [mcp.NAME] table adds NAME)",
                    )
        return self

    def capabilities(self) -> dict[str, str]:
        """MCP server name -> the capability its tools belong to."""
        return {name: s.capability or name for name, s in self.mcp.items()}

    def names(self) -> list[str]:
        return [p.name for p in self.participants]

    def get(self, name: str) -> Participant:
        for p in self.participants:
            if p.name == name:
                return p
        raise KeyError(name)

    def audit_model(self) -> AuditConfig:
        """The audit's settings; by default the first participant's model and endpoint."""
        if self.audit is not None:
            return self.audit
        first = next((p for p in self.participants if p.models()), None)
        if first is None:
            raise ConfigError(
                "the audit needs a model, and every participant is an agent CLI",
                'add an [audit] table to .autodev/team.toml with model = "provider/model"',
            )
        return AuditConfig(
            model=first.models()[0],
            effort=first.effort,
            api_base=first.api_base,
            api_key_env=first.api_key_env,
        )

    def key_names(self) -> list[str]:
        """The variables the team names with api_key_env: secrets, whatever they are called."""
        audit = (
            self.audit_model().api_key_env
            if self.audit or any(p.models() for p in self.participants)
            else None
        )
        names = [p.api_key_env for p in self.participants] + [audit]
        return list(dict.fromkeys(n for n in names if n))

    def uses_scripted(self) -> bool:
        models = [m for p in self.participants for m in p.models()]
        if self.audit is not None:
            models.append(self.audit.model)
        return any(is_scripted(m) for m in models)

    def script_path(self, team_file: Path) -> Path:
        if self.scripted is None:
            raise ConfigError(
                f"{display_path(team_file)}: there is no [scripted] table",
                'add [scripted] with path = "script.toml"',
            )
        return (Path(team_file).parent / self.scripted.path).resolve()
