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
    "keep_ledger",
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


# The process groups started here (a child with `start_new_session`: it leads its own group) whose
# leader no one has waited for yet: `procgroup.end_all` ends them when this process is told to end
# (a daemon's SIGTERM, an eval's Ctrl-C), since a group of its own is out of reach of a signal to
# ours. Its owner ending it (`procgroup.kill_group`) takes it off.
_GROUPS: dict[int, Process] = {}
_GROUPS_LOCK = threading.Lock()

# A daemon's ledger of those groups (`keep_ledger`): a file per group, named `<pid>-<start>` (its
# leader's pid and start time in clock ticks, which name one process even after the pid is reused)
# and holding the start's reason, made as soon as the child exists and removed when the group
# is ended or its leader waited for. A daemon killed with -9 cannot end its groups: its leaders die
# with it (die_with_parent), but what they started lives on in their groups (a background job of a
# command without the sandbox; bubblewrap's inner process, killed in its set-up). The next daemon
# ends what its files name (`procgroup.reap_ledger`) before it starts anything. Not fsynced: a
# machine that loses its page cache has no process left either.
_LEDGER: list[Path] = []
_FILES: dict[int, Path] = {}


def keep_ledger(folder: Path | None) -> None:
    """From now on, a file in `folder` per group started here (None: no more files; those of
    groups still running stay, for the next daemon)."""
    with _GROUPS_LOCK:
        for pgid in [g for g, q in _GROUPS.items() if q.returncode is not None]:
            _unlist(pgid)  # waited for by its owner, who ended what it left
        _LEDGER[:] = [folder] if folder is not None else []
        _FILES.clear()
    if folder is not None:
        folder.mkdir(mode=0o700, exist_ok=True)


def _own(p: Process, argv: Argv) -> Process:
    with _GROUPS_LOCK:
        for pgid in [g for g, q in _GROUPS.items() if q.returncode is not None]:
            del _GROUPS[pgid]  # waited for by its owner, who ended what it left (or had nothing left)
            _unlist(pgid)
        _GROUPS[p.pid] = p
        if _LEDGER:
            try:
                _list(_LEDGER[0], p.pid, argv)
            except OSError:
                # unlisted, what it starts could outlive a killed daemon: it does not start (its
                # caller reports the start as failed, with this error). Killed a few system calls
                # after its exec, the leader has not yet had the time to start anything itself.
                del _GROUPS[p.pid]
                p.kill()
                p.wait()
                raise
    return p


def _list(folder: Path, pid: int, argv: Argv) -> None:
    """The ledger's file of group `pid` (with its leader's start time: it has not been waited for,
    so /proc still holds it, a zombie at worst)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            started = int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return  # no /proc: nothing the next daemon could check either (nor kill_stale)
    path = folder / f"{pid}-{started}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, _what(argv).encode())
    finally:
        os.close(fd)
    _FILES[pid] = path


def _what(argv: Argv) -> str:
    """What a leftover was, for the event that names it: the program's name, not its arguments
    (a command's text is a model's, and may hold anything)."""
    return os.path.basename(os.fspath(argv[0])) if argv else ""


def _unlist(pgid: int) -> None:
    path = _FILES.pop(pgid, None)
    if path is not None:
        path.unlink(missing_ok=True)


def live_groups() -> list[int]:
    """The groups started here whose leader has not been waited for (so its pid is still its)."""
    with _GROUPS_LOCK:
        return [g for g, p in _GROUPS.items() if p.returncode is None]


def forget_group(pgid: int) -> None:
    with _GROUPS_LOCK:
        _GROUPS.pop(pgid, None)
        _unlist(pgid)


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
    p = subprocess.Popen(argv, text=text, errors=errors, **kwargs)
    with _own(p, argv) if kwargs.get("start_new_session") else p:
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
    p: Process = subprocess.Popen(argv, text=text, errors=errors, **kwargs)
    return _own(p, argv) if kwargs.get("start_new_session") else p


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
