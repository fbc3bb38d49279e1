"""state.json: the run's current state, written compare-and-swap under a lock.

Readers never lock: every write is a whole new file renamed into place, so a reader sees the old
state or the new one, never half of each. Writers take an exclusive flock on a side lock file,
read, apply their change and bump `version`, so concurrent control commands never lose an update.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from autodev.errors import StateConflictError
from autodev.records.state import Figures, RunState
from autodev.store.journal import fsync_dir, safe

SCHEMA = 1
BLANK: dict[str, object] = {
    "schema": SCHEMA,
    "version": 0,
    "state": "stopped",
    "reason": None,
    "controls": [],
    "control_seq": 0,
}


def blank_state() -> RunState:
    """A fresh run's state: the keys every state.json holds, set (so they are written)."""
    return RunState.model_validate(BLANK)


def blank_figures() -> Figures:
    """A participant's figures in state.json before its first turn."""
    return Figures(turns=0, credited=0, prompt_tokens=0, completion_tokens=0, cost=0.0, silent_streak=0)


class StateFile:
    def __init__(self, path: Path, redact: Callable[[object], object] | None = None):
        self.path = Path(path)
        self._redact = redact
        self._lock_path = self.path.with_name(self.path.name + ".lock")

    def read(self) -> RunState:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return blank_state()
        except (ValueError, RecursionError) as e:
            raise StateConflictError(
                f"{self.path} is not valid JSON ({type(e).__name__}: {str(e)[:200]})", self._repair()
            ) from None
        if not isinstance(data, dict):
            raise StateConflictError(
                f"{self.path} holds a JSON {type(data).__name__}, not the run's state object", self._repair()
            )
        try:
            return RunState.model_validate({**BLANK, **data})
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise StateConflictError(
                f"{self.path}: '{where}' {err['msg'].lower()} (got {str(err.get('input'))[:80]!r})",
                self._repair(),
            ) from None

    def _repair(self) -> str:
        return (
            f"move it aside (`mv {self.path} {self.path}.bad`); `autodev start` then rebuilds the run's "
            "state from its logs"
        )

    @contextmanager
    def _locked(self) -> Generator[None, None, None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, st: RunState) -> None:
        # The keys that were set, by their file names: a file written before is written back as it was.
        data: object = st.model_dump(mode="json", by_alias=True, exclude_unset=True)
        if self._redact is not None:
            data = self._redact(data)  # secrets never reach state.json either
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        # Readers get valid UTF-8 whatever text reached the state (a file name, a model's post).
        raw = json.dumps(safe(data), indent=1, sort_keys=True, ensure_ascii=False).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private to the user
        os.fchmod(fd, 0o600)
        with open(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)

    def update(self, change: Callable[[RunState], RunState]) -> RunState:
        """Apply `change` to the current state atomically; returns the new state."""
        with self._locked():
            cur = self.read()
            new = change(cur).but(version=cur.version + 1)
            self._write(new)
            return new

    def request(self, action: str, **fields: object) -> RunState:
        """Queue a control request (pause, resume, stop) for the daemon; none is ever lost."""

        def add(s: RunState) -> RunState:
            n = s.control_seq + 1
            return s.but(control_seq=n, controls=[*s.controls, {"n": n, "action": action, **fields}])

        return self.update(add)
