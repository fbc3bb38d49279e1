"""What a user reads at the end: the table per team and the paired tables (rich), and report.png
(matplotlib, imported only here and only when drawing: the `eval` extra; the Agg backend, no
display needed)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table


def _money(x: float | None) -> str:
    return "—" if x is None else f"${x:.4f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def tables(summary: dict) -> list[Table]:
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
    for name, s in summary["teams"].items():
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
    out = [t]
    for p in summary["paired"]:
        pt = Table(title=f"paired: {p['a']} vs {p['b']} ({p['tasks']} tasks)", title_justify="left")
        for col in (f"only {p['a']}", f"only {p['b']}", "both", "neither", "McNemar p"):
            pt.add_column(col, justify="right")
        pt.add_row(
            str(p["only_a"]), str(p["only_b"]), str(p["both"]), str(p["neither"]), f"{p['mcnemar_p']:.3g}"
        )
        out.append(pt)
    best = summary.get("best_of")
    if best:
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
        out.append(bt)
    return out


def print_tables(summary: dict, console: Console) -> None:
    for t in tables(summary):
        console.print(t)


def plot(summary: dict, path: Path) -> Path | None:
    """report.png: resolved share (with its interval) against cost per resolved task, a point per
    team. None, with the reason left to the caller, when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for name, s in summary["teams"].items():
        x = s["cost_per_resolved_usd"] if s["cost_per_resolved_usd"] is not None else 0.0
        y = s["resolved_share"] or 0.0
        lo, hi = s["resolved_ci95"]
        ax.errorbar([x], [y], yerr=[[y - lo], [hi - y]], fmt="o", capsize=4, label=name)
        ax.annotate(f" {name}", (x, y))
    ax.set_xlabel("cost per resolved task (USD; 0 = none resolved or free)")
    ax.set_ylabel("resolved share (95% Wilson interval)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("autodev eval: resolved share against cost")
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
