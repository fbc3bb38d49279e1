"""`autodev runs` and `autodev runs stats` as tables (the index itself is `store/runs`)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from autodev.store import runs
from autodev.user.render import console


def _duration(sec: float | None) -> str:
    if sec is None:
        return "-"
    sec = int(sec)
    if sec < 60:
        return f"{sec}s"
    if sec < 3600:
        return f"{sec // 60}m{sec % 60:02d}s"
    return f"{sec // 3600}h{sec % 3600 // 60:02d}m"


def _lineage(row: runs.Row) -> str:
    """How a forked run names its origin in the listing: "fork of RUN@SEQ: "."""
    f = row.get("forked_from")
    return f"fork of {f.get('run')}@{f.get('seq')}: " if f is not None else ""


def _tests_mark(row: runs.Row) -> str:
    """✔ or ✘ after the state: the newest done's test evidence (the whole line: --json)."""
    ev = row.get("evidence")
    return f" {ev[0]}" if isinstance(ev, str) and ev[:1] in ("✔", "✘") else ""


def render_listing(rows: list[runs.Row]) -> None:
    from rich.table import Table

    con = whole_cells(console())
    if not rows:
        con.print(f"no runs yet (the index is {runs.index_path()})")
        return
    # Readable at 80 columns: the repository by its folder name (--json has the path), the
    # objective cut to what is left, one column for turns/credited, dates without seconds.
    # Piped, every cell whole (whole_cells): a cut cell is lost to whoever reads the pipe.
    cut = con.width < 100_000
    t = Table(show_edge=False, pad_edge=False, box=None)
    t.add_column("repo", no_wrap=True, max_width=16 if cut else None, overflow="ellipsis")
    t.add_column("objective", no_wrap=True, ratio=1 if cut else None, overflow="ellipsis")
    t.add_column("state", no_wrap=True)
    t.add_column("turns", justify="right", no_wrap=True)
    t.add_column("cost", justify="right", no_wrap=True)
    t.add_column("started", no_wrap=True)
    t.add_column("took", justify="right", no_wrap=True)
    from autodev.user.status import safe_to_show

    for r in rows:
        r = safe_to_show(r)
        turns = str(r["turns"] if r["turns"] is not None else "-")
        if r["credited"]:
            turns += f"/{r['credited']}"
        t.add_row(
            Path(r["repo"]).name if r["repo"] else "-",
            _lineage(r) + (r["objective"] or "-").split("\n")[0],
            (r["state"] or "-") + _tests_mark(r),
            turns,
            f"${r['cost']:.2f}" if r["cost"] is not None else "-",
            (r["started"] or "-")[5:16].replace("T", " "),
            _duration(r["duration_sec"]),
        )
    con.print(t)
    con.print("turns/credited; `autodev runs --json` has every field and the full paths", style="dim")


def whole_cells(con: Console) -> Console:
    """A terminal's console as it is; on a pipe, one wide enough that no table cell is cut (a pipe
    has no width to fit), unless COLUMNS asks for a width."""
    if con.is_terminal or os.environ.get("COLUMNS"):
        return con
    return Console(file=con.file, width=100_000, highlight=False, soft_wrap=True)


def render_stats(s: runs.Stats) -> None:
    from rich.table import Table

    con = whole_cells(console())
    con.print(
        f"{s['runs']} runs ({s['missing']} missing)  turns {s['turns']}  credited {s['credited']}  "
        f"tokens {s['tokens']}  cost ${s['cost']:.4f}"
    )
    if s["models"]:
        t = Table(show_edge=False)
        for col in ("model", "generations", "prompt tokens", "completion tokens", "cost"):
            t.add_column(col)
        for m, u in s["models"].items():
            t.add_row(
                m,
                str(u["generations"]),
                str(u["prompt_tokens"]),
                str(u["completion_tokens"]),
                f"${u['cost']:.4f}",
            )
        con.print(t)
