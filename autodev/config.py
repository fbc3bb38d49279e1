"""The two files a user edits: `.autodev/config.toml` (run settings) and `.autodev/team.toml`.

One pydantic model per TOML section. Every field carries a description, which is the single
source for `autodev config`, docs/CONFIG.md and error fixes, so the three cannot disagree.
Validation errors are rewritten in TOML terms (file, key path, what was wrong, the fix),
because a user reading pydantic's own wording would have to know our Python field names.

Regenerate the docs with:  python -m autodev.config > docs/CONFIG.md
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

from autodev.errors import ConfigError
from autodev.names import NAME_PATTERN, is_scripted
from autodev.names import RESERVED as RESERVED_NAMES

Effort = Literal["low", "medium", "high"]

# strict: TOML already gives real types, so `maxTalkTurns = "3"` is a mistake worth reporting,
# not something to coerce silently. Integers are still accepted where a number is expected.
_MODEL_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


def _rule(message: str, fix: str) -> PydanticCustomError:
    """A validation failure of one of our own rules, carrying its fix through pydantic."""
    return PydanticCustomError("autodev_rule", "{message}", {"message": message, "fix": fix})


def _check_env_name(v: str | None) -> str | None:
    if v is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", v):
        raise _rule(
            f"{_toml(v)} is not an environment variable name",
            'give the variable\'s name (e.g. "MY_OPENAI_KEY"), not its value',
        )
    return v


# ---------------------------------------------------------------------------------------------
# .autodev/config.toml


HookPoint = Literal["before_tool", "after_tool", "before_post", "after_post", "on_state"]


class HookConfig(BaseModel):
    """One `[[hooks]]` table of config.toml: a shell command at a control point."""

    model_config = _MODEL_CONFIG

    on: HookPoint = Field(
        description="The point: before_tool (exit non-zero blocks the call, stdout is the reason; "
        'stdout {"args": {...}} on exit 0 replaces the arguments; a crash or timeout blocks), '
        "after_tool (stdout is appended to the result), before_post (exit non-zero refuses the "
        "post), after_post, on_state (every state change)."
    )
    command: str = Field(
        min_length=1,
        description="Run with `sh -c` in the repository, the JSON payload on stdin; provider keys "
        "are removed from its environment.",
    )
    match: str = Field(
        "*",
        min_length=1,
        description="Glob on the tool name (tool points), the post's kind (post points) or the "
        "state (on_state).",
    )
    timeout_sec: float = Field(
        30, gt=0, description="Seconds before the hook's whole process group is killed (it then fails)."
    )


class RunConfig(BaseModel):
    """Run settings from `.autodev/config.toml`; every key is optional."""

    model_config = _MODEL_CONFIG

    gate_mode: Literal["gated", "auto"] = Field(
        "gated",
        alias="gateMode",
        description='What happens to a gate no pattern matches: "gated" stops the run until '
        '`autodev approve` / `autodev deny`; "auto" approves it.',
    )
    gate_auto_approve: list[str] = Field(
        default_factory=list,
        alias="gateAutoApprove",
        description="Glob patterns matched against a gate's text; a match approves the gate.",
    )
    gate_auto_deny: list[str] = Field(
        default_factory=list,
        alias="gateAutoDeny",
        description="Glob patterns matched against a gate's text; a match denies the gate. "
        "Checked before gateAutoApprove.",
    )
    gate_required: list[str] = Field(
        default_factory=lambda: [
            "git push*",
            "rm -rf *",
            "git clean -f*",
            "git reset --hard*",
            "git checkout -- *",
        ],
        alias="gateRequired",
        description="Glob patterns on commands: the command runner refuses a matching command "
        "unless a gate for it was approved. Patterns match normalised commands: through wrappers "
        "(sudo, env, xargs, sh -c, ...), git's options and -c aliases, `git send-pack` as push, "
        "and option spellings (`rm -fr`, `-Rf`, `-r -f`, `--recursive --force` are `rm -rf`). "
        "An empty list turns the guard off.",
    )
    gate_opaque: Literal["gated", "allow"] = Field(
        "gated",
        alias="gateOpaque",
        description="(autodev addition) Commands the guard cannot see into: a script or module "
        "file created or changed during the run (`bash push.sh`, `./push.sh`, `python x.py`), "
        "inline interpreter code (`python -c`, `perl -e`, `node -e`, ...), a program read from "
        "input (`curl ... | sh`), eval of computed text, git settings that run programs "
        '(`git -c core.hooksPath=...`) and lines the parser cannot read. "gated" refuses them '
        'unless an approved gate names them, like a gateRequired match; "allow" runs them '
        "(an unreadable line is still refused when it mentions a pattern's first word).",
    )
    gate_required_tools: list[str] = Field(
        default_factory=list,
        alias="gateRequiredTools",
        description='Glob patterns on tool names (e.g. "github__merge_*"): a matching tool is '
        "refused unless a gate naming the tool was approved; each approval covers one call. "
        "*(autodev addition)*",
    )
    wait_first_sec: float = Field(
        30,
        alias="waitFirstSec",
        gt=0,
        le=86400,
        description="Seconds before the first recheck of a wait; each later recheck doubles the delay.",
    )
    wait_cap_sec: float = Field(
        480,
        alias="waitCapSec",
        gt=0,
        le=86400,
        description="Longest delay between rechecks of a wait, in seconds (at least waitFirstSec).",
    )
    max_wait_min: float = Field(
        60,
        alias="maxWaitMin",
        gt=0,
        le=43200,
        description="A wait that lasts longer than this many minutes pauses the run.",
    )
    max_accept_checks: int = Field(
        3,
        alias="maxAcceptChecks",
        ge=1,
        le=100,
        description="Audits (after `done`) before the run pauses for review; a user message "
        "resets the count.",
    )
    max_talk_turns: int = Field(
        6,
        alias="maxTalkTurns",
        ge=1,
        le=10000,
        description="Turns in a row without credited work before the talk limit applies; a "
        "user message resets the count.",
    )
    max_steps_per_turn: int = Field(
        40,
        alias="maxStepsPerTurn",
        ge=1,
        le=10000,
        description="Model requests in one turn before the turn ends without a post (silent).",
    )
    turn_timeout_min: float = Field(
        20,
        alias="turnTimeoutMin",
        gt=0,
        le=1440,
        description="A turn running longer than this many minutes is cut (silent).",
    )
    command_timeout_sec: float = Field(
        600,
        alias="commandTimeoutSec",
        gt=0,
        le=86400,
        description="Seconds a command run by a participant may take before it is killed.",
    )
    audit_check: str = Field(
        "",
        alias="auditCheck",
        description='A shell command (e.g. "pytest -q") run before each audit; the audit reads '
        "its output. Empty: no command.",
    )
    sandbox: Literal["auto", "bwrap", "off"] = Field(
        "auto",
        alias="sandbox",
        description='Where commands (run_command, auditCheck) run. "auto": in a bubblewrap '
        'sandbox when `bwrap` works here, else unsandboxed with a warning; "bwrap": refuse to '
        'start without it; "off": unsandboxed (status says so). Inside: no other process is '
        "visible, only the repository and a private /tmp are writable, .autodev/ and .git's "
        "hooks and config are read-only, $HOME and the run folder are hidden.",
    )
    command_network: bool = Field(
        False,
        alias="commandNetwork",
        description="Sandboxed commands may reach the network (true) or not even a local port "
        "(false). A participant's `network = true` allows it for that participant only.",
    )
    sandbox_expose: list[str] = Field(
        default_factory=list,
        alias="sandboxExpose",
        description="(autodev addition) Folders made visible read-only inside the sandbox "
        'although $HOME is hidden, e.g. ["~/.cargo", "~/.rustup"] for tools installed there.',
    )
    # The keys below are autodev's own additions to the contract's list.
    max_retries: int = Field(
        4,
        alias="maxRetries",
        ge=0,
        le=100,
        description="(autodev addition) Retries of a model request after a transient provider "
        "error (timeout, connection error, HTTP 5xx) before the turn fails.",
    )
    retry_backoff_sec: float = Field(
        2.0,
        alias="retryBackoffSec",
        gt=0,
        le=3600,
        description="(autodev addition) Seconds before the first retry of a transient provider "
        "error; doubles with each retry.",
    )
    max_silent_turns: int = Field(
        3,
        alias="maxSilentTurns",
        ge=1,
        le=1000,
        description="(autodev addition) Turns in a row that a participant ends without a post "
        "before the run pauses, naming it.",
    )
    audit_diff_chars: int = Field(
        20000,
        alias="auditDiffChars",
        ge=1,
        le=10_000_000,
        description="(autodev addition) How many characters of the run's diff the audit reads; "
        "a longer diff is cut and the cut is stated.",
    )

    max_cost_usd: float = Field(
        0,
        alias="maxCostUsd",
        ge=0,
        description="Spending cap of the run in US dollars (litellm's prices; audits included). "
        "Reaching it pauses the run before the next turn with reason `budget`; raise it and "
        "`autodev resume`. 0: no cap.",
    )
    max_tokens: int = Field(
        0,
        alias="maxTokens",
        ge=0,
        description="Token cap of the run (prompt and completion tokens, audits included). "
        "Reaching it pauses the run before the next turn with reason `budget`. 0: no cap.",
    )
    max_output_tokens: int = Field(
        8192,
        alias="maxOutputTokens",
        ge=16,
        description="(autodev addition) Most tokens one generation may produce, sent on every "
        "model request. The cap actually sent is also at most a quarter of the model's context "
        "window and what the model can produce. A participant's max_output_tokens replaces it.",
    )

    notify_command: str = Field(
        "",
        alias="notifyCommand",
        description="A shell command run (in the repository, JSON payload on stdin) once per "
        "change into gated, awaiting_user, paused, faulted or complete. The payload has state, "
        "reason, text, repo, run and continue. Empty: none.",
    )
    notify_url: str = Field(
        "",
        alias="notifyUrl",
        description="A URL POSTed the same JSON payload as notifyCommand, on the same changes. Empty: none.",
    )
    notify_timeout_sec: float = Field(
        10,
        alias="notifyTimeoutSec",
        gt=0,
        description="(autodev addition) Seconds a notification may take; it is tried once, in the "
        "background, and a failure is an event.",
    )
    hooks: list[HookConfig] = Field(
        default_factory=list,
        alias="hooks",
        description="Shell commands at the harness's control points, one [[hooks]] table each "
        "(keys on, command, match, timeout_sec; see below).",
    )

    @field_validator("gate_auto_approve", "gate_auto_deny", "gate_required", "gate_required_tools")
    @classmethod
    def _patterns_not_blank(cls, v: list[str]) -> list[str]:
        for i, p in enumerate(v):
            if not p.strip():
                raise _rule(f"pattern [{i}] is empty", "remove the empty string from the list")
        return v

    @model_validator(mode="after")
    def _cap_not_below_first(self) -> RunConfig:
        if self.wait_cap_sec < self.wait_first_sec:
            raise _rule(
                f"waitCapSec ({_toml(self.wait_cap_sec)}) is below waitFirstSec "
                f"({_toml(self.wait_first_sec)})",
                "make waitCapSec at least as large as waitFirstSec",
            )
        return self


# ---------------------------------------------------------------------------------------------
# .autodev/team.toml


class Participant(BaseModel):
    """One `[[participants]]` table of team.toml."""

    model_config = _MODEL_CONFIG

    name: str = Field(
        description="Name on the thread and in handoffs: a lowercase letter, then up to 31 of "
        'a-z, 0-9, "_" or "-". Unique in the team; not user, system or audit.'
    )
    model: str = Field(
        min_length=1,
        description='A litellm model string (e.g. "anthropic/claude-sonnet-4-5"), or "scripted" '
        '(or "scripted:LABEL", a second scripted model, e.g. as a failover) for the '
        "offline scripted model.",
    )
    effort: Effort | None = Field(
        None,
        description="Reasoning effort, mapped to the provider's reasoning setting: low, medium "
        "or high. Unset: the provider's default.",
    )
    write: bool = Field(
        False,
        description="Whether the participant may change the repository (write/edit tools and "
        "`work_done` posts).",
    )
    lane: str = Field(
        "", description="The participant's role in a sentence or two; it goes into its system prompt."
    )
    failover: list[str] = Field(
        default_factory=list,
        description="Models tried in order when the current one hits a usage or rate limit. "
        "They are reached with this participant's api_base, api_key_env and "
        "effort, like its model.",
    )
    api_base: str | None = Field(
        None,
        description="Endpoint URL for a local or proxy server (e.g. "
        '"http://127.0.0.1:11434" for Ollama). With api_base and no api_key_env, '
        "no key is required.",
    )
    api_key_env: str | None = Field(
        None,
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
        None,
        description="Whether this participant's sandboxed commands may reach the network; "
        "unset: the config's commandNetwork.",
    )

    max_cost_usd: float | None = Field(
        None,
        gt=0,
        description="Spending cap of this participant in US dollars. When it is reached and the "
        "participant is next to speak, the run pauses with reason `budget`. Unset: no cap.",
    )
    max_tokens: int | None = Field(
        None,
        ge=1,
        description="Token cap of this participant; reached when it is next to speak, the run "
        "pauses with reason `budget`. Unset: no cap.",
    )

    max_output_tokens: int | None = Field(
        None,
        ge=16,
        description="Most tokens one generation of this participant may produce; replaces "
        "maxOutputTokens of config.toml (and its quarter-of-the-window bound).",
    )
    context: int | None = Field(
        None,
        ge=256,
        description="The model's context window in tokens, for models litellm does not know "
        "(local servers); it overrides litellm's figure. Unknown and unset: 32768. Longer turns "
        "are compacted to fit it.",
    )

    @model_validator(mode="after")
    def _output_below_window(self) -> Participant:
        if self.context is not None and self.max_output_tokens is not None:
            if self.max_output_tokens >= self.context:
                raise _rule(
                    f"max_output_tokens ({self.max_output_tokens}) is not below context ({self.context})",
                    "make max_output_tokens smaller than context (a quarter of it is a good start)",
                )
        return self

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        if not re.match(NAME_PATTERN, v):
            raise _rule(
                f"{_toml(v)} is not a valid participant name",
                'start with a lowercase letter, then use only a-z, 0-9, "_" or "-" (at most 32 characters)',
            )
        if v in RESERVED_NAMES:
            raise _rule(
                f"{_toml(v)} is reserved for the thread's own posts",
                "pick another name (user, system and audit are reserved)",
            )
        return v

    @field_validator("failover")
    @classmethod
    def _failover_not_blank(cls, v: list[str]) -> list[str]:
        for i, m in enumerate(v):
            if not m.strip():
                raise _rule(f"failover[{i}] is empty", "remove the empty model string")
        return v

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        return _check_env_name(v)

    def models(self) -> list[str]:
        """The primary model followed by the failover models, in the order they are tried."""
        return [self.model, *self.failover]


class AuditConfig(BaseModel):
    """The optional `[audit]` table: the model of the stateless audit after `done`."""

    model_config = _MODEL_CONFIG

    model: str = Field(
        min_length=1,
        description='A litellm model string, or "scripted". Without an [audit] table the audit '
        "uses the first participant's model, effort, api_base and api_key_env.",
    )
    effort: Effort | None = Field(None, description="Reasoning effort for the audit: low, medium or high.")
    api_base: str | None = Field(None, description="Endpoint URL for a local or proxy server.")
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the audit's API key."
    )

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        return _check_env_name(v)


class ScriptedConfig(BaseModel):
    """The `[scripted]` table, needed when any model is "scripted"."""

    model_config = _MODEL_CONFIG

    path: str = Field(
        "script.toml",
        min_length=1,
        description="The script file for the scripted model, relative to team.toml.",
    )


BUILTIN_CAPABILITIES = ("read", "write", "commands", "thread")


class McpServer(BaseModel):
    """One `[mcp.NAME]` table of team.toml: a stdio MCP server started with the daemon."""

    model_config = _MODEL_CONFIG

    command: str = Field(min_length=1, description="The program that runs the server (found on PATH).")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    env: list[str] = Field(
        default_factory=list,
        description="Names of environment variables passed to the server; no other variable of "
        "autodev's environment reaches it (PATH, HOME and the locale excepted).",
    )
    cwd: str | None = Field(
        None, description="Folder the server runs in, relative to the repository root. Unset: the root."
    )
    capability: str | None = Field(
        None,
        description="The capability its tools belong to, granted with a participant's tools and "
        "held by a notice's hold. Unset: the server's name.",
    )
    timeout_sec: float = Field(120, gt=0, description="Seconds a call to one of its tools may take.")
    restart_sec: float = Field(
        1.0,
        gt=0,
        description="Seconds before a server that died is started again (doubling, up to a minute).",
    )

    @field_validator("env")
    @classmethod
    def _env_names(cls, v: list[str]) -> list[str]:
        for name in v:
            _check_env_name(name)
        return v


class Team(BaseModel):
    """The whole of team.toml."""

    model_config = _MODEL_CONFIG

    participants: list[Participant] = Field(
        min_length=1, description="The team, one [[participants]] table each."
    )
    audit: AuditConfig | None = Field(None, description="The audit's model.")
    scripted: ScriptedConfig | None = Field(None, description="The scripted model's script.")
    mcp: dict[str, McpServer] = Field(
        default_factory=dict, description="MCP servers, one [mcp.NAME] table each; tools are NAME__TOOL."
    )

    @field_validator("participants")
    @classmethod
    def _unique_names(cls, v: list[Participant]) -> list[Participant]:
        first: dict[str, int] = {}
        for i, p in enumerate(v):
            if p.name in first:
                raise _rule(
                    f'name "{p.name}" is used by participants[{first[p.name]}] and participants[{i}]',
                    "give every participant its own name",
                )
            first[p.name] = i
        return v

    @model_validator(mode="after")
    def _scripted_has_script(self) -> Team:
        if self.uses_scripted() and self.scripted is None:
            raise _rule(
                'a model is "scripted" but there is no [scripted] table',
                'add\n    [scripted]\n    path = "script.toml"\n  to the team file',
            )
        return self

    @model_validator(mode="after")
    def _tools_are_known(self) -> Team:
        for name, server in self.mcp.items():
            if not re.match(NAME_PATTERN, name) or "__" in name:
                raise _rule(
                    f"mcp.{name}: {_toml(name)} is not a valid server name",
                    'start with a lowercase letter, then use a-z, 0-9, "-" or single "_"',
                )
            if server.capability in BUILTIN_CAPABILITIES:
                raise _rule(
                    f"mcp.{name}.capability: {_toml(server.capability)} is a built-in capability",
                    "leave capability unset (the server's name) or pick another name",
                )
        known = ["browser", *sorted(self.capabilities())]
        for p in self.participants:
            for t in p.tools:
                if t not in known:
                    raise _rule(
                        f'participant "{p.name}": tools: {_toml(t)} is not a capability',
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
        first = self.participants[0]
        return AuditConfig(
            model=first.model, effort=first.effort, api_base=first.api_base, api_key_env=first.api_key_env
        )

    def key_names(self) -> list[str]:
        """The variables the team names with api_key_env: secrets, whatever they are called."""
        names = [p.api_key_env for p in self.participants] + [self.audit_model().api_key_env]
        return list(dict.fromkeys(n for n in names if n))

    def uses_scripted(self) -> bool:
        models = [m for p in self.participants for m in p.models()]
        if self.audit is not None:
            models.append(self.audit.model)
        return any(is_scripted(m) for m in models)

    def script_path(self, team_file: Path) -> Path:
        if self.scripted is None:
            raise ConfigError(
                f"{_display(team_file)}: there is no [scripted] table",
                'add [scripted] with path = "script.toml"',
            )
        return (Path(team_file).parent / self.scripted.path).resolve()


# ---------------------------------------------------------------------------------------------
# loading


def load_config(path: Path) -> RunConfig:
    """The run settings in `path`; a missing file means every default."""
    path = Path(path)
    if not path.exists():
        return RunConfig()
    return _validate(RunConfig, _read_toml(path), path)


def load_team(path: Path) -> Team:
    """The team in `path`, checked, including that a scripted team's script exists."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(
            f"{_display(path)} not found", "run `autodev init` (or `autodev init --team pair`) to create it"
        )
    team = _validate(Team, _read_toml(path), path)
    if team.uses_scripted():
        script = team.script_path(path)
        if not script.is_file():
            raise ConfigError(
                f"{_display(path)}: scripted.path: the script {team.scripted.path!r} "  # type: ignore[union-attr]
                f"does not exist (looked for {script})",
                "create the script, or point scripted.path at it (relative to the team file)",
            )
    return team


def _display(path: Path) -> str:
    """How a file is named in messages: `.autodev/x.toml` when it sits there, else as given."""
    path = Path(path)
    if path.parent.name == ".autodev":
        return f".autodev/{path.name}"
    return str(path)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise ConfigError(
            f"{_display(path)}: cannot be read ({e.strerror or e})", "check that it is a readable file"
        ) from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{_display(path)}: is not UTF-8 text", "save it as UTF-8") from e
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # tomllib's message already ends with "(at line N, column M)"
        raise ConfigError(f"{_display(path)}: TOML syntax error: {e}", "fix the syntax at that line") from e


def _validate(model: type[BaseModel], data: dict[str, Any], path: Path) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        found = [_describe(model, err, data) for err in e.errors()]
        # `modle = ...` also makes `model` missing; the suggestion already covers it
        suggested = {fix for _p, fix in found if fix.startswith("did you mean")}
        found = [
            (p, f)
            for p, f in found
            if not (
                p.startswith("missing required key")
                and any(p.split('"')[1] == s.split('"')[1] for s in suggested)
            )
        ]
        name = _display(path)
        if len(found) == 1:
            problem, fix = found[0]
            raise ConfigError(f"{name}: {problem}", fix) from None
        lines = [f"{name}: {len(found)} problems"]
        for problem, fix in found:
            lines.append(f"  - {problem}" + (f"\n    fix: {fix}" if fix else ""))
        raise ConfigError("\n".join(lines), f"correct each key listed in {name}") from None


# ---------------------------------------------------------------------------------------------
# turning pydantic errors into TOML words


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _unwrap(annotation: Any) -> Any:
    """The model type inside `X | None` or `list[X]`, else the annotation itself."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else annotation
    if origin is list:
        return _unwrap(typing.get_args(annotation)[0])
    return annotation


def _field_by_key(model: type[BaseModel], key: str) -> tuple[str, Any] | None:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return name, info
    return None


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class whose table holds the key at the end of `loc`."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        found = _field_by_key(model, part) if isinstance(model, type) else None
        if found is None:
            return None
        model = _unwrap(found[1].annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _toml_key(info: Any, name: str) -> str:
    return info.alias or name


def _participant_hint(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    """`(participant "x")` for errors inside a participants[i] table that has a usable name."""
    if len(loc) >= 3 and loc[0] == "participants" and isinstance(loc[1], int):
        items = data.get("participants")
        if isinstance(items, list) and loc[1] < len(items) and isinstance(items[loc[1]], dict):
            name = items[loc[1]].get("name")
            if isinstance(name, str) and name:
                return f' (participant "{name}")'
    return ""


_TYPE_WORDS = {
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "string_type": "a string",
    "bool_type": "true or false",
    "list_type": "a list",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "dict_type": "a table",
}


def _describe(root: type[BaseModel], err: Any, data: dict[str, Any]) -> tuple[str, str]:
    """(problem, fix) for one pydantic error, in the words of the TOML file."""
    loc = tuple(err["loc"])
    kind = err["type"]
    where = _key_path(loc)
    where = (where + _participant_hint(loc, data)) if where else ""
    prefix = f"{where}: " if where else ""
    got = err.get("input")
    ctx = err.get("ctx") or {}

    if kind == "extra_forbidden":
        key = str(loc[-1])
        owner = _model_at(root, loc)
        known = [_toml_key(i, n) for n, i in owner.model_fields.items()] if owner else []
        table = _key_path(loc[:-1])
        place = f" in {table}" if table else ""
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        if not close:  # snake_case for camelCase and the like
            close = [k for k in known if k.replace("_", "").lower() == key.replace("_", "").lower()]
        fix = f'did you mean "{close[0]}"?' if close else f"remove it; known keys{place}: {', '.join(known)}"
        return f'unknown key "{key}"{place}{_participant_hint(loc, data)}', fix

    if kind == "autodev_rule":
        return prefix + ctx["message"], ctx.get("fix", "")

    if kind == "missing":
        key = str(loc[-1])
        table = _key_path(loc[:-1])
        place = f" in {table}" if table else ""
        if loc == ("participants",):
            return (
                "missing [[participants]]: a team needs at least one participant",
                "add a [[participants]] table with name and model",
            )
        return f'missing required key "{key}"{place}', f"add {key} = ... to that table"

    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        listed = ", ".join(choices)
        return (f"{prefix}must be one of {listed} (got {_toml(got)})", f"set {loc[-1]} to one of {listed}")

    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }[kind]
        bound = next(iter(ctx.values()), "")
        return (
            f"{prefix}must be {words} {_toml(bound)} (got {_toml(got)})",
            f"set {loc[-1]} to a number {words} {_toml(bound)}",
        )

    if kind in ("too_short", "string_too_short"):
        if kind == "string_too_short":
            return f"{prefix}must not be empty", f"give {loc[-1]} a value"
        return f"{prefix}must not be empty", f"add at least one entry to {loc[-1]}"

    if kind in _TYPE_WORDS:
        want = _TYPE_WORDS[kind]
        example = _example_for(root, loc)
        fix = f"write it as {want}" + (f", e.g. {example}" if example else "")
        return f"{prefix}must be {want} (got {_toml(got)})", fix

    # anything else: pydantic's sentence, lowercased into ours
    msg = str(err.get("msg", "is invalid"))
    msg = msg.removeprefix("Value error, ")
    return f"{prefix}{msg[:1].lower()}{msg[1:]} (got {_toml(got)})", ""


def _example_for(root: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """`key = default` for the key at `loc`, when it has a default worth showing."""
    owner = _model_at(root, loc)
    key = loc[-1]
    if isinstance(key, int):
        return ""
    found = _field_by_key(owner, key) if owner else None
    if not found:
        return ""
    name, info = found
    default = info.get_default(call_default_factory=True)
    if default is None or (default == "" and info.is_required()):
        return ""
    try:
        return f"{_toml_key(info, name)} = {_toml(default)}"
    except TypeError:
        return ""


# ---------------------------------------------------------------------------------------------
# `autodev config` and docs/CONFIG.md


def _toml(value: Any) -> str:
    """A value written the way it would appear in a TOML file."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, BaseModel):
        return _toml(value.model_dump(by_alias=True))
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return _toml(str(value))


def config_rows(cfg: RunConfig) -> list[tuple[str, str, str, str]]:
    """(key, current value, default, meaning) for every key of config.toml, in file order."""
    rows = []
    for name, info in RunConfig.model_fields.items():
        default = info.get_default(call_default_factory=True)
        rows.append((info.alias or name, _toml(getattr(cfg, name)), _toml(default), info.description or ""))
    return rows


def _type_words(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return " or ".join(_type_words(a) for a in inner)
    if origin is Literal:
        return " \\| ".join(_toml(a) for a in args)
    if origin is list:
        return f"list of {_type_words(args[0])}s"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table_rows(model: type[BaseModel]) -> list[str]:
    out = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, info in model.model_fields.items():
        value = None if info.is_required() else info.get_default(call_default_factory=True)
        default = "required" if info.is_required() else "not set" if value is None else f"`{_toml(value)}`"
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
        "<!-- Generated from autodev/config.py by `python -m autodev.config > docs/CONFIG.md`;",
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
    lines += [
        "",
        "### `[[hooks]]` (optional, any number)",
        "",
        *_table_rows(HookConfig),
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
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# provider requirements

# Providers whose litellm "missing key" is an endpoint with a local default, not a secret.
_LOCAL_DEFAULT_PROVIDERS = {"ollama", "ollama_chat"}
# Providers for which litellm lists alternatives: any one of them is enough.
_ANY_OF_PROVIDERS = {"gemini"}


def provider_problems(
    team: Team,
    environ: Mapping[str, str] | None = None,
    lookup: Callable[[str], tuple[list[str], str]] | None = None,
) -> list[str]:
    """One sentence per missing provider requirement of the team; empty when all is set.

    `environ` is checked for api_key_env variables and counts for provider keys too; litellm's
    own check reads the process environment (os.environ), which is also where the provider
    calls read keys, so pass os.environ (the default) outside tests of api_key_env.
    `lookup` replaces litellm's answer (the variables a model needs): `doctor` passes a table
    so that it runs without importing litellm.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    missing_for = lookup or _litellm_missing
    problems: list[str] = []

    def check(who: str, model: str, api_base: str | None, api_key_env: str | None, where: str) -> None:
        if is_scripted(model):
            return
        if api_key_env:
            if not env.get(api_key_env):
                problems.append(
                    f"{who} (model {model}) needs {api_key_env}, named by api_key_env, but it "
                    f"is not set; set it in the environment or change api_key_env {where}"
                )
            return
        if api_base:
            return
        missing, error = missing_for(model)
        if error:
            problems.append(f"{who} (model {model}): {error}")
            return
        if model.split("/", 1)[0] in _ANY_OF_PROVIDERS and any(env.get(k) for k in missing):
            missing = []
        missing = [k for k in missing if not env.get(k)]
        if missing:
            problems.append(
                f"{who} (model {model}) needs {missing[0] if len(missing) == 1 else _join(missing, model)}; "
                f"set it in the environment or set api_key_env {where}"
            )

    for p in team.participants:
        where = "in .autodev/team.toml"
        check(f'participant "{p.name}"', p.model, p.api_base, p.api_key_env, where)
        for m in p.failover:  # reached with the participant's endpoint and key, as the harness does
            check(f'participant "{p.name}" failover', m, p.api_base, p.api_key_env, where)
    if team.audit is not None:  # without one, the audit runs on the first participant's model
        a = team.audit
        check("the audit", a.model, a.api_base, a.api_key_env, "in the [audit] table of .autodev/team.toml")
    # two failover lists can repeat the same sentence word for word
    return list(dict.fromkeys(problems))


def _join(keys: list[str], model: str) -> str:
    provider = model.split("/", 1)[0]
    return (" or " if provider in _ANY_OF_PROVIDERS else " and ").join(keys)


def _litellm_missing(model: str) -> tuple[list[str], str]:
    """(variables litellm reports missing for `model`, or an error sentence when it cannot tell)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # lazy: heavy, and not needed by send/status

    litellm.suppress_debug_info = True
    try:
        provider = litellm.get_llm_provider(model=model)[1]
    except Exception:
        return [], (
            "litellm does not recognise the provider of this model; write it as "
            '"provider/model" (e.g. "openai/gpt-5"), or set api_base for a custom '
            "endpoint"
        )
    if provider in _LOCAL_DEFAULT_PROVIDERS:
        return [], ""
    result = litellm.validate_environment(model=model)
    return list(result.get("missing_keys") or []), ""


if __name__ == "__main__":
    print(config_markdown(), end="")
