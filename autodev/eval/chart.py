"""report.png: matplotlib, imported only here and only when drawing (the `eval` extra; the Agg
backend, no display needed)."""

# A third-party edge: matplotlib's stubs leave the `**kwargs` of its drawing calls untyped.
# pyright: reportUnknownMemberType=false

from __future__ import annotations

from pathlib import Path

from autodev.eval.summary import Summary


def plot(summary: Summary, path: Path) -> Path | None:
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
