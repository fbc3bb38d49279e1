"""What every workspace tool works within (`Scope`): one repository and its path rules, the turn's
deadline and `stop`, the output cap, and the masker for what a tool returns. The tools themselves
(`files`, `search`, `commands`) take a `Scope`; `tools.Workspace` is a `Scope` with the tool set."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from autodev.errors import ToolError
from autodev.guard.redact import Redactor, secret_values
from autodev.guard.secrets import SECRET_FILES, file_values, is_secret_file
from autodev.store.journal import safe_text

if TYPE_CHECKING:
    from autodev.guard.sandbox import Room

# The one secret policy (names, scrubbing, masking) lives in autodev/guard/redact.py; scrubbed_env
# is re-exported here for callers that knew it from this module.
__all__ = ["Scope"]


class Scope:
    """What a workspace tool works within: one repository (path safety), the turn's deadline and
    `stop`, output caps and masking. `tools.Workspace` adds the tool set."""

    # Set by `limit()`: when the turn must end (time.monotonic()), and whether the user asked
    # the run to stop. Every tool gives up at either.
    deadline: float | None = None
    stopping: Callable[[], bool] | None = None
    _looked: float = 0.0  # when `cut` last asked `stopping()` (it reads the run's state)
    # Set by the daemon: what a command (None: the turn's end) did to git that must be said
    # (files moved out of .git, a branch moved back; daemon/gitwatch.py), added to its result.
    after_command: Callable[[str | None], str] | None = None

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

    def mask_secret_files(self, paths: Iterable[str]) -> None:
        """From now on, mask what the secret files at `paths` hold in every result (and, with
        the daemon's masker, in every log, event, bundle and span)."""
        self._redactor.learn(file_values(paths))

    def invoke(self, name: str, run: Callable[..., str], kwargs: dict[str, object]) -> str:
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
