"""`autodev eval`, whole: the plan (every task × team not already finished under --out), the runs
through an executor with live progress, then summary.json, predictions/<team>.jsonl, report.png and the
table. Exit 0 when every task × team ran and was graded, 1 when some could not be run."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autodev.errors import extra_fix
from autodev.eval.chart import plot
from autodev.eval.executors import Executor, RayExecutor, make_executor
from autodev.eval.report import print_tables
from autodev.eval.results import EvalDir, harness_command, write_atomic
from autodev.eval.rows import EvalResult
from autodev.eval.runner import Job
from autodev.eval.summary import summarize
from autodev.eval.tasks import Selection, Task, load_tasks
from autodev.eval.teams import RunSettings, TeamSpec, load_teams
from autodev.eval.workspace import UNSANDBOXED_FLAG, task_sandbox
from autodev.user.runs_view import whole_cells


@dataclass
class EvalPlan:
    tasks: list[Task]
    teams: list[TeamSpec]
    settings: RunSettings
    out: EvalDir
    team_files: list[Path]
    best_of: int = 1  # --best-of N: each task × team N times, numbered 1 to N

    def jobs(self) -> list[Job]:
        runs = range(1, self.best_of + 1) if self.best_of > 1 else [0]
        return [
            Job(
                task,
                team,
                self.settings,
                self.out.runs_dir() / task.id / f"{team.name}{f'@{k}' if k else ''}",
                k,
            )
            for task in self.tasks
            for team in self.teams
            for k in runs
        ]

    def pending(self, retry_errors: bool = False) -> tuple[list[Job], list[EvalResult]]:
        """The jobs to run, and the results already finished (same task, team and settings)."""
        done = self.out.finished()
        todo: list[Job] = []
        kept: list[EvalResult] = []
        for job in self.jobs():
            r = done.get(job.key)
            if r and r.digest == job.digest() and not (retry_errors and r.error):
                kept.append(r)
            else:
                todo.append(job)
        return todo, kept


def load_plan(
    tasks_file: Path,
    team_files: list[Path],
    out: Path,
    settings: RunSettings,
    repos: Path | None = None,
    test_command: str | None = None,
    selection: Selection | None = None,
    best_of: int = 1,
) -> EvalPlan:
    if best_of < 1:
        from autodev.errors import UsageError

        raise UsageError(f"--best-of {best_of}: give 1 or more runs per task and team", "e.g. --best-of 3")
    tasks = load_tasks(tasks_file, repos, test_command, selection)
    teams = load_teams(team_files)
    return EvalPlan(tasks, teams, settings, EvalDir(out), [Path(f) for f in team_files], best_of)


def run_eval(
    plan: EvalPlan,
    executor: str = "local",
    parallel: int = 1,
    address: str | None = None,
    retry_errors: bool = False,
    console: Console | None = None,
) -> int:
    con = whole_cells(console or Console())
    ex = make_executor(executor, parallel, address)
    _check(plan, ex, con)
    todo, kept = plan.pending(retry_errors)
    names = [t.name for t in plan.teams]
    con.print(
        f"autodev eval: {_count(len(plan.tasks), 'task')} × {_count(len(names), 'team')} ({', '.join(names)})"
        f" → {plan.out.out}" + (f"; {len(kept)} already finished" if kept else ""),
        highlight=False,
        soft_wrap=True,
    )
    try:
        with interruptible():
            _run(plan, ex, con, todo, kept)
    except KeyboardInterrupt:
        with holding_signals():  # ending takes seconds: a second Ctrl-C does not cut it short
            ended = ex.end()
        con.print(
            f"interrupted: {ended} run(s) in flight ended, not recorded; "
            "the same command resumes (what is finished is kept)",
            highlight=False,
            soft_wrap=True,
        )
        return 130
    return finish(plan, con)


def _check(plan: EvalPlan, ex: Executor, con: Console) -> None:
    """Refused before anything runs: a team's missing keys, no sandbox for the tests."""
    if isinstance(ex, RayExecutor):  # on a cluster the keys are the workers' (their own environment)
        check_worker_keys(ex, plan.teams)
    else:
        check_keys(plan.team_files)
        # no sandbox for the setup and the tests: refused before anything runs (a Ray worker
        # without one records it as each of its runs' error)
        task_sandbox(plan.settings.grade_unsandboxed)
    if plan.settings.grade_unsandboxed:
        con.print(
            f"warning: {UNSANDBOXED_FLAG}: each task's setup and tests run on this machine, "
            "unsandboxed (without your keys)",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )


def _run(plan: EvalPlan, ex: Executor, con: Console, todo: list[Job], kept: list[EvalResult]) -> None:
    """The runs, each recorded as it finishes, with the bar (or a line each, in a pipe)."""
    resolved = sum(1 for r in kept if r.resolved)
    spent = sum(r.cost_usd or 0.0 for r in kept)
    progress = Progress(
        TextColumn("[bold]eval"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("resolved {task.fields[resolved]} · spent ${task.fields[spent]:.4f}"),
        TimeElapsedColumn(),
        console=con,
        transient=True,
    )
    # Counted over every run of the plan, the ones an earlier invocation finished included, as
    # "resolved" and "spent" are: after a resume the bar starts where the last one stopped.
    total, done = len(todo) + len(kept), len(kept)
    with progress:
        bar = progress.add_task("eval", total=total, completed=done, resolved=resolved, spent=spent)
        for _job, out in ex.run(todo):
            r = out.result
            plan.out.record(r, out.patch)
            done += 1
            resolved += bool(r.resolved)
            spent += r.cost_usd or 0.0
            progress.update(bar, completed=done, resolved=resolved, spent=spent)
            line = f"[{done}/{total}] {finished_line(r)}"
            if not con.is_terminal:  # no bar in a pipe: its figures on each line instead
                line += f"  (so far {resolved} resolved · ${spent:.4f} spent)"
            progress.console.print(line, highlight=False, soft_wrap=True, markup=False)


ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextmanager
def interruptible() -> Generator[None]:
    """SIGTERM and SIGHUP (`kill`, a closed terminal) end the eval as Ctrl-C does: the runs in
    flight are ended whole and the finished ones kept (Python's default would exit at once and
    leave every run's daemon and command running)."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.signal(sig, interrupt) for sig in ENDING_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@contextmanager
def holding_signals() -> Generator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait until the runs in flight are ended."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, *ENDING_SIGNALS)
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in sigs}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def check_keys(team_files: list[Path]) -> None:
    from autodev.errors import ProviderSetupError
    from autodev.eval.teams import key_problems

    problems = [f"{f}: {p}" for f in team_files for p in key_problems(f)]
    if problems:
        raise ProviderSetupError(
            "a team's provider is missing what it needs:\n  - " + "\n  - ".join(problems),
            "set the variables named above (every run gets this environment), then run the eval again",
        )


def check_worker_keys(ex: RayExecutor, teams: list[TeamSpec]) -> None:
    from autodev.errors import ProviderSetupError

    problems = ex.key_problems(teams)
    if problems:
        raise ProviderSetupError(
            "on a Ray worker, a team's provider is missing what it needs:\n  - " + "\n  - ".join(problems),
            "export the variables named above on every node before `ray start` (a worker's runs get "
            "the environment Ray was started with; restart Ray after a change), then run the eval again",
        )


def finished_line(r: EvalResult) -> str:
    if r.error:
        mark, verdict = "!", "not run: " + (r.error.splitlines() or [""])[0][:160]
    else:
        mark, verdict = ("✓", "resolved") if r.resolved else ("✗", "unresolved")
    return (
        f"{mark} {r.task} · {r.team}{'#' + str(r.run) if r.run else ''} · {verdict} · {r.state or '—'}"
        f"{' (' + r.reason_code + ')' if r.reason_code else ''} · audit {r.audit}"
        f" · {r.turns} turns · {r.tokens} tok · ${r.cost_usd:.4f} · {r.wall_s:.1f} s"
    )


def finish(plan: EvalPlan, con: Console) -> int:
    """summary.json, predictions/<team>.jsonl, report.png and the tables, from every finished result of
    this plan (this invocation's and the earlier ones')."""
    done = plan.out.finished()
    results = [done[j.key] for j in plan.jobs() if j.key in done]
    names = [t.name for t in plan.teams]
    summary = summarize(results, names)
    summary["generated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    summary["runs"] = {"expected": len(plan.jobs()), "finished": len(results)}
    chosen = results
    if plan.best_of > 1:
        from autodev.eval import bestof

        summary["best_of"] = bestof.summarize(results, names, plan.best_of)
        chosen = bestof.picked_results(results)
    write_atomic(plan.out.out / "summary.json", json.dumps(summary, indent=2) + "\n")
    predictions = plan.out.write_predictions(chosen, names)
    png = plot(summary, plan.out.out / "report.png")
    print_tables(summary, con)
    con.print(
        f"results: {plan.out.out / 'results.jsonl'} · summary.json · predictions/<team>.jsonl"
        + (" · report.png" if png else f" (no report.png: matplotlib is missing; {extra_fix('eval')})"),
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    con.print(
        "grade in SWE-bench's containers (one command per team; --dataset_name: your tasks' dataset):",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    for team, path in predictions.items():
        con.print(f"  {harness_command(path, team)}", highlight=False, soft_wrap=True, markup=False)
    complete = len(results) == len(plan.jobs()) and all(r.graded for r in results)
    return 0 if complete else 1
