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

`resolve(mode)` turns the `sandbox` config key into what is in use; `Room.wrap()` wraps an
argv. Why bubblewrap and not Landlock, and what the sandbox cannot stop: docs/DECISIONS.md.
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
from autodev.guard import secrets

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

    def as_dict(self) -> dict[str, object]:
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
            cover = ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", _empty_file(), path]
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


# The system's own folders, shown read-only: programs, libraries and their configuration.
# /lib* is every /lib, /lib32, /lib64, /libx32 the machine has. Not shown: /home, /root, /srv,
# /mnt, /media, /var, /work-like folders, /sys and anything else at the top.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
FALLBACK_HOME = "/home/sandbox"


def private_home() -> str:
    """Where the private, empty home is inside: the user's home path when it is a folder of its
    own (not /, not a system folder or /tmp), else FALLBACK_HOME."""
    home = os.path.realpath(os.path.expanduser("~"))
    parts = Path(home).parts
    if len(parts) < 2 or "/" + parts[1] in (*SYSTEM, "/tmp", "/proc", "/dev", "/run"):
        return FALLBACK_HOME
    return home


def own_python() -> list[str]:
    """What a caller adds to a room's `expose` to run autodev's own code in it (`sys.executable
    -m autodev...`, e.g. a server an agent CLI starts inside): this interpreter's installation
    (sys.base_prefix), its virtualenv (sys.prefix) and the folder autodev is imported from (an
    editable install). Not shown by default: a Python under the home folder (pyenv, pipx) is
    no system folder, and a participant's commands do not need autodev."""
    import autodev

    here = Path(os.path.realpath(autodev.__file__)).parent.parent
    return list(dict.fromkeys(os.path.realpath(p) for p in (sys.base_prefix, sys.prefix, here)))


def system_mounts() -> list[str]:
    """bwrap options showing SYSTEM: a read-only bind for a folder, the same link for a link
    (/bin -> usr/bin on merged-/usr systems), nothing for what the machine lacks."""
    args: list[str] = []
    real_dirs = [p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]
    for path in SYSTEM:
        if os.path.islink(path):
            target = os.path.realpath(path)
            if any(target == d or target.startswith(d + "/") for d in real_dirs):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(target):  # a link to elsewhere (/opt -> /data/opt): its folder
                args += ["--ro-bind", target, path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def bwrap_args(
    repo: Path, *, hide=(), network: bool = False, expose=(), writable: bool = True, home: str | None = None
) -> list[str]:
    """The bwrap options (without the command). The root is empty: only SYSTEM (read-only),
    /dev, /proc, a private /tmp, /run and home, the `expose` paths (sandboxRead, read-only) and
    the repository with its git folders are in it, and the root itself is read-only. Mounts
    are applied outer folder first, so the repository stays visible when it lies inside a hidden
    or private folder (a repo under $HOME or /tmp). Not `writable`: the work tree and git folders
    are bound read-only, so no command can move the branch or change a file."""
    repo = Path(os.path.realpath(repo))
    bind = "--bind" if writable else "--ro-bind"
    home = home or private_home()
    mounts: list[tuple[int, int, list[str]]] = []  # (depth, order, args)

    def add(path: Path | str, order: int, *args: str) -> None:
        mounts.append((len(Path(path).parts), order, list(args)))

    add("/tmp", 0, "--tmpfs", "/tmp")
    add("/var/tmp", 0, "--tmpfs", "/var/tmp")  # private too: some programs put scratch files there
    add("/run", 0, "--tmpfs", "/run")
    add(home, 0, "--tmpfs", home)
    if os.path.isdir("/run/systemd/resolve"):  # DNS for commands allowed the network
        add("/run/systemd/resolve", 1, "--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve")
    shown = [Path(p) for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]
    for e in expose:
        real = os.path.realpath(os.path.expanduser(str(e)))
        if os.path.exists(real):
            add(real, 1, "--ro-bind", real, real)
            shown.append(Path(real))
    add(repo, 2, bind, str(repo), str(repo))
    shown.append(repo)
    for gitdir in git_dirs(repo):
        if gitdir != repo and repo not in gitdir.parents:
            add(gitdir, 2, bind, str(gitdir), str(gitdir))
            shown.append(gitdir)
    for h in hide:
        # Only a folder inside something shown needs covering (AUTODEV_HOME inside the
        # repository or an exposed path); elsewhere it is not in the sandbox at all, and an
        # empty folder there would only tell its name.
        real = Path(os.path.realpath(h))
        if real != Path("/") and real.is_dir() and any(real == s or s in real.parents for s in shown):
            add(real, 0, "--tmpfs", str(real))
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
        *system_mounts(),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    for _, _, m in mounts:
        args += m
    # the empty root itself read-only (mount points bwrap made stay; nothing new at the top)
    args += ["--remount-ro", "/", "--chdir", str(repo)]
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
