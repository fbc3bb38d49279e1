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

import base64
import fnmatch
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import Field

from autodev.errors import ToolError
from autodev.harness.registry import Args, Integer, Number, String, Tool, ToolEnv
from autodev.journal import safe_text
from autodev.redact import Redactor, scrubbed_env, secret_values

if TYPE_CHECKING:
    from autodev.sandbox import Room

_LIST_CAP = 500
_SEARCH_CAP = 200
_SEARCH_LINE_CUT = 300
_READ_LINE_CUT = 2000
_SEARCH_MAX_FILE = 4 * 1024 * 1024  # bigger files are almost never source; skip them
_BINARY_SNIFF = 8192
_SEARCH_TIMEOUT = 120.0  # seconds; also capped by the command timeout and the turn's time left

# The one secret policy (names, scrubbing, masking) lives in autodev/redact.py; scrubbed_env
# is re-exported here for callers that knew it from this module.
__all__ = ["REPLAY_SAFE", "WRITE_TOOLS", "Workspace", "scrubbed_env"]


# ---------------------------------------------------------------------------- the tools


_PATH_HELP = "relative to the repository root, e.g. 'src/app.py'"


class ReadFileArgs(Args):
    path: String = Field(description=f"file path, {_PATH_HELP}")
    offset: Integer = Field(1, ge=1, description="first line to show (1 = the first line)")
    limit: Integer = Field(400, ge=1, description="how many lines to show at most")


class ListFilesArgs(Args):
    path: String = Field(".", description=f"folder, {_PATH_HELP}; '.' is the root")
    depth: Integer = Field(2, ge=1, description="how many levels deep to list")


class SearchArgs(Args):
    pattern: String = Field(
        description="regular expression (Python syntax without look-around or backreferences), "
        "e.g. 'def run_\\w+'"
    )
    path: String = Field(".", description=f"folder or file to search, {_PATH_HELP}")
    glob: String | None = Field(
        None,
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
        1, ge=1, description="how many occurrences to replace; must equal the number of times 'old' occurs"
    )


class RunCommandArgs(Args):
    command: String = Field(description="the shell command, e.g. 'python -m pytest -q'")
    timeout_sec: Number | None = Field(
        None,
        gt=0,
        description="seconds before the command is killed; capped by the configured command timeout",
    )


def _on_workspace(method: str) -> Callable[..., str]:
    def handler(env: ToolEnv, **kwargs: Any) -> str:
        return env.workspace.invoke(method, kwargs)

    return handler


def _workspace_tool(name: str, capability: str, args: type[Args], description: str) -> Tool:
    return Tool(
        name,
        description,
        capability,
        _on_workspace(f"_t_{name}"),
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
    ),
    _workspace_tool(
        "list_files",
        "read",
        ListFilesArgs,
        "List files and folders under a folder (folders end with '/'), as paths relative to "
        "the repository root. Skips .git; folders git ignores are shown but not expanded.",
    ),
    _workspace_tool(
        "search",
        "read",
        SearchArgs,
        "Search text files for a regular expression, line by line. Results are "
        "'path:line: text'. Skips .git, git-ignored files and binary files.",
    ),
    _workspace_tool(
        "write_file",
        "write",
        WriteFileArgs,
        "Create or replace a file with the given content. Missing parent folders are created.",
    ),
    _workspace_tool(
        "edit_file",
        "write",
        EditFileArgs,
        "Replace text in a file. 'old' must occur exactly 'count' times (copy it exactly from "
        "read_file, whitespace included), otherwise nothing changes and the error says how "
        "many times it occurs.",
    ),
    _workspace_tool(
        "run_command",
        "commands",
        RunCommandArgs,
        "Run a shell command (bash -c) in the repository root, without stdin, and return its "
        "exit code and combined output. On timeout the command and everything it started are "
        "killed; background processes are stopped when the command ends.",
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


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _split_lines(text: str) -> list[str]:
    """Lines as editors and grep number them (a final newline does not start a new line)."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _looks_binary(data: bytes) -> bool:
    return b"\0" in data[:_BINARY_SNIFF]


def _ripgrep() -> str:
    """The `rg` binary: the one the `ripgrep` package installed next to this Python, else PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "rg")
    found = here if os.access(here, os.X_OK) else shutil.which("rg")
    if not found:
        raise ToolError("search: ripgrep (rg) is not installed; reinstall autodev (it depends on ripgrep)")
    return found


def _rg_text(field: Any) -> str:
    """A path or line from ripgrep's JSON: text, or base64 bytes when not UTF-8."""
    if not isinstance(field, dict):
        return ""
    if "text" in field:
        return str(field["text"])
    raw = base64.b64decode(field.get("bytes") or "")
    return safe_text(raw.decode("utf-8", errors="surrogateescape"))


def _die_with_parent() -> None:
    """In the child before exec: the kernel kills it if the daemon dies (even by kill -9), so a
    search blocked on a pipe never outlives the daemon that started it."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


class _Watch:
    """Calls `kill` at a deadline or when `stopping()` says so; `finish()` says which."""

    def __init__(self, kill: Callable[[], None], seconds: float, stopping: Callable[[], bool]):
        self._kill, self._stopping, self._why = kill, stopping, ""
        self._end = time.monotonic() + seconds
        self._seconds = seconds
        self._over = threading.Event()
        threading.Thread(target=self._run, name="tool-deadline", daemon=True).start()

    def _run(self) -> None:
        while not self._over.wait(0.1):
            if self._stopping():
                self._why = "stopped: the run is stopping"
            elif time.monotonic() >= self._end:
                self._why = f"stopped after {self._seconds:g} s (its time limit)"
            else:
                continue
            self._kill()
            return

    def finish(self) -> str:
        self._over.set()
        return self._why


# ---------------------------------------------------------------------------- the workspace


class Workspace:
    """The tools one participant may use on one repository during a turn."""

    # Set by `limit()`: when the turn must end (time.monotonic()), and whether the user asked
    # the run to stop. Tools that run a process give up at either.
    deadline: float | None = None
    stopping: Callable[[], bool] | None = None

    def limit(self, deadline: float | None, stopping: Callable[[], bool] | None = None) -> None:
        """Cut every tool at `deadline` (the turn's timeout) or as soon as `stopping()`."""
        self.deadline, self.stopping = deadline, stopping

    def _stopping(self) -> bool:
        return bool(self.stopping and self.stopping())

    def _time_for(self, wanted: float) -> float:
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
    ):
        self.repo = Path(repo)
        if not self.repo.is_dir():
            raise ValueError(f"workspace repository {self.repo} is not a folder")
        if not command_timeout > 0:
            raise ValueError(f"command_timeout must be a positive number of seconds, got {command_timeout!r}")
        if max_output < 200:
            raise ValueError(f"max_output must be at least 200 characters, got {max_output!r}")
        self._real = os.path.realpath(self.repo)
        self.write = write
        self.command_timeout = float(command_timeout)
        self.max_output = max_output
        self._secret_env = frozenset(secret_env)
        self._guard = command_guard
        self._room = room  # the sandbox commands run in; None: unsandboxed
        # The daemon's secrets (and their encodings), so a key that reached a file or an
        # output is masked too. The daemon passes its own; alone, learn them from the env.
        self._redactor = redactor or Redactor(secret_values(os.environ, self._secret_env).values())

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

    def invoke(self, method: str, kwargs: dict[str, Any]) -> str:
        """Run a tool's method with checked arguments; its result with secrets masked."""
        name = method.removeprefix("_t_")
        try:
            result = getattr(self, method)(**kwargs)
        except OSError as e:
            raise ToolError(f"{name}: {e.strerror or e}") from None
        except (ValueError, RecursionError) as e:  # text that is not UTF-8, a path nested too deep
            raise ToolError(f"{name}: {type(e).__name__}: {safe_text(str(e))[:300]}") from None
        # Valid UTF-8 whatever the repository holds (a Latin-1 file name): the provider's JSON
        # encoder and every log would refuse it otherwise.
        return safe_text(self._redact(result))

    # -- paths

    def _resolve(self, tool: str, raw: str) -> tuple[str, str]:
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
        real = os.path.realpath(os.path.join(self._real, *given.parts))
        if real != self._real and not real.startswith(self._real + os.sep):
            raise ToolError(
                f"{tool}: path '{raw}' leads outside the repository through a "
                "symbolic link; only files inside the repository can be used"
            )
        if ".git" in Path(os.path.relpath(real, self._real)).parts:
            raise ToolError(self._git_refusal(tool, raw))
        display = given.as_posix()
        return real, display

    @staticmethod
    def _git_refusal(tool: str, raw: str) -> str:
        return (
            f"{tool}: path '{raw}' is inside .git/, which the workspace tools do not touch; "
            "use git commands through run_command instead"
        )

    def _inside(self, real: str) -> bool:
        if real != self._real and not real.startswith(self._real + os.sep):
            return False
        return ".git" not in Path(os.path.relpath(real, self._real)).parts

    def _redact(self, text: str) -> str:
        return self._redactor.text(text)

    def _cap(self, text: str, hint: str) -> str:
        if len(text) <= self.max_output:
            return text
        return text[: self.max_output] + f"\n[... cut at {self.max_output} characters; {hint}]"

    # -- read tools

    def _t_read_file(self, path: str, offset: int, limit: int) -> str:
        real, rel = self._resolve("read_file", path)
        if not os.path.exists(real):
            raise ToolError(f"read_file: no file '{rel}'; use list_files or search to find it")
        if os.path.isdir(real):
            raise ToolError(f"read_file: '{rel}' is a folder; use list_files(path='{rel}')")
        if not stat.S_ISREG(os.stat(real).st_mode):  # a FIFO or a device would block the turn
            raise ToolError(f"read_file: '{rel}' is not a regular file (a pipe, socket or device)")
        with open(real, "rb") as f:
            data = f.read()
        if _looks_binary(data):
            return f"{rel}: binary file ({len(data)} bytes); not shown"
        lines = _split_lines(data.decode("utf-8", errors="replace"))
        total = len(lines)
        if total == 0:
            return f"{rel}: empty file (0 lines)"
        if offset > total:
            raise ToolError(
                f"read_file: offset {offset} is past the end of '{rel}', which has "
                f"{total} lines; use an offset from 1 to {total}"
            )
        width = len(str(total))
        out: list[str] = []
        size = 0
        last = offset - 1
        budget = self.max_output - 200  # room for the header and the paging note
        for n in range(offset, min(total, offset + limit - 1) + 1):
            line = lines[n - 1]
            if len(line) > _READ_LINE_CUT:
                line = line[:_READ_LINE_CUT] + f" [... line cut; {len(line)} characters]"
            row = f"{n:>{width}}\t{line}"
            if out and size + len(row) + 1 > budget:
                break
            out.append(row)
            size += len(row) + 1
            last = n
        header = f"{rel}: {total} lines; showing {offset}-{last}"
        text = header + "\n" + "\n".join(out)
        if last < total:
            text += f"\n[{total - last} more lines: read_file(path='{rel}', offset={last + 1})]"
        return text

    def _t_list_files(self, path: str, depth: int) -> str:
        real, rel = self._resolve("list_files", path)
        if not os.path.exists(real):
            raise ToolError(f"list_files: no folder '{rel}'; use list_files(path='.') to see the root")
        if not os.path.isdir(real):
            raise ToolError(f"list_files: '{rel}' is a file; use read_file(path='{rel}')")
        ignored = self._git_ignored_dirs(rel)
        entries: list[str] = []
        cut = False

        def walk(folder: str, level: int) -> None:
            nonlocal cut
            try:
                items = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError as e:
                entries.append(f"{os.path.relpath(folder, self._real)}/ (unreadable: {e.strerror})")
                return
            for item in items:
                if cut:
                    return
                if item.name == ".git":
                    continue
                if len(entries) >= _LIST_CAP:
                    cut = True
                    return
                item_rel = Path(os.path.relpath(item.path, self._real)).as_posix()
                if item.is_symlink():
                    entries.append(f"{item_rel} -> {os.readlink(item.path)}")
                elif item.is_dir():
                    if item_rel in ignored:
                        entries.append(f"{item_rel}/ (ignored by git; not expanded)")
                    else:
                        entries.append(f"{item_rel}/")
                        if level < depth:
                            walk(item.path, level + 1)
                else:
                    entries.append(item_rel)

        walk(real, 1)
        where = "the repository root" if rel == "." else f"'{rel}'"
        if not entries:
            return f"{where} is empty"
        text = f"{len(entries)} entries under {where} (depth {depth}):\n" + "\n".join(entries)
        if cut:
            text += f"\n[listing cut at {_LIST_CAP} entries; list a subfolder or use a smaller depth]"
        return self._cap(text, "list a subfolder or use a smaller depth")

    def _git_ignored_dirs(self, rel: str) -> set[str]:
        """Repository-relative folders git ignores (no git, or git failing: none)."""
        out = self._git_lines(
            ["ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z", "--", rel]
        )
        return {p.rstrip("/") for p in (out or []) if p.endswith("/")}

    def _git_lines(self, args: list[str]) -> list[str] | None:
        if not os.path.exists(os.path.join(self._real, ".git")):
            return None
        try:
            r = subprocess.run(
                ["git", *args], cwd=self._real, capture_output=True, timeout=30, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if r.returncode != 0:
            return None
        return [p for p in r.stdout.decode("utf-8", errors="surrogateescape").split("\0") if p]

    def _t_search(self, pattern: str, path: str, glob: str | None) -> str:
        real, rel = self._resolve("search", path)
        if not os.path.exists(real):
            raise ToolError(f"search: no file or folder '{rel}'")
        # ripgrep in a subprocess: its regex engine is linear-time (no pattern can hang a turn),
        # it honours .gitignore, and the process can be killed at the deadline or on `stop`.
        argv = [
            _ripgrep(),
            "--json",
            "--sort=path",  # one order for every run: the model (and a replay) sees the same list
            "--hidden",
            "--glob=!.git",
            "--no-config",
            f"--max-filesize={_SEARCH_MAX_FILE}",
            f"--regexp={pattern}",
        ]
        if glob and "/" not in glob:
            argv.append(f"--glob={glob}")
        argv += ["--"] + ([] if rel == "." else [rel])
        seconds = self._time_for(_SEARCH_TIMEOUT)
        matches: list[str] = []
        searched = 0
        cut = False
        try:
            proc = subprocess.Popen(
                argv,
                cwd=self._real,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=scrubbed_env(self._secret_env),
                preexec_fn=_die_with_parent,
            )
        except OSError as e:
            raise ToolError(f"search: could not start ripgrep: {e}; reinstall autodev") from None
        watch = _Watch(proc.kill, seconds, self._stopping)
        try:
            for raw in proc.stdout:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                kind, data = event.get("type"), event.get("data") or {}
                if kind == "end":
                    searched += 1
                if kind != "match":
                    continue
                file_rel = _rg_text(data.get("path"))
                if glob and "/" in glob and not self._glob_match(file_rel, glob):
                    continue
                line = _rg_text(data.get("lines"))
                if "\0" in line:  # a binary file named on purpose: not shown, as when walking
                    continue
                if len(matches) >= _SEARCH_CAP:
                    cut = True
                    break
                n = data.get("line_number")
                matches.append(f"{file_rel}:{n}: {_short(line.strip(), _SEARCH_LINE_CUT)}")
        finally:
            proc.kill()
            proc.stdout.close()
            errors = proc.stderr.read().decode("utf-8", errors="replace").splitlines()
            proc.stderr.close()
            proc.wait()
            why = watch.finish()
        if proc.returncode == 2 and not matches and any("regex parse error" in e for e in errors):
            detail = " ".join(e.strip() for e in errors[1:] if e.strip())[:300]
            raise ToolError(
                f"search: pattern {pattern!r} is not a valid regular expression ({detail}); "
                "escape special characters such as ( [ . * with a backslash (ripgrep syntax: "
                "like Python's, without look-around or backreferences)"
            )
        scope = f" matching {glob!r}" if glob else ""
        note = f"\n[search {why}; the results may be incomplete]" if why else ""
        if not matches:
            return f"no matches for {pattern!r} in {searched} file(s){scope} under '{rel}'{note}"
        text = "\n".join(matches)
        if cut:
            text += f"\n[results cut at {_SEARCH_CAP} matches; narrow the pattern, the path or the glob]"
        return self._cap(text, "narrow the pattern, the path or the glob") + note

    @staticmethod
    def _glob_match(file_rel: str, glob: str) -> bool:
        if "/" not in glob:
            return fnmatch.fnmatchcase(file_rel.rsplit("/", 1)[-1], glob)
        if fnmatch.fnmatchcase(file_rel, glob):
            return True
        # "**/x" also matches x at the top level
        return glob.startswith("**/") and fnmatch.fnmatchcase(file_rel, glob[3:])

    # -- write tools

    def _writable(self, tool: str, path: str) -> tuple[str, str]:
        """Resolve a path a write tool may change: never the team, config and prompt overrides
        in .autodev/ (only the user edits those; .git/ is refused for every tool already)."""
        real, rel = self._resolve(tool, path)
        parts = [p.lower() for p in Path(os.path.relpath(real, self._real)).parts]
        if ".autodev" in parts or ".autodev" in [p.lower() for p in PurePosixPath(rel).parts]:
            raise ToolError(
                f"{tool}: path '{path}' is inside .autodev/, which only the user edits (the team, "
                "the run's config and prompt overrides); ask the user with tell_user if it should change"
            )
        return real, rel

    def _t_write_file(self, path: str, content: str) -> str:
        real, rel = self._writable("write_file", path)
        if rel == "." or os.path.isdir(real):
            raise ToolError(f"write_file: '{rel}' is a folder; give a file path")
        existed = os.path.exists(real)
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "w", encoding="utf-8", newline="") as f:
            f.write(content)
        verb = "replaced" if existed else "created"
        return f"{verb} {rel} ({len(_split_lines(content))} lines, {len(content.encode())} bytes)"

    def _t_edit_file(self, path: str, old: str, new: str, count: int) -> str:
        real, rel = self._writable("edit_file", path)
        if not os.path.isfile(real):
            what = "is a folder" if os.path.isdir(real) else "does not exist"
            raise ToolError(f"edit_file: '{rel}' {what}; use write_file to create a file")
        if old == "":
            raise ToolError("edit_file: argument 'old' is empty; give the exact text to replace")
        try:
            with open(real, encoding="utf-8", newline="") as f:
                text = f.read()
        except UnicodeDecodeError:
            raise ToolError(
                f"edit_file: '{rel}' is not UTF-8 text; use write_file to replace it whole"
            ) from None
        found = text.count(old)
        if found == 0:
            raise ToolError(
                f"edit_file: 'old' occurs 0 times in '{rel}'; read_file it and copy "
                "the text exactly, whitespace and indentation included"
            )
        if found != count:
            raise ToolError(
                f"edit_file: 'old' occurs {found} times in '{rel}', not {count}; "
                f"include more surrounding text to make it unique, or pass "
                f"count={found} to replace every occurrence"
            )
        with open(real, "w", encoding="utf-8", newline="") as f:
            f.write(text.replace(old, new, count))
        return f"edited {rel}: replaced {count} occurrence{'s' if count != 1 else ''}"

    # -- the command runner

    def _t_run_command(self, command: str, timeout_sec: float | None) -> str:
        if not command.strip():
            raise ToolError("run_command: argument 'command' is empty; give a shell command")
        if self._guard is not None:
            refusal = self._guard(command)
            if refusal is not None:
                raise ToolError(refusal)
        wanted = self.command_timeout if timeout_sec is None else min(timeout_sec, self.command_timeout)
        timeout = self._time_for(wanted)
        env = scrubbed_env(self._secret_env)
        argv = ["bash", "-c", command]
        if self._room is not None:
            env, argv = self._room.env(env), self._room.wrap(argv)
        run = _run_bash(
            argv,
            cwd=self._real,
            env=env,
            timeout=timeout,
            max_output=self.max_output,
            stopping=self._stopping,
        )
        secs = f"{timeout:g} s" + (" (the turn's time left)" if timeout < wanted else "")
        if run.timed_out and self._stopping():
            status = (
                "stopped: the user is stopping the run; the command and every process it started were killed"
            )
        elif run.timed_out and run.exit_code is None:
            status = f"timed out after {secs}: the command and every process it started were killed"
        elif run.timed_out:
            status = (
                f"exit code: {run.exit_code} (processes it left in the background kept "
                f"its output open until the {secs} timeout; they were killed)"
            )
        else:
            status = f"exit code: {run.exit_code}"
        if run.abandoned:
            status += (
                "\n[a process outside the command's process group still holds the "
                "output open; stopped reading]"
            )
        body = run.output if run.output else "(no output)"
        return f"{status}\noutput:\n{body}"


# ---------------------------------------------------------------------------- running bash


@dataclass
class _Run:
    exit_code: int | None  # None when bash itself had to be killed
    timed_out: bool
    output: str
    abandoned: bool


class _Capture:
    """Drains a pipe, keeping only its beginning and its end so memory stays bounded."""

    def __init__(self, stream: Any, limit: int):
        self._stream = stream
        self._limit = limit
        self._lock = threading.Lock()
        self._head = bytearray()  # the first `limit` bytes
        self._tail = bytearray()  # the last `limit` bytes
        self._total = 0

    def pump(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(65536)
                if not chunk:
                    return
                with self._lock:
                    self._total += len(chunk)
                    room = self._limit - len(self._head)
                    if room > 0:
                        self._head += chunk[:room]
                    self._tail += chunk
                    if len(self._tail) > self._limit:
                        del self._tail[: len(self._tail) - self._limit]
        except (OSError, ValueError):
            return  # the pipe was closed under us

    def text(self) -> str:
        """All output if it fit, else its first and last halves around a visible note."""
        with self._lock:
            total = self._total
            head = self._head.decode("utf-8", errors="replace")
            tail = self._tail.decode("utf-8", errors="replace")
        if total <= self._limit:
            return head
        half = self._limit // 2
        return (
            f"{head[:half]}\n[... output cut: {total} bytes in all; showing the first and "
            f"last {half} characters ...]\n{tail[-half:]}"
        )


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _wait(proc: subprocess.Popen, timeout: float, stopping: Callable[[], bool] | None) -> None:
    """proc.wait(timeout), also ended early (TimeoutExpired) when `stopping()` turns true."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0 or (stopping is not None and stopping()):
            raise subprocess.TimeoutExpired(proc.args, timeout)
        try:
            proc.wait(timeout=min(0.2, left))
            return
        except subprocess.TimeoutExpired:
            continue


def _run_bash(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    max_output: int,
    stopping: Callable[[], bool] | None = None,
) -> _Run:
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as e:
        raise ToolError(f"run_command: could not start bash: {e}") from None
    capture = _Capture(proc.stdout, max_output)
    reader = threading.Thread(target=capture.pump, name="run_command-output", daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        _wait(proc, timeout, stopping)
    except subprocess.TimeoutExpired:
        timed_out = True
    if not timed_out:
        # bash is done, but a background child may still hold the pipe: wait for it until
        # the same deadline, so `cmd &` cannot outlive the timeout.
        reader.join(max(0.0, deadline - time.monotonic()))
        timed_out = reader.is_alive()
    # The command ran in its own session, so its process group holds everything it started
    # (unless something called setsid itself). Killing the group also stops leftovers.
    _kill_group(proc.pid)
    proc.wait()
    reader.join(2.0)
    abandoned = reader.is_alive()
    if not abandoned:
        proc.stdout.close()
    killed_bash = proc.returncode == -signal.SIGKILL and timed_out
    return _Run(
        exit_code=None if killed_bash else proc.returncode,
        timed_out=timed_out,
        output=capture.text(),
        abandoned=abandoned,
    )
