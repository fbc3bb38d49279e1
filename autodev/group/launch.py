"""`autodev start --best-of N` and `--resume-group ID`: the checks, the group's record, and its
driver started detached (keys over a pipe, never its environment)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import TypeGuard

from autodev.errors import AutodevError, DaemonRunningError
from autodev.group import driver
from autodev.group.record import Group, GroupError, create, find
from autodev.guard import keys
from autodev.host import spawn
from autodev.host.hostproc import PYTHON_SAFE
from autodev.store.journal import JsonObject, is_object
from autodev.store.lock import DaemonLock
from autodev.store.paths import RunPaths, git_head
from autodev.timeline import git

MAX_N = 16


def team_variants(files: list[Path]) -> list[tuple[str, str]]:
    """`--vary team=...`: each file checked, then carried as text (name, team.toml text)."""
    from autodev.config import load_team

    for team in files:
        if not team.is_file():
            raise GroupError(
                f"--vary team={team}: no such file", "give team files, e.g. --vary team=a.toml,b.toml"
            )
        load_team(team)
    return [(str(t), t.read_text()) for t in files]


def model_variants(team_file: Path, models: list[str]) -> list[tuple[str, str]]:
    """`--vary model=...`: the repository's team with every model participant on that model (agent
    CLIs keep theirs); checked when the group is made, as the runs will read it."""
    import tomllib

    import tomli_w

    data: JsonObject = tomllib.loads(team_file.read_text())
    people = _table_list(data.get("participants"))
    if not any(is_object(p) and "model" in p for p in people):
        raise GroupError(
            f"--vary model=...: {team_file} has no participant with a model to vary",
            "vary the team instead: --vary team=a.toml,b.toml",
        )
    out: list[tuple[str, str]] = []
    for model in models:
        varied = [{**p, "model": model} if is_object(p) and "model" in p else p for p in people]
        out.append((f"model={model}", tomli_w.dumps({**data, "participants": varied})))
    return out


def _table_list(value: object) -> list[object]:
    """A TOML array as read (empty when it is not one)."""
    return [*value] if _is_list(value) else []


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


def check(paths: RunPaths, n: int, parallel: int | None) -> None:
    """Everything a group needs before anything is made: refused with the fix (exit 2)."""
    from autodev.config import load_config, load_team

    if not 1 <= n <= MAX_N:
        raise GroupError(f"--best-of {n}: give 1 to {MAX_N} runs", 'e.g. `autodev start --best-of 3 "..."`')
    if parallel is not None and parallel < 1:
        raise GroupError(f"--parallel {parallel}: give 1 or more", "e.g. --parallel 2")
    pid = DaemonLock.holder(paths.lock)
    if pid:
        raise DaemonRunningError(
            f"a run is already going in this repository (daemon pid {pid}); a group starts from "
            "a repository no daemon works in",
            "wait for it (`autodev status`) or end it with `autodev stop`, then start the group",
        )
    load_config(paths.config_file)
    load_team(paths.team_file)
    if git_head(paths.repo) is None:
        raise GroupError(f"{paths.repo} has no commit yet: a group starts from one", "commit first")


def launch(
    paths: RunPaths,
    objective: str,
    n: int,
    parallel: int | None,
    teams: list[tuple[str, str]],
    max_cost_usd: float | None,
) -> Group:
    """`teams`: the variants (name, team.toml text) run k cycles through (`--vary`)."""
    check(paths, n, parallel)
    base = git_head(paths.repo) or ""
    branch = git.git(paths.repo, "symbolic-ref", "-q", "--short", "HEAD", check=False) or None
    g = create(paths.repo, objective, base, branch, n, parallel or n, max_cost_usd, teams)
    try:
        driver.key_names(g)  # each team as the runs will read it (relative paths from .autodev/)
    except AutodevError:
        shutil.rmtree(g.folder)  # nothing was made yet: the group never began
        raise
    start_driver(g)
    return g


def resume(paths: RunPaths, gid: str | None) -> Group:
    g = find(paths.repo, gid)
    if g.ended:
        raise GroupError(f"group {g.id} has ended: every run ended", "`autodev pick` ranks them")
    if g.driver_alive():
        raise DaemonRunningError(f"group {g.id} is being driven already", "`autodev status` shows it")
    start_driver(g)
    return g


def start_driver(g: Group) -> None:
    names = driver.key_names(g)
    log = open(os.open(g.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")
    env, fd = keys.handover(names)
    try:
        proc = spawn.popen(
            [sys.executable, *PYTHON_SAFE, "-m", "autodev.group", str(g.folder)],
            "autodev",
            stdin=spawn.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=g.folder,
            env=env,
            pass_fds=(fd,),
        )
    finally:
        os.close(fd)
        log.close()
    deadline = time.time() + 15
    while time.time() < deadline and not g.driver_alive():
        if proc.poll() is not None:
            if proc.returncode == 0:  # it drove the whole group already (or another driver holds it)
                return
            tail = g.log.read_text(errors="replace")[-2000:]
            raise GroupError(
                f"the group's driver exited at start (code {proc.returncode}):\n{tail}", f"see {g.log}"
            )
        time.sleep(0.05)
