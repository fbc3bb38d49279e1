"""What a user reads at the end: the table per team and the paired tables (rich); report.png is
eval/chart.py."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from autodev.eval.summary import BestOf, Paired, Summary, TeamSummary


def _money(x: float | None) -> str:
    return "—" if x is None else f"${x:.4f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def tables(summary: Summary) -> list[Table]:
    out = [_teams(summary["teams"]), *map(_paired, summary["paired"])]
    best = summary.get("best_of")
    if best:
        out.append(_best_of(best))
    return out


def _teams(teams: dict[str, TeamSummary]) -> Table:
    t = Table(title="autodev eval", title_justify="left")
    for col in (
        "team",
        "resolved",
        "share (95% CI)",
        "cost/resolved",
        "cost",
        "tokens",
        "median wall",
        "audit false acc.",
    ):
        t.add_column(col, justify="left" if col == "team" else "right")
    for name, s in teams.items():
        lo, hi = s["resolved_ci95"]
        errors = f" ({s['errors']} not run)" if s["errors"] else ""
        audit = (
            f"{s['audit_false_accepts']}/{s['audit_accepted']} ({_pct(s['audit_false_accept_rate'])})"
            if s["audit_accepted"]
            else "—"
        )
        t.add_row(
            name,
            f"{s['resolved']}/{s['graded']}{errors}",
            f"{_pct(s['resolved_share'])} ({_pct(lo)}–{_pct(hi)})",
            _money(s["cost_per_resolved_usd"]),
            _money(s["cost_usd"]),
            f"{s['tokens']:,}",
            "—" if s["median_wall_s"] is None else f"{s['median_wall_s']:.1f} s",
            audit,
        )
    return t


def _paired(p: Paired) -> Table:
    pt = Table(title=f"paired: {p['a']} vs {p['b']} ({p['tasks']} tasks)", title_justify="left")
    for col in (f"only {p['a']}", f"only {p['b']}", "both", "neither", "McNemar p"):
        pt.add_column(col, justify="right")
    pt.add_row(str(p["only_a"]), str(p["only_b"]), str(p["both"]), str(p["neither"]), f"{p['mcnemar_p']:.3g}")
    return pt


def _best_of(best: BestOf) -> Table:
    bt = Table(
        title=f"best of {best['n']}: the pick (no model) against one try and a perfect pick",
        title_justify="left",
    )
    for col in ("team", "pick@N", "pass@1", "oracle@N", "pick missed", "cost", "cost/task"):
        bt.add_column(col, justify="left" if col == "team" else "right")
    for name, b in best["teams"].items():
        bt.add_row(
            name,
            f"{_pct(b['pick_at_n'])} ({b['picked_resolved']}/{b['tasks']})",
            _pct(b["pass_at_1"]),
            f"{_pct(b['oracle_at_n'])} ({b['oracle_resolved']}/{b['tasks']})",
            str(b["pick_missed"]),
            _money(b["cost_usd"]),
            _money(b["cost_per_task_usd"]),
        )
    return bt


def print_tables(summary: Summary, console: Console) -> None:
    for t in tables(summary):
        console.print(t)
