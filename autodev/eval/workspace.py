"""One task's repository: the fresh clone at the base commit, the setup command, the patch the run
left, and the grade (the hidden test patch applied only now, then the test command).

The task file and the team's work are both untrusted (SPEC §21): the setup and the test command
run in the sandbox (`TaskShell`: bubblewrap, no provider keys, no network unless the task's
`setup_network` asks for it for its setup), never on the host, unless the user passed
`--grade-unsandboxed`. The test patch's paths are checked before anything touches them.
"""

from __future__ import annotations

import os
import re
import signal
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autodev.errors import ConfigError
from autodev.guard import bwrap
from autodev.guard import sandbox as sandboxmod
from autodev.guard.redact import scrubbed_env
from autodev.host import hostgit, spawn
from autodev.host.procgroup import kill_group

# The clone is ours: commits made by the team need an identity even where the machine has none.
IDENTITY = (("user.name", "autodev eval"), ("user.email", "eval@autodev.invalid"))
EXCLUDE = ".autodev/\n__pycache__/\n*.pyc\n.pytest_cache/\n"


class WorkspaceError(Exception):
    """The task's repository could not be prepared (clone, checkout, setup): the run cannot start."""


def git(repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    """A git command in a task's clone, through the host's pinned git (hostgit): after the team's
    run the clone holds what the team left, and its configuration must not run programs here."""
    r = hostgit.run(repo, *args, env=env, check=False)
    if check and r.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args[:3])} failed: {(r.stderr or r.stdout).strip()[-500:]}")
    return r.stdout


def clone(source: str, base_commit: str, dest: Path) -> str:
    """A fresh clone of `source` at `base_commit`, detached; returns the base commit's sha.
    The clone itself runs the user's git as it is (their transports and credentials reach the
    task's repository), found as hostgit finds it (absolute PATH entries only), `source` after
    `--`, the `ext::` transport off; nothing is checked out until the pinned git does it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    r = spawn.run(
        # `ext::` runs its URL as a command: a task file's `repo` must never be one, whatever
        # the user's git config allows (git's own default already refuses it)
        [
            hostgit.git_binary(),
            "-c",
            "protocol.ext.allow=never",
            "clone",
            "--quiet",
            "--no-checkout",
            "--",
            source,
            str(dest),
        ],
        "git-clone",
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        raise WorkspaceError(f"git clone {source} failed: {r.stderr.strip()[-500:]}")
    try:
        sha = git(dest, "rev-parse", "--verify", f"{base_commit}^{{commit}}").strip()
    except WorkspaceError:
        # a ref that only exists as a remote branch in the clone (e.g. a branch of the source)
        sha = git(dest, "rev-parse", "--verify", f"origin/{base_commit}^{{commit}}").strip()
    git(dest, "checkout", "--quiet", "--detach", sha)
    for key, value in IDENTITY:
        git(dest, "config", key, value)
    exclude = dest / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text(EXCLUDE)
    return sha


UNSANDBOXED_FLAG = "--grade-unsandboxed"


def task_sandbox(unsandboxed: bool = False) -> sandboxmod.Sandbox:
    """The sandbox a task's setup and tests run in: bubblewrap whatever the runs' own `sandbox`
    key says (a team's config decides how its participants run, not where the eval grades). No
    working bwrap is a ConfigError with the fix, unless the user opted out with the flag."""
    if unsandboxed:
        return sandboxmod.Sandbox("off", None)
    box = sandboxmod.resolve("auto")
    if not box.active:
        raise ConfigError(
            f"autodev eval runs each task's setup and tests in the sandbox, but {box.problem}",
            f"install the `{bwrap.PACKAGE}` package (e.g. `apt-get install bubblewrap`), or pass "
            f"{UNSANDBOXED_FLAG} to run them on this machine with your files (only for tasks and "
            "teams you trust)",
        )
    return box


@dataclass(frozen=True)
class TaskShell:
    """Where a task's own commands run (its setup, its test command): a sandbox room over the
    clone, the environment without any secret (the team's api_key_env names too), the network
    only when asked. `hide`: host folders the commands must not see (home, the eval's --out)."""

    sandbox: sandboxmod.Sandbox
    hide: tuple[Path, ...] = ()
    secret_env: tuple[str, ...] = ()

    def run(self, command: str, repo: Path, log: Path, timeout: float, network: bool = False) -> int:
        room = self.sandbox.room(repo, hide=self.hide, network=network)
        env = room.env(scrubbed_env(self.secret_env))
        return run_shell(room.wrap(["bash", "-c", command]), repo, log, timeout, env)


def shell_for(unsandboxed: bool, hide: Iterable[Path] = (), secret_env: Iterable[str] = ()) -> TaskShell:
    return TaskShell(task_sandbox(unsandboxed), tuple(Path(h) for h in hide), tuple(secret_env))


def run_shell(argv: list[str], cwd: Path, log: Path, timeout: float, env: dict[str, str]) -> int:
    """`argv` in its own process group, output to `log`; killed whole on timeout (-9)."""
    with open(log, "ab") as out:
        p = spawn.popen(
            argv,
            "sandboxed",
            cwd=cwd,
            stdin=spawn.DEVNULL,
            stdout=out,
            stderr=spawn.STDOUT,
            start_new_session=True,
            env=env,
            die_with_parent=signal.SIGKILL,  # an eval (or its Ray worker) killed takes the task's command with it
        )
        try:
            return p.wait(timeout=timeout)
        except spawn.TimeoutExpired:
            kill_group(p.pid)
            p.wait()
            out.write(f"\n[autodev eval: killed after {timeout:g} s]\n".encode())
            return -9
        finally:
            kill_group(p.pid)  # what the command left running in its group


def model_patch(repo: Path, base: str) -> str:
    """The diff from the base commit to what the run left: commits, staged, unstaged and new files
    (not ignored ones, nor .autodev/). Built in a throwaway index, so the clone is untouched."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", "HEAD", env=env)
        git(repo, "add", "-A", env=env)
        return git(repo, "diff", "--cached", "--binary", base, env=env)


def patch_files(patch: str) -> list[str]:
    """The paths a unified diff touches (old and new sides, /dev/null left out)."""
    files: list[str] = []
    for m in re.finditer(r"^(?:---|\+\+\+) (?:[ab]/)?(\S+)", patch, flags=re.M):
        if m.group(1) != "/dev/null" and m.group(1) not in files:
            files.append(m.group(1))
    return files


def bad_patch_path(patch: str) -> str | None:
    """Why the test patch cannot be graded with (a path that is absolute, climbs out with `..`,
    or names git's own folder: grading resets and deletes these paths on the host), else None."""
    for f in patch_files(patch):
        parts = PurePosixPath(f).parts
        if f.startswith("/") or ".." in parts or any(p.lower() == ".git" for p in parts):
            return (
                f"the task's test_patch names {f!r}: a test patch may touch only relative paths inside "
                "the repository (no leading /, no .., not .git); fix the task's test_patch"
            )
    return None


def _beyond_link(repo: Path, f: str) -> bool:
    """True when the folder holding `f` is not inside the clone once links are followed (the team
    may have left `tests` as a link to a folder of the host)."""
    real = os.path.realpath(repo)
    folder = os.path.realpath(os.path.dirname(os.path.join(real, f)))
    return folder != real and not folder.startswith(real + os.sep)


@dataclass
class Grade:
    resolved: bool
    test_exit: int | None
    error: str | None = None  # the grade could not be made (the test patch does not apply)


def grade(
    repo: Path, base: str, test_patch: str, test_command: str, log: Path, timeout: float, shell: TaskShell
) -> Grade:
    """Apply the hidden tests only now and run the test command in `shell`: exit 0 is resolved.

    As SWE-bench's harness does, the files the test patch touches go back to the base commit
    first, so a team that edited the tests cannot make them pass or keep them from applying."""
    if test_patch.strip():
        if why := bad_patch_path(test_patch):
            return Grade(False, None, why)
        files = patch_files(test_patch)
        if linked := [f for f in files if _beyond_link(repo, f)]:
            return Grade(
                False,
                None,
                f"the test patch's path {linked[0]!r} lies beyond a link out of the clone: not graded",
            )
        literal = {"GIT_LITERAL_PATHSPECS": "1"}  # a path is a path, never `:(glob)` magic
        for f in files:
            tracked = hostgit.run(repo, "cat-file", "-e", f"{base}:{f}", check=False)
            if tracked.returncode == 0:
                git(repo, "checkout", base, "--", f, env=literal)
            elif os.path.lexists(repo / f):
                (repo / f).unlink()
        with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False) as fh:
            fh.write(test_patch if test_patch.endswith("\n") else test_patch + "\n")
        try:
            r = hostgit.run(repo, "apply", "--whitespace=nowarn", fh.name, check=False)
        finally:
            os.unlink(fh.name)
        if r.returncode != 0:
            with open(log, "a") as out:
                out.write(r.stderr)
            return Grade(False, None, f"the test patch does not apply: {r.stderr.strip()[-300:]}")
    code = shell.run(test_command, repo, log, timeout)
    return Grade(code == 0, code)
