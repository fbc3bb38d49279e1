"""The one door through which autodev starts a process (issue 29, SPEC §21).

Anything whose code or arguments come from a repository, a task file, a bundle or a model runs in
the sandbox; the host runs only autodev itself and pinned programs. So every process autodev
starts goes through `run`, `popen` or `execve` here, and names WHY it may start: a key of `WHY`,
which says who calls it, what runs and what makes it safe. tests/security/test_process_door.py
fails the build when `subprocess`, `os.exec*`, `os.spawn*`, `os.posix_spawn`, `os.system`,
`os.popen`, `pty.spawn` or `asyncio.create_subprocess_*` appears in any other module of autodev
(but guard/sandbox.py, which builds and probes the sandbox itself), when a call here names no
reason, or when its module is not listed under that reason.

Two starts do not come through here, because a library makes them: MCP servers (the `mcp`
package's stdio client; their command is the user's `[[mcp]]` config, read-only to
participants, wrapped by `Sandbox.offline` when they have no network) and Chromium (Playwright,
with its own sandbox and autodev's egress rules; docs/browser.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# What callers need of subprocess, so that none of them imports it.
from subprocess import DEVNULL, PIPE, STDOUT, CompletedProcess, Popen, SubprocessError, TimeoutExpired
from typing import IO, Literal, NoReturn, TypedDict, Unpack, cast, overload

from autodev.host import groups
from autodev.host.groups import forget as forget_group
from autodev.host.groups import keep_ledger
from autodev.host.groups import live as live_groups
from autodev.host.hostproc import PYTHON_SAFE, python_env

__all__ = [
    "DEVNULL",
    "PIPE",
    "STDOUT",
    "WHY",
    "CompletedProcess",
    "Popen",
    "SubprocessError",
    "TimeoutExpired",
    "execve",
    "finish",
    "forget_group",
    "keep_ledger",
    "live_groups",
    "popen",
    "run",
]


# what subprocess takes: a list of strings or paths (a str is a shell command here nowhere)
Argv = Sequence["str | os.PathLike[str]"]
Env = Mapping[str, str] | None
# A process started here and its end: str pipes with `text=True`, bytes without.
Process = Popen[str] | Popen[bytes]
Completed = CompletedProcess[str] | CompletedProcess[bytes]
ByteProcess = Popen[bytes]  # what `popen` hands back without `text=True`
# where a child's stdin, stdout or stderr goes: DEVNULL, PIPE, STDOUT, a descriptor or an open file
Stream = int | IO[bytes] | IO[str] | None


class Options(TypedDict, total=False):
    """The keywords of subprocess's that autodev passes on, typed. Not `encoding` nor
    `universal_newlines`: `text` (and `errors`, with it) alone makes the pipes str, so the
    overloads of `run` and `popen` can say which their result carries."""

    cwd: str | os.PathLike[str] | None
    env: Env
    stdin: Stream
    stdout: Stream
    stderr: Stream
    start_new_session: bool
    pass_fds: Collection[int]
    preexec_fn: Callable[[], object] | None


@dataclass(frozen=True)
class Reason:
    callers: tuple[str, ...]  # the modules (autodev.…) that may start a process for this reason
    runs: str
    safe: str


WHY: dict[str, Reason] = {
    "git": Reason(
        (
            "autodev.host.hostgit",
            "autodev.host.gitquarantine",
            "autodev.timeline.git",
            "autodev.user.demo",
            "autodev.harness.files",
            "autodev.setup.doctor",
        ),
        "git on a repository: pinned by hostgit (`hostgit.command`/`run`), or a fresh clone / "
        "`git init` / `git --version` with hostgit's binary and environment",
        "git is found on absolute PATH entries only; every setting that runs a program is "
        "overridden with -c, includes and redirected .git refused (docs/security.md); a clone "
        "checks nothing out, `init` has nothing to read yet",
    ),
    "git-clone": Reason(
        ("autodev.eval.workspace",),
        "the user's own git cloning a task's repository (`git clone --no-checkout -- SOURCE`), "
        "found on absolute PATH entries as hostgit finds it",
        "the user's transports and credentials must reach the task's repository, so the user's "
        "git configuration applies; the clone checks nothing out and runs no hook, and every "
        "later git command on it is hostgit's",
    ),
    "autodev": Reason(
        (
            "autodev.cli.start",
            "autodev.eval.runner",
            "autodev.harness.browser",
            "autodev.group.launch",
            "autodev.group.driver",
            "autodev.telemetry.process",
        ),
        "autodev itself: `python -P -m autodev…` (the daemon, `start --foreground` re-executed "
        "without keys, an eval's runs and their `stop`, the browser check, the stand-in, a "
        "best-of group's driver and its runs' `start`, a daemon's telemetry exporter)",
        "`-P` is required here (checked): the working directory, often a repository, is not on "
        "sys.path; PYTHONPATH loses its relative entries (`hostproc.python_env`)",
    ),
    "sandboxed": Reason(
        (
            "autodev.harness.commands",
            "autodev.harness.audit",
            "autodev.host.procgroup",
            "autodev.eval.workspace",
            "autodev.setup.doctor",
        ),
        "a command from a model, a task, the audit check or a hook, wrapped by `Room.wrap` (bubblewrap)",
        "bubblewrap: the repository writable, the rest read-only, home and run folders hidden, "
        "no network unless configured, no secret in the environment; unsandboxed only when the "
        'user chose it (sandbox = "off", or `eval --grade-unsandboxed`), which is warned about',
    ),
    "search": Reason(
        ("autodev.harness.search",),
        "ripgrep (`rg`) over the repository with a model's pattern and glob",
        "a pinned binary (beside autodev's Python, else PATH), `--no-config`; the pattern is "
        "passed as `--regexp=`, the glob as `--glob=` and the path after `--`, so none of them "
        "is an option (no `--pre`) or code; ripgrep runs nothing it reads; the environment has "
        "no secret. Not in the room: rg lives beside autodev's Python, which a pipx install keeps "
        "under the home the room hides",
    ),
    "agent-cli": Reason(
        ("autodev.agents.runner", "autodev.agents.invocation"),
        "a coding-agent CLI the user named in team.toml, in the repository, as the user (SPEC "
        "§16); and its `--version` / login status questions",
        "the CLI is the user's chosen program, not the repository's: its repository settings "
        "files are stamped and a planted one stops the turn (agents/projectfiles.py), it gets "
        "only its own key (keys.env_for), and autodev's MCP server it talks to runs with -P",
    ),
    "user-command": Reason(
        ("autodev.host.procgroup",),
        "`sh -c` of notifyCommand (in the run folder) or of a hook the user set `host = true`, "
        "from .autodev/config.toml, with a JSON payload (every other hook is sandboxed)",
        "the command text is the user's config, which participants cannot write (.autodev/ is "
        "read-only in the sandbox and to the file tools); the team's keys are not in its "
        "environment; it runs in its own process group, killed whole on timeout",
    ),
}


def _checked(argv: Argv, why: str, env: Env) -> Env:
    """The environment to start with; ValueError for a start without a known reason, or an
    autodev child without `-P`."""
    if why not in WHY:
        raise ValueError(f"spawn: {why!r} is not a reason in autodev.host.spawn.WHY")
    if why == "autodev":
        args = list(argv)
        if args[:1] != [sys.executable] or args[1 : 1 + len(PYTHON_SAFE)] != list(PYTHON_SAFE):
            raise ValueError(
                f"spawn: an autodev child must start as {sys.executable} {' '.join(PYTHON_SAFE)}"
            )
        return python_env(dict(os.environ if env is None else env))
    return env


def _started(argv: Argv, text: bool, errors: str | None, kwargs: Options) -> tuple[Process, Path | None]:
    """subprocess.Popen; for a group of its own in a daemon, its ledger file made first (and
    dropped should it not start; host/groups.py)."""
    listed = groups.intent(argv, bool(kwargs.get("start_new_session")))
    try:
        p: Process = subprocess.Popen(argv, text=text, errors=errors, **kwargs)
    except BaseException:
        if listed is not None:
            listed.unlink(missing_ok=True)
        raise
    return p, listed


def _own(p: Process, listed: Path | None) -> Process:
    groups.own(p, listed)
    return p


@overload
def run(
    argv: Argv,
    why: str,
    *,
    text: Literal[True],
    errors: str | None = None,
    input: str | None = None,
    capture_output: bool = False,
    check: bool = False,
    timeout: float | None = None,
    **kwargs: Unpack[Options],
) -> CompletedProcess[str]: ...
@overload
def run(
    argv: Argv,
    why: str,
    *,
    text: Literal[False] = False,
    input: bytes | None = None,
    capture_output: bool = False,
    check: bool = False,
    timeout: float | None = None,
    **kwargs: Unpack[Options],
) -> CompletedProcess[bytes]: ...
def run(
    argv: Argv,
    why: str,
    *,
    text: bool = False,
    errors: str | None = None,
    input: str | bytes | None = None,
    capture_output: bool = False,
    check: bool = False,
    timeout: float | None = None,
    **kwargs: Unpack[Options],
) -> Completed:
    """subprocess.run(argv, ...), for reason `why`; a child in a group of its own is known to
    `live_groups` while it runs (subprocess.run's own steps, on a `popen`). `text` is subprocess's:
    str in and out (decoded by `errors`), else bytes."""
    kwargs["env"] = _checked(argv, why, kwargs.get("env"))
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = PIPE
    if input is not None:
        if kwargs.get("stdin") is not None:  # as subprocess.run: one of them, never one silently
            raise ValueError("stdin and input arguments may not both be used.")
        kwargs["stdin"] = PIPE
    p, listed = _started(argv, text, errors, kwargs)
    with _own(p, listed) if kwargs.get("start_new_session") else p:
        done = _waited(p, input, timeout, text=text)
    if check and done.returncode:
        raise subprocess.CalledProcessError(done.returncode, done.args, done.stdout, done.stderr)
    return done


def finish(p: Popen[str], timeout: float | None) -> CompletedProcess[str]:
    """What `run(..., text=True)` does once its command started: the output of `p` (a `popen`
    with `text=True` and both pipes), and its end; past `timeout` it is killed (TimeoutExpired)."""
    with p:
        done = _waited(p, None, timeout, text=True)
    return cast("CompletedProcess[str]", done)


def _waited(p: Process, data: str | bytes | None, timeout: float | None, *, text: bool) -> Completed:
    """`p.communicate(data)` and its end: str pipes and input with `text=True`, else bytes (as
    `run`'s overloads take them; subprocess checks the input). Past `timeout` a timer kills `p`
    and TimeoutExpired carries what it wrote: not communicate(timeout=), whose wait for the exit
    sleeps in steps from 1 ms (a git call spent longer there than in git, issue 33). Whatever
    interrupts the wait (Ctrl-C, an error) kills `p` first."""
    expired: list[bool] = []
    timer = None
    if timeout is not None:
        timer = threading.Timer(timeout, _expire, (p, expired))
        timer.daemon = True
        timer.start()
    try:
        if text:
            ps = cast("Popen[str]", p)
            out, err = ps.communicate(cast("str | None", data))
            done: Completed = CompletedProcess(ps.args, ps.returncode, out, err)
        else:
            pb = cast("Popen[bytes]", p)
            out_b, err_b = pb.communicate(cast("bytes | None", data))
            done = CompletedProcess(pb.args, pb.returncode, out_b, err_b)
    except BaseException:
        p.kill()
        raise
    finally:
        if timer is not None:
            timer.cancel()
    if expired:
        raise TimeoutExpired(p.args, cast("float", timeout), output=done.stdout, stderr=done.stderr)
    return done


def _expire(p: Process, expired: list[bool]) -> None:
    if p.poll() is None:
        expired.append(True)
        p.kill()


@overload
def popen(
    argv: Argv,
    why: str,
    *,
    text: Literal[True],
    errors: str | None = None,
    die_with_parent: int | None = None,
    **kwargs: Unpack[Options],
) -> Popen[str]: ...
@overload
def popen(
    argv: Argv,
    why: str,
    *,
    text: Literal[False] = False,
    die_with_parent: int | None = None,
    **kwargs: Unpack[Options],
) -> Popen[bytes]: ...
def popen(
    argv: Argv,
    why: str,
    *,
    text: bool = False,
    errors: str | None = None,
    die_with_parent: int | None = None,
    **kwargs: Unpack[Options],
) -> Process:
    """subprocess.Popen(argv, ...), for reason `why`. `die_with_parent`: the signal the child
    gets when this process dies, however it dies (kill -9 included), for a child in a group of
    its own, which nothing else ends then: a turn's command when its daemon is killed, a run's
    daemon when its eval (or the Ray worker running it) is. `text` is subprocess's: str pipes
    (decoded by `errors`), else bytes."""
    kwargs["env"] = _checked(argv, why, kwargs.get("env"))
    if die_with_parent is not None:
        kwargs["preexec_fn"] = _parent_death(die_with_parent)
    p, listed = _started(argv, text, errors, kwargs)
    return _own(p, listed) if kwargs.get("start_new_session") else p


PR_SET_PDEATHSIG = 1


def _parent_death(sig: int) -> Callable[[], None]:
    """A preexec_fn (run in the child between fork and exec): prctl(PR_SET_PDEATHSIG, sig), which
    lasts across exec and fires when the thread that started the child ends (every caller waits
    for its child in that thread); and `sig` at once should this process be gone already. Only
    a C call and a system call run there: nothing that takes a lock another thread could hold."""
    import ctypes  # only now: autodev's processes drop the repository from sys.path first (hostproc)

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


def execve(argv: list[str], env: dict[str, str], why: str) -> NoReturn:
    """Replace this process with argv[0] run as `argv`, for reason `why`."""
    os.execve(argv[0], argv, _checked(argv, why, env) or {})
