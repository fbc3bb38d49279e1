"""autodev benchmarks: ratios measured in one run, printed as a table and written to
bench/results.json with the machine they ran on. Nothing here is a test: a slow machine fails
nothing. Generated logs are cached under /tmp (AUTODEV_BENCH_CACHE), never in the repository.

    make bench                                  # everything (.venv/bin/python bench/run.py)
    make bench-peers                            # side by side with AutoGen (bench/run.py peers)
    python bench/run.py scheduler prompt        # some of them
    python bench/run.py --markdown              # also print the table as markdown
    python bench/run.py --docs                  # docs/benchmarks.md's table from results.json (runs nothing)

Each benchmark returns one row: name, compare, detail, unit, ratio, target, holds; optionally
`method` (how it was measured) and `also` (further rows of the same shape). `ratio` is the
row's headline figure; `holds` is null for figures reported without a target. A benchmark that
could not run (the peer's packages would not install) returns a row with `skipped` (the reason)
and `ratio` null: it reports no figure rather than a made-up one.

Every row carries when it was measured, the load average around it (`os.getloadavg()`, before
and after) and the commit it measured (`-dirty` with uncommitted changes). A row that misses its
target is a failure, said so (`FAIL`) and in the exit status (1): re-run it on an idle machine
or fix the cause; it is never committed as if it held. docs/benchmarks.md's table is generated
from results.json (`--docs`; tests/test_docs.py keeps them equal).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from bench.cache import bench_cache  # noqa: E402
from bench.commands import bench_commands  # noqa: E402
from bench.flat import bench_prompt, bench_scheduler  # noqa: E402
from bench.panel import bench_panel  # noqa: E402
from bench.peers import bench_peers  # noqa: E402
from bench.runs import bench_daemon, bench_restore, bench_routing  # noqa: E402
from bench.telemetry import bench_telemetry  # noqa: E402

BENCHES = {
    "scheduler": bench_scheduler,
    "prompt": bench_prompt,
    "routing": bench_routing,
    "commands": bench_commands,
    "daemon": bench_daemon,
    "telemetry": bench_telemetry,
    "restore": bench_restore,
    "panel": bench_panel,
    "cache": bench_cache,
    "peers": bench_peers,
}


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem = round(kb / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        pass
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": mem,
        "system": platform.system(),
        "release": platform.release(),
    }


def rows(results: list[dict]) -> list[dict]:
    """Every row, sub-rows (`also`) right after their benchmark's row."""
    out = []
    for r in results:
        out.append(r)
        out.extend(r.get("also", []))
    return out


def _figure(r: dict) -> str:
    if r.get("skipped"):
        return "skipped"
    v = r["ratio"]
    return f"{v:,}" if isinstance(v, (int, float)) else str(v)


def _verdict(r: dict) -> str:
    return "—" if r["holds"] is None else ("holds" if r["holds"] else "FAIL")


def _detail(r: dict) -> str:
    return ", ".join(f"{k}: {v}" for k, v in r["detail"].items()) + f" ({r['unit']})"


def table(results: list[dict]) -> str:
    rs = rows(results)
    cols = [
        ("benchmark", lambda r: r["name"]),
        ("compared", lambda r: r["compare"]),
        ("figure", _figure),
        ("target", lambda r: r["target"]),
        ("", _verdict),
    ]
    widths = [max(len(h), *(len(f(r)) for r in rs)) for h, f in cols]
    lines = [
        "  ".join(h.ljust(w) for (h, _), w in zip(cols, widths)).rstrip(),
        "  ".join("-" * w for w in widths),
    ]
    for r in rs:
        lines.append("  ".join(f(r).ljust(w) for (_, f), w in zip(cols, widths)).rstrip())
    lines.append("")
    for r in rs:
        lines.append(f"{r['name'].strip()}: {_detail(r)}")
        if r.get("method"):
            lines.append(f"    method: {r['method']}")
    return "\n".join(lines)


def markdown(results: list[dict], mach: dict) -> str:
    head = (
        f"Measured on {mach['cpus']} CPUs ({mach['cpu'] or mach['machine']}), "
        f"{mach['memory_gib']} GiB, {mach['system']} {mach['release']}, "
        f"Python {mach['python']}.\n\n"
    )
    lines = [
        "| benchmark | compared | figure | target | holds | detail | measured |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows(results):
        verdict = {None: "—", True: "✔", False: "✘ FAIL"}[r["holds"]]
        lines.append(
            f"| {r['name'].strip()} | {r['compare']} | {_figure(r)} | {r['target']} | "
            f"{verdict} | {_detail(r)} | {_measured(r)} |"
        )
    return head + "\n".join(lines) + "\n"


def _measured(r: dict) -> str:
    """When, at what load and on which commit a row was measured ("?" for a row from before
    results.json kept it)."""
    m = r.get("measured")
    if not m:
        return "?"
    before, after = m["load"]
    return f"{m['date'][:16].replace('T', ' ')} UTC, load {before}–{after}, {m['commit']}"


def stamp() -> dict:
    """The commit this checkout is at (`-dirty` when it has uncommitted changes), or "?"."""
    from autodev.errors import AutodevError
    from autodev.host import hostgit

    try:
        head = hostgit.out(ROOT.parent, "rev-parse", "--short=12", "HEAD").strip()
        dirty = hostgit.out(ROOT.parent, "status", "--porcelain", "--untracked-files=no").strip()
    except (AutodevError, OSError):
        return {"commit": "?"}
    return {"commit": head + ("-dirty" if dirty else "")}


def _load() -> float:
    return round(os.getloadavg()[0], 2)


RESULTS = ROOT / "results.json"
DOCS = ROOT.parent / "docs" / "benchmarks.md"
BEGIN = "<!-- the table: generated from bench/results.json by `bench/run.py --docs`; do not edit -->"
END = "<!-- end of the generated table -->"


def docs_table(data: dict) -> str:
    """docs/benchmarks.md's generated part: results.json's rows, each with when it was measured."""
    return markdown(data["results"], data["machine"])


def docs_text(doc: str, data: dict) -> str:
    """The page with its table replaced by the one results.json makes."""
    head, _, rest = doc.partition(BEGIN + "\n")
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{docs_table(data)}{END}{tail}"


USAGE = """usage: bench/run.py [--markdown] [BENCH ...]

Runs autodev's benchmarks (all of them, or the ones named) and prints a table of figures against
their targets; results.json keeps the last figures. --markdown adds the table as Markdown.
Benchmarks: {names}"""


def main(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:
        print(USAGE.format(names=", ".join(BENCHES)))
        return 0
    if "--docs" in argv:
        DOCS.write_text(docs_text(DOCS.read_text(), json.loads(RESULTS.read_text())))
        print(f"wrote {DOCS}")
        return 0
    unknown_opts = [a for a in argv if a.startswith("-") and a != "--markdown"]
    if unknown_opts:
        print(
            f"bench/run.py: unknown option {unknown_opts[0]!r}\n\n" + USAGE.format(names=", ".join(BENCHES)),
            file=sys.stderr,
        )
        return 2
    md = "--markdown" in argv
    names = [a for a in argv if not a.startswith("--")] or list(BENCHES)
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(
            f"bench/run.py: unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHES)}",
            file=sys.stderr,
        )
        return 2
    results, began, commit = [], time.perf_counter(), stamp()["commit"]
    for name in names:
        t, load = time.perf_counter(), _load()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        r = BENCHES[name]()
        r["bench"] = name
        r["seconds"] = round(time.perf_counter() - t, 1)
        r["measured"] = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "load": [load, _load()],
            "commit": commit,
        }
        for sub in r.get("also", []):
            sub["measured"] = r["measured"]
        results.append(r)
    mach = machine()
    total = round(time.perf_counter() - began, 1)
    print(table(results))
    print(f"\n{len(names)} benchmarks in {total} s on {mach['cpus']} CPUs, Python {mach['python']}")
    if md:
        print("\n" + markdown(results, mach))
    kept = merged(ROOT / "results.json", results)
    RESULTS.write_text(
        json.dumps(
            {
                "machine": mach,
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "load": [round(x, 2) for x in os.getloadavg()],
                "commit": commit,
                "seconds": round(sum(r.get("seconds", 0) for r in kept), 1),
                "results": kept,
            },
            indent=1,
            ensure_ascii=False,
        )
        + "\n"
    )
    missed = [r for r in rows(results) if r["holds"] is False]
    for r in missed:
        print(
            f"FAIL: {r['name'].strip()}: {_figure(r)} against {r['target']} (load {r['measured']['load']}); "
            "re-run it on an idle machine, or fix the cause",
            file=sys.stderr,
        )
    return 1 if missed else 0


def merged(path: Path, results: list[dict]) -> list[dict]:
    """The new results, plus the previous file's rows of benchmarks not run this time, so that
    `bench/run.py peers` does not wipe the others' figures. Rows are kept in BENCHES order."""
    fresh = {r["bench"] for r in results}
    try:
        old = json.loads(path.read_text())["results"]
    except (OSError, ValueError, KeyError, TypeError):
        old = []
    keep = [r for r in old if isinstance(r, dict) and r.get("bench") in BENCHES and r["bench"] not in fresh]
    order = list(BENCHES)
    return sorted(keep + results, key=lambda r: order.index(r["bench"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
