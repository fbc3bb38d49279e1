"""`autodev status` without pydantic: importing pydantic and building the records' and the
config's models costs more than the 120 ms a status may take on a run of 10⁵ posts (issue 33).

`gather_json(paths)` is `status.gather(paths).to_json()` computed on plain JSON: state.json when
it fits the model as it is (store/plain.py), and the team's and config's values from the
status cache, which the model path writes (`remember`) once the exact bytes of team.toml and
config.toml loaded without error. Anything else (a state.json to rebuild or one that does not
fit, no cache for these bytes, a daemon gone) returns None and the caller takes the model path,
so its errors and conversions stay the only ones. statustext.py prints the status JSON, for
both paths. tests/user/test_quickstatus.py holds both
equal to the model path.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, TypeGuard

from autodev.guard.display import digest
from autodev.store.jsonline import JsonObject, is_object
from autodev.store.memo import read_memo, write_memo
from autodev.store.paths import RunPaths
from autodev.user.plainstate import PlainFigures, PlainState, PlainUsage, fits_state

if TYPE_CHECKING:
    from autodev.config import Team

CACHE = "status-cache.json"  # in the run folder
PROBE_MEMO = "sandbox-probe.json"  # in the run folder: the last sandbox probe's answer and key
START_WITH = 'autodev start "your objective"'
NEEDS_DAEMON = ("running", "waiting", "auditing")  # states only a live daemon can be in

# Field order of the models `status --json` dumps (pydantic dumps set fields in this order, then
# extras); tests/user/test_quickstatus.py keeps them equal to the models.
ORDER: dict[str, tuple[str, ...]] = {
    "Row": (
        "name",
        "model",
        "effort",
        "write",
        "max_cost_usd",
        "max_tokens",
        "turns",
        "credited",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "compactions",
        "cost",
        "silent_streak",
    ),
    "Reason": ("code", "text", "continue"),
    "Next": ("speaker", "rule", "why"),
    "Wait": ("author", "due", "seq", "delay", "streak", "since", "usage_limit"),
    "Usage": ("prompt_tokens", "completion_tokens", "cost"),
    "EvidenceLine": ("of", "summary", "outcome", "command", "counts"),
}


class Counted(TypedDict):
    """A participant's figures in a status row (a figure the state lacks is 0), in Row's order."""

    turns: int
    credited: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    compactions: int
    cost: float
    silent_streak: int


class Cache(TypedDict):
    """status-cache.json (`remember`): what status needs of team.toml and config.toml."""

    key: str
    models: dict[str, JsonObject]  # participant_models
    caps: JsonObject
    sandbox: str


def _ordered(d: Mapping[str, object], model: str) -> JsonObject:
    order = ORDER[model]
    return {**{k: d[k] for k in order if k in d}, **{k: v for k, v in d.items() if k not in order}}


def _ordered_or_none(d: Mapping[str, object] | None, model: str) -> JsonObject | None:
    return None if d is None else _ordered(d, model)


# -- the status cache --------------------------------------------------------------------------


def _key(paths: RunPaths) -> str:
    """What the cached values depend on: the bytes of both files and the code that reads them
    (autodev's version and its config package's files), so an edit of either misses it."""
    import autodev

    h = hashlib.sha256(autodev.__version__.encode())
    for f in (paths.team_file, paths.config_file):
        try:
            h.update(b"\0%d\0" % f.stat().st_size + f.read_bytes())
        except FileNotFoundError:
            h.update(b"\0missing")
    code = Path(__file__).resolve().parent.parent / "config"
    for e in sorted(os.scandir(code), key=lambda e: e.name):
        if e.name.endswith(".py"):
            st = e.stat()
            h.update(f"\0{e.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def participant_models(team: Team) -> dict[str, dict[str, object]]:
    """Each participant's model, effort, write and caps, as status shows them (both paths)."""
    return {
        p.name: {
            "model": f"agent:{p.agent}" + (f" ({p.model})" if p.model else "") if p.agent else p.model,
            "effort": p.effort,
            "write": p.write,
            "max_cost_usd": p.max_cost_usd,
            "max_tokens": p.max_tokens,
        }
        for p in team.participants
    }


def remember(paths: RunPaths) -> None:
    """After the model path: keep what status needs of team.toml and config.toml for these exact
    bytes. Only a team and config that load without error are kept; writing is best effort (a
    read-only run folder makes status slower, not wrong)."""
    from autodev.config import load_config, load_team
    from autodev.errors import ConfigError

    if not paths.run_dir.is_dir():
        return
    key = _key(paths)
    try:
        team, cfg = load_team(paths.team_file), load_config(paths.config_file)
    except ConfigError:
        return
    data = {
        "key": key,
        "models": participant_models(team),
        "caps": {"max_cost_usd": cfg.max_cost_usd or None, "max_tokens": cfg.max_tokens or None},
        "sandbox": cfg.sandbox,
    }
    write_memo(paths.run_dir / CACHE, data)  # only a cache: without it status takes the model path


def _cached(paths: RunPaths) -> Cache | None:
    data = read_memo(paths.run_dir / CACHE)  # None: none (yet), or cut: the model path writes it
    if not is_object(data) or not _is_cache(data):
        return None
    return data if data["key"] == _key(paths) else None


def _is_cache(data: JsonObject) -> TypeGuard[Cache]:
    """The cache as `remember` writes it (anything else: the model path, which writes it again)."""
    models, caps = data.get("models"), data.get("caps")
    return (
        isinstance(data.get("key"), str)
        and is_object(models)
        and all(is_object(m) for m in models.values())
        and is_object(caps)
        and isinstance(data.get("sandbox"), str)
    )


# -- gathering ---------------------------------------------------------------------------------


def _state(paths: RunPaths) -> PlainState | None:
    from autodev.store.state import BLANK, lost

    if lost(paths.state, paths.thread):
        return None  # rebuilt from the logs: the model path
    try:
        raw = paths.state.read_bytes()
    except FileNotFoundError:
        raw = json.dumps(BLANK).encode()  # a run not started: the blank state (a copy of it)
    try:
        data: object = json.loads(raw)
    except (ValueError, RecursionError):
        return None  # the model path says what is wrong with it
    if not is_object(data):
        return None
    st: JsonObject = {**BLANK, **data}
    return st if fits_state(st) else None


def _needs(st: PlainState) -> list[JsonObject]:
    needs: list[JsonObject] = []
    if q := st.get("question"):
        needs.append(
            {
                "type": "question",
                "from": q["from"],
                "text": q.get("text", ""),
                "do": 'autodev send "your answer"',
            }
        )
    if g := st.get("gate"):
        text = g.get("text", "")
        needs.append(
            {
                "type": "gate",
                "id": g["id"],
                "from": g["declarer"],
                "text": text,
                "digest": digest(text),
                "do": f'autodev approve {g["id"]}  |  autodev deny {g["id"]} --reason "..."',
            }
        )
    notices = st.get("notices") or {}
    for nid, n in sorted(notices.items(), key=lambda kv: int(kv[0])):
        hold = n.get("hold")
        if n.get("answer") is None or hold:
            needs.append(
                {
                    "type": "notice",
                    "id": nid,
                    "from": n["from"],
                    "text": n.get("text", ""),
                    "hold": hold,
                    "pinned": n.get("pinned", False),
                    "answered": n.get("answer") is not None,
                    "do": f'autodev answer {nid} "..."'
                    + (f"  |  autodev notice --release {nid}" if hold else ""),
                }
            )
    return needs


def _spend(st: PlainState) -> JsonObject:
    """rules.budget.run_spend on the plain state: Usage's `+`, in the same order."""
    figures = st.get("participants") or {}
    used: list[PlainUsage] = list(figures.values())
    if (audit := st.get("audit_usage")) is not None:
        used.append(audit)
    if not used:
        return {"cost": 0, "tokens": 0}
    cost, tokens = 0.0, 0
    for u in used:
        cost = cost + (u.get("cost") or 0)
        tokens = tokens + (u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0)
    return {"cost": round(cost, 6), "tokens": tokens}


def _counted(f: PlainFigures) -> Counted:
    return {
        "turns": f.get("turns", 0),
        "credited": f.get("credited", 0),
        "prompt_tokens": f.get("prompt_tokens", 0),
        "completion_tokens": f.get("completion_tokens", 0),
        "cached_tokens": f.get("cached_tokens", 0),
        "compactions": f.get("compactions", 0),
        "cost": f.get("cost", 0.0),
        "silent_streak": f.get("silent_streak", 0),
    }


def _rows(
    models: dict[str, JsonObject], figures: dict[str, PlainFigures]
) -> tuple[list[JsonObject], list[Counted]]:
    """A row per participant on the team or with figures in the state, by name; and its figures."""
    parts: list[JsonObject] = []
    counted: list[Counted] = []
    for name in sorted(set(models) | set(figures)):
        c = _counted(figures.get(name) or {})
        row: JsonObject = {"name": name, **models.get(name, {"model": "(not on the team now)"}), **c}
        parts.append(_ordered(row, "Row"))
        counted.append(c)
    return parts, counted


def _totals(parts: list[Counted]) -> JsonObject:
    """The rows summed, cost added in row order as the model path adds it."""
    cost = 0.0
    for p in parts:
        cost = cost + p["cost"]
    return {
        "turns": sum(p["turns"] for p in parts),
        "credited": sum(p["credited"] for p in parts),
        "tokens": sum(p["prompt_tokens"] + p["completion_tokens"] for p in parts),
        "cached_tokens": sum(p["cached_tokens"] for p in parts),
        "compactions": sum(p["compactions"] for p in parts),
        "cost": round(cost, 6) if parts else 0,
    }


def gather_json(paths: RunPaths) -> JsonObject | None:
    """`status.gather(paths).to_json()`, or None when only the model path can say it."""
    from autodev.guard import bwrap
    from autodev.rules.reasons import continue_line
    from autodev.store import queued
    from autodev.store.journal import last_evidence
    from autodev.store.lock import DaemonLock

    st = _state(paths)
    cfg = _cached(paths) if st is not None else None
    if st is None or cfg is None:
        return None
    pid = DaemonLock.holder(paths.lock)
    no_run_yet = not st.get("run_id") and not pid
    state = st.get("state", "stopped")
    if not pid and not no_run_yet and state in NEEDS_DAEMON:
        return None  # the daemon is gone: the model path says why
    parts, counted = _rows(cfg["models"], st.get("participants") or {})
    queue = queued.items(paths)
    why = st.get("reason")
    box = bwrap.which(cfg["sandbox"], memo=paths.run_dir / PROBE_MEMO).as_dict()
    refused = st.get("config_refused")
    data: JsonObject = {
        "sandbox": {k: box[k] for k in ("mode", "active", "describe", "warning") if k in box},
        "config_refused": refused.get("text") if refused else None,
        "repo": str(paths.repo),
        "run_dir": str(paths.run_dir),
        "run_id": st.get("run_id"),
        "state": "not_started" if no_run_yet else state,
        "no_run_yet": no_run_yet,
        "start_with": START_WITH if no_run_yet else None,
        "reason": _ordered(why, "Reason") if why else None,
        "daemon_pid": pid,
        "continue": continue_line(why, bool(pid)),
        "objective": (st.get("objective") or "").split("\n")[0][:200],
        "turn": st.get("turn", 0),
        "speaking": st.get("speaking"),
        "next": _ordered_or_none(st.get("next"), "Next"),
        "wait": _ordered_or_none(st.get("wait"), "Wait"),
        "needs_you": _needs(st),
        "queued": [{"kind": i.kind, "label": i.label} for i in queue],
        "queued_text": queued.queued_line(queue, bool(pid)),
        "participants": parts,
        "audits": st.get("audits", 0),
        "talk_turns": st.get("talk_turns", 0),
        "team_error": st.get("team_error"),
        "warnings": st.get("warnings", []),
        "audit_usage": _ordered_or_none(st.get("audit_usage"), "Usage"),
        "budget": {**_spend(st), **cfg["caps"]},
        "totals": _totals(counted),
    }
    if (ev := last_evidence(paths.run_dir)) is not None:
        line_ = {k: v for k, v in ev.items() if k in ORDER["EvidenceLine"]}
        if not _evidence_fits(line_):
            return None  # the model converts or refuses it
        data["evidence"] = _ordered(line_, "EvidenceLine")
    return data


def _evidence_fits(ev: JsonObject) -> bool:
    """The values EvidenceLine takes as they are (anything else: the model path)."""
    counts: object = ev.get("counts", {})
    return (
        (ev.get("of") is None or type(ev.get("of")) is int)
        and all(type(ev.get(k, "")) is str for k in ("summary", "outcome", "command"))
        and is_object(counts)
        and all(type(v) is int for v in counts.values())
    )
