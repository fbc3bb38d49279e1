"""One task's repository: the fresh clone at the base commit, the setup command, the patch the run
left, and the grade (the hidden test patch applied only now, then the test command)."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autodev.host import hostgit
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
    task's repository); nothing is checked out until the pinned git does it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(
        ["git", "clone", "--quiet", "--no-checkout", source, str(dest)], capture_output=True, text=True
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


def run_shell(command: str, cwd: Path, log: Path, timeout: float, env: dict | None = None) -> int:
    """`command` under bash in its own process group, output to `log`; killed whole on timeout (-9)."""
    with open(log, "ab") as out:
        p = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
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


@dataclass
class Grade:
    resolved: bool
    test_exit: int | None
    error: str | None = None  # the grade could not be made (the test patch does not apply)


def grade(repo: Path, base: str, test_patch: str, test_command: str, log: Path, timeout: float) -> Grade:
    """Apply the hidden tests only now and run the test command: exit 0 is resolved.

    As SWE-bench's harness does, the files the test patch touches go back to the base commit
    first, so a team that edited the tests cannot make them pass or keep them from applying."""
    if test_patch.strip():
        for f in patch_files(test_patch):
            tracked = hostgit.run(repo, "cat-file", "-e", f"{base}:{f}", check=False)
            if tracked.returncode == 0:
                git(repo, "checkout", base, "--", f)
            elif (repo / f).exists():
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
    code = run_shell(test_command, repo, log, timeout)
    return Grade(code == 0, code)
