"""`.autodev/config.toml`: the run settings (`RunConfig`) and its `[[hooks]]` tables."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from autodev.config.base import MODEL_CONFIG, as_toml, rule_error
from autodev.config.telemetry import TelemetryConfig
from autodev.guard.secrets import SECRET_FILES

HookPoint = Literal["before_tool", "after_tool", "before_post", "after_post", "on_state"]


class HookConfig(BaseModel):
    """One `[[hooks]]` table of config.toml: a shell command at a control point."""

    model_config = MODEL_CONFIG

    on: HookPoint = Field(
        description="The point: before_tool (exit non-zero blocks the call, stdout is the reason; "
        'stdout {"args": {...}} on exit 0 replaces the arguments; a crash or timeout blocks), '
        "after_tool (stdout is appended to the result), before_post (exit non-zero refuses the "
        "post), after_post, on_state (every state change)."
    )
    command: str = Field(
        min_length=1,
        description="Run with `sh -c` in the repository, the JSON payload on stdin; provider keys "
        "are removed from its environment. It runs in the sandbox, like a participant's command "
        "(the repository writable, `sandboxRead` paths read-only, a private /tmp and home, the "
        "network as `commandNetwork` says), unless `host = true`.",
    )
    host: bool = Field(
        default=False,
        description="Run this hook on the host, outside the sandbox, with the repository as its "
        "working directory: for a hook that must write outside the repository or reach the "
        "desktop. A program it starts that loads code from the working directory (python3 -c, "
        "node -e, make, npm, pytest) then runs the participants' code on the host "
        "(docs/security.md); `python3 -P` does not.",
    )
    match: str = Field(
        default="*",
        min_length=1,
        description="Glob on the tool name (tool points), the post's kind (post points) or the "
        "state (on_state).",
    )
    timeout_sec: float = Field(
        default=30,
        gt=0,
        description="Seconds before the hook's whole process group is killed (it then fails).",
    )


class RunConfig(BaseModel):
    """Run settings from `.autodev/config.toml`; every key is optional."""

    model_config = MODEL_CONFIG

    gate_mode: Literal["gated", "auto"] = Field(
        default="gated",
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
            # history rewrites and branch switches: credit counts commits on the run's branch
            "git reset --soft*",
            "git reset --mixed*",
            "git reset --keep*",
            "git reset --merge*",
            "git commit --amend*",
            "git rebase*",
            "git filter-branch*",
            "git filter-repo*",
            "git update-ref*",
            "git replace*",
            "git branch -f*",
            "git branch -M*",
            "git checkout --orphan*",
            "git checkout -b*",
            "git checkout -B*",
            "git checkout --detach*",
            "git switch*",
        ],
        alias="gateRequired",
        description="Glob patterns on commands: the command runner refuses a matching command "
        "unless a gate for it was approved. Patterns match normalised commands: through wrappers "
        "(sudo, env, xargs, sh -c, ...), git's options and -c aliases, `git send-pack` as push, "
        "and option spellings (`rm -fr`, `-Rf`, `-r -f`, `--recursive --force` are `rm -rf`). "
        "An empty list turns the guard off.",
    )
    gate_opaque: Literal["gated", "allow"] = Field(
        default="gated",
        alias="gateOpaque",
        description="(autodev addition) Commands that may run anything the guard cannot see: "
        "programs that run what a repository file defines (`make`, `npm run`, `pytest`, `tox`, "
        "`cargo build`, ...), programs that run commands from their own words (awk's "
        "`system()`, sed's `e`, `vim`, `tar -F`, `ssh -F`), a script or module file created or "
        "changed during the run or written by the same line (`printf ... > x.py && python3 x.py`"
        "), variables that load code (`PYTHONPATH`, `NODE_OPTIONS`, `LD_PRELOAD`, ...), inline "
        "interpreter code (`python -c`, `perl -e`, ...), a program read from input (`curl ... | "
        "sh`), eval of computed text, git settings that run programs and lines the parser cannot "
        'read (list: docs/security.md). "gated" refuses them unless an approved gate names them, '
        'like a gateRequired match; "allow" runs them (one that mentions a pattern\'s first word '
        "is still refused). Without gateRequired patterns nothing is gated.",
    )
    gate_required_tools: list[str] = Field(
        default_factory=list,
        alias="gateRequiredTools",
        description='Glob patterns on tool names (e.g. "github__merge_*"): a matching tool is '
        "refused unless a gate naming the tool was approved; each approval covers one call. "
        "*(autodev addition)*",
    )
    wait_first_sec: float = Field(
        default=30,
        alias="waitFirstSec",
        gt=0,
        le=86400,
        description="Seconds before the first recheck of a wait; each later recheck doubles the delay.",
    )
    wait_cap_sec: float = Field(
        default=480,
        alias="waitCapSec",
        gt=0,
        le=86400,
        description="Longest delay between rechecks of a wait, in seconds (at least waitFirstSec).",
    )
    max_wait_min: float = Field(
        default=60,
        alias="maxWaitMin",
        gt=0,
        le=43200,
        description="A wait that lasts longer than this many minutes pauses the run.",
    )
    max_accept_checks: int = Field(
        default=3,
        alias="maxAcceptChecks",
        ge=1,
        le=100,
        description="Audits (after `done`) before the run pauses for review; a user message "
        "resets the count.",
    )
    max_talk_turns: int = Field(
        default=6,
        alias="maxTalkTurns",
        ge=1,
        le=10000,
        description="Turns in a row without credited work before the talk limit applies; a "
        "user message resets the count.",
    )
    max_steps_per_turn: int = Field(
        default=40,
        alias="maxStepsPerTurn",
        ge=1,
        le=10000,
        description="Model requests in one turn before the turn ends without a post (silent).",
    )
    turn_timeout_min: float = Field(
        default=20,
        alias="turnTimeoutMin",
        gt=0,
        le=1440,
        description="A turn running longer than this many minutes is cut (silent).",
    )
    agents_gated: bool = Field(
        default=False,
        alias="agentsGated",
        description="Run every coding-agent CLI participant in its gated mode, whatever its "
        "agent_permission says (docs/agents.md: what each CLI's gated mode refuses).",
    )
    command_timeout_sec: float = Field(
        default=600,
        alias="commandTimeoutSec",
        gt=0,
        le=86400,
        description="Seconds a command run by a participant may take before it is killed.",
    )
    audit_check: str = Field(
        default="",
        alias="auditCheck",
        description='A shell command (e.g. "pytest -q") run before each audit; the audit reads '
        "its output. Empty: no command.",
    )
    sandbox: Literal["auto", "bwrap", "off"] = Field(
        default="auto",
        alias="sandbox",
        description='Where commands (run_command, auditCheck) run. "auto": in a bubblewrap '
        'sandbox when `bwrap` works here, else unsandboxed with a warning; "bwrap": refuse to '
        'start without it; "off": unsandboxed (status says so). Inside: no other process is '
        "visible; only the repository, the system's folders (read-only), a private /tmp and "
        "an empty home are there, plus sandboxRead; .autodev/ and .git's hooks and config are "
        "read-only.",
    )
    command_network: bool = Field(
        default=False,
        alias="commandNetwork",
        description="Sandboxed commands may reach the network (true) or not even a local port "
        "(false). A participant's `network = true` allows it for that participant only.",
    )
    network_allow: list[str] = Field(
        default_factory=list,
        alias="networkAllow",
        description="(autodev addition) Hosts the browser may reach although commandNetwork is "
        'false (loopback always), e.g. ["docs.python.org"]. Commands and MCP servers have the network or not.',
    )
    sandbox_read: list[str] = Field(
        default_factory=list,
        alias="sandboxRead",
        description="Files and folders shown read-only inside the sandbox, besides the repository "
        "and the system's folders (/usr, /bin, /sbin, /lib*, /etc, /opt), e.g. "
        '["~/.pyenv", "~/.cargo", "/srv/datasets"] for a toolchain or data that lives elsewhere '
        "(`~` is your home). Nothing else of the machine is visible to commands.",
    )
    sandbox_expose: list[str] = Field(
        default_factory=list,
        alias="sandboxExpose",
        description="(autodev addition) The earlier name of sandboxRead; both lists are shown.",
    )
    secret_files: list[str] = Field(
        default_factory=lambda: list(SECRET_FILES),
        alias="secretFiles",
        description="(autodev addition) Glob patterns on file names (or paths) in the repository "
        "that hold keys: the file tools and `search` refuse them, and commands in the sandbox see "
        "them empty. An empty list allows them all.",
    )
    # The keys below are autodev's own additions to the contract's list.
    max_retries: int = Field(
        default=4,
        alias="maxRetries",
        ge=0,
        le=100,
        description="(autodev addition) Retries of a model request after a transient provider "
        "error (timeout, connection error, HTTP 5xx) before the turn fails.",
    )
    retry_backoff_sec: float = Field(
        default=2.0,
        alias="retryBackoffSec",
        gt=0,
        le=3600,
        description="(autodev addition) Seconds before the first retry of a transient provider "
        "error; doubles with each retry.",
    )
    max_silent_turns: int = Field(
        default=3,
        alias="maxSilentTurns",
        ge=1,
        le=1000,
        description="(autodev addition) Turns in a row that a participant ends without a post "
        "before the run pauses, naming it.",
    )
    audit_diff_chars: int = Field(
        default=20000,
        alias="auditDiffChars",
        ge=1,
        le=10_000_000,
        description="(autodev addition) How many characters of the run's diff the audit reads; "
        "a longer diff is cut and the cut is stated.",
    )
    test_command: str = Field(
        default="",
        alias="testCommand",
        description="The project's test command, run on each `done` at the run's base commit and "
        "at the head in the sandbox (no network, no keys) for evidence. pytest, wherever the "
        "command runs it, writes JUnit XML (PYTEST_ADDOPTS); `go test -json` is read from its "
        "output; a plain `cargo test [options]` from libtest's JSON per test binary; a plain "
        "`python3 -m unittest [args]` through autodev's runner, which writes JUnit XML for it; any "
        "other command must write JUnit XML to $AUTODEV_JUNIT. Empty: detected (pytest, or "
        "`python3 -m unittest` when the test files import unittest and none mentions pytest; "
        "`npm test`, `go test ./...`, `cargo test`; `autodev doctor` shows which).",
    )
    test_timeout_sec: float = Field(
        default=900,
        alias="testTimeoutSec",
        gt=0,
        le=86400,
        description="Seconds each evidence test run may take before its process group is killed "
        "(the evidence's outcome is then `timeout`).",
    )
    done_evidence: Literal["off", "shown", "required"] = Field(
        default="shown",
        alias="doneEvidence",
        description='The test evidence of a `done`: "shown" puts it in the audit\'s prompt and '
        'record; "required" reopens the done without asking the audit model when a test broke, '
        "no test newly passes while code changed, the run changed only tests (no code), or the "
        'tests could not run; "off": no evidence.',
    )

    max_cost_usd: float = Field(
        default=0,
        alias="maxCostUsd",
        ge=0,
        description="Spending cap of the run in US dollars (litellm's prices; audits included). "
        "Reaching it pauses the run before the next turn with reason `budget`; raise it and "
        "`autodev resume`. 0: no cap.",
    )
    max_tokens: int = Field(
        default=0,
        alias="maxTokens",
        ge=0,
        description="Token cap of the run (prompt and completion tokens, audits included). "
        "Reaching it pauses the run before the next turn with reason `budget`. 0: no cap.",
    )
    max_output_tokens: int = Field(
        default=8192,
        alias="maxOutputTokens",
        ge=16,
        description="(autodev addition) Most tokens one generation may produce, sent on every "
        "model request. The cap actually sent is also at most a quarter of the model's context "
        "window and what the model can produce. A participant's max_output_tokens replaces it.",
    )

    notify_command: str = Field(
        default="",
        alias="notifyCommand",
        description="A shell command run (in the repository, JSON payload on stdin) once per "
        "change into gated, awaiting_user, paused, faulted or complete. The payload has state, "
        "reason, text, repo, run and continue. Empty: none.",
    )
    notify_url: str = Field(
        default="",
        alias="notifyUrl",
        description="A URL POSTed the same JSON payload as notifyCommand, on the same changes. Empty: none.",
    )
    notify_timeout_sec: float = Field(
        default=10,
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
    telemetry: TelemetryConfig = Field(
        default_factory=TelemetryConfig,
        alias="telemetry",
        description="OpenTelemetry traces and metrics, as a [telemetry] table (keys below; "
        "docs/telemetry.md). Off unless OTEL_EXPORTER_OTLP_ENDPOINT or its endpoint is set.",
    )

    @field_validator("gate_auto_approve", "gate_auto_deny", "gate_required", "gate_required_tools")
    @classmethod
    def _patterns_not_blank(cls, v: list[str]) -> list[str]:
        for i, p in enumerate(v):
            if not p.strip():
                raise rule_error(f"pattern [{i}] is empty", "remove the empty string from the list")
        return v

    @field_validator("sandbox_read", "sandbox_expose")
    @classmethod
    def _paths_absolute(cls, v: list[str]) -> list[str]:
        # relative to what? The daemon's folder is not the user's: only a full path or ~ is clear
        for i, p in enumerate(v):
            if not (p.startswith("/") or p == "~" or p.startswith("~/")):
                raise rule_error(
                    f"path [{i}] {p!r} is neither absolute nor under ~",
                    'give a full path (e.g. "/srv/datasets") or one under your home ("~/.cargo")',
                )
        return v

    @model_validator(mode="after")
    def _cap_not_below_first(self) -> RunConfig:
        if self.wait_cap_sec < self.wait_first_sec:
            raise rule_error(
                f"waitCapSec ({as_toml(self.wait_cap_sec)}) is below waitFirstSec "
                f"({as_toml(self.wait_first_sec)})",
                "make waitCapSec at least as large as waitFirstSec",
            )
        return self
