"""What a participant wrote that git would read as configuration or a redirect, moved out of
the repository before the user's own git sees it.

autodev's own git is pinned and defused (`hostgit`), but the user's is not: a `git status`
typed after the run reads whatever the sandbox left in `.git`. The sandbox mounts `.git/config`
and `.git/hooks` read-only; the rest of `.git` and the work tree are writable, and some of what
can be written there makes the user's git run a program or read another configuration:

- `.git/commondir` (a plain repository has none): git takes its configuration, hooks and
  refs from the folder it names;
- `.git/config.worktree`, and `config.worktree` of a `git worktree`'s folder: configuration;
- `.git/objects/info/alternates`: objects read from another folder;
- a git folder git enters for a submodule (`.git/modules/**`, the `.git` of every gitlink in the
  index) or that a user's git run in a subfolder finds first (a `.git` anywhere below the top of
  the work tree, and the folder a `gitdir:` file there names inside the repository): its
  `config` and `config.worktree` (git runs the fsmonitor, hooks and pager from there) unless
  every key in it is one of `SAFE_KEYS`, its `commondir`, its hooks (every file in `hooks/` but
  `*.sample`);
- a `.git` file (`gitdir: …`) or link below the top naming a folder outside the repository;
- `.gitmodules` with a command (`update = !cmd`) or a value git could read as an option
  (a url or path starting with `-`): git refuses every command on such a file;
- a link, FIFO or device anywhere in the repository's git folder (git writes none): a
  FIFO as a ref or an object stalls every git that reads it, the user's and autodev's.

Each is judged against what was there when the run started (`pin`): the user's own files stay.
`.git/commondir` is moved whenever it exists: a repository's own `.git` never has one.
`.git/info/attributes` is not moved: like `.gitattributes` it only picks drivers that the
(read-only) configuration defines.

`sweep` moves what it finds to `<dest>/<path relative to the work tree>` (a path outside the
work tree, a `git worktree`'s common folder, goes under `_common/`), and says what it moved; the
caller names it on the thread (docs/security.md, docs/DECISIONS.md).
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from autodev.errors import AutodevError, NotARepositoryError
from autodev.host import folderwalk, hostgit, spawn

# Keys a submodule's or nested repository's configuration may hold and still be left in place:
# what `git init`, `git clone` and `git submodule add` write. Anything else (an fsmonitor, a
# pager, hooksPath, an alias, an include, a filter) and the file is moved.
SAFE_KEYS = (
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.worktree",
    "core.autocrlf",
    "core.eol",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "remote.*.url",
    "remote.*.fetch",
    "remote.*.tagopt",
    "branch.*.remote",
    "branch.*.merge",
    "submodule.*.url",
    "submodule.*.active",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "index.version",
)
MAX_NESTED = 2000  # git folders looked at under .git/modules (a huge tree cannot stall a turn)

_pins: dict[str, dict[str, str]] = {}  # work tree -> path -> stamp at the run's start
_links: dict[str, tuple[tuple[int, int, int], list[str]]] = {}  # index -> (its stat, its gitlinks)


@dataclass(frozen=True)
class Moved:
    """One file moved out: where it was (relative to the work tree), why, and where it is now."""

    path: str
    why: str
    to: Path


def _stamp(path: Path) -> str:
    try:
        if path.is_symlink():
            return "link:" + os.readlink(path)
        if not path.is_file():
            return "-" if not os.path.lexists(path) else "special"
        with open(path, "rb") as f:
            return hashlib.sha256(f.read(1 << 22)).hexdigest()
    except OSError:
        return "?"


def _git_folder_files(g: Path) -> list[tuple[Path, str]]:
    """(file, kind) of a submodule's or nested repository's git folder that git reads."""
    out = [(g / "config", "config"), (g / "config.worktree", "config"), (g / "commondir", "redirect")]
    hooks = g / "hooks"
    if hooks.is_dir() and not hooks.is_symlink():
        out += [(h, "hook") for h in sorted(hooks.iterdir()) if not h.name.endswith(".sample")]
    return out


def _nested_git_folders(common: Path) -> list[Path]:
    """The git folders under `.git/modules` (a submodule's own submodules nest further)."""
    found: list[Path] = []
    top = common / "modules"
    if not top.is_dir() or top.is_symlink():
        return found
    for root, dirs, files in os.walk(top):
        if "HEAD" in files or "config" in files:
            found.append(Path(root))
            dirs[:] = [d for d in dirs if d == "modules"]
        if len(found) >= MAX_NESTED:
            break
        dirs[:] = [d for d in dirs if not (Path(root) / d).is_symlink()]
    return found


def _gitlinks(repo: Path, index: Path) -> list[str]:
    """The index's gitlinks (submodules): git enters each one's `.git` on `git status`. Listed
    again only when the index file changed (a large index is not read after every command)."""
    try:
        st = os.stat(index)
    except OSError:
        return []
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    cached = _links.get(str(index))
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        r = hostgit.run(repo, "ls-files", "-s", "-z", check=False, timeout=60)
    except (AutodevError, OSError, spawn.SubprocessError):
        return []  # the daemon's own git calls name what is wrong with the repository
    links = [e.split("\t", 1)[1] for e in r.stdout.split("\0") if e.startswith("160000 ") and "\t" in e]
    if r.returncode == 0:
        _links[str(index)] = (key, links)
    return links


def candidates(repo: Path) -> list[tuple[Path, str]]:
    """Every file `sweep` judges, with its kind: redirect, config, hook, gitdir, gitmodules,
    git-file (a link, FIFO or device in a git folder)."""
    return [*_own(repo), *_nested(repo)]


def _own(repo: Path) -> list[tuple[Path, str]]:
    """What lies in the repository's own git folders and `.gitmodules` (no git run to find it)."""
    work = Path(os.path.realpath(repo))
    try:
        kind, _, _, git_dir, common = hostgit.layout(work)
    except hostgit.GitRefused:
        kind, git_dir, common = "dir", work / ".git", work / ".git"
    except NotARepositoryError:
        return []
    out: list[tuple[Path, str]] = []
    if kind == "dir":
        out.append((common / "commondir", "own-commondir"))
    out += [(common / "config.worktree", "own-config"), (git_dir / "config.worktree", "own-config")]
    out.append((common / "objects" / "info" / "alternates", "redirect"))
    wts = common / "worktrees"
    if wts.is_dir() and not wts.is_symlink():
        for w in sorted(wts.iterdir()):
            if w != git_dir and w.is_dir() and not w.is_symlink():
                out += [(w / "config.worktree", "config"), (w / "commondir", "worktree-commondir")]
    for g in _nested_git_folders(common):
        out += _git_folder_files(g)
    out.append((work / ".gitmodules", "gitmodules"))
    for folder in [common] if _inside(str(git_dir), common) else [common, git_dir]:
        out += [(p, "git-file") for p in folderwalk.odd_entries(folder)]
    return list(dict.fromkeys(out))


def _nested(repo: Path) -> list[tuple[Path, str]]:
    """The `.git` of every nested repository and gitlink in the work tree (git enters a
    gitlink's on `git status`, and a user's git run in that folder uses it), with the files git
    reads there; a `gitdir:` file's target inside the repository is read too. Run only once the
    repository's own redirects are gone: the gitlinks come from git's index."""
    work = Path(os.path.realpath(repo))
    try:
        git_dir = hostgit.layout(work)[3]
    except (hostgit.GitRefused, NotARepositoryError):
        return []
    dotgits = [work / link / ".git" for link in _gitlinks(work, git_dir / "index")]
    out: list[tuple[Path, str]] = []
    for dotgit in dict.fromkeys([*dotgits, *folderwalk.dotgits(work)]):
        out += _dotgit_files(work, dotgit)
    return list(dict.fromkeys(out))


def _dotgit_files(work: Path, dotgit: Path) -> list[tuple[Path, str]]:
    if dotgit.is_symlink() or dotgit.is_file():
        out = [(dotgit, "gitdir")]
        target = _gitdir_target(dotgit)
        if target and _inside(target, work) and os.path.isdir(target) and not os.path.islink(target):
            out += _git_folder_files(Path(target))
        return out
    if dotgit.is_dir():
        return _git_folder_files(dotgit)
    return []


def _gitdir_target(dotgit: Path) -> str:
    """Where a `.git` file (or link) sends git, "" when it is neither."""
    if dotgit.is_symlink():
        return os.path.realpath(dotgit)
    text = dotgit.read_text(errors="replace")[:4096] if dotgit.is_file() else ""
    target = text[len("gitdir: ") :].strip() if text.startswith("gitdir: ") else ""
    return os.path.realpath(dotgit.parent / target) if target else ""


def _inside(path: str, work: Path) -> bool:
    return path == str(work) or path.startswith(str(work) + os.sep)


def pin(repo: Path) -> None:
    """What is there now is the user's (the daemon, at the run's start)."""
    work = os.path.realpath(repo)
    _pins[work] = {str(p): _stamp(p) for p, _ in candidates(Path(work))}


def forget(repo: Path, rel: str) -> bool:
    """Take `rel` (relative to the work tree) out of the pin, so the next sweep judges it: a
    copy of it in a quarantine folder means a crash cut its move short (copied, not yet
    deleted), and the file in the repository is not the user's. True when it was pinned."""
    work = os.path.realpath(repo)
    return _pins.get(work, {}).pop(os.path.join(work, rel), None) is not None


def config_entries(path: Path) -> list[tuple[str, str]] | None:
    """(key, value) of one configuration file, includes not followed; None when git cannot
    read it (git would fail on it too). No repository is involved: only the file is read."""
    argv = [hostgit.git_binary(), "config", "--no-includes", "--file", str(path), "--list", "-z"]
    env = hostgit.git_env(
        {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_DIR": "/dev/null"}
    )
    try:
        r = spawn.run(argv, "git", cwd="/", env=env, capture_output=True, stdin=spawn.DEVNULL, timeout=30)
    except (OSError, spawn.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    out: list[tuple[str, str]] = []
    for entry in r.stdout.decode(errors="replace").split("\0"):
        if entry:
            key, _, value = entry.partition("\n")
            out.append((key.lower(), value))
    return out


def _unsafe_keys(path: Path) -> list[str] | None:
    entries = config_entries(path)
    if entries is None:
        return None
    safe = [k.lower() for k in SAFE_KEYS]
    return [k for k, _ in entries if not any(fnmatch.fnmatchcase(k, s) for s in safe)]


def _why(path: Path, kind: str, work: Path) -> str:
    """Why `path` (changed since the pin) must go, or "" when it may stay."""
    if path.is_symlink() and kind != "gitdir":
        return "is a symbolic link that git would follow"
    if not path.is_symlink() and not path.is_file() and kind != "hook":
        return "is not a regular file (git would open it)"  # a FIFO would stall whoever reads it
    if kind == "own-commondir":
        return "redirects the repository's git to another folder (its configuration and hooks)"
    if kind == "own-config":
        return "is configuration git reads for this repository (the sandbox keeps .git/config read-only)"
    if kind == "redirect":
        return "redirects git to another folder"
    if kind == "worktree-commondir":
        target = (path.parent / path.read_text(errors="replace").strip()).resolve()
        common = path.parent.parent.parent.resolve()
        return "" if target == common else f"redirects a worktree's git to {target}"
    if kind == "hook":
        return "is a hook: git runs it in a submodule or nested repository"
    if kind == "config":
        bad = _unsafe_keys(path)
        if bad is None:
            return "is a configuration file git cannot read"
        if bad:
            return "is configuration git reads for a submodule or nested repository, with " + ", ".join(
                sorted(set(bad))[:6]
            )
        return ""
    if kind == "gitdir":
        real = _gitdir_target(path)
        if real and _inside(real, work):
            return ""  # the folder it names is judged as a git folder of its own
        return f"sends git to a folder outside the repository ({real or 'not a gitdir: file'})"
    if kind == "gitmodules":
        entries = config_entries(path)
        if entries is None:
            return "is a .gitmodules git cannot read"
        for k, v in entries:
            if k.startswith("submodule.") and k.endswith(".update") and v.strip().startswith("!"):
                return f"names a command for git to run ({k} = {v.strip()[:80]})"
            if k.startswith("submodule.") and k.endswith((".url", ".path")) and v.strip().startswith("-"):
                return f"has a value git could read as an option ({k} = {v.strip()[:80]})"
        return ""
    return ""


def _dest_rel(path: Path, work: Path, common: Path) -> str:
    try:
        return str(path.relative_to(work))
    except ValueError:
        try:
            return str(Path("_common") / path.relative_to(common))
        except ValueError:
            return str(Path("_outside") / str(path).lstrip("/"))


def sweep(repo: Path, dest: Path) -> list[Moved]:
    """Move what changed since the pin and git would run or follow into `dest` (created only
    when something moves). What could not be moved is raised (`QuarantineFailed`), never left
    silently."""
    work = Path(os.path.realpath(repo))
    if str(work) not in _pins:
        pin(work)  # the first look: what is there is the user's (commondir excepted)
    pinned = _pins[str(work)]
    try:
        common = hostgit.layout(work)[4]
    except (hostgit.GitRefused, NotARepositoryError):
        common = work / ".git"
    moved = _move_all(_own(work), work, common, pinned, dest)
    # only now, with the repository's own redirects gone, can git list the gitlinks
    return moved + _move_all(_nested(work), work, common, pinned, dest)


def _move_all(
    found: list[tuple[Path, str]], work: Path, common: Path, pinned: dict[str, str], dest: Path
) -> list[Moved]:
    moved: list[Moved] = []
    for path, kind in found:
        now = _stamp(path)
        if now == "-" or (kind != "own-commondir" and pinned.get(str(path), "-") == now):
            continue
        try:
            why = _why(path, kind, work)
        except OSError as e:
            why = f"cannot be read ({e.strerror})"
        if not why:
            continue
        rel = _dest_rel(path, work, common)
        target = dest / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            _move(path, target)
        except OSError as e:
            raise QuarantineFailed(
                f"{path} {why}, and autodev could not move it to {target}: {e}",
                f"move or delete {path} yourself before running git in the repository",
            ) from None
        moved.append(Moved(rel, why, target))
    return moved


def _move(path: Path, target: Path) -> None:
    """A rename where it can be; across file systems a copy and a delete, except for a FIFO or a
    device, which holds nothing to keep (copying one would block): it is deleted, and a note
    takes its place in the quarantine folder."""
    try:
        os.rename(path, target)
        return
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
    if not path.is_symlink() and not path.is_file() and not path.is_dir():
        path.unlink()
        target.with_name(target.name + ".removed").write_text(
            "a FIFO or device file was here; it was deleted\n"
        )
        return
    shutil.move(str(path), str(target))


class QuarantineFailed(hostgit.GitRefused):
    """A file git would run or follow could not be moved out of the repository."""
