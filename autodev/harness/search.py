"""The `search` tool: ripgrep in a subprocess (linear-time, so no pattern can hang a turn; it
honours .gitignore), killed at the turn's deadline or on `stop`."""

from __future__ import annotations

import base64
import fnmatch
import json
import os
import shutil
import signal
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autodev.errors import ToolError
from autodev.guard.redact import scrubbed_env
from autodev.guard.secrets import is_secret_file
from autodev.harness.deadline import Watch
from autodev.host import spawn
from autodev.store.journal import is_object, safe_text

if TYPE_CHECKING:
    from autodev.harness.scope import Scope

SEARCH_CAP = 200
SEARCH_LINE_CUT = 300
SEARCH_MAX_FILE = 4 * 1024 * 1024  # bigger files are almost never source; skip them
SEARCH_TIMEOUT = 120.0  # seconds; also capped by the command timeout and the turn's time left


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _ripgrep() -> str:
    """The `rg` binary: the one the `ripgrep` package installed next to this Python, else PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "rg")
    found = here if os.access(here, os.X_OK) else shutil.which("rg")
    if not found:
        raise ToolError("search: ripgrep (rg) is not installed; reinstall autodev (it depends on ripgrep)")
    return found


def _rg_text(part: object) -> str:
    """A path or line from ripgrep's JSON: text, or base64 bytes when not UTF-8."""
    if not is_object(part):
        return ""
    if "text" in part:
        return str(part["text"])
    raw = base64.b64decode(str(part.get("bytes") or ""))
    return safe_text(raw.decode("utf-8", errors="surrogateescape"))


def _die_with_parent() -> None:
    """In the child before exec: the kernel kills it if the daemon dies (even by kill -9), so a
    search blocked on a pipe never outlives the daemon that started it."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def search(ws: Scope, pattern: str, path: str, glob: str | None) -> str:
    real, rel = ws.resolve("search", path)
    if not os.path.exists(real):
        raise ToolError(f"search: no file or folder '{rel}'")
    seconds = ws.time_for(SEARCH_TIMEOUT)
    try:
        proc = spawn.popen(
            _argv(ws, pattern, rel, glob),
            "search",
            cwd=ws.root,
            stdin=spawn.DEVNULL,
            stdout=spawn.PIPE,
            stderr=spawn.PIPE,
            env=scrubbed_env(ws.secret_env),
            preexec_fn=_die_with_parent,
        )
    except OSError as e:
        raise ToolError(f"search: could not start ripgrep: {e}; reinstall autodev") from None
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None  # both PIPE above
    watch = Watch(proc.kill, seconds, ws.stopping_now)
    try:
        found = _Found()
        found.read(stdout, ws, glob)
    finally:
        proc.kill()
        stdout.close()
        errors = stderr.read().decode("utf-8", errors="replace").splitlines()
        stderr.close()
        proc.wait()
        why = watch.finish()
    if proc.returncode == 2 and not found.matches and any("regex parse error" in e for e in errors):
        detail = " ".join(e.strip() for e in errors[1:] if e.strip())[:300]
        raise ToolError(
            f"search: pattern {pattern!r} is not a valid regular expression ({detail}); "
            "escape special characters such as ( [ . * with a backslash (ripgrep syntax: "
            "like Python's, without look-around or backreferences)"
        )
    scope = f" matching {glob!r}" if glob else ""
    note = f"\n[search {why}; the results may be incomplete]" if why else ""
    if not found.matches:
        return f"no matches for {pattern!r} in {found.searched} file(s){scope} under '{rel}'{note}"
    text = "\n".join(found.matches)
    if found.cut:
        text += f"\n[results cut at {SEARCH_CAP} matches; narrow the pattern, the path or the glob]"
    return ws.cap(text, "narrow the pattern, the path or the glob") + note


def _argv(ws: Scope, pattern: str, rel: str, glob: str | None) -> list[str]:
    # ripgrep in a subprocess: its regex engine is linear-time (no pattern can hang a turn),
    # it honours .gitignore, and the process can be killed at the deadline or on `stop`.
    argv = [
        _ripgrep(),
        "--json",
        "--sort=path",  # one order for every run: the model (and a replay) sees the same list
        "--hidden",
        "--glob=!.git",
        "--no-config",
        f"--max-filesize={SEARCH_MAX_FILE}",
        f"--regexp={pattern}",
    ]
    if glob and "/" not in glob:
        argv.append(f"--glob={glob}")
    # secretFiles: never searched. After the model's glob, since ripgrep lets the last matching
    # glob win (`glob=".env"` must not bring them back); each result is checked again below.
    argv += [f"--glob=!{pat}" for pat in ws.secret_files]
    return argv + ["--"] + ([] if rel == "." else [rel])


@dataclass
class _Found:
    """What ripgrep's JSON events said: the matches shown, the files searched, and whether the
    matches were cut at SEARCH_CAP."""

    matches: list[str] = field(default_factory=list[str])
    searched: int = 0
    cut: bool = False

    def read(self, events: Iterable[bytes], ws: Scope, glob: str | None) -> None:
        for raw in events:
            try:
                event: object = json.loads(raw)
            except ValueError:
                continue
            if not is_object(event):
                continue
            kind, data = event.get("type"), event.get("data")
            if kind == "end":
                self.searched += 1
            if kind != "match" or not is_object(data):
                continue
            file_rel = _rg_text(data.get("path"))
            if glob and "/" in glob and not _glob_match(file_rel, glob):
                continue
            if is_secret_file(file_rel, ws.secret_files):  # ripgrep's globs are not fnmatch's
                continue
            line = _rg_text(data.get("lines"))
            if "\0" in line:  # a binary file named on purpose: not shown, as when walking
                continue
            if len(self.matches) >= SEARCH_CAP:
                self.cut = True
                return
            n = data.get("line_number")
            self.matches.append(f"{file_rel}:{n}: {_short(line.strip(), SEARCH_LINE_CUT)}")


def _glob_match(file_rel: str, glob: str) -> bool:
    if "/" not in glob:
        return fnmatch.fnmatchcase(file_rel.rsplit("/", 1)[-1], glob)
    if fnmatch.fnmatchcase(file_rel, glob):
        return True
    # "**/x" also matches x at the top level
    return glob.startswith("**/") and fnmatch.fnmatchcase(file_rel, glob[3:])
