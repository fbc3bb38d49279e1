"""What every part of the daemon is handed: the open run's files (`Run`, fixed while the lock is
held) and the settings from .autodev/ (`Settings`, replaced when the user edits them between
turns). Parts receive these as arguments; nothing reaches into the loop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autodev import config as cfgmod
from autodev.guard import sandbox as sandboxmod
from autodev.guard.redact import Redactor
from autodev.records.harness_log import HarnessRecord
from autodev.records.harness_log import line as harness_line
from autodev.records.post import Post
from autodev.store import userfiles
from autodev.store.events import Events
from autodev.store.journal import Journal
from autodev.store.paths import RunPaths
from autodev.store.state import StateFile
from autodev.store.thread import Thread

Out = Callable[[dict[str, object]], None]  # the terminal's echo of a post (its line as a dict)


@dataclass
class Settings:
    """The team, config and sandbox in use, and the stamp of the .autodev/ they came from."""

    config: cfgmod.RunConfig
    team: cfgmod.Team
    sandbox: sandboxmod.Sandbox
    stamp: str

    @classmethod
    def load(cls, paths: RunPaths) -> Settings:
        """Read .autodev/ (raises ConfigError naming the file and key)."""
        stamp = userfiles.stamp(paths.config_dir)
        config, team = cfgmod.load_config(paths.config_file), cfgmod.load_team(paths.team_file)
        return cls(config, team, sandboxmod.resolve(config.sandbox), stamp)

    @property
    def secret_env(self) -> list[str]:
        """Variables named by api_key_env: kept out of commands and redacted from every log."""
        return self.team.key_names()


@dataclass
class Scripted:
    """The scripted model server of this run, when the team uses one."""

    url: str | None = None
    price: dict[str, float] | None = None  # USD per token, from the script's [price] table


@dataclass
class Run:
    """The open run: its id and the files only the daemon appends to."""

    paths: RunPaths
    run_id: str
    state: StateFile
    thread: Thread
    events: Events
    hlog: Journal
    redact: Redactor
    out: Out | None = None  # echo of posts as the thread grows

    @property
    def overrides(self) -> Path:
        """The prompt overrides in use: the copy taken when .autodev/ was last accepted."""
        return accepted_prompts(self.paths)

    def note(
        self, frm: str, text: str, handoff: str | None = None, *, id: str | None = None, **extra: object
    ) -> Post:
        """A post by user, system or audit: on the thread (idempotent by id), copied into
        events, and echoed to the terminal."""
        post = self.thread.append(Post.draft(frm, "say", text, handoff, id=id, **extra))
        self.events.posted(post)
        self.echo(post)
        return post

    def record(self, rec: HarnessRecord) -> None:
        """A record the daemon writes to the harness log itself, `type` first as the harness
        writes its own."""
        self.hlog.append(harness_line(rec))

    def echo(self, post: Post) -> None:
        if self.out:
            self.out(post.dump())  # the terminal shows it as `autodev thread` shows its line


def accepted_prompts(paths: RunPaths) -> Path:
    return paths.run_dir / "accepted-prompts"
