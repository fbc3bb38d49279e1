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
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from autodev.errors import StateConflictError, UsageError
from autodev.records.state import RunState
from autodev.rules.budget import run_spend
from autodev.store.journal import Journal, fsync_dir, iter_records
from autodev.store.paths import autodev_home
from autodev.store.state import StateFile
from autodev.store.thread import now_ts


def index_path() -> Path:
    return autodev_home() / "index.jsonl"


@contextmanager
def _locked() -> Iterator[None]:
    home = autodev_home()
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "index.jsonl.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def append(record: dict) -> dict:
    """Append one index line durably (fsynced), idempotent by its `id`."""
    with _locked():
        j = Journal(index_path())
        try:
            return j.append(record)
        finally:
            j.close()


def usage_of(st: RunState) -> dict:
    """A run's figures from its state.json: turns, credited work, tokens, cost, per model."""
    parts = st.participants.values()
    spend = run_spend(st)
    return {
        "turns": sum(p.turns for p in parts),
        "credited": sum(p.credited for p in parts),
        "tokens": spend["tokens"],
        "cost": spend["cost"],
        "models": {label: m.model_dump(mode="json", exclude_unset=True) for label, m in st.models.items()},
    }


def start_record(run: str, session: int, repo: Path, run_dir: Path, st: RunState) -> dict:
    return {
        "id": f"{run}:start:{session}",
        "type": "start",
        "run": run,
        "session": session,
        "ts": now_ts(),
        "repo": str(repo),
        "run_dir": str(run_dir),
        "objective": st.objective.split("\n")[0][:200],
        **(
            {"forked_from": st.forked_from.model_dump(mode="json", exclude_unset=True)}
            if st.forked_from
            else {}
        ),
    }


def end_record(run: str, session: int, repo: Path, run_dir: Path, st: RunState) -> dict:
    return {
        **start_record(run, session, repo, run_dir, st),
        "id": f"{run}:end:{session}",
        "type": "end",
        "state": st.state,
        "reason": st.reason.code if st.reason else None,
        **usage_of(st),
    }


# -- reading --------------------------------------------------------------------------------------


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


def listing() -> list[dict]:
    """One row per run of the index, newest start first."""
    runs: dict[tuple[object, object], dict] = {}
    for rec in iter_records(index_path()):
        key = (rec.get("run_dir", ""), rec.get("run", ""))
        r = runs.setdefault(key, {"run": rec.get("run"), "run_dir": rec.get("run_dir"), "first": rec})
        r["repo"] = rec.get("repo") or r.get("repo")
        if rec.get("objective"):
            r["objective"] = rec["objective"]
        if rec.get("forked_from"):
            r["forked_from"] = rec["forked_from"]
        if rec.get("type") == "start":
            r["last_start"] = rec
        elif rec.get("type") == "end":
            r["last_end"] = rec
    now = time.time()
    rows = []
    for r in runs.values():
        run_dir = Path(r["run_dir"])
        st = _read_state(run_dir)
        live = st if st is not None and st.run_id == r["run"] else None  # None: missing
        missing = live is None
        end = r.get("last_end")
        ended = end is not None and end.get("session", 0) >= r.get("last_start", {}).get("session", 0)
        pid = None if missing else _alive(run_dir)
        started = _epoch(r["first"].get("ts"))
        if live is None:
            figures = {k: (end or {}).get(k) for k in ("turns", "credited", "tokens", "cost", "models")}
            state = "missing"
            last = _epoch((end or r["first"]).get("ts"))
        else:
            figures = usage_of(live)
            state = live.state
            if pid:
                last = now
            elif end is not None and ended:
                last = _epoch(end.get("ts"))
            else:  # its daemon died without writing an end line (kill -9): its last write
                last = _mtime(run_dir)
                state = f"{state} (daemon died)" if live.daemon == "running" else state
        rows.append(
            {
                "run": r["run"],
                "repo": r.get("repo"),
                "run_dir": r["run_dir"],
                "objective": live.objective.split("\n")[0][:200] if live else r.get("objective", ""),
                "state": state,
                "missing": missing,
                "daemon_pid": pid,
                "started": r["first"].get("ts"),
                "duration_sec": round(max(0.0, last - started), 1) if started and last else None,
                "last_activity": last if missing else _mtime(run_dir),
                **{k: figures.get(k) for k in ("turns", "credited", "tokens", "cost")},
                "models": figures.get("models") or {},
                "forked_from": r.get("forked_from")
                or (live.forked_from.dump() if live and live.forked_from else None),
            }
        )
    rows.sort(key=lambda x: x["started"] or "", reverse=True)
    return rows


def stats(rows: list[dict] | None = None) -> dict:
    """Totals over every listed run, and usage per model."""
    rows = listing() if rows is None else rows
    from autodev.records.state import ModelUsage, add_usage  # pydantic: only `runs stats` pays for it

    models: dict[str, dict] = {}
    for r in rows:
        for m, u in (r.get("models") or {}).items():
            add_usage(models, m, ModelUsage.of(u))
    for t in models.values():
        t["cost"] = round(t["cost"], 6)
    return {
        "runs": len(rows),
        "missing": sum(1 for r in rows if r["missing"]),
        "turns": sum(r.get("turns") or 0 for r in rows),
        "credited": sum(r.get("credited") or 0 for r in rows),
        "tokens": sum(r.get("tokens") or 0 for r in rows),
        "cost": round(sum(r.get("cost") or 0.0 for r in rows), 6),
        "models": dict(sorted(models.items())),
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


def prune(older_than_sec: float) -> dict:
    """Remove run folders whose last activity is older than the age, and the index lines of
    removed and missing runs. A run whose daemon is alive is kept and named."""
    home = autodev_home().resolve()
    removed, missing, refused = [], [], []
    drop: set[tuple[str, str]] = set()
    now = time.time()
    for r in listing():
        key = (r["run_dir"], r["run"])
        if r["missing"]:
            missing.append(r)
            drop.add(key)
            continue
        if r["last_activity"] is None or now - r["last_activity"] < older_than_sec:
            continue
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
    return {"removed": removed, "missing": missing, "refused": refused}


def _rewrite_without(drop: set[tuple[str, str]]) -> None:
    path = index_path()
    with _locked():
        keep = [rec for rec in iter_records(path) if (rec.get("run_dir", ""), rec.get("run", "")) not in drop]
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            for rec in keep:
                f.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
