"""A best-of-N group's durable record (SPEC §23, docs/best-of.md).

Where it lives: `$AUTODEV_HOME/groups/<repo-folder>/<group>/`, `<repo-folder>` being the name of
the repository's own run folder (`<project>-<hash>`), so one listing finds a repository's groups
and two groups on one repository never share a path. The folder holds `group.jsonl` (this
record), `driver.lock` (the flock of the process that drives the group), `driver.log` and the
runs' clones `<project>-<k>/`.

`group.jsonl` is a journal of intents and effects, every line fsynced before what depends on it,
idempotent by id: `created` (objective, base commit, branch, N, parallel, caps, team variants),
`worktree:K` (the intent: path, branch) then `made:K` (it exists), `started:K` (its daemon was
asked to start), `ended:K` (its daemon is gone: end state and the ref that keeps its work),
`budget` (the group's cap reached), `applied` (what `pick --apply` merged), `pruned` (the
worktrees removed). A driver killed at any point finds every step it had begun and redoes it:
each step is idempotent against the files and refs it left.
"""

from __future__ import annotations

import fcntl
import secrets
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

from pydantic import TypeAdapter, ValidationError

from autodev.errors import UsageError
from autodev.records.group import (
    Applied,
    ApplyStarted,
    BudgetReached,
    Created,
    Ended,
    GroupEnded,
    GroupRecord,
    Made,
    MadeAt,
    Pruned,
    RunStarted,
)
from autodev.store.journal import Journal, JsonObject, iter_records
from autodev.store.paths import RunPaths, autodev_home
from autodev.store.thread import now_ts

REF_PREFIX = "refs/autodev/best-of"
_LINE: TypeAdapter[GroupRecord] = TypeAdapter(GroupRecord)


class GroupError(UsageError):
    """A group that cannot be made, found or used as asked (exit 2)."""


def groups_root(repo: Path) -> Path:
    return autodev_home() / "groups" / RunPaths(repo).run_dir.name


@dataclass
class Member:
    """One run of the group, as its record says."""

    k: int
    worktree: Path
    branch: str
    team: str | None = None  # the --vary team file whose content this run uses
    made: bool = False
    started: bool = False
    ended: Ended | None = None

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.worktree)

    @property
    def ref(self) -> str:
        return self.ended.ref if self.ended else ""


@dataclass
class Group:
    """A group folded from its record."""

    folder: Path
    id: str
    repo: Path
    objective: str
    base: str
    branch: str | None
    n: int
    parallel: int
    max_cost_usd: float | None
    created: str
    members: dict[int, Member] = field(default_factory=dict)
    budget: BudgetReached | None = None
    applied: Applied | None = None
    pruned: bool = False

    @property
    def record(self) -> Path:
        return self.folder / "group.jsonl"

    @property
    def lock(self) -> Path:
        return self.folder / "driver.lock"

    @property
    def config(self) -> Path:
        """The .autodev/ every run of the group gets (a copy made when the group began)."""
        return self.folder / "config"

    @property
    def log(self) -> Path:
        return self.folder / "driver.log"

    def ref_of(self, k: int) -> str:
        return f"{REF_PREFIX}/{self.id}/{k}"

    def worktree_of(self, k: int) -> Path:
        return self.folder / f"{self.repo.name}-{k}"

    def branch_of(self, k: int) -> str:
        return f"autodev-best-of-{self.id}-{k}"

    @property
    def ended(self) -> bool:
        return len(self.members) == self.n and all(m.ended for m in self.members.values())

    def driver_alive(self) -> bool:
        """Someone holds the driver's flock (the driver process itself)."""
        if not self.lock.exists():
            return False
        with open(self.lock, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False


@contextmanager
def _locked(folder: Path) -> Generator[None, None, None]:
    """Appends of the driver and of `pick` in one order (a Journal remembers ids per process)."""
    with open(folder / "group.jsonl.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def append(folder: Path, record: GroupRecord) -> None:
    """One line, fsynced, written once per id whoever appends it: its set fields, then `ts`."""
    with _locked(folder):
        j = Journal(folder / "group.jsonl")
        try:
            if not any(r.get("id") == record.id for r in iter_records(j.path)):
                j.append({**record.dump(), "ts": now_ts()})
        finally:
            j.close()


def create(
    repo: Path,
    objective: str,
    base: str,
    branch: str | None,
    n: int,
    parallel: int,
    max_cost_usd: float | None,
    teams: list[tuple[str, str]],
) -> Group:
    """A new group's folder: the run's config as it is now (`config/`, a copy of .autodev/, so
    a run started later runs what the user started the group with) and the variant team files
    (name, text) in it, then `created`."""
    from autodev.timeline.safe import install_config

    gid = secrets.token_hex(3)
    folder = groups_root(repo) / gid
    folder.mkdir(parents=True, mode=0o700)
    user = RunPaths(repo)
    install_config(user.config_dir if user.team_file.exists() else user.run_dir / "team", folder / "config")
    for i, (_, text) in enumerate(teams, start=1):
        (folder / "config" / f"team-variant-{i}.toml").write_text(text)
    append(
        folder,
        Created(
            id="created",
            type="created",
            group=gid,
            repo=str(repo),
            objective=objective,
            base=base,
            branch=branch,
            n=n,
            parallel=parallel,
            max_cost_usd=max_cost_usd,
            teams=[name for name, _ in teams],
        ),
    )
    return load(folder)


def load(folder: Path) -> Group:
    recs = list(iter_records(folder / "group.jsonl"))
    c = _created(folder, recs[0] if recs else None)
    g = Group(
        folder=folder,
        id=c.group,
        repo=Path(c.repo),
        objective=c.objective or "",
        base=c.base,
        branch=c.branch,
        n=c.n,
        parallel=c.parallel,
        max_cost_usd=c.max_cost_usd,
        created=c.ts,
    )
    for r in recs[1:]:
        _fold(g, r, c.teams)
    return g


def _created(folder: Path, first: JsonObject | None) -> Created:
    """The group's first line as its `created` record; none, or a line of another type: the group
    never began."""
    try:
        return Created.model_validate(first)
    except ValidationError as e:
        if first is not None and all(err["loc"] != ("type",) for err in e.errors()):
            raise  # a `created` line damaged by hand: the error names its field
        raise GroupError(
            f"{folder}/group.jsonl has no `created` line", "remove the folder: the group never began"
        ) from None


def _fold(g: Group, line: JsonObject, teams: list[str]) -> None:
    """One line of the record after `created`, read into its record, into the group; a line of a
    kind a newer autodev wrote is passed over (its own fields say nothing to this one)."""
    try:
        r = _LINE.validate_python(line)
    except ValidationError as e:
        problems = [err["type"] for err in e.errors()]  # pydantic's error kinds, not the line's
        if "union_tag_invalid" in problems:
            return
        raise GroupError(
            f"{g.record}: a line cannot be read ({e.errors()[0]['msg']}): {line}",
            "the file was changed by hand: restore the line, or remove the group's folder",
        ) from None
    match r:
        case BudgetReached():
            g.budget = r
        case Applied():
            g.applied = r
        case Pruned():
            g.pruned = True
        case MadeAt():
            g.members[r.k] = Member(
                r.k, Path(r.path), r.branch, teams[(r.k - 1) % len(teams)] if teams else None
            )
        case Made() | RunStarted() | Ended() if r.k not in g.members:
            pass  # a step of a run whose `worktree` line is not there: nothing to fold it into
        case Made():
            g.members[r.k].made = True
        case RunStarted():
            g.members[r.k].started = True
        case Ended():
            g.members[r.k].ended = r
        case Created() | GroupEnded() | ApplyStarted():
            pass  # the first line (read by `load`), and markers nothing folds
        case _:
            assert_never(r)


def of_repo(repo: Path) -> list[Group]:
    """The repository's groups, oldest first."""
    root = groups_root(repo)
    if not root.is_dir():
        return []
    found = [load(d) for d in root.iterdir() if (d / "group.jsonl").is_file()]
    return sorted(found, key=lambda g: g.created)


def find(repo: Path, gid: str | None) -> Group:
    """The group named, or the repository's newest."""
    groups = of_repo(repo)
    if gid is not None:
        for g in groups:
            if g.id == gid:
                return g
        raise GroupError(
            f"no best-of group {gid!r} for {repo}",
            "`autodev status` shows this repository's newest group; `autodev runs` lists every run",
        )
    if not groups:
        raise GroupError(
            f"no best-of group was started in {repo}",
            'start one with `autodev start --best-of 3 "objective"`',
        )
    return groups[-1]


def all_groups() -> list[Group]:
    root = autodev_home() / "groups"
    if not root.is_dir():
        return []
    return [
        load(d)
        for r in sorted(root.iterdir())
        if r.is_dir()
        for d in sorted(r.iterdir())
        if (d / "group.jsonl").is_file()
    ]
