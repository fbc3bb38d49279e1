"""The room a participant's commands run in: bubblewrap (`bwrap`) on Linux.

Inside: a fresh PID namespace and /proc (no other process's environment or command line is
visible), the whole filesystem read-only except the repository and a private /tmp,
`.git/hooks`, `.git/config` and `.autodev/` read-only, `.git` itself a mount point (it cannot be
renamed or replaced), `$HOME`, `$AUTODEV_HOME` and the run
folder replaced by empty folders (the git identity, read on the host, enters as the four
GIT_AUTHOR_*/GIT_COMMITTER_* variables, so commits work without ~/.gitconfig), /run (agent and Docker sockets) hidden, and no network
unless asked for. The daemon, its run folder, its inbox and its state are out of reach, so a
command can neither read the keys nor speak for the user.

`resolve(mode)` turns the `sandbox` config key into what is in use; `Sandbox.command()` wraps
an argv. Why bubblewrap and not Landlock, and what the sandbox cannot stop: docs/DECISIONS.md.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from autodev.errors import AutodevError, ConfigError, NotARepositoryError

MODES = ("auto", "bwrap", "off")
PACKAGE = "bubblewrap"  # the Debian/Ubuntu/Fedora/Arch package that ships bwrap
# Where to find bwrap when not on PATH under that name (a test points it at nothing to see
# the warning path; a user can point it at a build of their own).
BWRAP_ENV = "AUTODEV_BWRAP"

_probed: dict[str, str] = {}  # bwrap path -> "" when it works here, else why not

# What to do about a bwrap that is installed but cannot build the sandbox (most often: the
# kernel, AppArmor or a container's seccomp profile forbids unprivileged user namespaces).
BROKEN_FIX = (
    "let unprivileged users create namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`; on "
    "Ubuntu 24.04 and later `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`; in a "
    "container, a seccomp profile that allows unshare/clone with namespaces), or set "
    'sandbox = "off" in .autodev/config.toml to run commands unsandboxed'
)


@dataclass(frozen=True)
class Sandbox:
    mode: str  # what the config asks for: auto | bwrap | off
    binary: str | None  # the bwrap in use, None when commands run unsandboxed
    problem: str = ""  # why there is none although one was wanted

    @property
    def active(self) -> bool:
        return self.binary is not None

    def describe(self) -> str:
        """One line for `start`, status and the panel."""
        if self.active:
            return f"bubblewrap ({self.binary})"
        if self.mode == "off":
            return 'off (sandbox = "off" in .autodev/config.toml): commands run unsandboxed'
        return f"none: {self.problem}"

    @property
    def warning(self) -> str | None:
        """What start, status and the panel header warn about; None when all is as configured."""
        if self.active or self.mode == "off":
            return None
        return (
            f"commands run UNSANDBOXED: {self.problem}; install the `{PACKAGE}` package "
            '(e.g. `apt-get install bubblewrap`), or set sandbox = "off" in .autodev/config.toml '
            "to silence this"
        )

    def as_dict(self) -> dict:
        return {
            "mode": self.mode,
            "active": self.active,
            "describe": self.describe(),
            "warning": self.warning,
        }

    def offline(self, argv: list[str]) -> list[str]:
        """`argv` with no network (a namespace of its own, not even the host's loopback) and the
        rest of the machine as it is: how an MCP server runs under commandNetwork = false.
        Unchanged when no sandbox is in use (status and start warn about that)."""
        if self.binary is None:
            return list(argv)
        return [self.binary, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", *argv]

    def room(
        self, repo: Path, *, hide=(), network: bool = False, expose=(), writable: bool = True, secret_files=()
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


@dataclass(frozen=True)
class Room:
    sandbox: Sandbox
    repo: Path
    hide: tuple[Path, ...] = ()
    network: bool = False
    expose: tuple = ()
    # GIT_AUTHOR_*/GIT_COMMITTER_* from git_identity; None: read at the first command, so a turn
    # that runs none costs no git call, and a `git config` fixed mid-run holds from the next turn
    identity: tuple[tuple[str, str], ...] | None = ()
    writable: bool = True  # False: the repository (work tree and git folders) is mounted read-only
    secret_files: tuple[str, ...] = ()  # config secretFiles: seen empty inside

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` wrapped to run inside the sandbox; unchanged when none is in use."""
        binary = self.sandbox.binary
        if binary is None:
            return list(argv)
        opts = bwrap_args(
            self.repo, hide=self.hide, network=self.network, expose=self.expose, writable=self.writable
        )
        for path in secret_paths(self.repo, self.secret_files):
            # an empty file (or folder) in its place: no command reads the keys it holds
            opts[-2:-2] = ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", _empty_file(), path]
        return [binary, *opts, "--", *argv]

    def env(self, env: dict[str, str]) -> dict[str, str]:
        """The (already scrubbed) environment as the command should see it: temporary files
        go to the private /tmp, and the machine-side folder is not named."""
        if not self.sandbox.active:
            return dict(env)
        out = dict(env)
        out.pop("AUTODEV_HOME", None)
        out["TMPDIR"] = "/tmp"
        out.update(self._identity)
        return out

    @functools.cached_property
    def _identity(self) -> tuple[tuple[str, str], ...]:
        return tuple(git_identity(self.repo).items()) if self.identity is None else self.identity


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


def bwrap_args(repo: Path, *, hide=(), network: bool = False, expose=(), writable: bool = True) -> list[str]:
    """The bwrap options (without the command). Mounts are applied outer folder first, so the
    repository stays visible when it lies inside a hidden folder (a repo under $HOME or /tmp).
    Not `writable`: the work tree and git folders are bound read-only, so no command can move
    the branch or change a file."""
    repo = Path(os.path.realpath(repo))
    bind = "--bind" if writable else "--ro-bind"
    mounts: list[tuple[int, int, list[str]]] = []  # (depth, order, args)

    def add(path: Path | str, order: int, *args: str) -> None:
        mounts.append((len(Path(path).parts), order, list(args)))

    add("/tmp", 0, "--tmpfs", "/tmp")
    add("/run", 0, "--tmpfs", "/run")
    if os.path.isdir("/run/systemd/resolve"):  # DNS for commands allowed the network
        add("/run/systemd/resolve", 1, "--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve")
    for h in hide:
        real = os.path.realpath(h)
        if real != "/" and os.path.isdir(real):
            add(real, 0, "--tmpfs", real)
    for e in expose:
        real = os.path.realpath(os.path.expanduser(str(e)))
        if os.path.exists(real):
            add(real, 1, "--ro-bind", real, real)
    add(repo, 2, bind, str(repo), str(repo))
    for gitdir in git_dirs(repo):
        if gitdir != repo and repo not in gitdir.parents:
            add(gitdir, 2, bind, str(gitdir), str(gitdir))
    dotgit = repo / ".git"
    if os.path.lexists(dotgit) and not os.path.islink(dotgit):
        # `.git` a mount point of its own: it cannot be renamed or replaced (the read-only
        # mounts over its hooks and config would move with a renamed folder).
        add(dotgit, 2, bind, str(dotgit), str(dotgit))
    for ro in protected(repo):
        add(ro, 3, "--ro-bind", str(ro), str(ro))
    mounts.sort(key=lambda m: (m[0], m[1]))
    args = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        *([] if network else ["--unshare-net"]),
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    for _, _, m in mounts:
        args += m
    args += ["--chdir", str(repo)]
    return args


_EMPTY: list[str] = []


def _empty_file() -> str:
    """An empty read-only file on the host, bound over each secret file (a device node such as
    /dev/null cannot be: the sandbox mounts binds without devices)."""
    if not _EMPTY or not os.path.isfile(_EMPTY[0]) or os.path.getsize(_EMPTY[0]):
        import tempfile

        fd, path = tempfile.mkstemp(prefix="autodev-empty-")
        os.close(fd)
        os.chmod(path, 0o444)
        _EMPTY[:] = [path]
    return _EMPTY[0]


_NOT_WALKED = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".mypy_cache", ".cache"}
MAX_WALKED = 200_000  # entries looked at for secret files, so a huge tree cannot stall a command


def secret_paths(repo: Path, patterns: tuple[str, ...]) -> list[str]:
    """The files and folders in `repo` matching `secretFiles` (not followed into dependency and
    cache folders), as absolute paths for the sandbox to cover."""
    from autodev.guard.redact import is_secret_file

    if not patterns:
        return []
    root = os.path.realpath(repo)
    found: list[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if d not in _NOT_WALKED]
        for name in [*dirs, *files]:
            seen += 1
            path = name if rel == "." else f"{rel}/{name}"
            if is_secret_file(name, patterns) or is_secret_file(path, patterns):
                full = os.path.join(folder, name)
                if not os.path.islink(full):
                    found.append(full)
        dirs[:] = [d for d in dirs if not is_secret_file(d, patterns)]
        if seen > MAX_WALKED:
            break
    return found


def git_dirs(repo: Path) -> list[Path]:
    """The repository's git folder and common folder (outside the work tree for a `git
    worktree`), which commits must be able to write. Read from the files, no git run: a `.git`
    that hostgit refuses is still covered as the folder it is."""
    from autodev.host import hostgit

    repo = Path(os.path.realpath(repo))
    try:
        _, _, _, git_dir, common = hostgit.layout(repo)
    except hostgit.GitRefused:
        return [repo / ".git"] if (repo / ".git").is_dir() and not (repo / ".git").is_symlink() else []
    except NotARepositoryError:
        return []
    return list(dict.fromkeys([Path(os.path.realpath(git_dir)), Path(os.path.realpath(common))]))


def protected(repo: Path) -> list[Path]:
    """What stays read-only inside the sandbox although it lies in a writable folder: the
    team and config (`.autodev/`), and git's hooks and config, which would run code or change
    what git does outside the sandbox. A missing hooks folder is created so it can be covered."""
    out = []
    for g in git_dirs(repo):
        hooks = g / "hooks"
        try:
            hooks.mkdir(exist_ok=True)
        except OSError:
            pass
        for p in (hooks, g / "config", g / "config.worktree"):
            if p.exists():
                out.append(p)
    if (repo / ".autodev").exists():
        out.append(repo / ".autodev")
    return out


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


def find_bwrap() -> str | None:
    override = os.environ.get(BWRAP_ENV)
    if override is not None:
        return override if override and os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


def probe(binary: str) -> str:
    """Empty when `binary` can build the sandbox here, else the reason (e.g. user namespaces are
    disabled, or a container without the rights to mount /proc). Cached per process."""
    if binary in _probed:
        return _probed[binary]
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        argv = [binary, *bwrap_args(Path(d)), "--", "true"]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
            why = "" if r.returncode == 0 else f"{binary} does not work here: {r.stderr.strip()[:300]}"
        except (OSError, subprocess.TimeoutExpired) as e:
            why = f"{binary} does not work here: {e}"
    _probed[binary] = why
    return why


def resolve(mode: str) -> Sandbox:
    """What the `sandbox` config key gives on this machine. `"bwrap"` without a working bwrap
    is a ConfigError (start refuses); `"auto"` falls back to none with a warning."""
    if mode not in MODES:
        raise ConfigError(
            f"sandbox = {mode!r} is not one of {', '.join(MODES)}",
            'set sandbox = "auto" (the default), "bwrap" or "off" in .autodev/config.toml',
        )
    if mode == "off":
        return Sandbox("off", None)
    if not sys.platform.startswith("linux"):
        problem = f"no sandbox is available on {sys.platform} (bubblewrap needs Linux)"
    else:
        binary = find_bwrap()
        if binary is None:
            problem = f"bwrap was not found (the `{PACKAGE}` package provides it)"
        else:
            problem = probe(binary)
            if not problem:
                return Sandbox(mode, binary)
    if mode == "bwrap":
        raise ConfigError(
            f'sandbox = "bwrap" in .autodev/config.toml, but {problem}',
            f"install the `{PACKAGE}` package (e.g. `apt-get install bubblewrap`), or set "
            'sandbox = "auto" to run unsandboxed with a warning',
        )
    return Sandbox(mode, None, problem)
