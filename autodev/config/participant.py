"""One `[[participants]]` table of `.autodev/team.toml`."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from autodev.config.base import MODEL_CONFIG, Effort, as_toml, check_env_name, rule_error
from autodev.rules.names import NAME_PATTERN
from autodev.rules.names import RESERVED as RESERVED_NAMES

Agent = Literal["claude", "codex", "copilot", "gemini"]
AGENTS: tuple[str, ...] = ("claude", "codex", "copilot", "gemini")


class Participant(BaseModel):
    """One `[[participants]]` table of team.toml."""

    model_config = MODEL_CONFIG

    name: str = Field(
        description="Name on the thread and in handoffs: a lowercase letter, then up to 31 of "
        'a-z, 0-9, "_" or "-". Unique in the team; not user, system or audit.'
    )
    model: str | None = Field(
        default=None,
        min_length=1,
        description='A litellm model string (e.g. "anthropic/claude-sonnet-4-5"), or "scripted" '
        '(or "scripted:LABEL", a second scripted model, e.g. as a failover) for the '
        "offline scripted model. With `agent`: the model passed to that CLI (optional).",
    )
    agent: Agent | None = Field(
        default=None,
        description='A coding-agent CLI that takes this participant\'s turns instead of a model: "claude" '
        '(Claude Code), "codex", "copilot" (Copilot CLI) or "gemini" (Gemini CLI). Found on PATH or '
        "by AUTODEV_<NAME>_BIN.",
    )
    agent_args: list[str] = Field(
        default_factory=list, description="Extra arguments given to the agent CLI on every turn."
    )
    agent_permission: Literal["gated", "auto"] = Field(
        default="gated",
        description='How much the agent CLI may do by itself: "gated" (the CLI\'s own shell tool is '
        'denied or confined as docs/agents.md says per CLI) or "auto" (its shell runs unasked).',
    )
    effort: Effort | None = Field(
        default=None,
        description="Reasoning effort, mapped to the provider's reasoning setting: low, medium "
        "or high. Unset: the provider's default.",
    )
    write: bool = Field(
        default=False,
        description="Whether the participant may change the repository (write/edit tools and "
        "`work_done` posts).",
    )
    lane: str = Field(
        default="", description="The participant's role in a sentence or two; it goes into its system prompt."
    )
    failover: list[str] = Field(
        default_factory=list,
        description="Models tried in order when the current one hits a usage or rate limit. "
        "They are reached with this participant's api_base, api_key_env and "
        'effort, like its model. "agent:NAME" (e.g. "agent:codex") is an agent CLI.',
    )
    api_base: str | None = Field(
        default=None,
        description="Endpoint URL for a local or proxy server (e.g. "
        '"http://127.0.0.1:11434" for Ollama). With api_base and no api_key_env, '
        "no key is required.",
    )
    api_key_env: str | None = Field(
        default=None,
        description="Name of the environment variable holding this participant's API key, "
        "used instead of the provider's usual variable. Commands the participant "
        "runs never see it.",
    )
    tools: list[str] = Field(
        default_factory=list,
        description='Capabilities beyond the built-in tools: "browser", or the capability of an '
        "[mcp.NAME] server (its name unless it sets capability).",
    )

    network: bool | None = Field(
        default=None,
        description="Whether this participant's sandboxed commands may reach the network; "
        "unset: the config's commandNetwork.",
    )

    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        description="Spending cap of this participant in US dollars. When it is reached and the "
        "participant is next to speak, the run pauses with reason `budget`. Unset: no cap.",
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Token cap of this participant; reached when it is next to speak, the run "
        "pauses with reason `budget`. Unset: no cap.",
    )

    max_output_tokens: int | None = Field(
        default=None,
        ge=16,
        description="Most tokens one generation of this participant may produce; replaces "
        "maxOutputTokens of config.toml (and its quarter-of-the-window bound).",
    )
    context: int | None = Field(
        default=None,
        ge=256,
        description="The model's context window in tokens, for models litellm does not know "
        "(local servers); it overrides litellm's figure. Unknown and unset: 32768. Longer turns "
        "are compacted to fit it.",
    )

    @model_validator(mode="after")
    def _output_below_window(self) -> Participant:
        if self.context is not None and self.max_output_tokens is not None:
            if self.max_output_tokens >= self.context:
                raise rule_error(
                    f"max_output_tokens ({self.max_output_tokens}) is not below context ({self.context})",
                    "make max_output_tokens smaller than context (a quarter of it is a good start)",
                )
        return self

    @model_validator(mode="after")
    def _model_or_agent(self) -> Participant:
        if self.model is None and self.agent is None:
            raise rule_error(
                "it has neither model nor agent",
                'set model = "provider/model" (e.g. "anthropic/claude-sonnet-4-5"), or '
                'agent = "claude" | "codex" | "copilot" | "gemini" for a coding-agent CLI',
            )
        if self.agent is None and any(m.startswith("agent:") for m in self.failover):
            raise rule_error(
                "failover names an agent CLI but the participant is a model",
                'set agent = "..." (an agent CLI can fail over to models, not the other way '
                "round), or remove the agent:NAME entries",
            )
        if self.agent is None and (self.agent_args or self.agent_permission != "gated"):
            raise rule_error(
                "agent_args and agent_permission need agent",
                'set agent = "claude" | "codex" | "copilot" | "gemini", or remove them',
            )
        return self

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not re.match(NAME_PATTERN, v):
            raise rule_error(
                f"{as_toml(v)} is not a valid participant name",
                'start with a lowercase letter, then use only a-z, 0-9, "_" or "-" (at most 32 characters)',
            )
        if v in RESERVED_NAMES:
            raise rule_error(
                f"{as_toml(v)} is reserved for the thread's own posts",
                "pick another name (user, system and audit are reserved)",
            )
        return v

    @field_validator("failover")
    @classmethod
    def _failover_not_blank(cls, v: list[str]) -> list[str]:
        for i, m in enumerate(v):
            if not m.strip():
                raise rule_error(f"failover[{i}] is empty", "remove the empty model string")
            if m.startswith("agent:") and m[6:] not in AGENTS:
                raise rule_error(
                    f"failover[{i}]: {as_toml(m)} names no agent CLI",
                    "use agent:" + ", agent:".join(AGENTS) + ", or a model string",
                )
        return v

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        return check_env_name(v)

    def models(self) -> list[str]:
        """The litellm models, in the order they are tried: the model (unless an agent CLI
        takes it), then the failover models (not the agent:NAME entries)."""
        first = [self.model] if self.model and not self.agent else []
        return [*first, *(m for m in self.failover if not m.startswith("agent:"))]

    def agents(self) -> list[str]:
        """The agent CLIs, in the order they are tried: `agent`, then failover's agent:NAME."""
        first = [self.agent] if self.agent else []
        return [*first, *(m[6:] for m in self.failover if m.startswith("agent:"))]
