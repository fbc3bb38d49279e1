"""The real `autodev` CLI called in the test's own process (the `inproc` fixture): the same error
edge (`autodev.cli.main`) as the console script, without a Python start-up per call.

A subprocess starts from nothing; this process does not, so a call here sets up what the
process would see (working directory, environment, argv, stdin that is not a terminal, stdout
and stderr that are pipes) and afterwards puts back whatever the command may have changed:
the environment, sys.path, the umask, the module-level caches a fresh process starts without,
and logging handlers created during the call (litellm makes one on import) that would
otherwise keep writing into this call's captured stderr."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

# Commands whose work is a process of its own (a daemon, a terminal UI, a whole demo run).
NEVER_IN_PROCESS = ("panel", "demo")


class StartedInProcess(AssertionError):
    """A daemon would run (or the process exec) here: `start` got past its checks, or `replay`
    came to run the recorded run."""


def _tripwire(*_args, **_kwargs):
    raise StartedInProcess(
        "a daemon would run in this process (`start` passed its checks, or `replay` ran the run): "
        "it needs a process of its own (use the `autodev` fixture)"
    )


def _caches() -> list[tuple[object, str]]:
    """(module, name) of the module-level state a fresh process starts without."""
    from autodev.agents import projectfiles
    from autodev.eval import runner
    from autodev.guard import bwrap, keys
    from autodev.host import hostgit

    return [
        (hostgit, "_run_pins"),  # pinned by a daemon: never by a command, checked empty here
        (hostgit, "_git_binary"),  # found on the PATH of the call
        (bwrap, "_probed"),  # bwrap probed at a path that may have changed since
        (projectfiles, "_stamps"),
        (runner, "LIVE"),
        (keys, "_store"),  # `start` receives handed-over keys into it
    ]


def _fresh(value):
    return type(value)() if isinstance(value, (dict, list, set)) else None


class InProcess:
    """`inproc(repo, *args, env=..., input=..., check=...)` -> CompletedProcess, like the
    `autodev` fixture's Runner. `start` and `replay` may be called to see them refuse bad input;
    should one get past its checks, the call fails the test before a daemon starts or the
    process execs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.mp = monkeypatch

    def __call__(
        self,
        repo: Path,
        *args: str,
        env: dict | None = None,
        input: str | bytes = "",
        check: bool = False,
        timeout: float | None = None,  # accepted for the Runner's signature; nothing here waits
    ) -> subprocess.CompletedProcess:
        assert args and args[0] not in NEVER_IN_PROCESS, f"run `{args[0]}` as a process"
        from autodev.cli import main

        raw = input.encode() if isinstance(input, str) else input
        out_b, err_b = io.BytesIO(), io.BytesIO()
        # What a child with pipes gets: UTF-8, strict on stdout, backslashreplace on stderr.
        out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", write_through=True)
        err = io.TextIOWrapper(err_b, encoding="utf-8", errors="backslashreplace", write_through=True)
        stdin = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8")
        saved_env, saved_path, umask = dict(os.environ), list(sys.path), os.umask(0o022)
        os.umask(umask)
        caches = [(m, n, getattr(m, n)) for m, n in _caches()]
        handlers = _stream_handlers()
        code = 0
        try:
            for m, n, v in caches:
                setattr(m, n, _fresh(v))
            with self.mp.context() as m:
                m.chdir(repo)
                for k, v in (env or {}).items():
                    m.setenv(k, v)
                m.setattr(sys, "argv", ["autodev", *args])
                m.setattr(sys, "stdin", stdin)
                # Where a daemon would begin: past start's checks (before it stages, execs or
                # spawns anything), and the daemon's loop itself (`replay` runs one).
                m.setattr("autodev.cli.start._say_queued", _tripwire)
                m.setattr(os, "execve", _tripwire)
                if args[0] in ("start", "replay"):  # the only ones that run it (imported on demand)
                    m.setattr("autodev.daemon.process.Daemon.run", _tripwire)
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    try:
                        main()
                    except SystemExit as e:
                        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                        if not isinstance(e.code, (int, type(None))):
                            print(e.code, file=sys.stderr)  # as the interpreter does
                    except StartedInProcess:
                        raise
                    except KeyboardInterrupt:
                        traceback.print_exc()
                        code = -signal.SIGINT  # the interpreter ends itself by SIGINT
                    except Exception:
                        traceback.print_exc()  # what an uncaught exception does to a process
                        code = 1
        finally:
            for m, n, v in caches:
                setattr(m, n, v)
            os.environ.clear()
            os.environ.update(saved_env)
            sys.path[:] = saved_path
            os.umask(umask)
            _repoint(handlers, {id(out), id(err)})
        cp = subprocess.CompletedProcess(
            ["autodev", *args],
            code,
            out_b.getvalue().decode("utf-8", "surrogateescape"),
            err_b.getvalue().decode("utf-8", "surrogateescape"),
        )
        if check and code != 0:
            raise AssertionError(f"autodev {' '.join(args)} exited {code}\n{cp.stdout}\n{cp.stderr}")
        return cp


def _loggers() -> list[logging.Logger]:
    found = [logging.getLogger()]
    found += [lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    return found


def _stream_handlers() -> set[int]:
    return {id(h) for lg in _loggers() for h in lg.handlers}


def _repoint(before: set[int], captured: set[int]) -> None:
    """A handler made during the call on the call's stdout or stderr writes to this process's
    own streams from now on (the captured ones are gone once the call returns)."""
    for lg in _loggers():
        for h in lg.handlers:
            if id(h) in before or not isinstance(h, logging.StreamHandler):
                continue
            if id(h.stream) in captured:
                h.setStream(sys.stderr)
