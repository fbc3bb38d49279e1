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
from typing import TYPE_CHECKING

from autodev.errors import StateConflictError
from autodev.store import plain
from autodev.store.journal import fsync_dir, safe

if TYPE_CHECKING:
    from autodev.records.state import Figures, RunState

# The records (pydantic) load on first use: the steering commands read and write state.json as
# plain JSON (`read_plain`, `update_plain`) when it fits the model (store/plain.py).

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
    from autodev.records.state import RunState

    return RunState.model_validate(BLANK)


def blank_figures() -> Figures:
    """A participant's figures in state.json before its first turn."""
    from autodev.records.state import Figures

    return Figures(turns=0, credited=0, prompt_tokens=0, completion_tokens=0, cost=0.0, silent_streak=0)


class StateFile:
    def __init__(self, path: Path, redact: Callable[[object], object] | None = None):
        self.path = Path(path)
        self._redact = redact
        self._lock_path = self.path.with_name(self.path.name + ".lock")
        self._sync_first: list[Callable[[], None]] = []
        # The state last read, by the file's (inode, size, mtime, ctime) then: the daemon reads
        # state.json eight times a turn and writes it twice (issue 33). Every write replaces the
        # file (a new inode), so a foreign write never matches; RunState is frozen, so sharing it
        # is safe. Filled from a read, never from a write: what is written is redacted.
        self._last: tuple[tuple[int, int, int, int], RunState] | None = None

    def sync_first(self, *syncs: Callable[[], None]) -> None:
        """Call `syncs` (the logs' `sync`) before every write: the daemon's group commit (issue
        33). Records appended without their own fsync are fsynced together here, so state.json
        is never ahead of the logs it counts from."""
        self._sync_first.extend(syncs)

    def read(self) -> RunState:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return blank_state()
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        state = self._read()
        self._last = (key, state)  # a file replaced since the stat: its key differs, read again
        return state

    def _read(self) -> RunState:
        from pydantic import ValidationError

        from autodev.records.state import RunState

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

    def read_plain(self) -> dict[str, object]:
        """state.json as `read().dump()` gives it (every key the file has, BLANK's too), without
        pydantic when the file fits the model as it is; otherwise through the model, so a damaged
        file gets the same error."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return json.loads(json.dumps(BLANK))  # a copy: its list is the caller's to change
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict):
            whole: dict[str, object] = {**BLANK, **data}
            if plain.fits("RunState", whole):
                return whole
        return self.read().dump()

    def update_plain(self, change: Callable[[dict[str, object]], dict[str, object]]) -> dict[str, object]:
        """`update` on the plain state (`read_plain`): `change` returns the new state, as the
        model would hold it; returns what was written."""
        with self._locked():
            cur = self.read_plain()
            version = cur["version"]
            assert isinstance(version, int)  # `read_plain` checked it
            new = {**change(cur), "version": version + 1}
            self._write_plain(new)
            return new

    def request_plain(self, action: str, **fields: object) -> dict[str, object]:
        """`request`, as plain JSON: the same file, the state written returned as a dict."""

        def add(s: dict[str, object]) -> dict[str, object]:
            seq, controls = s["control_seq"], s["controls"]
            assert isinstance(seq, int) and isinstance(controls, list)  # `read_plain` checked them
            return {
                **s,
                "control_seq": seq + 1,
                "controls": [*controls, {"n": seq + 1, "action": action, **fields}],
            }

        return self.update_plain(add)

    def _write(self, st: RunState, durable: bool = True) -> None:
        # The keys that were set, by their file names: a file written before is written back as it was.
        self._write_plain(st.model_dump(mode="json", by_alias=True, exclude_unset=True), durable)

    def _write_plain(self, data: object, durable: bool = True) -> None:
        for sync in self._sync_first:
            sync()
        if self._redact is not None:
            data = self._redact(data)  # secrets never reach state.json either
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        # Readers get valid UTF-8 whatever text reached the state (a file name, a model's post);
        # the walk that escapes lone surrogates only when there is one (encoding finds it).
        try:
            raw = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raw = json.dumps(safe(data), indent=1, sort_keys=True, ensure_ascii=False).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private to the user
        os.fchmod(fd, 0o600)
        with open(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        if durable:
            fsync_dir(self.path.parent)  # and with it the renames of the writes that were not

    def update(self, change: Callable[[RunState], RunState], *, durable: bool = True) -> RunState:
        """Apply `change` to the current state atomically; returns the new state.

        `durable=False` (the group commit, issue 33): the new file's bytes are fsynced before it
        is renamed into place, but the rename is made durable by the next durable write's
        directory fsync. A `kill -9` sees the new state; a power cut the new one or the one
        before, each whole. Only for a change recovery can do again from the logs (the
        scheduled turn: its number is taken back from the harness log's turn_started)."""
        with self._locked():
            cur = self.read()
            new = change(cur).but(version=cur.version + 1)
            self._write(new, durable)
            return new

    def request(self, action: str, **fields: object) -> RunState:
        """Queue a control request (pause, resume, stop) for the daemon; none is ever lost."""

        def add(s: RunState) -> RunState:
            n = s.control_seq + 1
            return s.but(control_seq=n, controls=[*s.controls, {"n": n, "action": action, **fields}])

        return self.update(add)


def lost(state: Path, thread: Path) -> bool:
    """state.json is gone but the run left a thread behind (store/rebuild rebuilds it)."""
    return not state.exists() and thread.exists() and thread.stat().st_size > 0
