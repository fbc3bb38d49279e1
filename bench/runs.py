"""Benchmarks on real runs of the daemon (the `autodev` CLI in a subprocess, scripted model):
model calls spent on routing, daemon overhead and memory, restore time after kill -9."""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.data import cached_harness, cached_thread
from bench.live import (
    Child,
    EventWatch,
    chatter_steps,
    epoch,
    make_repo,
    python_snippet,
    read_jsonl,
    rotation_steps,
    run_dir,
)

OBJECTIVE = "Benchmark run: take turns until the script ends."


def _talk_bound() -> int:
    """The upper bound config puts on maxTalkTurns (read from the model, so it stays true)."""
    from autodev.config import RunConfig

    return min(getattr(m, "le", 10**9) for m in RunConfig.model_fields["max_talk_turns"].metadata)


MAX_TALK = _talk_bound()
_RUNS: dict[int, dict] = {}  # one scripted run per length, shared by routing and overhead


def scripted_run(turns: int) -> dict:
    """Run `start --foreground --until-idle` on a `turns`-turn script once; keep the figures."""
    if turns in _RUNS:
        return _RUNS[turns]
    with tempfile.TemporaryDirectory(prefix="autodev-bench-") as tmp:
        root = Path(tmp)
        home = root / "home"
        # The talk limit would pause a run of uncredited talk: lift it above the run's length,
        # within the config's bound (10,000 still lets a 10,000-turn run finish: its last turn
        # is the `done`, which goes to the audit before the limit is looked at).
        repo = make_repo(root, rotation_steps(turns), {"maxTalkTurns": min(2 * turns + 10, MAX_TALK)})
        # A loaded machine makes turns slow; a 10,000-turn run must not time out on it.
        ex = Child(repo, home, "start", "--foreground", "--until-idle", OBJECTIVE).wait(600 + 2 * turns)
        rd = run_dir(repo, home)
        events = read_jsonl(rd / "events.jsonl")
        requests = _request_prompts(rd / "scripted-requests.jsonl")
        durable = _durable_writes(rd, len(events))
        if ex.code != 0:
            raise RuntimeError(
                f"the {turns}-turn scripted run exited {ex.code} (expected 0, "
                f"complete):\n{ex.stdout[-1500:]}\n{ex.stderr[-1500:]}"
            )
    run = {
        "turns": sum(1 for e in events if e["type"] == "turn_started"),
        "posts": sum(1 for e in events if e["type"] == "post"),
        "generations": sum(1 for e in events if e["type"] == "generation"),
        "requests": len(requests["prompts"]),
        "audit_requests": sum(1 for r in requests["prompts"] if r["who"] == "audit"),
        "prompts": requests["prompts"],
        "systems": requests["systems"],
        **durable,
        "wall_s": ex.seconds,
        "peak_kb": ex.peak_kb,
        "code": ex.code,
    }
    run.update(_timing(events))
    _RUNS[turns] = run
    return run


def _durable_writes(rd: Path, events: int) -> dict:
    """What the run wrote durably: fsynced log appends (events, harness log, thread) and
    state.json replacements (each a file fsync, a rename and a directory fsync)."""
    lines = 0
    for name in ("harness.jsonl", "thread.jsonl"):
        with open(rd / name, "rb") as f:
            lines += sum(1 for _ in f)
    state = json.loads((rd / "state.json").read_text())
    return {"log_appends": events + lines, "state_writes": int(state.get("version", 0))}


def _request_prompts(path: Path) -> dict:
    """Every request the scripted server received, in order, with its prompt tokens (messages and
    tool schemas apart), and each participant's system text. Read line by line: a 10,000-turn
    run's request log is tens of MB."""
    from bench.tokens import shared

    counter, prompts, systems, last = shared(), [], {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            who, body = r["participant"], r["body"]
            msgs = body.get("messages") or []
            prompts.append(
                {"who": who, "messages": counter.messages(msgs), "tools": counter.tools(body.get("tools"))}
            )
            if msgs and msgs[0].get("role") == "system":
                systems.setdefault(who, msgs[0]["content"])
            if who != "audit":
                last = msgs
    if last:
        counter.check(last)  # the memoized sum is the whole count
    return {"prompts": prompts, "systems": systems}


def _timing(events: list[dict]) -> dict:
    """Turns per second and time inside model requests, from events.jsonl timestamps.

    A request's time is from the event just before it in its turn (`turn_started` for a turn's
    first request) to its `generation` event. It includes litellm's client work and one harness
    log append, so the share outside requests is, if anything, understated. The window starts
    when turn 1 ends: turn 1 also pays for importing litellm, a one-off of the process."""
    ended = [e for e in events if e["type"] == "turn_ended"]
    if len(ended) < 2:
        return {"window_s": 0.0, "window_turns": 0, "model_s": 0.0}
    start, end = epoch(ended[0]["ts"]), epoch(ended[-1]["ts"])
    first_turn = ended[0]["turn"]
    model, prev = 0.0, {}
    for e in events:
        turn = e.get("turn")
        if turn is None or turn == first_turn:
            continue
        if e["type"] == "generation" and turn in prev:
            model += epoch(e["ts"]) - prev[turn]
        prev[turn] = epoch(e["ts"])
    return {"window_s": end - start, "window_turns": len(ended) - 1, "model_s": model}


def bench_routing(turns: int = 200) -> dict:
    """Model requests the scripted server received, minus the turns' own generations and the
    audit's requests: what routing cost. A model-selected speaker costs one call per turn."""
    r = scripted_run(turns)
    routing = r["requests"] - r["generations"] - r["audit_requests"]
    return {
        "name": "model calls on routing",
        "compare": f"{r['turns']}-turn scripted run",
        "detail": {
            "turns": r["turns"],
            "requests received": r["requests"],
            "turn generations": r["generations"],
            "audit requests": r["audit_requests"],
            "routing calls": routing,
            "model-selected speaker": f"{r['turns']} (1 per turn)",
        },
        "unit": "calls",
        "ratio": round(routing / max(1, r["turns"]), 3),
        "target": "0 per turn",
        "holds": routing == 0 and r["turns"] == turns,
        "method": "scripted-requests.jsonl lines − events 'generation' − audit requests",
    }


def rss_run(n: int, chats: int) -> tuple[int, int]:
    """(peak, final) RSS in KiB of `start --foreground --until-idle` on a thread seeded with
    `n` posts, sampled from /proc while it runs."""
    with tempfile.TemporaryDirectory(prefix="autodev-bench-") as tmp:
        root = Path(tmp)
        home = root / "home"
        repo = make_repo(root, chatter_steps(chats))
        rd = run_dir(repo, home)
        rd.mkdir(parents=True)
        shutil.copyfile(cached_thread(n), rd / "thread.jsonl")
        ex = Child(repo, home, "start", "--foreground", "--until-idle").wait(600)
        if ex.code != 3:  # the script ends with a question to the user
            raise RuntimeError(
                f"the run on {n} seeded posts exited {ex.code} (expected 3):\n"
                f"{ex.stdout[-1500:]}\n{ex.stderr[-1500:]}"
            )
        turns = sum(1 for e in read_jsonl(rd / "events.jsonl") if e["type"] == "turn_started")
        if turns < 2:
            raise RuntimeError(f"the run on {n} seeded posts made {turns} turns (expected several)")
        return ex.peak_kb, ex.rss_kb


def bench_daemon(turns: int = 200, rss_sizes=(100, 10_000), chats: int = 2) -> dict:
    """Daemon overhead per turn with the scripted model, and its peak RSS by thread length.
    `rss_sizes=()` skips the memory runs (the smoke test calls rss_run on its own)."""
    r = scripted_run(turns)
    w, k = r["window_s"], r["window_turns"]
    outside = 1 - r["model_s"] / w if w else 0.0
    tps = k / w if w else 0.0
    own_ms = (w - r["model_s"]) / k * 1e3 if k else 0.0
    share = {
        "name": "daemon time outside model",
        "compare": f"turns 2–{r['turns']}",
        "detail": {
            "outside ms/turn": round(own_ms, 1),
            "in requests ms/turn": round(r["model_s"] / k * 1e3, 1) if k else 0,
            # a hosted model answers in seconds, not the scripted server's ms
            "share if a request took 2 s": f"{own_ms / (own_ms + 2000):.1%}",
        },
        "unit": "share of wall time",
        "ratio": round(outside, 2),
        "target": "—",
        "holds": None,
        "method": "request time = generation event ts − the turn's previous event ts",
    }
    rows = [share]
    if rss_sizes:
        rows.append(_rss_row({n: rss_run(n, chats) for n in rss_sizes}, chats))
    return {
        "name": "daemon turns per second",
        "compare": f"{r['turns']}-turn scripted run",
        "detail": {
            "turns/s": round(tps, 1),
            "ms/turn": round(1e3 / tps, 1) if tps else None,
            "process wall s": round(r["wall_s"], 1),
            "peak RSS MiB": round(r["peak_kb"] / 1024, 1),
        },
        "unit": "turns/s",
        "ratio": round(tps, 1),
        "target": "—",
        "holds": None,
        "also": rows,
        "method": "events.jsonl: turns 2..N between turn 1's and turn N's turn_ended",
    }


def _rss_row(rss: dict[int, tuple[int, int]], chats: int) -> dict:
    small, big = min(rss), max(rss)
    ratio = rss[big][0] / rss[small][0]
    return {
        "name": "daemon peak RSS",
        "compare": f"{big:,} vs {small:,} posts",
        "detail": {
            **{f"{n:,}": round(v[0] / 1024, 1) for n, v in rss.items()},
            **{f"{n:,} at exit": round(v[1] / 1024, 1) for n, v in rss.items()},
        },
        "unit": "MiB (VmHWM; VmRSS at exit)",
        "ratio": round(ratio, 2),
        "target": "≤ 1.2",
        "holds": ratio <= 1.2,
        "method": f"thread seeded with N posts, then ~{3 * chats + 1} scripted turns; "
        "/proc/<pid>/status sampled every 10 ms",
    }


OPEN_CODE = """
import json, time
from pathlib import Path
from autodev.daemon import Daemon
d = Daemon(Path.cwd())
t = time.perf_counter()
loop = d.open()
dt = time.perf_counter() - t
d.close()
print(json.dumps({"open_s": dt, "last_seq": loop.run.thread.last_seq}))
"""


def _time_open(repo: Path, home: Path) -> float:
    """Daemon.open() (lock, state, thread + index, logs, finding the interrupted turn) in a fresh
    interpreter. It does not run the loop, so the turn it found stays open for the next one."""
    ex = python_snippet(repo, home, OPEN_CODE)
    if ex.code != 0:
        raise RuntimeError(f"timing Daemon.open() failed ({ex.code}):\n{ex.stderr[-2000:]}")
    return json.loads(ex.stdout.strip().splitlines()[-1])["open_s"]


BEGINS = ("turn_started", "turn_resumed")


def _start_until_turn(repo: Path, home: Path, events: Path, timeout: float = 300) -> float:
    """Seconds from spawning `start --foreground` until a turn begins (a fresh one, or the
    interrupted one resuming); then kill -9, which leaves that turn in flight again (its model
    request waits on importing litellm, which takes seconds)."""
    watch = EventWatch(events)
    child = Child(repo, home, "start", "--foreground")
    try:
        watch.wait_for(BEGINS, child, timeout)
        return time.perf_counter() - child.started
    finally:
        child.kill()


def _restore_sizes(n: int, cycles: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="autodev-bench-") as tmp:
        root = Path(tmp)
        home = root / "home"
        repo = make_repo(root, chatter_steps(10, ask_user=False))
        rd = run_dir(repo, home)
        rd.mkdir(parents=True)
        shutil.copyfile(cached_thread(n), rd / "thread.jsonl")
        shutil.copyfile(cached_harness(n), rd / "harness.jsonl")
        events = rd / "events.jsonl"
        _start_until_turn(repo, home, events)  # first start (builds the index), killed mid-turn
        opens = [_time_open(repo, home) for _ in range(2 * cycles + 1)]  # cheap: more samples
        starts = [_start_until_turn(repo, home, events) for _ in range(cycles)]
        (rd / "thread-index.json").unlink()  # as if the cache were lost
        cold = _time_open(repo, home)
        ev = read_jsonl(events)
    recovered = sum(1 for e in ev if e["type"] == "turn_recovered" and e.get("posted") is None)
    posts = sum(1 for e in ev if e["type"] == "post")
    if recovered != 3 * cycles + 2 or posts:
        raise RuntimeError(
            f"restore on {n} records: expected {3 * cycles + 2} interrupted turns "
            f"recovered and no post, saw {recovered} and {posts}"
        )
    return {
        "open": statistics.median(opens),
        "start": statistics.median(starts),
        "cold": cold,
        "recovered": recovered,
    }


def bench_restore(sizes=(100, 1_000_000), cycles: int = 3) -> dict:
    """Restore after kill -9 mid-turn, thread and harness log of N records each."""
    res = {n: _restore_sizes(n, cycles) for n in sizes}
    small, big = min(sizes), max(sizes)
    ratio = res[big]["open"] / res[small]["open"]
    start_ratio = res[big]["start"] / res[small]["start"]
    cold_ratio = res[big]["cold"] / res[small]["cold"]
    start = {
        "name": "  start until the turn resumes",
        "compare": f"{big:,} vs {small:,} records",
        "detail": {f"{n:,}": round(r["start"], 3) for n, r in res.items()},
        "unit": "s (median, spawn of `start` to turn_resumed)",
        "ratio": round(start_ratio, 2),
        "target": "≤ 2",
        "holds": start_ratio <= 2.0,
    }
    cold = {
        "name": "  restore, index cache lost",
        "compare": f"{big:,} vs {small:,} records",
        "detail": {f"{n:,}": round(r["cold"], 3) for n, r in res.items()},
        "unit": "s (Daemon.open, full scan)",
        "ratio": round(cold_ratio, 1),
        "target": "—",
        "holds": None,
        "method": "thread-index.json deleted: the index is rebuilt from the whole thread",
    }
    return {
        "name": "restore after kill -9",
        "compare": f"{big:,} vs {small:,} records",
        "detail": {f"{n:,}": round(r["open"] * 1e3, 1) for n, r in res.items()},
        "unit": "ms (median Daemon.open, index cache present)",
        "ratio": round(ratio, 2),
        "target": "≤ 2",
        "holds": ratio <= 2.0,
        "also": [start, cold],
        "method": f"thread.jsonl and harness.jsonl of N records each; killed mid-turn; "
        f"{2 * cycles + 1} timed Daemon.open() in fresh processes, {cycles} timed starts",
    }
