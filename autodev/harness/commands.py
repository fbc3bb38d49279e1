"""The `run_command` tool: `bash -c` in the repository root, in its own process group (in the
sandbox `Room` when there is one), with no stdin, a scrubbed environment, bounded output, and a
timeout or `stop` that kills everything it started."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard

from autodev.errors import ToolError
from autodev.guard import secrets
from autodev.guard.redact import scrubbed_env
from autodev.host import gitlocks, spawn
from autodev.host.procgroup import kill_group

if TYPE_CHECKING:
    from autodev.harness.scope import Scope


def run_command(ws: Scope, command: str, timeout_sec: float | None) -> str:
    if not command.strip():
        raise ToolError("run_command: argument 'command' is empty; give a shell command")
    if ws.command_guard is not None:
        refusal = ws.command_guard(command)
        if refusal is not None:
            raise ToolError(refusal)
    wanted = ws.command_timeout if timeout_sec is None else min(timeout_sec, ws.command_timeout)
    timeout = ws.time_for(wanted)
    env = scrubbed_env(ws.secret_env)
    argv = ["bash", "-c", command]
    # The secret files as they are before the command: covered in the sandbox, and what they
    # hold masked in the output (it is all a command without a sandbox could print of them).
    found = secrets.find(ws.root, ws.secret_files)  # TooManyFiles: the command does not run
    ws.mask_secret_files(found)
    if ws.room is not None:
        env, argv = ws.room.env(env), ws.room.wrap(argv, found)
    run = _run_bash(
        argv,
        cwd=ws.root,
        env=env,
        timeout=timeout,
        max_output=ws.max_output,
        stopping=ws.stopping_now,
    )
    secs = f"{timeout:g} s" + (" (the turn's time left)" if timeout < wanted else "")
    if run.timed_out and ws.stopping_now():
        status = "stopped: the user is stopping the run; the command and every process it started were killed"
    elif run.timed_out and run.exit_code is None:
        status = f"timed out after {secs}: the command and every process it started were killed"
    elif run.timed_out:
        status = (
            f"exit code: {run.exit_code} (processes it left in the background kept "
            f"its output open until the {secs} timeout; they were killed)"
        )
    else:
        status = f"exit code: {run.exit_code}"
    if run.timed_out and (stale := gitlocks.clear_stale(Path(ws.root))):
        status += f"\n[{gitlocks.report(stale)}]"
    if ws.after_command is not None and (said := ws.after_command(command)):
        status += f"\n[{said}]"
    if run.abandoned:
        status += (
            "\n[a process outside the command's process group still holds the output open; stopped reading]"
        )
    body = run.output if run.output else "(no output)"
    return f"{status}\noutput:\n{body}"


@dataclass
class _Run:
    exit_code: int | None  # None when bash itself had to be killed
    timed_out: bool
    output: str
    abandoned: bool


def _buffered(stream: object) -> TypeGuard[BufferedReader]:
    return isinstance(stream, BufferedReader)


class _Capture:
    """Drains a pipe, keeping only its beginning and its end so memory stays bounded."""

    def __init__(self, stream: BufferedReader, limit: int):
        self._stream = stream
        self._limit = limit
        self._lock = threading.Lock()
        self._head = bytearray()  # the first `limit` bytes
        self._tail = bytearray()  # the last `limit` bytes
        self._total = 0

    def pump(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(65536)
                if not chunk:
                    return
                with self._lock:
                    self._total += len(chunk)
                    room = self._limit - len(self._head)
                    if room > 0:
                        self._head += chunk[:room]
                    self._tail += chunk
                    if len(self._tail) > self._limit:
                        del self._tail[: len(self._tail) - self._limit]
        except (OSError, ValueError):
            return  # the pipe was closed under us

    def text(self) -> str:
        """All output if it fit, else its first and last halves around a visible note."""
        with self._lock:
            total = self._total
            head = self._head.decode("utf-8", errors="replace")
            tail = self._tail.decode("utf-8", errors="replace")
        if total <= self._limit:
            return head
        half = self._limit // 2
        return (
            f"{head[:half]}\n[... output cut: {total} bytes in all; showing the first and "
            f"last {half} characters ...]\n{tail[-half:]}"
        )


def _wait(proc: spawn.Popen[bytes], timeout: float, stopping: Callable[[], bool] | None) -> None:
    """proc.wait(timeout), also ended early (TimeoutExpired) when `stopping()` turns true."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0 or (stopping is not None and stopping()):
            raise spawn.TimeoutExpired(proc.args, timeout)
        try:
            proc.wait(timeout=min(0.2, left))
            return
        except spawn.TimeoutExpired:
            continue


def run_bash_capture(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    max_output: int,
    stopping: Callable[[], bool] | None = None,
) -> _Run:
    """`argv` run as `run_command` runs it (own process group, killed whole at `timeout` or on
    `stopping()`, output bounded): for the evidence's test runs (harness/evidence.py)."""
    return _run_bash(argv, cwd=cwd, env=env, timeout=timeout, max_output=max_output, stopping=stopping)


def _run_bash(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout: float,
    max_output: int,
    stopping: Callable[[], bool] | None = None,
) -> _Run:
    try:
        proc = spawn.popen(
            argv,
            "sandboxed",
            cwd=cwd,
            env=env,
            stdin=spawn.DEVNULL,
            stdout=spawn.PIPE,
            stderr=spawn.STDOUT,
            start_new_session=True,
            die_with_parent=signal.SIGKILL,  # a daemon killed (-9) takes its command with it
        )
    except OSError as e:
        raise ToolError(f"run_command: could not start bash: {e}") from None
    stdout = proc.stdout
    assert _buffered(stdout)  # stdout=PIPE with the default buffering above
    capture = _Capture(stdout, max_output)
    reader = threading.Thread(target=capture.pump, name="run_command-output", daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        _wait(proc, timeout, stopping)
    except spawn.TimeoutExpired:
        timed_out = True
    if not timed_out:
        # bash is done, but a background child may still hold the pipe: wait for it until
        # the same deadline, so `cmd &` cannot outlive the timeout.
        reader.join(max(0.0, deadline - time.monotonic()))
        timed_out = reader.is_alive()
    # The command ran in its own session, so its process group holds everything it started
    # (unless something called setsid itself). Killing the group also stops leftovers.
    kill_group(proc.pid)
    proc.wait()
    reader.join(2.0)
    abandoned = reader.is_alive()
    if not abandoned:
        stdout.close()
    killed_bash = proc.returncode == -signal.SIGKILL and timed_out
    return _Run(
        exit_code=None if killed_bash else proc.returncode,
        timed_out=timed_out,
        output=capture.text(),
        abandoned=abandoned,
    )
