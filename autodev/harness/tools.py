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

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pydantic import Field

from autodev.errors import ToolError
from autodev.guard.redact import scrubbed_env
from autodev.harness import commands, files, search
from autodev.harness.messages import ToolSpec
from autodev.harness.registry import Args, Integer, Number, String, Tool, ToolEnv
from autodev.harness.scope import Scope

if TYPE_CHECKING:
    pass

# The one secret policy (names, scrubbing, masking) lives in autodev/guard/redact.py; scrubbed_env
# is re-exported here for callers that knew it from this module.
__all__ = ["REPLAY_SAFE", "WRITE_TOOLS", "Scope", "Workspace", "scrubbed_env"]


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
    def handler(env: ToolEnv, **kwargs: object) -> str:
        if env.workspace is None:
            raise ToolError(f"{name} needs a workspace")
        return env.workspace.invoke(name, run, kwargs)

    return handler


def _workspace_tool(
    name: str, capability: str, args: type[Args], description: str, run: Callable[..., str]
) -> Tool[str]:
    """A workspace tool whose work is `run(workspace, **arguments)`."""
    return Tool(
        name,
        description,
        capability,
        _on_workspace(name, run),
        args=args,
        replay_safe=capability == "read",
    )


WORKSPACE_TOOLS: tuple[Tool[str], ...] = (
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


class Workspace(Scope):
    """The tools one participant may use on one repository during a turn."""

    def tools(self) -> list[Tool[str]]:
        """The workspace tools this participant may use."""
        return [t for t in WORKSPACE_TOOLS if self.write or t.capability != "write"]

    def specs(self) -> list[ToolSpec]:
        """OpenAI-style tool schemas of the tools this participant may use."""
        return [t.spec() for t in self.tools()]

    def names(self) -> set[str]:
        return {t.name for t in self.tools()}

    def call(self, name: str, args: Mapping[str, object] | None) -> str:
        """Run one tool and return its text result; raise ToolError on misuse."""
        tool = _BY_NAME.get(name)
        if tool is None:
            raise ToolError(
                f"unknown tool '{name}'; the workspace tools are: {', '.join(sorted(self.names()))}"
            )
        if name in WRITE_TOOLS and not self.write:
            raise ToolError(write_refusal(name))
        return tool.call(ToolEnv(workspace=self), args)
