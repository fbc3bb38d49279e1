"""autodev benchmarks: ratios measured in one run, printed as a table and written to
bench/results.json. Nothing here is a test: a slow machine fails nothing.

    make bench            # everything
    python bench/run.py scheduler
"""

from __future__ import annotations

import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

TEAM = ["builder", "reviewer", "tester", "writer"]
KINDS = ["say", "work_done", "handoff", "say", "say", "wait", "gate"]


def make_thread(path: Path, n: int, seed: int = 7) -> None:
    """A generated thread of `n` posts with varied authors, kinds and lengths."""
    rnd = random.Random(seed)
    with open(path, "w") as f:
        for seq in range(1, n + 1):
            frm = rnd.choice(TEAM + ["user", "system"])
            kind = rnd.choice(KINDS) if frm not in ("user", "system") else "say"
            rec = {"seq": seq, "from": frm, "kind": kind,
                   "text": "x" * rnd.randint(20, 400), "handoff": rnd.choice(TEAM + [None, None]),
                   "ts": "2026-11-30T00:00:00.000Z"}
            if kind == "work_done":
                rec["credit"] = rnd.choice([None, {"commits": ["abc"], "files": ["a.py"]}])
            f.write(json.dumps(rec) + "\n")


def _median_time(fn, reps: int) -> float:
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def bench_scheduler(sizes=(100, 100_000)) -> dict:
    """Scheduler decision time (tail read + pure decision) on an open thread, by thread length."""
    from autodev.scheduler import next_speaker
    from autodev.thread import TAIL, Thread

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            p = Path(tmp) / f"thread-{n}.jsonl"
            make_thread(p, n)
            th = Thread(p)  # opening builds the index once; per-turn decisions read only the tail
            decide = lambda: next_speaker(TEAM, th.tail(TAIL), th.last_spoke)  # noqa: E731
            decide()
            out[n] = _median_time(decide, 200)
            th.close()
    small, big = min(sizes), max(sizes)
    ratio = out[big] / out[small]
    return {"name": "scheduler decision", "detail": {str(k): round(v * 1e6, 1) for k, v in out.items()},
            "unit": "µs (median)", "ratio": round(ratio, 2), "target": "≤ 2.0",
            "holds": ratio <= 2.0, "compare": f"{big:,} vs {small:,} posts"}


BENCHES = {"scheduler": bench_scheduler}


def main(argv: list[str]) -> int:
    names = argv or list(BENCHES)
    results = []
    for name in names:
        r = BENCHES[name]()
        results.append(r)
        print(f"{r['name']:<24} {r['compare']:<26} ratio {r['ratio']:<6} target {r['target']:<7} "
              f"{'holds' if r['holds'] else 'MISSED'}   {r['detail']} {r['unit']}")
    machine = {"python": platform.python_version(), "machine": platform.machine(),
               "cpus": os.cpu_count(), "system": platform.system()}
    (ROOT / "results.json").write_text(json.dumps({"machine": machine, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
