"""Workspace tools: what a participant can do to the repository during its turn.

Every tool is scoped to one repository. The names and arguments below are part of the public
contract (prompts, scripted models and tests call them by these names):

``read_file(path, offset=1, limit=400)``
    The file's lines, numbered from 1, starting at line ``offset``, at most ``limit`` of them.
    The header says the total line count; when more lines follow, the result ends with the call
    that reads the next page. Binary files are not shown.
``list_files(path=".", depth=2)``
    Paths (relative to the repository root) under a folder, ``depth`` levels deep, folders marked
    with a trailing ``/``. ``.git`` is skipped; folders git ignores are shown but not expanded.
    Capped at 500 entries, with a note when cut.
``search(pattern, path=".", glob=None)``
    Regular-expression search, line by line, over the text files under ``path`` (a folder or one
    file), run by ripgrep in a subprocess: linear-time (no pattern can hang a turn), cut at the
    turn's deadline or on ``stop``. The syntax is Python's without look-around and
    backreferences. Skips ``.git``, files ignored by ``.gitignore`` and binary files. ``glob`` keeps only files
    whose name (or, when it has a ``/``, whose repository-relative path) matches, e.g. ``"*.py"``.
    Results are ``path:line: text``, capped at 200 matches with a note when cut.
``write_file(path, content)``  (writers only)
    Replaces or creates the file with ``content``; creates missing parent folders.
``edit_file(path, old, new, count=1)``  (writers only)
    Replaces ``old`` with ``new``; ``old`` must occur exactly ``count`` times in the file, else
    nothing changes and the error says how many times it occurs.
``run_command(command, timeout_sec=None)``
    Runs ``bash -c command`` in the repository root with no stdin and without provider keys in its
    environment. The timeout is the smaller of ``timeout_sec`` and the configured command timeout;
    on timeout the command and every process it started are killed. Processes a command leaves
    running in the background are stopped when it ends. The result gives the exit code and the
    combined stdout/stderr (long output keeps its beginning and end, with a note of the cut).

Paths are always relative to the repository root. Absolute paths, ``..`` escapes, symbolic links
leading outside the repository and anything inside ``.git/`` are refused. Misuse raises
:class:`autodev.errors.ToolError` with a message the model can read and correct itself from.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import Field

from autodev.errors import ToolError
from autodev.harness import commands, files, search
from autodev.harness.registry import Args, Integer, Number, String, Tool, ToolEnv
from autodev.journal import safe_text
from autodev.redact import SECRET_FILES, Redactor, is_secret_file, scrubbed_env, secret_values

if TYPE_CHECKING:
    from autodev.sandbox import Room

# The one secret policy (names, scrubbing, masking) lives in autodev/redact.py; scrubbed_env
# is re-exported here for callers that knew it from this module.
__all__ = ["REPLAY_SAFE", "WRITE_TOOLS", "Workspace", "scrubbed_env"]


# ---------------------------------------------------------------------------- the tools


_PATH_HELP = "relative to the repository root, e.g. 'src/app.py'"


class ReadFileArgs(Args):
    path: String = Field(description=f"file path, {_PATH_HELP}")
    offset: Integer = Field(default=1, ge=1, description="first line to show (1 = the first line)")
    limit: Integer = Field(default=400, ge=1, description="how many lines to show at most")


class ListFilesArgs(Args):
    path: String = Field(default=".", description=f"folder, {_PATH_HELP}; '.' is the root")
    depth: Integer = Field(default=2, ge=1, description="how many levels deep to list")


class SearchArgs(Args):
    pattern: String = Field(
        description="regular expression (Python syntax without look-around or backreferences), "
        "e.g. 'def run_\\w+'"
    )
    path: String = Field(default=".", description=f"folder or file to search, {_PATH_HELP}")
    glob: String | None = Field(
        default=None,
        description="only files whose name matches, e.g. '*.py' (with a '/', "
        "matched against the whole relative path, e.g. 'tests/*.py')",
    )


class WriteFileArgs(Args):
    path: String = Field(description=f"file path, {_PATH_HELP}")
    content: String = Field(description="the complete new content of the file")


class EditFileArgs(Args):
    path: String = Field(description=f"file path, {_PATH_HELP}")
    old: String = Field(description="the exact text to replace")
    new: String = Field(description="the replacement text")
    count: Integer = Field(
        default=1,
        ge=1,
        description="how many occurrences to replace; must equal the number of times 'old' occurs",
    )


class RunCommandArgs(Args):
    command: String = Field(description="the shell command, e.g. 'python -m pytest -q'")
    timeout_sec: Number | None = Field(
        default=None,
        gt=0,
        description="seconds before the command is killed; capped by the configured command timeout",
    )


def _on_workspace(name: str, run: Callable[..., str]) -> Callable[..., str]:
    def handler(env: ToolEnv, **kwargs: Any) -> str:
        return env.workspace.invoke(name, run, kwargs)

    return handler


def _workspace_tool(
    name: str, capability: str, args: type[Args], description: str, run: Callable[..., str]
) -> Tool:
    """A workspace tool whose work is `run(workspace, **arguments)`."""
    return Tool(
        name,
        description,
        capability,
        _on_workspace(name, run),
        args=args,
        replay_safe=capability == "read",
    )


WORKSPACE_TOOLS: tuple[Tool, ...] = (
    _workspace_tool(
        "read_file",
        "read",
        ReadFileArgs,
        "Read a text file with numbered lines. Says the total line count; long files come in "
        "pages, and the result ends with the call that reads the next page.",
        files.read_file,
    ),
    _workspace_tool(
        "list_files",
        "read",
        ListFilesArgs,
        "List files and folders under a folder (folders end with '/'), as paths relative to "
        "the repository root. Skips .git; folders git ignores are shown but not expanded.",
        files.list_files,
    ),
    _workspace_tool(
        "search",
        "read",
        SearchArgs,
        "Search text files for a regular expression, line by line. Results are "
        "'path:line: text'. Skips .git, git-ignored files and binary files.",
        search.search,
    ),
    _workspace_tool(
        "write_file",
        "write",
        WriteFileArgs,
        "Create or replace a file with the given content. Missing parent folders are created.",
        files.write_file,
    ),
    _workspace_tool(
        "edit_file",
        "write",
        EditFileArgs,
        "Replace text in a file. 'old' must occur exactly 'count' times (copy it exactly from "
        "read_file, whitespace included), otherwise nothing changes and the error says how "
        "many times it occurs.",
        files.edit_file,
    ),
    _workspace_tool(
        "run_command",
        "commands",
        RunCommandArgs,
        "Run a shell command (bash -c) in the repository root, without stdin, and return its "
        "exit code and combined output. On timeout the command and everything it started are "
        "killed; background processes are stopped when the command ends.",
        commands.run_command,
    ),
)
_BY_NAME = {t.name: t for t in WORKSPACE_TOOLS}


def write_refusal(name: str) -> str:
    return (
        f"{name}: this participant cannot change files (write = false); "
        "read, search and run commands instead, or hand off to a writer"
    )


# Tools that only read: re-running one after a crash cannot change anything.
REPLAY_SAFE: frozenset[str] = frozenset(t.name for t in WORKSPACE_TOOLS if t.replay_safe)
WRITE_TOOLS: frozenset[str] = frozenset(t.name for t in WORKSPACE_TOOLS if t.capability == "write")


class Workspace:
    """The tools one participant may use on one repository during a turn."""

    # Set by `limit()`: when the turn must end (time.monotonic()), and whether the user asked
    # the run to stop. Every tool gives up at either.
    deadline: float | None = None
    stopping: Callable[[], bool] | None = None
    _looked: float = 0.0  # when `cut` last asked `stopping()` (it reads the run's state)

    def limit(self, deadline: float | None, stopping: Callable[[], bool] | None = None) -> None:
        """Cut every tool at `deadline` (the turn's timeout) or as soon as `stopping()`."""
        self.deadline, self.stopping = deadline, stopping

    def stopping_now(self) -> bool:
        return bool(self.stopping and self.stopping())

    def cut(self, tool: str) -> None:
        """Called between pieces of a tool's work: ToolError when the turn must end now."""
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline:
            raise ToolError(f"{tool}: stopped: the turn's time (turnTimeoutMin) ran out")
        if now - self._looked >= 0.1:  # `stop` is read from the state file: not on every piece
            self._looked = now
            if self.stopping_now():
                raise ToolError(f"{tool}: stopped: the user is stopping the run")

    def time_for(self, wanted: float) -> float:
        """`wanted` seconds, or less when the turn's deadline comes first (never below 0.1)."""
        if self.deadline is None:
            return wanted
        return max(0.1, min(wanted, self.deadline - time.monotonic()))

    def __init__(
        self,
        repo: Path,
        *,
        write: bool,
        command_timeout: float,
        secret_env: Iterable[str] = (),
        command_guard: Callable[[str], str | None] | None = None,
        max_output: int = 20000,
        room: Room | None = None,
        redactor: Redactor | None = None,
        secret_files: Iterable[str] = SECRET_FILES,
    ):
        self.repo = Path(repo)
        if not self.repo.is_dir():
            raise ValueError(f"workspace repository {self.repo} is not a folder")
        if not command_timeout > 0:
            raise ValueError(f"command_timeout must be a positive number of seconds, got {command_timeout!r}")
        if max_output < 200:
            raise ValueError(f"max_output must be at least 200 characters, got {max_output!r}")
        self.root = os.path.realpath(self.repo)
        self.write = write
        self.command_timeout = float(command_timeout)
        self.max_output = max_output
        self.secret_env = frozenset(secret_env)
        self.command_guard = command_guard
        self.room = room  # the sandbox commands run in; None: unsandboxed
        self.secret_files = tuple(secret_files)  # config secretFiles: refused by every file tool
        # The daemon's secrets (and their encodings), so a key that reached a file or an
        # output is masked too. The daemon passes its own; alone, learn them from the env.
        self._redactor = redactor or Redactor(secret_values(os.environ, self.secret_env).values())

    # -- the public surface

    def tools(self) -> list[Tool]:
        """The workspace tools this participant may use."""
        return [t for t in WORKSPACE_TOOLS if self.write or t.capability != "write"]

    def specs(self) -> list[dict]:
        """OpenAI-style tool schemas of the tools this participant may use."""
        return [t.spec() for t in self.tools()]

    def names(self) -> set[str]:
        return {t.name for t in self.tools()}

    def call(self, name: str, args: Mapping | None) -> str:
        """Run one tool and return its text result; raise ToolError on misuse."""
        tool = _BY_NAME.get(name)
        if tool is None:
            raise ToolError(
                f"unknown tool '{name}'; the workspace tools are: {', '.join(sorted(self.names()))}"
            )
        if name in WRITE_TOOLS and not self.write:
            raise ToolError(write_refusal(name))
        return tool.call(ToolEnv(workspace=self), args)

    def invoke(self, name: str, run: Callable[..., str], kwargs: dict[str, Any]) -> str:
        """Run tool `name`'s work with checked arguments; its result with secrets masked."""
        self._looked = 0.0  # the tool's first `cut` looks at `stop`
        try:
            result = run(self, **kwargs)
        except OSError as e:
            raise ToolError(f"{name}: {e.strerror or e}") from None
        except (ValueError, RecursionError) as e:  # text that is not UTF-8, a path nested too deep
            raise ToolError(f"{name}: {type(e).__name__}: {safe_text(str(e))[:300]}") from None
        # Valid UTF-8 whatever the repository holds (a Latin-1 file name): the provider's JSON
        # encoder and every log would refuse it otherwise.
        return safe_text(self._redactor.text(result))

    # -- paths

    def resolve(self, tool: str, raw: str) -> tuple[str, str]:
        """(real absolute path, repository-relative display path) of a path argument."""
        if "\0" in raw:
            raise ToolError(f"{tool}: path contains a NUL character")
        given = PurePosixPath(raw.strip() or ".")
        if given.is_absolute() or raw.startswith("~"):
            raise ToolError(
                f"{tool}: path '{raw}' is absolute; use a path relative to the "
                "repository root (e.g. 'src/app.py')"
            )
        if ".." in given.parts:
            raise ToolError(
                f"{tool}: path '{raw}' is outside the repository; use a path relative to the repository root"
            )
        if ".git" in given.parts:
            raise ToolError(self._git_refusal(tool, raw))
        real = os.path.realpath(os.path.join(self.root, *given.parts))
        if real != self.root and not real.startswith(self.root + os.sep):
            raise ToolError(
                f"{tool}: path '{raw}' leads outside the repository through a "
                "symbolic link; only files inside the repository can be used"
            )
        if ".git" in Path(os.path.relpath(real, self.root)).parts:
            raise ToolError(self._git_refusal(tool, raw))
        display = given.as_posix()
        for shown in (display, os.path.relpath(real, self.root)):
            if self.secret_files and is_secret_file(shown, self.secret_files):
                raise ToolError(
                    f"{tool}: path '{raw}' is a secret file (it matches secretFiles in "
                    ".autodev/config.toml): its keys stay out of the thread and the logs; ask the "
                    "user with tell_user if you need something from it"
                )
        return real, display

    @staticmethod
    def _git_refusal(tool: str, raw: str) -> str:
        return (
            f"{tool}: path '{raw}' is inside .git/, which the workspace tools do not touch; "
            "use git commands through run_command instead"
        )

    def writable(self, tool: str, path: str) -> tuple[str, str]:
        """Resolve a path a write tool may change: never the team, config and prompt overrides
        in .autodev/ (only the user edits those; .git/ is refused for every tool already)."""
        real, rel = self.resolve(tool, path)
        parts = [p.lower() for p in Path(os.path.relpath(real, self.root)).parts]
        if ".autodev" in parts or ".autodev" in [p.lower() for p in PurePosixPath(rel).parts]:
            raise ToolError(
                f"{tool}: path '{path}' is inside .autodev/, which only the user edits (the team, "
                "the run's config and prompt overrides); ask the user with tell_user if it should change"
            )
        return real, rel

    def cap(self, text: str, hint: str) -> str:
        if len(text) <= self.max_output:
            return text
        return text[: self.max_output] + f"\n[... cut at {self.max_output} characters; {hint}]"
