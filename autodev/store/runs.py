"""Every run at a glance: `$AUTODEV_HOME/index.jsonl` and `autodev runs`.

A daemon appends one line when it opens a run and one when it exits (ids `RUN:start:N` and
`RUN:end:N`, N counting the run's daemon sessions, so a retried append is written once). Daemons
of different repositories share the file: each append, and prune's rewrite, hold an flock on
`index.jsonl.lock`, so no line is torn or lost. The listing reads the index for what ran where
and the run folder's state.json for the current figures; a folder deleted by hand is listed as
missing with the figures of its last end line, until `autodev runs prune` drops it.

No model, no litellm: this is read by the CLI.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from autodev.errors import StateConflictError, UsageError
from autodev.records.state import RunState
from autodev.rules.budget import run_spend
from autodev.store.journal import Journal, JsonObject, fsync_dir, is_object, iter_records, last_evidence
from autodev.store.paths import autodev_home

# The shapes of what `autodev runs` lists: callers name them as runs.Row and so on.
from autodev.store.runrows import Pruned as Pruned
from autodev.store.runrows import Refused as Refused
from autodev.store.runrows import Row as Row
from autodev.store.runrows import RunFigures as RunFigures
from autodev.store.runrows import Stats as Stats
from autodev.store.state import StateFile
from autodev.store.thread import now_ts


def index_path() -> Path:
    return autodev_home() / "index.jsonl"


@contextmanager
def _locked() -> Generator[None, None, None]:
    home = autodev_home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "index.jsonl.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def append(record: JsonObject) -> JsonObject:
    """Append one index line durably (fsynced), idempotent by its `id`."""
    with _locked():
        j = Journal(index_path())
        try:
            return j.append(record)
        finally:
            j.close()


def usage_of(st: RunState) -> RunFigures:
    """A run's figures from its state.json: turns, credited work, tokens, cost, per model."""
    parts = st.participants.values()
    spend = run_spend(st)
    models: JsonObject = {
        label: m.model_dump(mode="json", exclude_unset=True) for label, m in st.models.items()
    }
    return {
        "turns": sum(p.turns for p in parts),
        "credited": sum(p.credited for p in parts),
        "tokens": spend["tokens"],
        "cost": spend["cost"],
        "models": models,
    }


def start_record(run: str, session: int, repo: Path, run_dir: Path, st: RunState) -> JsonObject:
    return {
        "id": f"{run}:start:{session}",
        "type": "start",
        "run": run,
        "session": session,
        "ts": now_ts(),
        "repo": str(repo),
        "run_dir": str(run_dir),
        "objective": st.objective.split("\n")[0][:200],
        **({"forked_from": st.forked_from.dump()} if st.forked_from else {}),
    }


def end_record(run: str, session: int, repo: Path, run_dir: Path, st: RunState) -> JsonObject:
    return {
        **start_record(run, session, repo, run_dir, st),
        "id": f"{run}:end:{session}",
        "type": "end",
        "state": st.state,
        "reason": st.reason.code if st.reason else None,
        **usage_of(st),
        **(
            {"evidence": ev["summary"]}
            if (ev := last_evidence(run_dir)) and isinstance(ev.get("summary"), str)
            else {}
        ),
    }


# -- reading --------------------------------------------------------------------------------------
# An index line's fields as autodev writes them; one of another type (a line autodev did not
# write) reads as missing.


def _text(rec: JsonObject, key: str) -> str | None:
    v = rec.get(key)
    return v if isinstance(v, str) else None


def _int(rec: JsonObject, key: str) -> int | None:
    v = rec.get(key)
    return v if isinstance(v, int) else None


def _number(rec: JsonObject, key: str) -> float | None:
    v = rec.get(key)
    return v if isinstance(v, (int, float)) else None  # an int stays one (`"cost": 0` is listed as 0)


def _object_at(rec: JsonObject, key: str) -> JsonObject | None:
    v = rec.get(key)
    return v if is_object(v) else None


def _key(rec: JsonObject) -> tuple[str, str]:
    """The run a line is about: its folder and its id."""
    return _text(rec, "run_dir") or "", _text(rec, "run") or ""


@dataclass
class _Seen:
    """What the index says of one run: its first line, its newest start and end lines."""

    first: JsonObject
    repo: str | None = None
    objective: str = ""
    forked_from: JsonObject | None = None
    last_start: JsonObject | None = None
    last_end: JsonObject | None = None


def _epoch(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _read_state(run_dir: Path) -> RunState | None:
    """A listed run's state.json; None when it is gone or unreadable (the run shows as missing)."""
    path = run_dir / "state.json"
    try:
        return StateFile(path).read() if path.exists() else None
    except (OSError, StateConflictError):
        return None


def _mtime(run_dir: Path) -> float | None:
    try:
        return (run_dir / "state.json").stat().st_mtime
    except OSError:
        return None


def _alive(run_dir: Path) -> int | None:
    from autodev.store.lock import DaemonLock

    try:
        return DaemonLock.holder(run_dir / "daemon.lock")
    except OSError:
        return None


def _recorded(end: JsonObject | None) -> RunFigures:
    """The figures of a run's end line (all None without one)."""
    line = end or {}
    return {
        "turns": _int(line, "turns"),
        "credited": _int(line, "credited"),
        "tokens": _int(line, "tokens"),
        "cost": _number(line, "cost"),
        "models": _object_at(line, "models"),
    }


def listing() -> list[Row]:
    """One row per run of the index, newest start first."""
    now = time.time()
    rows = [row for r in _seen().values() if (row := _row(r, now)) is not None]
    rows.sort(key=lambda x: x["started"] or "", reverse=True)
    return rows


def _seen() -> dict[tuple[str, str], _Seen]:
    """Every run of the index, with its first line, its last start and end lines (an index line
    is a start or an end: `start_record`, `end_record`)."""
    runs: dict[tuple[str, str], _Seen] = {}
    for rec in iter_records(index_path()):
        r = runs.setdefault(_key(rec), _Seen(rec))
        r.repo = _text(rec, "repo") or r.repo
        if objective := _text(rec, "objective"):
            r.objective = objective
        if forked_from := _object_at(rec, "forked_from"):
            r.forked_from = forked_from
        match rec.get("type"):
            case "start":
                r.last_start = rec
            case "end":
                r.last_end = rec
            case _:
                pass  # a line of a newer autodev: its run is listed by the lines we know
    return runs


def _row(r: _Seen, now: float) -> Row | None:
    """The run's row: its state.json when the run folder still holds it (else `missing`, with
    the figures of its last end line); None for a line autodev did not write (no folder)."""
    run, folder = _text(r.first, "run"), _text(r.first, "run_dir")
    if folder is None:
        return None
    run_dir = Path(folder)
    st = _read_state(run_dir)
    live = st if st is not None and st.run_id == run else None  # None: missing
    end = r.last_end
    ended = end is not None and (_int(end, "session") or 0) >= (_int(r.last_start or {}, "session") or 0)
    pid = None if live is None else _alive(run_dir)
    started = _epoch(_text(r.first, "ts"))
    if live is None:
        figures, state, last = _recorded(end), "missing", _epoch(_text(end or r.first, "ts"))
    else:
        figures, state = usage_of(live), live.state
        if pid:
            last = now
        elif end is not None and ended:
            last = _epoch(_text(end, "ts"))
        else:  # its daemon died without writing an end line (kill -9): its last write
            last = _mtime(run_dir)
            state = f"{state} (daemon died)" if live.daemon == "running" else state
    row: Row = {
        "run": run,
        "repo": r.repo,
        "run_dir": folder,
        "objective": live.objective.split("\n")[0][:200] if live else r.objective,
        "state": state,
        "missing": live is None,
        "daemon_pid": pid,
        "started": _text(r.first, "ts"),
        "duration_sec": round(max(0.0, last - started), 1) if started and last else None,
        "last_activity": last if live is None else _mtime(run_dir),
        "turns": figures["turns"],
        "credited": figures["credited"],
        "tokens": figures["tokens"],
        "cost": figures["cost"],
        "models": figures["models"] or {},
        "forked_from": r.forked_from or (live.forked_from.dump() if live and live.forked_from else None),
    }
    if end is not None and (summary := _text(end, "evidence")):
        row["evidence"] = summary
    return row


def stats(rows: list[Row] | None = None) -> Stats:
    """Totals over every listed run, and usage per model."""
    rows = listing() if rows is None else rows
    from autodev.records.state import ModelUsage  # pydantic: only `runs stats` pays for it

    models: dict[str, ModelUsage] = {}
    for r in rows:
        for m, u in r["models"].items():
            if is_object(u):
                models[m] = models.get(m, ModelUsage()) + ModelUsage.of(u)
    return {
        "runs": len(rows),
        "missing": sum(1 for r in rows if r["missing"]),
        "turns": sum(r["turns"] or 0 for r in rows),
        "credited": sum(r["credited"] or 0 for r in rows),
        "tokens": sum(r["tokens"] or 0 for r in rows),
        "cost": round(sum(r["cost"] or 0.0 for r in rows), 6),
        "models": {m: u.plain(6) for m, u in sorted(models.items())},
    }


# -- pruning --------------------------------------------------------------------------------------


def parse_age(text: str) -> float:
    """`30d`, `12h` or `45m` as seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dhm])\s*", text or "")
    if not m:
        raise UsageError(
            f"--older-than {text!r} is not an age",
            "write it as a number and a unit: 30d (days), 12h (hours) or 45m (minutes)",
        )
    return float(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]


def prune(older_than_sec: float) -> Pruned:
    """Remove run folders whose last activity is older than the age, and the index lines of
    removed and missing runs. A run whose daemon is alive is kept and named."""
    home = autodev_home().resolve()
    out: Pruned = {"removed": [], "missing": [], "refused": []}
    removed, missing, refused = out["removed"], out["missing"], out["refused"]
    drop: set[tuple[str, str]] = set()
    now = time.time()
    for r in listing():
        key = (r["run_dir"], r["run"] or "")
        if r["missing"]:
            missing.append(r)
            drop.add(key)
            continue
        if r["last_activity"] is None or now - r["last_activity"] < older_than_sec:
            continue
        if r["repo"] and Path(r["repo"]).resolve().is_relative_to(home / "groups"):
            continue  # a best-of group's run: its worktree and folder go with the group's prune
        folder = Path(r["run_dir"])
        if folder.resolve().parent != home:  # only ever a run folder of this AUTODEV_HOME
            refused.append({**r, "why": f"{folder} is not a run folder of {home}"})
            continue
        pid = _alive(folder)
        if pid:
            refused.append({**r, "why": f"its daemon (pid {pid}) is alive; stop it first"})
            continue
        shutil.rmtree(folder)
        removed.append(r)
        drop.add(key)
    if drop:
        _rewrite_without(drop)
    return out


def _rewrite_without(drop: set[tuple[str, str]]) -> None:
    path = index_path()
    with _locked():
        keep = [rec for rec in iter_records(path) if _key(rec) not in drop]
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            for rec in keep:
                f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
