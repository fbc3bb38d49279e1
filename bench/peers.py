"""Side by side with a peer: autodev and AutoGen AgentChat on the same workload, in the same run.

The workload: a conversation of N posts by a trio (builder, reviewer, tester) after the user's
objective, with the same system text per participant and the same canned replies on both sides.

- autodev: a real scripted run through the daemon (bench.runs.scripted_run); its prompts are the
  request bodies the scripted server logged.
- AutoGen: its own teams (RoundRobinGroupChat, SelectorGroupChat) driving a recording model
  client (bench/peer_autogen.py), in the peer's own virtual environment (.venv-peers, pinned in
  bench/peers-requirements.txt), so autodev's dependencies are untouched.

Both sides' prompts are counted by one counter (bench.tokens) on the messages each side sends.
When the peer's packages cannot be installed, the benchmark says so and reports no figures.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.data import TEAM, cache_dir
from bench.live import rotation_steps
from bench.runs import OBJECTIVE, scripted_run
from bench.tokens import TOKEN_MODEL, shared

ROOT = Path(__file__).resolve().parent
REQUIREMENTS = ROOT / "peers-requirements.txt"
RUNNER = ROOT / "peer_autogen.py"
PEER = "AutoGen AgentChat"
BUFFER = 8  # BufferedChatCompletionContext(buffer_size=8): the peer's bounded context
FLAT, ROUTING_MIN, TOTAL_SHARE = 1.2, 1.0, 1 / 20  # the targets where we claim to be ahead


def peer_venv() -> Path:
    return Path(os.environ.get("AUTODEV_PEER_VENV") or ROOT.parent / ".venv-peers")


def _stamp() -> str:
    return hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()


def peer_python(install: bool = True, timeout: float = 900) -> tuple[Path | None, str]:
    """The peer venv's interpreter, made once per requirements file; or None and the reason."""
    venv = peer_venv()
    py, stamp = venv / "bin" / "python", venv / ".installed"
    if py.exists() and stamp.exists() and stamp.read_text() == _stamp():
        return py, ""
    if not install:
        return None, f"the peer's venv {venv} is not installed (`make bench-peers` installs it)"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", str(REQUIREMENTS)],
    ]
    for cmd in steps:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"could not install the peer ({' '.join(cmd[-3:])}): {e}"
        if r.returncode != 0:
            tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-5:])
            return None, f"could not install the peer from {REQUIREMENTS.name} (exit {r.returncode}): {tail}"
    stamp.write_text(_stamp())
    return py, ""


def replies(n: int) -> list[str]:
    """The canned replies of an n-post run: the texts autodev's scripted trio posts, in order."""
    out = [c["args"]["text"] for s in rotation_steps(n) if s["participant"] != "audit" for c in s["calls"]]
    assert len(out) == n
    return out


# ---------------------------------------------------------------- autodev's side


def ours(n: int) -> dict:
    r = scripted_run(n)
    turns = [p for p in r["prompts"] if p["who"] != "audit"]
    k = r["window_turns"]
    return {
        "turns": r["turns"],
        "calls": len(r["prompts"]),
        "last": turns[-1]["messages"],
        "total": sum(p["messages"] for p in r["prompts"]),  # the audit's one request included
        "tools_total": sum(p["tools"] for p in r["prompts"]),
        "tools": {p["who"]: p["tools"] for p in turns},
        "routing": r["requests"] - r["generations"] - r["audit_requests"],
        "ms_turn": (r["window_s"] - r["model_s"]) / k * 1e3 if k else None,
        "systems": r["systems"],
        "appends_turn": r["log_appends"] / r["turns"],
        "state_turn": r["state_writes"] / r["turns"],
    }


def fsync_ms(reps: int = 50) -> float:
    """Median time of one fsynced 200-byte append on this machine's temp disk: the unit cost of
    autodev's durability, so the framework-time row can be read on any disk."""
    samples = []
    with tempfile.TemporaryDirectory(prefix="autodev-fsync-") as tmp:
        fd = os.open(Path(tmp) / "probe.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            for _ in range(reps):
                t = time.perf_counter()
                os.write(fd, b"x" * 199 + b"\n")
                os.fsync(fd)
                samples.append(time.perf_counter() - t)
        finally:
            os.close(fd)
    return sorted(samples)[len(samples) // 2] * 1e3


# ---------------------------------------------------------------- the peer's side


def _peer_specs(sizes, selector_sizes) -> list[dict]:
    specs = []
    for n in sizes:
        for ctx in ("default", "buffered"):
            specs.append(
                {"team": "round_robin", "context": ctx, "buffer": BUFFER, "bad_selector": False, "n": n}
            )
    for n in selector_sizes:
        for bad in (False, True):
            specs.append(
                {"team": "selector", "context": "default", "buffer": BUFFER, "bad_selector": bad, "n": n}
            )
    return specs


def run_peer(py: Path, specs: list[dict], systems: dict[str, str], timeout: float = 1800) -> dict:
    """Run the peer's teams in its venv; returns its versions and the raw runs."""
    cfg = {
        "agents": TEAM,
        "systems": systems,
        "lanes": {n: f"{n} of the benchmark trio" for n in TEAM},  # autodev's lanes (bench.live)
        "objective": OBJECTIVE,
        "runs": [{**s, "replies": replies(s["n"])} for s in specs],
    }
    with tempfile.TemporaryDirectory(prefix="autodev-peers-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps(cfg))
        r = subprocess.run(
            [str(py), str(RUNNER), str(src), str(dst)], capture_output=True, text=True, timeout=timeout
        )
        if r.returncode != 0:
            raise RuntimeError(f"{RUNNER.name} exited {r.returncode}:\n{r.stderr[-3000:]}")
        return json.loads(dst.read_text())


def theirs(run: dict) -> dict:
    """Figures of one peer run, its prompts counted like ours."""
    counter = shared()
    msgs = run["messages"]
    tok = [counter.message(m) for m in msgs]
    calls = [(c["who"], counter.priming + sum(tok[i] for i in c["ids"])) for c in run["calls"]]
    agents = [t for who, t in calls if who != "selector"]
    selector = [t for who, t in calls if who == "selector"]
    last = next(c for c in reversed(run["calls"]) if c["who"] != "selector")
    counter.check([msgs[i] for i in last["ids"]])  # the per-message sum is the whole count
    turns = run["turns"]
    return {
        "turns": turns,
        "calls": len(calls),
        "last": agents[-1],
        "total": sum(t for _, t in calls),
        "agents_total": sum(agents),
        "agent_calls": [(who, t) for who, t in calls if who != "selector"],
        "selector_total": sum(selector),
        "selector_first": selector[0] if selector else 0,
        "selector_last": selector[-1] if selector else 0,
        "routing": len(selector),
        "ms_turn": (run["wall_s"] - run["model_s"]) / turns * 1e3,
        "stored": run["stored"],
        "shown_last": len(last["ids"]),
        "writes_turn": None if run.get("write_syscalls") is None else run["write_syscalls"] / turns,
    }


# ---------------------------------------------------------------- rows


def _k(n: int) -> str:
    return f"{n:,}"


def skipped(reason: str) -> dict:
    return {
        "name": f"side by side with {PEER}",
        "compare": "skipped",
        "detail": {"skipped": reason},
        "unit": "—",
        "ratio": None,
        "target": "—",
        "holds": None,
        "skipped": reason,
    }


def rows(
    us: dict[int, dict], peer: dict[tuple, dict], versions: dict, sizes, selector_sizes, fsync: float
) -> dict:
    """The side-by-side rows from both sides' figures (pure: the smoke test feeds it tiny runs)."""
    small, big = min(sizes), max(sizes)
    d = {n: peer[("round_robin", "default", False, n)] for n in sizes}
    b = {n: peer[("round_robin", "buffered", False, n)] for n in sizes}
    good = {n: peer[("selector", "default", False, n)] for n in selector_sizes}
    bad = {n: peer[("selector", "default", True, n)] for n in selector_sizes}
    our_sizes = sorted(us)

    ours_growth = us[big]["last"] / us[small]["last"]
    peer_growth = d[big]["last"] / d[small]["last"]
    prompt = {
        "name": "side by side: last call's prompt",
        "compare": f"{_k(big)} vs {_k(small)} posts",
        "detail": {
            **{f"autodev {_k(n)}": us[n]["last"] for n in our_sizes},
            **{f"AutoGen default {_k(n)}": d[n]["last"] for n in sizes},
            **{f"AutoGen buffered({BUFFER}) {_k(n)}": b[n]["last"] for n in sizes},
            "AutoGen default growth": f"{peer_growth:.1f}×",
            f"autodev growth {_k(our_sizes[-1])} vs {_k(small)}": f"{us[our_sizes[-1]]['last'] / us[small]['last']:.2f}×",
        },
        "unit": f"tokens ({TOKEN_MODEL}), messages only",
        "ratio": round(ours_growth, 2),
        "target": f"≤ {FLAT}, peer default > {FLAT}",
        "holds": ours_growth <= FLAT < peer_growth,
        "method": "autodev: the last turn's request as the scripted server logged it; AutoGen: "
        "RoundRobinGroupChat of the same trio, the last agent request its client recorded; both "
        "counted with litellm.token_counter per message (tool schemas apart: see the total row)",
        "versions": versions,
    }

    share = us[big]["total"] / d[big]["total"]
    # The same with tool schemas counted on both sides: each peer agent call carries the schemas
    # autodev sends that participant (derived, informational).
    peer_tools = sum(us[big]["tools"].get(who, 0) for who, _ in d[big]["agent_calls"])
    share_tools = (us[big]["total"] + us[big]["tools_total"]) / (d[big]["total"] + peer_tools)
    total = {
        "name": "side by side: total prompt tokens",
        "compare": f"{_k(big)}-post run, autodev ÷ AutoGen default",
        "detail": {
            **{f"autodev {_k(n)}": us[n]["total"] for n in our_sizes},
            **{f"AutoGen default {_k(n)}": d[n]["total"] for n in sizes},
            **{f"AutoGen buffered({BUFFER}) {_k(n)}": b[n]["total"] for n in sizes},
            "AutoGen default ÷ autodev": f"{1 / share:.1f}×",
        },
        "unit": "tokens, every request of the run (autodev's audit included)",
        "ratio": round(share, 4),
        "target": f"≤ 1/{round(1 / TOTAL_SHARE)}",
        "holds": share <= TOTAL_SHARE,
    }
    total_tools = {
        "name": "  same, tool schemas on both sides",
        "compare": f"{_k(big)}-post run, autodev ÷ AutoGen default",
        "detail": {
            "autodev tool schema tokens per request": us[big]["tools"],
            "AutoGen default ÷ autodev": f"{1 / share_tools:.1f}×",
        },
        "unit": "tokens",
        "ratio": round(share_tools, 4),
        "target": "—",
        "holds": None,
        "method": "each AutoGen agent request charged the schemas autodev sends that participant",
    }
    buffered = {
        "name": f"  AutoGen buffered({BUFFER}): what the model sees",
        "compare": f"{_k(big)} posts",
        "detail": {
            "messages in the last request": b[big]["shown_last"],
            "messages stored by its agent": max(b[big]["stored"].values()),
            "default: messages in the last request": d[big]["shown_last"],
            "buffered total ÷ autodev": f"{b[big]['total'] / us[big]['total']:.2f}×",
        },
        "unit": "messages",
        "ratio": round(b[big]["last"] / b[small]["last"], 2),
        "target": "—",
        "holds": None,
        "method": "the buffer drops all but the last messages from each request; nothing in the "
        "prompt tells the model that older ones exist or how to get them (autodev: the turn "
        "prompt names the thread's length and read_thread fetches any post)",
    }

    ours_routing = max(us[n]["routing"] / us[n]["turns"] for n in our_sizes)
    sel_good = min(good[n]["routing"] / good[n]["turns"] for n in selector_sizes)
    sel_bad = min(bad[n]["routing"] / bad[n]["turns"] for n in selector_sizes)
    sbig = max(selector_sizes)
    routing = {
        "name": "side by side: routing calls per turn",
        "compare": "autodev vs SelectorGroupChat",
        "detail": {
            "autodev": ours_routing,
            "RoundRobinGroupChat (fixed order, no choice)": 0,
            "SelectorGroupChat": round(sel_good, 2),
            "SelectorGroupChat, selector wrong once per turn": round(sel_bad, 2),
        },
        "unit": "model calls per turn",
        "ratio": ours_routing,
        "target": f"0 vs ≥ {ROUTING_MIN:g}",
        "holds": ours_routing == 0 and sel_good >= ROUTING_MIN,
        "method": "autodev: requests − generations − audit; AutoGen: requests to the team's "
        "model client (the selector)",
    }
    selector = {
        "name": "  SelectorGroupChat's own prompts",
        "compare": f"{_k(sbig)}-post run",
        "detail": {
            "selector's last prompt": good[sbig]["selector_last"],
            "growth over the run": f"{good[sbig]['selector_last'] / good[sbig]['selector_first']:.1f}×",
            "added to the agents' prompt tokens": f"{good[sbig]['selector_total'] / good[sbig]['agents_total']:.0%}",
            "same, selector wrong once per turn": f"{bad[sbig]['selector_total'] / bad[sbig]['agents_total']:.0%}",
        },
        "unit": "tokens",
        "ratio": round(good[sbig]["selector_total"] / good[sbig]["agents_total"], 2),
        "target": "—",
        "holds": None,
    }

    mid = max(n for n in sizes if n in us)
    speed = us[mid]["ms_turn"] / d[mid]["ms_turn"]
    timing = {
        "name": "side by side: framework time per turn",
        "compare": f"{_k(mid)} posts, autodev ÷ AutoGen default",
        "detail": {
            **{f"autodev {_k(n)}": round(us[n]["ms_turn"], 2) for n in our_sizes if us[n]["ms_turn"]},
            **{f"AutoGen default {_k(n)}": round(d[n]["ms_turn"], 2) for n in sizes},
            **{f"AutoGen buffered({BUFFER}) {_k(n)}": round(b[n]["ms_turn"], 2) for n in sizes},
            "autodev fsynced log appends per turn": round(us[mid]["appends_turn"], 1),
            "autodev state.json replacements per turn": round(us[mid]["state_turn"], 1),
            "one fsynced append on this disk (ms)": round(fsync, 2),
            "AutoGen write() calls per turn": d[mid]["writes_turn"],
        },
        "unit": "ms per turn outside the model",
        "ratio": round(speed, 1),
        "target": "—",
        "holds": None,
        "method": "autodev: events.jsonl, turns 2..N, minus time in model requests (fsynced logs, "
        "git, state); AutoGen: team.run() wall minus time inside the client's create()",
    }
    prompt["also"] = [total, total_tools, buffered, routing, selector, timing]
    return prompt


def bench_peers(
    sizes=(10, 100, 1_000),
    our_sizes=(10, 100, 1_000, 10_000),
    selector_sizes=(10, 100),
    install: bool = True,
) -> dict:
    """autodev and AutoGen AgentChat on the same N-post workload (see the module docstring)."""
    py, why = peer_python(install=install)
    if py is None:
        print(f"peers: {why}; skipping, no figures reported", file=sys.stderr)
        return skipped(why)
    us = {}
    for n in sorted(set(our_sizes) | set(sizes)):
        t = time.perf_counter()
        us[n] = ours(n)
        print(f"  autodev {n:,} posts: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    systems = us[min(us)]["systems"]
    missing = [n for n in TEAM if n not in systems]
    if missing:
        raise RuntimeError(f"the scripted run logged no system prompt for {missing}")
    specs = _peer_specs(sizes, selector_sizes)
    t = time.perf_counter()
    out = run_peer(py, specs, {n: systems[n] for n in TEAM})
    print(f"  {PEER}: {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    peer = {
        (s["team"], s["context"], s["bad_selector"], s["n"]): theirs(r)
        for s, r in zip(specs, out["runs"], strict=True)
    }
    from autodev import __version__

    versions = {
        "autodev": __version__,
        **out["versions"],
        "tokenizer": f"litellm.token_counter({TOKEN_MODEL})",
    }
    fsync = fsync_ms()
    # Both sides' figures, kept outside the repository, so the rows can be re-read after a long run.
    raw = {"us": us, "peer": [[list(k), v] for k, v in peer.items()], "versions": versions, "fsync": fsync}
    (cache_dir() / "peers-raw.json").write_text(json.dumps(raw, ensure_ascii=False))
    return rows(us, peer, versions, sizes, selector_sizes, fsync)
