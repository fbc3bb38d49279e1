"""A best-of group as the user sees it: side by side in `autodev status`, ranked by `autodev pick`."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from autodev.group import facts
from autodev.group.pick import Pick
from autodev.group.record import Group, of_repo
from autodev.guard.display import line
from autodev.user.render import console


def newest(repo: Path) -> Group | None:
    groups = [g for g in of_repo(repo) if not g.pruned]
    return groups[-1] if groups else None


def group_json(g: Group, rows: list[facts.RunFacts]) -> dict[str, object]:
    return {
        "id": g.id,
        "objective": g.objective,
        "base": g.base,
        "n": g.n,
        "parallel": g.parallel,
        "ended": g.ended,
        "driver": g.driver_alive(),
        "spent": round(sum(r.cost for r in rows), 6),
        "max_cost_usd": g.max_cost_usd,
        "budget_reached": g.budget is not None,
        "runs": [r.to_json() for r in rows],
        "applied": g.applied.dump() if g.applied else None,
    }


def _table(rows: list[facts.RunFacts], order: list[int] | None = None):
    from rich.table import Table

    t = Table(show_edge=False, pad_edge=False, box=None)
    for name in ("run", "id", "state", "turns", "cost", "tests", "audit", "lines"):
        right = name in ("turns", "cost", "lines")
        t.add_column(name, no_wrap=True, overflow="ellipsis", justify="right" if right else "left")
    if order is not None:
        t.add_column("rank", justify="right")
    for r in rows:
        state = r.state + (" (daemon)" if r.daemon_pid else "")
        cells = [
            str(r.k),
            r.run or "-",
            state,
            str(r.turns),
            f"${r.cost:.4f}",
            escape(line(r.evidence)) if r.evidence else "-",
            r.audit,
            "-" if r.changed_lines is None else str(r.changed_lines),
        ]
        if order is not None:
            cells.append(str(order.index(r.k) + 1) if r.k in order else "-")
        t.add_row(*cells)
    return t


def render_group(g: Group, rows: list[facts.RunFacts]) -> None:
    con = console()
    spent = sum(r.cost for r in rows)
    cap = f" of ${g.max_cost_usd:.2f} (group cap)" if g.max_cost_usd is not None else ""
    con.print(f"\n[bold]best-of group {g.id}[/]: {g.n} runs from {g.base[:12]}, spent ${spent:.4f}{cap}")
    con.print(f"  objective: {escape(line(g.objective))}")
    con.print(_table(rows))
    if g.budget is not None:
        con.print("  the group's cost cap was reached: its runs were stopped")
    if g.ended:
        con.print("  every run has ended: `autodev pick` ranks them")
    elif not g.driver_alive():
        con.print(
            f"  [bold]its driver is not running[/]: continue it with `autodev start --resume-group {g.id}`"
        )
    for r in rows:
        con.print(f"  run {r.k}: {escape(r.worktree)}")
    con.print(
        "  each run by its id: `autodev status --run ID` (send, panel, rewind too), or `cd` into its clone"
    )


def render_pick(p: Pick, applying: bool = False) -> None:
    con = console()
    g = p.group
    con.print(f"[bold]best-of group {g.id}[/]: {g.n} runs from {g.base[:12]}")
    con.print(_table(p.rows, p.order))
    going = [r.k for r in p.rows if not r.ended]
    if going:
        con.print(f"  not ended yet: run {', '.join(map(str, going))} (ranked when they end)")
    if p.winner is not None:
        con.print(f"\n[bold]pick: run {p.winner}[/] ({g.ref_of(p.winner)})")
    con.print(f"  why: {escape(p.why)}")
    if p.winner is not None and not g.applied and not applying:
        con.print("  apply it with `autodev pick --apply` (or another run: `autodev pick K --apply`)")
    if g.applied:
        con.print(f"  applied: run {g.applied.k} to {g.applied.branch} ({g.applied.how})")


def render_groups() -> None:
    """`autodev runs`: the best-of groups whose worktrees are still on disk."""
    from autodev.group.record import all_groups

    live = [g for g in all_groups() if not g.pruned]
    if not live:
        return
    con = console()
    con.print("\nbest-of groups (worktrees kept until `autodev runs prune --group ID`):")
    for g in live:
        state = "ended" if g.ended else ("driving" if g.driver_alive() else "driver stopped")
        applied = f", run {g.applied.k} applied" if g.applied else ""
        con.print(f"  {g.id}  {escape(str(g.repo))}  {g.n} runs, {state}{applied}  {escape(str(g.folder))}")


def panel_lines(repo: Path) -> list[str]:
    """The newest group of the repository in a few lines for the panel's header (no diff is
    computed: the panel asks every second); [] without a group."""
    from autodev.store.paths import RunPaths, autodev_home

    if not (autodev_home() / "groups" / RunPaths(repo).run_dir.name).is_dir():
        return []
    g = newest(repo)
    if g is None:
        return []
    rows = facts.of_group(g, lines=False)
    spent = sum(r.cost for r in rows)
    cap = f" of ${g.max_cost_usd:.2f}" if g.max_cost_usd is not None else ""
    how = "ended: `autodev pick`" if g.ended else ("driving" if g.driver_alive() else "driver stopped")
    out = [f"best-of group {g.id}: {g.n} runs, ${spent:.4f}{cap} spent, {how}"]
    for r in rows:
        tests = line(r.evidence) if r.evidence else "-"
        out.append(f"  run {r.k}: {r.state} · turns {r.turns} · ${r.cost:.4f} · {tests} · audit {r.audit}")
    return out
