"""Cold start of the commands a user types while a run goes on, against bare Python."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.data import cached_thread
from bench.live import chatter_steps, env_for, make_repo, run_dir

COMMANDS = {
    "send": ("-m", "autodev", "send", "benchmark message"),
    "status": ("-m", "autodev", "status"),
    "thread": ("-m", "autodev", "thread"),
}
PASS = "python -c pass"
LITELLM = 'python -c "import litellm"'
BASELINES = {PASS: ("-c", "pass"), LITELLM: ("-c", "import litellm")}


def _median_run(args: tuple[str, ...], cwd: Path, env: dict, reps: int) -> float:
    """Median wall time of a fresh interpreter running `args` (one untimed run first, so every
    timed run meets the same warm file cache: 'cold' is the interpreter, not the disk)."""
    samples = []
    for i in range(reps + 1):
        t = time.perf_counter()
        r = subprocess.run(
            [sys.executable, *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        took = time.perf_counter() - t
        if r.returncode != 0:
            raise RuntimeError(f"`python {' '.join(args)}` exited {r.returncode}:\n{r.stderr[-1500:]!r}")
        if i:
            samples.append(took)
    return statistics.median(samples)


def bench_commands(reps: int = 7, litellm_baseline: bool = True, posts: int = 100) -> dict:
    """`send`, `status`, `thread` on a repository whose run has `posts` posts, no daemon."""
    with tempfile.TemporaryDirectory(prefix="autodev-bench-") as tmp:
        root = Path(tmp)
        home = root / "home"
        repo = make_repo(root, chatter_steps(1))
        rd = run_dir(repo, home)
        rd.mkdir(parents=True)
        shutil.copyfile(cached_thread(posts), rd / "thread.jsonl")
        env = env_for(home)
        baselines = {k: v for k, v in BASELINES.items() if litellm_baseline or k == PASS}
        med = {name: _median_run(args, repo, env, reps) for name, args in {**baselines, **COMMANDS}.items()}
    above = med["send"] - med[PASS]
    detail = {k: round(v, 3) for k, v in med.items()}
    return {
        "name": "command cold start",
        "compare": f"send − {PASS}",
        "detail": detail,
        "unit": f"s (median of {reps})",
        "ratio": round(above, 3),
        "target": "≤ 0.3 s",
        "holds": above <= 0.3,
        "method": "fresh interpreter per run, spawn to exit; litellm imported with "
        "LITELLM_LOCAL_MODEL_COST_MAP=True, as autodev does",
    }
