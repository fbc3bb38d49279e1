"""Panel start-up on a long run vs a short one: the panel reads a bounded tail of events.jsonl
and the thread, so opening a 100,000-post run should cost about what a 100-post run costs."""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.data import TEAM, cache_dir, cached_thread, gen_posts, write_jsonl


def gen_events(n_posts: int) -> Iterator[dict]:
    """events.jsonl as a daemon writes it: per post a schedule, turn start/end and the post."""
    for turn, p in enumerate(gen_posts(n_posts), 1):
        base = {"ts": p["ts"], "run": "bench", "schema": 1}
        who = p["from"] if p["from"] in TEAM else TEAM[0]
        yield {
            **base,
            "type": "scheduled",
            "participant": who,
            "rule": "silent_longest",
            "why": "bench",
            "turn": turn,
        }
        yield {**base, "type": "turn_started", "participant": who, "turn": turn}
        yield {**base, "type": "post", **p}
        yield {**base, "type": "turn_ended", "participant": who, "turn": turn, "steps": 1, "posted": p["seq"]}


def cached_events(n_posts: int) -> Path:
    p = cache_dir() / "events" / f"{n_posts}.jsonl"
    return p if p.exists() else write_jsonl(p, gen_events(n_posts))


def _run_folder(root: Path, n_posts: int):
    """A repository with a team and a run folder holding an `n_posts` thread and its events."""
    import os

    from autodev.store.paths import RunPaths

    repo = root / f"repo{n_posts}"
    (repo / ".autodev").mkdir(parents=True)
    (repo / ".autodev" / "team.toml").write_text(
        "".join(
            f'[[participants]]\nname = "{n}"\nmodel = "openai/gpt-5"\nwrite = {str(n == TEAM[0]).lower()}\n\n'
            for n in TEAM
        )
    )
    os.environ["AUTODEV_HOME"] = str(root / "home")
    paths = RunPaths(repo)
    paths.ensure()
    shutil.copyfile(cached_thread(n_posts), paths.thread)
    shutil.copyfile(cached_events(n_posts), paths.events)
    from autodev.store.thread import Thread

    Thread(paths.thread).close()  # its index cache, which a daemon keeps beside every thread
    paths.state.write_text(
        json.dumps(
            {
                "schema": 1,
                "version": 1,
                "state": "stopped",
                "reason": None,
                "controls": [],
                "control_seq": 0,
                "turn": n_posts,
                "started_at": "2026-11-30T00:00:00.000Z",
                "participants": {},
            }
        )
    )
    return paths


async def _open_once(paths) -> float:
    from autodev.panel.app import PanelApp

    t = time.perf_counter()
    app = PanelApp(paths)
    async with app.run_test(size=(160, 48)) as pilot:
        while not app.loaded.is_set():
            await pilot.pause(0.001)
        took = time.perf_counter() - t
        assert app.feed_text() or app.events, "the panel showed no Feed"
    return took


def bench_panel(sizes=(100, 100_000), reps: int = 5) -> dict:
    """Median time from creating the panel until its first load is done (headless, in-process,
    Textual already imported: what is measured is the panel's own reading of the run)."""
    import os

    old_home = os.environ.get("AUTODEV_HOME")
    med: dict[int, float] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="autodev-bench-panel-") as tmp:
            for n in sizes:
                paths = _run_folder(Path(tmp), n)
                asyncio.run(_open_once(paths))  # warm: imports and file cache
                med[n] = statistics.median(asyncio.run(_open_once(paths)) for _ in range(reps))
    finally:
        if old_home is None:
            os.environ.pop("AUTODEV_HOME", None)
        else:
            os.environ["AUTODEV_HOME"] = old_home
    small, big = sizes
    ratio = med[big] / med[small]
    return {
        "name": "panel start-up",
        "compare": f"{big:,} vs {small:,} posts",
        "detail": {str(n): round(v, 4) for n, v in med.items()},
        "unit": f"s (median of {reps})",
        "ratio": round(ratio, 2),
        "target": "≤ 2×",
        "holds": ratio <= 2,
        "method": "headless Textual run_test, from PanelApp() until its first load is done (tails read, widgets filled)",
    }


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    print(json.dumps(bench_panel(), indent=1))
