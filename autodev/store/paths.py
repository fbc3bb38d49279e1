"""Where things live: the repository side (.autodev/) and the machine side ($AUTODEV_HOME)."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import NamedTuple

from autodev.errors import NotARepositoryError
from autodev.host.sha import sha256

_PKG = Path(__file__).resolve().parent.parent  # the autodev package (this is autodev/store/)


def autodev_home() -> Path:
    return Path(os.environ.get("AUTODEV_HOME") or Path.home() / ".autodev").expanduser()


def shipped(name: str) -> Path:
    """A shipped resource folder: `prompts`, `teams` or `autodev.example`.

    Inside a wheel they sit in autodev/_shipped/; in a source checkout at the top level.
    """
    inside = _PKG / "_shipped" / name
    if inside.exists():
        return inside
    top = _PKG.parent / (".autodev.example" if name == "autodev.example" else name)
    return top


def find_repo(start: Path | None = None) -> Path:
    """The top of the git repository containing `start` (default: the working directory)."""
    start = Path(start or Path.cwd()).resolve()
    for p in (start, *start.parents):
        if (p / ".git").exists():
            return p
        if (p / "HEAD").is_file() and (p / "objects").is_dir() and (p / "refs").is_dir():
            raise NotARepositoryError(
                f"{p} is a bare git repository: it has no work tree for a team to work in",
                f"run autodev in a clone of it (`git clone {p} work && cd work`) "
                f"or in a worktree (`git -C {p} worktree add ../work`)",
            )
    raise NotARepositoryError(
        f"{start} is not inside a git repository",
        "run autodev inside a git repository (or `git init` one first)",
    )


@functools.lru_cache(maxsize=64)
def _run_dir(repo: Path, home: Path) -> Path:
    """The run folder of `repo` under `home`, named after the repository's real path. Kept per
    process: resolving the path walks it (two resolves and a hash were about 34 µs, asked for
    a dozen times a turn), and a repository moved while autodev runs has no other run folder."""
    real = repo.resolve()
    digest = sha256(str(real).encode()).hexdigest()[:8]
    return home / f"{real.name}-{digest}"


# A NamedTuple, not a dataclass: `dataclasses` imports `inspect`, about 9 ms of every cold steering
# command (issue 33); tests/test_cli_quick.py keeps it off that path.
class RunPaths(NamedTuple):
    """Every file of one repository's run, repository side and machine side."""

    repo: Path

    @property
    def config_dir(self) -> Path:
        return self.repo / ".autodev"

    @property
    def team_file(self) -> Path:
        return self.config_dir / "team.toml"

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def prompt_overrides(self) -> Path:
        return self.config_dir / "prompts"

    @property
    def run_dir(self) -> Path:
        return _run_dir(self.repo, autodev_home())

    @property
    def thread(self) -> Path:
        return self.run_dir / "thread.jsonl"

    @property
    def events(self) -> Path:
        return self.run_dir / "events.jsonl"

    @property
    def harness_log(self) -> Path:
        return self.run_dir / "harness.jsonl"

    @property
    def state(self) -> Path:
        return self.run_dir / "state.json"

    @property
    def inbox(self) -> Path:
        return self.run_dir / "inbox"

    @property
    def lock(self) -> Path:
        return self.run_dir / "daemon.lock"

    @property
    def daemon_log(self) -> Path:
        return self.run_dir / "daemon.log"

    @property
    def groups(self) -> Path:
        """The daemon's ledger of the process groups it started (host/groups.py)."""
        return self.run_dir / "groups"

    @property
    def scripted_ledger(self) -> Path:
        return self.run_dir / "scripted-ledger.json"

    def ensure(self) -> None:
        """Create the run folder, private to the user (0700): it holds what participants said,
        what tools printed and what the user sent."""
        for d in (self.run_dir, self.inbox):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
            if d.stat().st_mode & 0o077:
                os.chmod(d, 0o700)  # a folder an older autodev made readable to others


def git_head(repo: Path) -> str | None:
    """HEAD's sha, or None in a repository with no commit yet (read from the ref files where
    they say it plainly: no git process; `host/gitrefs.py`)."""
    from autodev.host import gitrefs

    return gitrefs.head(repo)
