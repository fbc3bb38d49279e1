"""What every coding-agent CLI adapter is given and provides: the `Invocation` of one run,
how autodev's MCP server is launched for it (`McpLaunch`), and the `Adapter` base (argv, extra
environment, stream parsing, its `--version`, where its login lives). The four CLIs are in
autodev/agents/adapters.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from autodev.agents.events import AgentEvent
from autodev.host import spawn
from autodev.store.journal import JsonObject

SERVER = "autodev"  # the name the CLI knows autodev's MCP server by


@dataclass
class McpLaunch:
    """How the CLI starts autodev's stdio MCP server for this turn."""

    command: str
    args: list[str]
    env: dict[str, str]

    def as_json(self) -> JsonObject:
        return {"command": self.command, "args": self.args, "env": self.env}


@dataclass
class Invocation:
    prompt: str
    mcp: McpLaunch
    workdir: Path  # a private folder for the config files of this run (not the repository)
    model: str | None = None
    effort: str | None = None
    extra_args: list[str] = field(default_factory=list)
    gated: bool = True
    write: bool = False
    resume: str | None = None  # the session to continue (the nudge)
    key_mode: bool = False  # the participant names api_key_env: the CLI's API-key mode
    # a folder for settings a CLI refuses from a world-writable place such as /tmp (Gemini CLI
    # 0.61.0 skips a settings file with such an ancestor): the run folder's agents/
    settings_dir: Path | None = None


class Adapter:
    name = ""
    resumable = True
    version_args: tuple[str, ...] = ("--version",)
    # The CLI's own login check, where it has one that answers offline by its exit code
    # (`claude auth status`, `codex login status`); else doctor looks for its login files.
    status_args: tuple[str, ...] = ()
    key_vars: tuple[str, ...] = ()  # variables the CLI reads in its API-key mode
    # The usage fields whose final figure, in a resumed session, is the whole session's (the
    # runs before it included) rather than this run's: counted as the difference.
    session_totals: tuple[str, ...] = ()

    @property
    def bin_env(self) -> str:
        return f"AUTODEV_{self.name.upper()}_BIN"

    def argv(self, binary: str, inv: Invocation) -> list[str]:
        raise NotImplementedError

    def common_tail(self, inv: Invocation, effort_flag: str | None = None) -> list[str]:
        """`--model`, the effort under `effort_flag`, `--resume` and the participant's own
        arguments, as most CLIs take them."""
        tail = ["--model", inv.model] if inv.model else []
        if inv.effort and effort_flag:
            tail += [effort_flag, inv.effort]
        if inv.resume:
            tail += ["--resume", inv.resume]
        return tail + list(inv.extra_args)

    def cleanup(self, inv: Invocation) -> None:
        """After the run: what it wrote outside its private folder goes."""

    def env(self, inv: Invocation) -> dict[str, str]:
        """Variables added to the CLI's environment for this run."""
        return {}

    def read(self, line: str) -> list[AgentEvent]:
        """One line of the CLI's stream as common events (none for a line of another shape)."""
        raise NotImplementedError

    def login_files(self, home: Path, environ: Mapping[str, str]) -> list[Path]:
        """Where the CLI keeps a subscription login (any one present counts as logged in)."""
        return []

    def version(self, exe: str) -> str | None:
        """The CLI's own `--version` line (it starts no session and calls no model)."""
        try:
            r = _ask(exe, self.version_args)
        except (OSError, spawn.TimeoutExpired):
            return None
        lines = (r.stdout or r.stderr).strip().splitlines()
        return lines[0].strip()[:120] if r.returncode == 0 and lines else None

    def login(
        self, environ: Mapping[str, str], key_env: str | None, exe: str | None = None
    ) -> tuple[bool, str]:
        """(logged in?, how): the participant's API key when it names one, else the CLI's own
        status command (run without the CLI's key variables, as a turn runs it), else its login
        files; none of them starts a session or calls a model."""
        if key_env:
            return bool(
                environ.get(key_env)
            ), f"API-key mode ({key_env} {'set' if environ.get(key_env) else 'not set'})"
        if exe and self.status_args:
            env = {k: v for k, v in environ.items() if k not in self.key_vars}
            shown = " ".join([self.name, *self.status_args])
            try:
                r = _ask(exe, self.status_args, env)
            except (OSError, spawn.TimeoutExpired) as e:
                return False, f"`{shown}` failed ({type(e).__name__})"
            if r.returncode == 0:
                return True, f"subscription login (`{shown}`)"
            return False, f"no login (`{shown}` exit {r.returncode})"
        home = Path(environ.get("HOME") or Path.home())
        for f in self.login_files(home, environ):
            if f.exists():
                return True, f"subscription login ({f})"
        return False, "no login found"


def _ask(
    exe: str, args: tuple[str, ...], env: Mapping[str, str] | None = None
) -> spawn.CompletedProcess[str]:
    """One question to the CLI that starts no session (`--version`, its login status)."""
    r = spawn.run(
        [exe, *args], "agent-cli", capture_output=True, text=True, timeout=15, stdin=spawn.DEVNULL, env=env
    )
    return r


def short_name(name: str) -> str:
    """autodev's own tools by their plain names, as on the thread (mcp__autodev__post → post)."""
    # mcp_autodev_post: Gemini CLI 0.61.0
    for prefix in (f"mcp__{SERVER}__", f"mcp_{SERVER}_", f"{SERVER}__", f"{SERVER}/", f"{SERVER}-"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def as_int(v: float | None) -> int:
    return int(v) if isinstance(v, int | float) else 0
