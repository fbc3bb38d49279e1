"""`autodev status`: what the run is doing, why it stopped, who is next, what needs you.

Reads state.json and the team file only: no model, no litellm, no thread scan.
"""

from __future__ import annotations

import os
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from autodev.guard.display import digest
from autodev.records.state import Figures, Next, Reason, RunState, TurnUsage, Usage, Wait
from autodev.rules.reasons import continue_line
from autodev.store.paths import RunPaths
from autodev.user.quickstatus import NEEDS_DAEMON, START_WITH, participant_models
from autodev.user.statustext import cap_line, safe_to_show, spend_line

Number = int | float  # as summed: 0 for nothing, a float once a cost is in


class Record(BaseModel):
    """Status data: each field as `status --json` prints it (its name, or its alias)."""

    model_config = ConfigDict(populate_by_name=True, defer_build=True)

    def to_json(self) -> dict[str, object]:
        """As `status --json` prints it: every key gather set, in field order, by its file name."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def shown(self) -> Self:
        """A copy with every string made safe to show on one line (`display.clean`)."""
        from autodev.guard.display import clean

        return type(self).model_validate(clean(self.to_json()))

    def escaped(self) -> Self:
        """A copy with every string escaped for rich (`safe_to_show`), as `render` prints it."""
        return type(self).model_validate(safe_to_show(self.to_json()))


class Row(Record):
    """One participant: as the team has it (nothing but `model` for one who left), and its figures."""

    name: str
    model: str | None = None
    effort: str | None = None
    write: bool | None = None
    max_cost_usd: Number | None = None
    max_tokens: int | None = None
    turns: int = 0
    credited: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    compactions: int = 0
    cost: Number = 0.0
    silent_streak: int = 0


class Need(Record):
    """Something only the user can settle: a question, a gate or a notice (its own keys only);
    the panel lists why the run stopped first (`stopped`, never in `status --json`)."""

    type: Literal["question", "gate", "notice", "stopped"]
    id: str | None = None
    from_: str = Field(default="", alias="from")
    text: str
    digest: str | None = None
    hold: str | None = None
    pinned: bool = False
    answered: bool = False
    do: str


class Queued(Record):
    kind: str
    label: str


class Sandbox(Record):
    """Where commands run, as the run's config asks and this machine allows (`Sandbox.as_dict`)."""

    mode: str
    active: bool
    describe: str
    warning: str | None = None


class Budget(Record):
    """The run's spend (audits included) against its caps (None: no cap)."""

    cost: Number = 0  # as summed: an int 0 while nothing is spent
    tokens: int = 0
    max_cost_usd: Number | None = None
    max_tokens: int | None = None


class Totals(Record):
    turns: int = 0
    credited: int = 0
    tokens: int = 0
    cached_tokens: int = 0
    compactions: int = 0
    cost: Number = 0.0


class EvidenceLine(Record):
    """The test evidence of the newest audited `done` (SPEC §22), from its verdict note."""

    of: int | None = None  # the done post's seq
    summary: str = ""
    outcome: str = ""
    command: str = ""
    counts: dict[str, int] = {}


class Status(Record):
    """What `autodev status` shows and `status --json` prints (`to_json`), what the panel reads."""

    sandbox: Sandbox | None = None
    config_refused: str | None = None
    repo: str = ""
    run_dir: str = ""
    run_id: str | None = None
    state: str = "?"
    no_run_yet: bool = False
    start_with: str | None = None
    reason: Reason | None = None
    daemon_pid: int | None = None
    continue_: str | None = Field(default=None, alias="continue")
    objective: str = ""
    turn: int = 0
    speaking: str | None = None
    next: Next | None = None
    wait: Wait | None = None
    needs_you: list[Need] = []
    queued: list[Queued] = []
    queued_text: str = ""
    participants: list[Row] = []
    audits: int = 0
    talk_turns: int = 0
    team_error: str | None = None
    warnings: list[str] = []
    audit_usage: Usage | None = None
    budget: Budget | None = None
    totals: Totals = Totals()
    evidence: EvidenceLine | None = None  # set only once a done had test evidence


def gather(paths: RunPaths) -> Status:
    from autodev.store import queued
    from autodev.store.lock import DaemonLock
    from autodev.store.rebuild import read_state

    st = read_state(paths)  # a lost state.json is rebuilt from the logs, never shown blank
    models, team_error = _team_models(paths, st)
    parts = _rows(models, st)
    pid = DaemonLock.holder(paths.lock)
    queue = queued.items(paths, st)
    # A daemon gives a run its id the first time it opens it; without one nothing has run here yet
    # (a queued message or control request alone does not make a run).
    no_run_yet = not st.run_id and not pid
    state, why = st.state, st.reason
    if not pid and not no_run_yet and state in NEEDS_DAEMON:
        state, why = "stopped", gone_reason(paths, state)  # never "running" with no daemon
    data: dict[str, object] = {
        "sandbox": sandbox_of(paths),
        "config_refused": st.config_refused.text if st.config_refused else None,
        "repo": str(paths.repo),
        "run_dir": str(paths.run_dir),
        "run_id": st.run_id,
        "state": "not_started" if no_run_yet else state,
        "no_run_yet": no_run_yet,
        "start_with": START_WITH if no_run_yet else None,
        "reason": why,
        "daemon_pid": pid,
        "continue": continue_line(why.dump() if why else None, bool(pid)),
        "objective": st.objective.split("\n")[0][:200],
        "turn": st.turn,
        "speaking": st.speaking,
        "next": st.next,
        "wait": st.wait,
        "needs_you": _needs(st),
        "queued": [{"kind": i.kind, "label": i.label} for i in queue],
        "queued_text": queued.queued_line(queue, bool(pid)),
        "participants": parts,
        "audits": st.audits,
        "talk_turns": st.talk_turns,
        "team_error": team_error,
        "warnings": st.warnings,
        "audit_usage": st.audit_usage,
        "budget": _budget(paths, st),
        "totals": _totals(parts),
    }
    if (ev := last_evidence(paths)) is not None:
        data["evidence"] = ev
    return Status.model_validate(data)


def _team_models(paths: RunPaths, st: RunState) -> tuple[dict[str, dict[str, object]], str | None]:
    """Each participant's model and caps as team.toml has them now, and the team file's problem."""
    from autodev.config import load_team
    from autodev.config.project import saved_team
    from autodev.errors import ConfigError

    try:
        team = load_team(paths.team_file)
    except ConfigError as e:
        team_error = str(e)
        if not paths.team_file.exists():  # e.g. `git clean -fdx` took .autodev/
            team_error = f"the team file {paths.team_file} is missing; " + (
                "restore the last team this run used with `autodev init --from-run`"
                if saved_team(paths.run_dir)
                else "create one with `autodev init`"
            )
        return {}, team_error
    return participant_models(team), st.team_error


def _rows(models: dict[str, dict[str, object]], st: RunState) -> list[Row]:
    """A row for everyone on the team now or with figures in the run, by name."""
    parts: list[Row] = []
    for name in sorted(set(models) | set(st.participants)):
        f = st.participants.get(name) or Figures()
        row = {
            "name": name,
            **models.get(name, {"model": "(not on the team now)"}),
            "turns": f.turns,
            "credited": f.credited,
            "prompt_tokens": f.prompt_tokens,
            "completion_tokens": f.completion_tokens,
            "cached_tokens": f.cached_tokens,
            "compactions": f.compactions,
            "cost": f.cost,
            "silent_streak": f.silent_streak,
        }
        parts.append(Row.model_validate(row))
    return parts


def _needs(st: RunState) -> list[dict[str, object]]:
    """What waits on the user: the open question, the open gate, the notices still open."""
    needs: list[dict[str, object]] = []
    if q := st.question:
        needs.append(
            {"type": "question", "from": q.from_, "text": q.text, "do": 'autodev send "your answer"'}
        )
    if g := st.gate:
        needs.append(
            {
                "type": "gate",
                "id": g.id,
                "from": g.declarer,
                "text": g.text,
                "digest": digest(g.text),
                "do": f'autodev approve {g.id}  |  autodev deny {g.id} --reason "..."',
            }
        )
    for nid, n in sorted(st.notices.items(), key=lambda kv: int(kv[0])):
        if n.answer is None or n.hold:
            needs.append(
                {
                    "type": "notice",
                    "id": nid,
                    "from": n.from_,
                    "text": n.text,
                    "hold": n.hold,
                    "pinned": n.pinned,
                    "answered": n.answer is not None,
                    "do": f'autodev answer {nid} "..."'
                    + (f"  |  autodev notice --release {nid}" if n.hold else ""),
                }
            )
    return needs


def _totals(parts: list[Row]) -> Totals:
    spent = sum((TurnUsage.of(p.model_dump()) for p in parts), TurnUsage())
    return Totals(
        turns=sum(p.turns for p in parts),
        credited=sum(p.credited for p in parts),
        tokens=spent.prompt_tokens + spent.completion_tokens,
        cached_tokens=spent.cached_tokens,
        compactions=sum(p.compactions for p in parts),
        cost=round(spent.cost, 6) if parts else 0,  # no one at all: an int 0, as status --json has it
    )


def last_evidence(paths: RunPaths, posts: int = 200) -> dict[str, object] | None:
    """The evidence on the newest audit verdict among the thread's last `posts` posts."""
    from autodev.store import runs

    ev = runs.last_evidence(paths.run_dir, posts)
    return {k: v for k, v in ev.items() if k in EvidenceLine.model_fields} if ev is not None else None


def gone_reason(paths: RunPaths, was: str) -> Reason:
    """Why a run that needs a daemon has none: the daemon was killed or died without recording
    it. Its log's last line and a full disk are named when there is one."""
    from autodev.setup import doctor

    text = f"the daemon is gone (the run was {was}; it was killed or died without recording why)"
    try:
        with open(paths.daemon_log, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
            lines = [x.strip() for x in f.read().decode("utf-8", errors="replace").splitlines() if x.strip()]
    except OSError:
        lines = []
    if lines:
        text += f"; its log ({paths.daemon_log}) ends with: {lines[-1][:200]}"
    disk = doctor.disk_check(paths.run_dir, min_free_mb=1)
    if disk.status != doctor.OK:
        text += f"; {disk.detail}"
    return Reason.model_validate({"code": "daemon_gone", "text": text, "continue": "autodev start"})


def _budget(paths: RunPaths, st: RunState) -> Budget:
    """The run's spend (audits included) against its caps (None: no cap)."""
    from autodev.config import load_config
    from autodev.errors import ConfigError
    from autodev.rules.budget import run_spend

    try:
        cfg = load_config(paths.config_file)
        caps = {"max_cost_usd": cfg.max_cost_usd or None, "max_tokens": cfg.max_tokens or None}
    except ConfigError:
        caps = {"max_cost_usd": None, "max_tokens": None}
    return Budget.model_validate({**run_spend(st), **caps})


def spend_text(b: Budget) -> str:
    """`spend $0.0123 of $0.0500 (maxCostUsd) · 1,234 of 5,000 tokens (maxTokens)`."""
    return spend_line(b.model_dump())


def cap_text(p: Row) -> str:
    """A participant's cost, with its cap when it has one."""
    return cap_line(p.model_dump())


def sandbox_of(paths: RunPaths) -> Sandbox:
    """Where commands run, as the run's config asks and this machine allows."""
    from autodev.config import load_config
    from autodev.errors import ConfigError
    from autodev.guard import sandbox

    try:
        box = sandbox.resolve(load_config(paths.config_file).sandbox)
    except ConfigError as e:
        return Sandbox(mode="?", active=False, describe=f"none: {e.message}", warning=e.message)
    return Sandbox.model_validate(box.as_dict())


def render(status: Status) -> None:
    """Print it as `autodev status` does (statustext.render: the one renderer)."""
    from autodev.user.statustext import render as render_json

    render_json(status.to_json())
