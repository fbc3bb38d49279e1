"""The room a participant's commands run in: bubblewrap (`bwrap`) on Linux.

Inside, only what commands need exists: the repository (writable, with its git folders;
`.git/hooks`, `.git/config` and `.autodev/` read-only, `.git` itself a mount point so it cannot
be renamed or replaced), the system's own folders read-only (`SYSTEM`: /usr, /bin, /sbin, /lib*,
/etc, /opt, links recreated as links), /dev, a fresh /proc in a fresh PID namespace (no other
process's environment or command line), a private /tmp and /var/tmp, a private empty home (HOME
set to it), and the paths config `sandboxRead` (and its older name `sandboxExpose`) adds,
read-only. Nothing else of the host is there: not the tasks file or --out of an eval, not
$AUTODEV_HOME or any run folder, not /srv, /home or /root. Files matching `secretFiles` are
covered by empty ones in every folder (`guard/secrets.find`). The git identity, read on the
host, enters as the four GIT_AUTHOR_*/GIT_COMMITTER_* variables, so commits work without
~/.gitconfig. /run is empty (agent and Docker sockets) and there is no network unless asked
for. So a command can neither read the keys nor speak for the user.

`Sandbox.offline` (MCP servers without the network) is not this room: the machine as it is, in a
network namespace of its own, because a server the user configured often needs its toolchain
under the home folder.

`bwrap.resolve(mode)` turns the `sandbox` config key into what is in use (guard/bwrap.py: the
probe and its memo); `Room.wrap()` wraps an argv. Why bubblewrap and not Landlock, and what the sandbox cannot stop: docs/DECISIONS.md.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from autodev.errors import AutodevError
from autodev.guard import secrets
from autodev.guard.bwrap import Found, which
from autodev.guard.mounts import bwrap_args, empty_file, private_home


class Sandbox(Found):
    """The sandbox in use (bwrap.Found) and the rooms commands run in, in it."""

    __slots__ = ()

    def offline(self, argv: list[str]) -> list[str]:
        """`argv` with no network (a namespace of its own, not even the host's loopback) and the
        rest of the machine as it is: how an MCP server runs under commandNetwork = false.
        Unchanged when no sandbox is in use (status and start warn about that)."""
        if self.binary is None:
            return list(argv)
        return [self.binary, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", *argv]

    def room(
        self,
        repo: Path,
        *,
        hide: Iterable[Path | str] = (),
        network: bool = False,
        expose: Iterable[str] = (),
        writable: bool = True,
        secret_files: Iterable[str] = (),
    ) -> Room:
        """Where one participant's (or the audit's) commands run. The git identity is read on
        the host at the room's first command (`Room.env`), because the room hides the $HOME that
        holds it. `writable=False` (a participant with write = false): the repository and its
        git folders are read-only."""
        return Room(
            self,
            Path(repo),
            tuple(Path(h) for h in hide),
            network,
            tuple(expose),
            None if self.active else (),
            writable,
            tuple(secret_files),
        )


def resolve(mode: str, memo: Path | None = None) -> Sandbox:
    """What the `sandbox` config key gives on this machine (bwrap.which: `"bwrap"` without a
    working bwrap is a ConfigError, `"auto"` falls back to none with a warning)."""
    return Sandbox(*which(mode, memo))


@dataclass(frozen=True)
class Room:
    sandbox: Sandbox
    repo: Path
    hide: tuple[Path, ...] = ()
    network: bool = False
    expose: tuple[str, ...] = ()
    # GIT_AUTHOR_*/GIT_COMMITTER_* from git_identity; None: read at the first command, so a turn
    # that runs none costs no git call, and a `git config` fixed mid-run holds from the next turn
    identity: tuple[tuple[str, str], ...] | None = ()
    writable: bool = True  # False: the repository (work tree and git folders) is mounted read-only
    secret_files: tuple[str, ...] = ()  # config secretFiles: seen empty inside

    def wrap(self, argv: list[str], secret_paths: list[str] | None = None) -> list[str]:
        """`argv` wrapped to run inside the sandbox; unchanged when none is in use.
        `secret_paths`: the repository's secret files when the caller found them already
        (`secrets.find`); else they are looked for here (TooManyFiles: no command runs)."""
        binary = self.sandbox.binary
        if binary is None:
            return list(argv)
        opts = bwrap_args(
            self.repo,
            hide=self.hide,
            network=self.network,
            expose=self.expose,
            writable=self.writable,
            home=self.home,
        )
        if secret_paths is None:
            secret_paths = secrets.find(self.repo, self.secret_files)
        for path in secret_paths:
            # an empty file (or folder) in its place: no command reads the keys it holds
            cover = ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", empty_file(), path]
            at = opts.index("--remount-ro")
            opts[at:at] = cover
        return [binary, *opts, "--", *argv]

    @property
    def home(self) -> str:
        """The private, empty home inside: at the user's home path (so `~` in a path the user
        gave still means the same place), else /home/sandbox."""
        return private_home()

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """The (already scrubbed) environment as the command should see it: temporary files
        go to the private /tmp, HOME is the private home, and no machine-side folder is named."""
        if not self.sandbox.active:
            return dict(env)
        out = {k: v for k, v in env.items() if k not in _HOST_FOLDERS}
        out["TMPDIR"] = "/tmp"
        out["HOME"] = self.home
        out.update(self._identity)
        return out

    @functools.cached_property
    def _identity(self) -> tuple[tuple[str, str], ...]:
        return tuple(git_identity(self.repo).items()) if self.identity is None else self.identity


# Variables that name folders of the host the sandbox does not show (autodev's own, XDG's).
_HOST_FOLDERS = frozenset(
    {
        "AUTODEV_HOME",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR",
    }
)

_IDENT = re.compile(r"^(?P<name>.*) <(?P<email>[^<>]*)> \d+ [+-]\d{4}$")


def git_identity(repo: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The author and committer git would use in `repo` here on the host, as GIT_AUTHOR_NAME,
    GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL: from the environment, the
    repository's config, `includeIf` files, `$XDG_CONFIG_HOME/git/config` or `~/.gitconfig`,
    whichever git picks. Only these four values enter the room, not the files that hold them.
    Empty when git has no configured identity (auto-detection is not passed on: inside, git
    decides as it would anyway)."""
    from autodev.host import hostgit

    out: dict[str, str] = {}
    for role in ("AUTHOR", "COMMITTER"):
        try:
            r = hostgit.run(
                repo,
                "-c",
                "user.useConfigOnly=true",
                "var",
                f"GIT_{role}_IDENT",
                base_env=env,
                check=False,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired, AutodevError):
            return {}
        m = _IDENT.match(r.stdout.strip()) if r.returncode == 0 else None
        if m is None:
            return {}
        out[f"GIT_{role}_NAME"] = m["name"]
        out[f"GIT_{role}_EMAIL"] = m["email"]
    return out


def own_python() -> list[str]:
    """What a caller adds to a room's `expose` to run autodev's own code in it (`sys.executable
    -m autodev...`, e.g. a server an agent CLI starts inside): this interpreter's installation
    (sys.base_prefix), its virtualenv (sys.prefix) and the folder autodev is imported from (an
    editable install). Not shown by default: a Python under the home folder (pyenv, pipx) is
    no system folder, and a participant's commands do not need autodev."""
    import autodev

    here = Path(os.path.realpath(autodev.__file__)).parent.parent
    return list(dict.fromkeys(os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, here)))


def hidden(run_dir: Path) -> list[Path]:
    """The folders a command must not see: the user's home, autodev's home, the run folder."""
    from autodev.store.paths import autodev_home

    return [Path.home(), autodev_home(), Path(run_dir)]


def trial(room: Room) -> str:
    """Run `true` in `room` exactly as a command would run there: "" when it works, else why."""
    try:
        r = subprocess.run(
            room.wrap(["true"]),
            cwd=room.repo,
            env=room.env(dict(os.environ)),
            capture_output=True,
            text=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{room.sandbox.binary} could not run a command in the sandbox: {e}"
    if r.returncode != 0:
        detail = r.stderr.strip()[:300] or f"exit {r.returncode}"
        return f"{room.sandbox.binary} could not run a command in the sandbox: {detail}"
    return ""
