"""Generated logs for the benchmarks: threads and harness logs of any length.

Large files are written once into a cache folder under /tmp (never into the repository) and
reused by later runs; `AUTODEV_BENCH_CACHE` moves it. A file appears under its final name only
when complete (written aside, then renamed), so an interrupted run never leaves half a cache.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

# The team every generated thread is written for; the live runs use the same three names.
TEAM = ["builder", "reviewer", "tester"]
KINDS = ["say", "work_done", "handoff", "say", "say", "wait", "gate"]
CACHE_VERSION = "v1"  # bump when the generators change, so stale files are not reused

# Posts are made of real words: a run of one repeated letter would tokenize far smaller than
# text does, which would flatter the full-history side of the prompt comparison.
WORDS = """the a to of and in is it that for on with as this be are was not by we at from or
test tests run commit review change file files line function module returns error fails passes
fix fixed add added remove check checks path config team thread post turn handoff work done
wait gate user audit model prompt token index cache tail append seq journal scheduler builder
reviewer tester branch merge diff hunk README docs example flag option command output exit code
status should could would must please next then first after before because since still again
looks good small edge case missing null empty list string number value key name field type
""".split()
BASE_TS = datetime(2026, 11, 30, tzinfo=UTC)


def cache_dir() -> Path:
    root = Path(os.environ.get("AUTODEV_BENCH_CACHE") or Path(tempfile.gettempdir()) / "autodev-bench-cache")
    d = root / CACHE_VERSION
    d.mkdir(parents=True, exist_ok=True)
    return d


def _text_pool(rnd: random.Random, size: int = 512) -> list[str]:
    pool = []
    for _ in range(size):
        goal, words = rnd.randint(20, 400), []
        while sum(len(w) + 1 for w in words) < goal:
            words.append(rnd.choice(WORDS))
        text = " ".join(words)
        pool.append(text[0].upper() + text[1:] + ".")
    return pool


def _ts(seconds: int) -> str:
    return (BASE_TS + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def gen_posts(n: int, seed: int = 7, team: list[str] = TEAM) -> Iterator[dict]:
    """`n` thread posts with varied authors, kinds, handoffs and lengths (20-400 characters).
    The first k posts of a longer thread are the k posts of a shorter one (same seed)."""
    rnd = random.Random(seed)
    pool = _text_pool(rnd)
    for seq in range(1, n + 1):
        frm = rnd.choice(team + ["user", "system"])
        kind = rnd.choice(KINDS) if frm not in ("user", "system") else "say"
        rec = {
            "seq": seq,
            "from": frm,
            "kind": kind,
            "text": rnd.choice(pool),
            "handoff": rnd.choice(team + [None, None]),
            "ts": _ts(seq),
        }
        if kind == "work_done":
            rec["credit"] = rnd.choice([None, {"commits": ["0a1b2c3"], "files": ["a.py"]}])
        yield rec


TOOLS_PER_TURN = 2
RECORDS_PER_TURN = 6 + 2 * TOOLS_PER_TURN  # so 10^2 and 10^6 records are whole turns


def gen_harness(n: int, seed: int = 11, team: list[str] = TEAM) -> Iterator[dict]:
    """`n` harness-log records shaped like finished turns (intent, generation, tools, post).
    Message contents are short: the records' shape and count matter here, not their bulk."""
    rnd = random.Random(seed)
    pool = _text_pool(rnd, 64)
    out = 0
    turn = 0
    while out < n:
        turn += 1
        who = team[turn % len(team)]
        calls = [
            {
                "id": f"call_{turn}_{j}",
                "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{j}.py"})},
            }
            for j in range(TOOLS_PER_TURN)
        ]
        recs = [
            {
                "type": "turn_started",
                "run": "seed",
                "turn": turn,
                "participant": who,
                "head": "0" * 40,
                "baseline": {"head": "0" * 40, "dirty": {}},
                "messages": [
                    {"role": "system", "content": "(system prompt)"},
                    {"role": "user", "content": rnd.choice(pool)},
                ],
            },
            {
                "type": "generation_started",
                "run": "seed",
                "turn": turn,
                "step": 1,
                "attempt": 1,
                "model": "scripted",
            },
            {
                "type": "generation_finished",
                "run": "seed",
                "turn": turn,
                "step": 1,
                "message": {"role": "assistant", "content": None, "tool_calls": calls},
                "model": "scripted",
                "prompt_tokens": 900,
                "completion_tokens": 40,
                "cost": None,
            },
        ]
        for c in calls:
            recs.append(
                {
                    "type": "tool_started",
                    "run": "seed",
                    "turn": turn,
                    "call_id": c["id"],
                    "name": "read_file",
                    "args": json.loads(c["function"]["arguments"]),
                    "replay_safe": True,
                }
            )
            recs.append(
                {
                    "type": "tool_finished",
                    "run": "seed",
                    "turn": turn,
                    "call_id": c["id"],
                    "result": rnd.choice(pool),
                }
            )
        recs += [
            {"type": "post_started", "run": "seed", "turn": turn, "id": f"seed:t{turn}:post:intent"},
            {"type": "post_committed", "run": "seed", "turn": turn, "seq": turn},
            {"type": "turn_finished", "run": "seed", "turn": turn, "seq": turn, "reason": ""},
        ]
        yield from recs[: n - out]
        out += len(recs)


def write_jsonl(path: Path, records) -> Path:
    """Write records as JSONL (compact, like the product's journal), atomically by rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")
    os.replace(tmp, path)
    return path


def cached_thread(n: int) -> Path:
    """A generated thread of `n` posts, in its own folder: the thread's index cache file lives
    beside it (thread-index.json), so two lengths must never share a folder."""
    p = cache_dir() / "threads" / str(n) / "thread.jsonl"
    return p if p.exists() else write_jsonl(p, gen_posts(n))


def cached_harness(n: int) -> Path:
    p = cache_dir() / "harness" / f"{n}.jsonl"
    return p if p.exists() else write_jsonl(p, gen_harness(n))
