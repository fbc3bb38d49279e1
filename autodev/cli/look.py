"""Looking at runs: `status`, `thread`, `runs` (list, stats, prune), `panel`, `demo`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import typer

from autodev.cli.root import app, current_paths

if TYPE_CHECKING:
    from autodev.store.journal import JsonObject

T = TypeVar("T")  # what a listing command shows: as JSON, or through its renderer


@app.command()
def status(
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    run: str | None = typer.Option(
        None, "--run", help="The run's id (`autodev runs`); default: this repository's."
    ),
):
    """State, why it stopped, who speaks next, what needs you, and per-participant figures."""
    from autodev.cli import steer

    steer.status(as_json, run)


@app.command()
def thread(
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new posts."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per line."),
    last: int = typer.Option(50, "--last", "-n", help="How many of the newest posts to show."),
):
    """Print the thread."""
    from autodev.errors import UsageError
    from autodev.store.journal import read_tail
    from autodev.store.thread import read_live, seq_of
    from autodev.user.render import console, post_text

    if last < 1:
        raise UsageError(
            f"--last {last}: give how many posts to show, 1 or more", "e.g. `autodev thread -n 20`"
        )
    paths = current_paths()
    if not follow and not paths.thread.exists():
        raise UsageError(
            f"no run yet in {paths.repo}: the thread is empty",
            'start one with `autodev start "your objective"` (or follow it with `autodev thread --follow`)',
        )
    con = console()

    def show(posts: list[JsonObject]) -> None:
        live = read_live(paths.thread)
        for p in posts:
            gone = not live.is_live(seq_of(p))
            if as_json:
                # ASCII: C1 controls and bidi overrides reach the terminal as \u escapes
                print(json.dumps({**p, "superseded": True} if gone else p), flush=True)
            else:
                con.print(post_text(p, superseded=gone))

    posts = read_tail(paths.thread, last)
    show(posts)
    if not follow:
        return
    from watchfiles import watch

    seen = seq_of(posts[-1]) if posts else 0
    paths.ensure()
    for _ in watch(
        paths.run_dir,
        watch_filter=lambda c, p: p.endswith("thread.jsonl"),
        yield_on_timeout=True,
        rust_timeout=1000,
    ):
        new = [p for p in read_tail(paths.thread, 200) if seq_of(p) > seen]
        if new:
            show(new)
            seen = seq_of(new[-1])


runs_app = typer.Typer(
    no_args_is_help=False,
    invoke_without_command=True,
    help="Every run on this machine: list, totals, clean-up.",
)
app.add_typer(runs_app, name="runs")


@runs_app.callback()
def runs_list(
    ctx: typer.Context, as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")
):
    """List runs across repositories, newest first (works outside a repository)."""
    if ctx.invoked_subcommand:
        return
    from autodev.store import runs
    from autodev.user import runs_view

    _show(runs.listing(), as_json, runs_view.render_listing)
    if not as_json:
        from autodev.user.group_view import render_groups

        render_groups()


@runs_app.command("stats")
def runs_stats(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Totals over every run, and usage per model."""
    from autodev.store import runs
    from autodev.user import runs_view

    _show(runs.stats(), as_json, runs_view.render_stats)


def _show(data: T, as_json: bool, render: Callable[[T], None]) -> None:
    if as_json:
        print(json.dumps(data, indent=1))
    else:
        render(data)


@runs_app.command("prune")
def runs_prune(
    older_than: str | None = typer.Option(
        None, "--older-than", help="Age of the last activity, e.g. 30d, 12h."
    ),
    group: str | None = typer.Option(None, "--group", help="Remove this best-of group's worktrees now."),
):
    """Remove run folders older than the age (never one whose daemon is alive), and forget
    runs whose folder was deleted by hand; best-of groups' worktrees too (their refs stay)."""
    from autodev.errors import UsageError
    from autodev.group import prune as groups
    from autodev.store import runs

    if older_than is None and group is None:
        raise UsageError(
            "say what to prune: --older-than AGE, or --group ID", "e.g. `autodev runs prune --older-than 30d`"
        )
    age = runs.parse_age(older_than) if older_than is not None else None
    kept = False
    for g in groups.prune(age, group):
        if g.why_not:
            kept = True
            print(f"kept group {g.group.id} ({g.group.repo}): {g.why_not}", file=sys.stderr)
        else:
            print(
                f"removed group {g.group.id}'s worktrees ({len(g.removed)} folders); its runs stay on refs/autodev/best-of/{g.group.id}/"
            )
    if age is None:
        if kept:
            raise typer.Exit(1)
        return
    out = runs.prune(age)
    kept = kept or bool(out["refused"])
    for r in out["removed"]:
        print(f"removed {r['run_dir']} ({r['repo']}, run {r['run']})")
    for r in out["missing"]:
        print(f"forgot {r['run_dir']} ({r['repo']}, run {r['run']}): its folder is gone")
    for r in out["refused"]:
        print(f"kept {r['run_dir']} ({r['repo']}): {r['why']}", file=sys.stderr)
    if not any(out.values()):
        print("nothing to prune")
    if kept:
        raise typer.Exit(1)


@app.command()
def panel(
    run: str | None = typer.Option(
        None, "--run", help="The run's id (`autodev runs`); default: this repository's."
    ),
):
    """Watch the run live and answer it from the keyboard (works with or without a daemon)."""
    from autodev.cli.edge import run_paths
    from autodev.panel import run_panel  # Textual loads only here; never litellm

    run_panel(run_paths(run).repo)


@app.command()
def demo(keep: bool = typer.Option(False, "--keep", help="Keep the throwaway repository.")):
    """Run a whole scripted team offline on a throwaway repository, showing every move."""
    from autodev.user.demo import run_demo

    raise typer.Exit(run_demo(keep=keep))
