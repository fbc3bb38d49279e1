"""What a sandbox room shows and where: the bwrap options of `sandbox.Room.wrap`. The system's
own folders read-only (`SYSTEM`), a private /tmp, /run and home, the paths config `sandboxRead`
adds, the repository with its git folders (read-only ones inside: `protected`), and covers over
the folders a command must not see. The why of each is `sandbox`'s docstring.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from autodev.errors import NotARepositoryError

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
    repo: Path,
    *,
    hide: Iterable[Path | str] = (),
    network: bool = False,
    expose: Iterable[str] = (),
    writable: bool = True,
    home: str | None = None,
) -> list[str]:
    """The bwrap options (without the command). The root is empty: only SYSTEM (read-only),
    /dev, /proc, a private /tmp, /run and home, the `expose` paths (sandboxRead, read-only) and
    the repository with its git folders are in it, and the root itself is read-only. Mounts
    are applied outer folder first, so the repository stays visible when it lies inside a hidden
    or private folder (a repo under $HOME or /tmp). Not `writable`: the work tree and git folders
    are bound read-only, so no command can move the branch or change a file."""
    repo = Path(os.path.realpath(repo))
    bind = "--bind" if writable else "--ro-bind"
    mounts = _Mounts()
    _private(mounts, home or private_home())
    _shown(mounts, repo, bind, expose)
    _covered(mounts, hide)
    _guarded(mounts, repo, bind)
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
        *mounts.ordered(),
    ]
    # the empty root itself read-only (mount points bwrap made stay; nothing new at the top)
    args += ["--remount-ro", "/", "--chdir", str(repo)]
    return args


class _Mounts:
    """A room's mounts, applied outer folder first (then by `order`), and the folders shown."""

    def __init__(self) -> None:
        self.mounts: list[tuple[int, int, list[str]]] = []  # (depth, order, args)
        self.shown = [Path(p) for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]

    def add(self, path: Path | str, order: int, *args: str) -> None:
        self.mounts.append((len(Path(path).parts), order, list(args)))

    def ordered(self) -> list[str]:
        return [a for _, _, m in sorted(self.mounts, key=lambda m: (m[0], m[1])) for a in m]


def _private(mounts: _Mounts, home: str) -> None:
    """The room's own empty /tmp, /var/tmp, /run and home; the host's resolver for DNS."""
    mounts.add("/tmp", 0, "--tmpfs", "/tmp")
    mounts.add("/var/tmp", 0, "--tmpfs", "/var/tmp")  # private too: some programs put scratch files there
    mounts.add("/run", 0, "--tmpfs", "/run")
    mounts.add(home, 0, "--tmpfs", home)
    if os.path.isdir("/run/systemd/resolve"):  # DNS for commands allowed the network
        mounts.add("/run/systemd/resolve", 1, "--ro-bind", "/run/systemd/resolve", "/run/systemd/resolve")


def _shown(mounts: _Mounts, repo: Path, bind: str, expose: Iterable[str]) -> None:
    """The `expose` paths (read-only), the repository and its git folders outside it."""
    for e in expose:
        real = os.path.realpath(os.path.expanduser(str(e)))
        if os.path.exists(real):
            mounts.add(real, 1, "--ro-bind", real, real)
            mounts.shown.append(Path(real))
    mounts.add(repo, 2, bind, str(repo), str(repo))
    mounts.shown.append(repo)
    for gitdir in git_dirs(repo):
        if gitdir != repo and repo not in gitdir.parents:
            mounts.add(gitdir, 2, bind, str(gitdir), str(gitdir))
            mounts.shown.append(gitdir)


def _covered(mounts: _Mounts, hide: Iterable[Path | str]) -> None:
    # Only a folder inside something shown needs covering (AUTODEV_HOME inside the repository or
    # an exposed path); elsewhere it is not in the sandbox at all, and an empty folder there
    # would only tell its name.
    for h in hide:
        real = Path(os.path.realpath(h))
        if real != Path("/") and real.is_dir() and any(real == s or s in real.parents for s in mounts.shown):
            mounts.add(real, 0, "--tmpfs", str(real))


def _guarded(mounts: _Mounts, repo: Path, bind: str) -> None:
    """`.git` a mount point of its own, and what stays read-only in the repository (`protected`)."""
    dotgit = repo / ".git"
    if os.path.lexists(dotgit) and not os.path.islink(dotgit):
        # `.git` a mount point of its own: it cannot be renamed or replaced (the read-only
        # mounts over its hooks and config would move with a renamed folder).
        mounts.add(dotgit, 2, bind, str(dotgit), str(dotgit))
    for ro in protected(repo):
        mounts.add(ro, 3, "--ro-bind", str(ro), str(ro))


_EMPTY: list[str] = []


def empty_file() -> str:
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
    out: list[Path] = []
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
