"""Every git command autodev runs on the host goes through here (credit, the audit, the file
tools, status, doctor, init, demo, the sandbox's look at the git folders).

The repository is the participants' to write; git reads programs from it. So each command:

- is pinned to the repository: `--git-dir` and `--work-tree` given, every `GIT_*` variable of
  the environment dropped (`GIT_DIR`, `GIT_CONFIG_PARAMETERS`, `GIT_EXTERNAL_DIFF`…), git itself
  found on the absolute entries of PATH only;
- overrides, with `-c`, the settings that run a program: the fsmonitor, hooks, the pager, external
  diff, credential helpers, ssh, `protocol.ext`, submodule recursion, automatic gc; every filter
  driver the configuration defines is blanked (a `.gitattributes` picks drivers by name);
  `status`/`diff` get `--ignore-submodules=all`, diffs `--no-ext-diff --no-textconv`;
- refuses what `-c` cannot override: an `include.path`/`includeIf` in the repository's own
  configuration, a configuration file inside the repository other than `.git/config`, a `.git`
  that is a symlink, a `commondir` in a plain `.git`, a `gitdir:` file that is not a `git
  worktree`'s.

A process pins the repository once (`pin_run`, the daemon at run start): from then on every
command first checks that `.git` is the same folder (device and inode), the common folder too,
and the configuration files hold the same bytes, and refuses otherwise (`GitRefused`): a
renamed, replaced or redirected `.git` is never used. A process that pinned nothing (the CLI's
short commands, tests) gets the structural checks on every command. A command that fails (or
does not finish) is `GitFailed`: the daemon pauses the run naming git's message, never exits.
What the user's own git would run is moved out of the repository by `gitquarantine`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from autodev.errors import AutodevError, NotARepositoryError, RepositoryRefused
from autodev.host import spawn

# Settings that make git run a program, set to run none. `-c` outranks every config file.
SAFE_SETTINGS = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.sshCommand=false",
    "core.askPass=",
    "core.editor=false",
    "sequence.editor=false",
    "credential.helper=",
    "diff.external=",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "log.showSignature=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "fetch.recurseSubmodules=false",
)
_DIFFS = {"diff", "log", "show"}
# An explicit `--ignore-submodules` keeps git from reading `.gitmodules` for the default, so a
# `.gitmodules` git cannot parse (`update = !cmd`) does not fail the command. diff-tree keeps
# its plumbing default (a gitlink's change is a change).
_SUBMODULE_AWARE = {"status": "all", "diff": "all", "log": "all", "show": "all", "diff-tree": "none"}
# The environment's git settings that may stay: the index a command works on, who commits.
_KEPT_ENV = ("GIT_INDEX_FILE", "GIT_AUTHOR_", "GIT_COMMITTER_")
REFUSED_FIX = (
    "look at what changed in the repository's .git (`ls -la .git`, `cat .git/config`), restore it, "
    "then `autodev start` again"
)


class GitRefused(RepositoryRefused):
    """The repository's git folder or configuration is not one autodev runs git on."""


class GitFailed(RepositoryRefused):
    """A git command autodev needs failed on the repository (a corrupt index, a ref to a missing
    object, a `.gitmodules` git cannot parse): the run pauses naming git's message, the daemon
    stays up."""


@dataclass(frozen=True)
class Identity:
    """What `.git` was when the repository was pinned."""

    work_tree: Path
    kind: str  # "dir" (a plain repository) or "file" (a `git worktree`'s gitdir: file)
    dotgit: tuple[int, int]  # device, inode of <work tree>/.git
    dotgit_text: str  # the gitdir: file's text ("" for a folder)
    git_dir: Path
    common_dir: Path
    common: tuple[int, int]
    config: tuple[tuple[str, str], ...]  # (file, sha256 or "-" when absent)
    filters: tuple[str, ...]  # the filter drivers defined anywhere: blanked on every command


_run_pins: dict[Path, Identity] = {}
_git_binary: list[str] = []


def git_binary() -> str:
    """git on the absolute entries of PATH: an empty or relative entry (".") would find a `git`
    in the repository when the working directory is there."""
    if not _git_binary:
        for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
            cand = os.path.join(d, "git")
            if os.path.isabs(d) and os.path.isfile(cand) and os.access(cand, os.X_OK):
                _git_binary.append(cand)
                break
        else:
            raise AutodevError("git is not on PATH", "install git (e.g. `apt-get install git`)")
    return _git_binary[0]


def git_env(extra: dict[str, str] | None = None, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for git: no GIT_* of the caller's but the index and identity ones."""
    env = {
        k: v
        for k, v in (os.environ if base is None else base).items()
        if not k.startswith("GIT_") or k.startswith(_KEPT_ENV)
    }
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_NO_REPLACE_OBJECTS="1", GIT_PAGER="cat")
    env.update(extra or {})
    return env


def _sha(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return "-"
    except OSError as e:
        raise GitRefused(f"cannot read {path}: {e}", REFUSED_FIX) from None


def _devino(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def layout(work_tree: Path) -> tuple[str, tuple[int, int], str, Path, Path]:
    """(kind, .git's device+inode, gitdir: text, git dir, common dir), or GitRefused."""
    dotgit = work_tree / ".git"
    try:
        st = os.lstat(dotgit)
    except FileNotFoundError:
        raise NotARepositoryError(
            f"{work_tree} has no .git", "run autodev inside a git repository (or `git init` one first)"
        ) from None
    ident = (st.st_dev, st.st_ino)
    if stat.S_ISLNK(st.st_mode):
        raise GitRefused(
            f"{dotgit} is a symbolic link; autodev runs git only on a real .git folder", REFUSED_FIX
        )
    if stat.S_ISDIR(st.st_mode):
        if os.path.lexists(dotgit / "commondir"):
            raise GitRefused(
                f"{dotgit}/commondir redirects git to another folder; a repository's own .git has none",
                "remove .git/commondir (and check .git/config), then `autodev start` again",
            )
        return "dir", ident, "", dotgit, dotgit
    if not stat.S_ISREG(st.st_mode):
        raise GitRefused(f"{dotgit} is neither a folder nor a file", REFUSED_FIX)
    text = dotgit.read_text(errors="replace")[:4096]
    git_dir, common = _worktree_dirs(work_tree, text)
    return "file", ident, text, git_dir, common


def _worktree_dirs(work_tree: Path, text: str) -> tuple[Path, Path]:
    """A gitdir: file is followed only as `git worktree add` writes it: to
    <common>/worktrees/<name>, whose `gitdir` names this .git file back."""
    dotgit = work_tree / ".git"
    bad = GitRefused(
        f"{dotgit} is a gitdir: file that is not a `git worktree` of a repository",
        "autodev runs git only in a repository's own .git folder or a `git worktree`; " + REFUSED_FIX,
    )
    if not text.startswith("gitdir: "):
        raise bad
    target = text[len("gitdir: ") :].strip()
    git_dir = Path(os.path.realpath(target if os.path.isabs(target) else work_tree / target))
    try:
        common_rel = (git_dir / "commondir").read_text().strip()
        back = (git_dir / "gitdir").read_text().strip()
    except OSError:
        raise bad from None
    common = Path(os.path.realpath(git_dir / common_rel))
    if git_dir.parent != common / "worktrees" or os.path.realpath(back) != os.path.realpath(dotgit):
        raise bad
    if os.path.lexists(common / "commondir") or not (common / "objects").is_dir():
        raise bad
    return git_dir, common


def _config_files(git_dir: Path, common: Path) -> list[Path]:
    return list(dict.fromkeys([common / "config", common / "config.worktree", git_dir / "config.worktree"]))


def identify(repo: Path) -> Identity:
    """Pin `repo`: its layout checked, its configuration read once for what `-c` cannot
    override (includes, config files inside the repository) and the filter drivers to blank."""
    work_tree = Path(os.path.realpath(repo))
    kind, ident, text, git_dir, common = layout(work_tree)
    files = _config_files(git_dir, common)
    config = tuple((str(f), _sha(f)) for f in files)
    base = Identity(work_tree, kind, ident, text, git_dir, common, _devino(common), config, ())
    r = spawn.run(
        _argv(base, ["config", "--list", "--show-origin", "--show-scope", "-z"]),
        "git",
        cwd=work_tree,
        env=git_env(),
        capture_output=True,
        stdin=spawn.DEVNULL,
        timeout=60,
    )
    if r.returncode not in (0, 1):  # 1: no configuration at all
        raise GitRefused(
            f"git cannot read the configuration of {work_tree}: {r.stderr.decode(errors='replace').strip()[:300]}",
            REFUSED_FIX,
        )
    filters = _check_config(base, r.stdout.decode(errors="replace"), {str(f) for f in files})
    return replace(base, filters=tuple(sorted(filters)))


def _check_config(base: Identity, listing: str, own_files: set[str]) -> set[str]:
    """The filter drivers defined; GitRefused for an include in the repository's configuration
    or a configuration file that lies in the repository (a participant could write it)."""
    filters: set[str] = set()
    fields = listing.split("\0")
    inside = (str(base.work_tree) + os.sep, str(base.git_dir) + os.sep, str(base.common_dir) + os.sep)
    for i in range(0, len(fields) - 2, 3):
        scope, origin, entry = fields[i], fields[i + 1], fields[i + 2]
        key = entry.split("\n", 1)[0].lower()
        path = origin[len("file:") :] if origin.startswith("file:") else ""
        real = os.path.realpath(path) if path else ""
        if scope in ("local", "worktree") and (key == "include.path" or key.startswith("includeif.")):
            raise GitRefused(
                f"{path or origin} includes another file ({key}); autodev does not follow includes in "
                "a repository's own configuration",
                "move the included settings into .git/config itself (or your ~/.gitconfig), then "
                "`autodev start` again",
            )
        if real and real not in own_files and real.startswith(inside):
            raise GitRefused(
                f"git reads configuration from {real}, a file inside the repository that a participant could write",
                "remove the include that names it from your git configuration, then `autodev start` again",
            )
        parts = key.split(".")
        if len(parts) >= 3 and parts[0] == "filter" and parts[-1] in ("clean", "smudge", "process"):
            filters.add(entry.split("\n", 1)[0].split(".", 1)[1].rsplit(".", 1)[0])
    return filters


def _argv(ident: Identity, args: list[str]) -> list[str]:
    argv = [git_binary(), "--no-pager", f"--git-dir={ident.git_dir}", f"--work-tree={ident.work_tree}"]
    for setting in SAFE_SETTINGS:
        argv += ["-c", setting]
    for name in ident.filters:
        for part in ("clean=", "smudge=", "process=", "required=false"):
            argv += ["-c", f"filter.{name}.{part}"]
    if args and args[0] in _SUBMODULE_AWARE.keys() | _DIFFS:
        extra: list[str] = []
        if args[0] in _SUBMODULE_AWARE:
            extra.append(f"--ignore-submodules={_SUBMODULE_AWARE[args[0]]}")
        if args[0] in _DIFFS:
            extra += ["--no-ext-diff", "--no-textconv"]
        args = [args[0], *extra, *args[1:]]
    return argv + list(args)


def pin_run(repo: Path) -> Identity:
    """Pin `repo` for the rest of this process (the daemon, at run start)."""
    ident = identify(repo)
    _run_pins[ident.work_tree] = ident
    return ident


def unpin(repo: Path) -> None:
    _run_pins.pop(Path(os.path.realpath(repo)), None)


def current(repo: Path) -> Identity:
    """The identity to run git with: the run's pin, checked to be unchanged, else a fresh one."""
    work_tree = Path(os.path.realpath(repo))
    pinned = _run_pins.get(work_tree)
    if pinned is None:
        return identify(work_tree)
    verify(pinned)
    return pinned


def verify(ident: Identity) -> None:
    """GitRefused unless `.git`, the common folder and the configuration are as pinned."""
    dotgit = ident.work_tree / ".git"
    try:
        kind, devino, text, git_dir, common = layout(ident.work_tree)
        same = (kind, devino, text, git_dir, common) == (
            ident.kind,
            ident.dotgit,
            ident.dotgit_text,
            ident.git_dir,
            ident.common_dir,
        ) and _devino(common) == ident.common
    except (NotARepositoryError, OSError):
        same = False
    if not same:
        raise GitRefused(
            f"{dotgit} is not the git folder this run started with (it was moved, replaced or redirected)",
            REFUSED_FIX,
        )
    for f, digest in ident.config:
        if _sha(Path(f)) != digest:
            raise GitRefused(f"{f} changed since this run started", REFUSED_FIX)


def command(
    repo: Path, *args: str, env: dict[str, str] | None = None, base_env: Mapping[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of one git command on `repo`, checked; for callers that need a Popen.
    `env`: variables to add; `base_env`: the environment to start from (default: this process's)."""
    ident = current(repo)
    return _argv(ident, list(args)), git_env(env, base_env)


def run(
    repo: Path,
    *args: str,
    env: dict[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float | None = 300,
    what: str = "",
) -> spawn.CompletedProcess[str]:
    """Run one git command on `repo` (text in and out). `check`: a failure is an AutodevError
    naming the command and git's message."""
    return start(repo, *args, env=env, base_env=base_env, timeout=timeout, what=what).finish(check)


def start(
    repo: Path,
    *args: str,
    env: dict[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    timeout: float | None = 300,
    what: str = "",
) -> Started:
    """`run`, begun now and read by `Started.finish`: git works while the caller does something else."""
    argv, full_env = command(repo, *args, env=env, base_env=base_env)
    proc = spawn.popen(
        argv,
        "git",
        cwd=Path(repo),
        env=full_env,
        stdout=spawn.PIPE,
        stderr=spawn.PIPE,
        text=True,
        errors="surrogateescape",
        stdin=spawn.DEVNULL,
    )
    deadline = None if timeout is None else time.monotonic() + timeout
    return Started(proc, Path(repo), args, timeout, deadline, what)


@dataclass(frozen=True)
class Started:
    """A git command `start` began; the timeout counts from then."""

    proc: spawn.Popen[str]
    repo: Path
    args: tuple[str, ...]
    timeout: float | None
    deadline: float | None
    what: str

    def finish(self, check: bool = True) -> spawn.CompletedProcess[str]:
        """Its output and end, as `run` gives them (GitFailed past the timeout, or on a failure with `check`)."""
        left = None if self.deadline is None else max(0.0, self.deadline - time.monotonic())
        fix = self.what or "check that the repository is intact (`git status`, `git fsck`)"
        try:
            r = spawn.finish(self.proc, left)
        except spawn.TimeoutExpired:
            raise GitFailed(
                f"git {' '.join(self.args[:3])} did not finish in {self.timeout:g} s in {self.repo}", fix
            ) from None
        if check and r.returncode != 0:
            raise GitFailed(
                f"git {' '.join(self.args[:3])} failed in {self.repo}: {r.stderr.strip()[:500]}", fix
            )
        return r

    def discard(self) -> None:
        """Not needed after all: ended (killed if still going) and reaped, its output dropped."""
        self.proc.kill()
        self.proc.communicate()


def out(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The standard output of a git command that must succeed."""
    return run(repo, *args, env=env).stdout
