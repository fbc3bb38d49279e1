"""Typed errors raised inside the library.

Each carries a human sentence and the fix; the CLI edge turns them into friendly messages
and exit codes (2 for usage/configuration, 1 for anything else).
"""

from __future__ import annotations


class AutodevError(Exception):
    """Base of every error autodev raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, fix: str = ""):
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}\n  fix: {self.fix}" if self.fix else self.message


class UsageError(AutodevError):
    """Bad command-line usage or configuration: exit 2."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration or team file is wrong; names the file, the key and the fix."""


class NotARepositoryError(UsageError):
    """autodev was run outside a git repository."""


class NotInitializedError(UsageError):
    """The repository has no .autodev/ yet."""


class DaemonRunningError(UsageError):
    """A second daemon was started on the same repository."""


class RepositoryRefused(AutodevError):
    """Something in the repository would make autodev run a program on the host (a redirected
    .git, a CLI's settings planted during the run): the run pauses until the user has looked."""


class CorruptLogError(AutodevError):
    """A log has a malformed line that is not its torn final line."""


class RecordError(CorruptLogError):
    """A well-formed line of a log that does not fit its schema (autodev/records/)."""


class LogWriteError(AutodevError):
    """An append to a log failed (disk full, I/O error): the run is faulted."""


class StateConflictError(AutodevError):
    """A compare-and-swap on state.json lost the race."""


class PromptError(AutodevError):
    """A prompt template referenced a variable that was not provided, or is missing."""


class ProviderError(AutodevError):
    """A model provider failed in a way retries did not fix."""

    def __init__(self, message: str, fix: str = "", detail: str = ""):
        super().__init__(message, fix)
        self.detail = detail  # the provider's own words (a notice shows them; no secret in them)


class ProviderSetupError(UsageError):
    """A participant's provider lacks what it needs (e.g. its API key variable)."""


class ToolSetupError(UsageError):
    """An extra tool source (an MCP server, the browser) cannot work: the team asks for what
    this machine cannot give, so `start` refuses (exit 2) instead of running without it."""


class PostRefused(Exception):
    """A post the model made does not fit the rules; the message goes back to the model."""


class ToolError(Exception):
    """A tool call failed in a way the model can read and correct."""


# The optional parts and their pins (pyproject.toml's optional-dependencies; a test keeps them equal).
EXTRAS: dict[str, tuple[str, ...]] = {
    "browser": ("playwright==1.65.2",),
    "eval": ("matplotlib==3.11.2",),
    "telemetry": ("opentelemetry-sdk==1.45.2", "opentelemetry-exporter-otlp-proto-http==1.45.2"),
}


def extra_fix(extra: str) -> str:
    """How to add an optional part to autodev's own environment, however autodev was installed:
    pipx and uv tool installs cannot take `pip install 'autodev-team[x]'` (docs/install.md)."""
    pins = " ".join(EXTRAS[extra])
    with_ = " ".join(f"--with {p}" for p in EXTRAS[extra])
    return (
        f"add it to autodev's own environment: `pipx inject autodev-team {pins}` (pipx), "
        f"`uv tool install {with_} autodev-team` (uv), or `pip install 'autodev-team[{extra}]'` "
        "(pip, in autodev's virtualenv)"
    )
