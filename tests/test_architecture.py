"""The package's shape holds: no import circles, no arrow running back up the layers, and no
private name imported from another package. Every import counts, also those inside functions and
under TYPE_CHECKING: a lazy import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

import autodev

PKG = Path(autodev.__file__).parent

# Lowest first. A module may import from its own layer and the ones below it, never above.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "records", "__init__"),  # what every part shares
    ("host",),  # autodev's own processes: git on the host, Python children, process groups
    ("rules",),  # pure: who speaks, what a post may be, caps, reasons, live posts
    ("store",),  # what survives a crash: journal, thread, events, state, inbox, paths, runs
    ("guard",),  # the command guard, the sandbox, secrets and keys
    ("config",),  # the user's files, prompts, init
    ("timeline", "telemetry"),  # rewind and fork of a run's files; spans from the harness log
    ("group",),  # best of N: a group's record, worktrees, driver, facts and the pick
    ("harness",),  # a model's turn and its tools
    ("scripted",),  # the scripted model and the contract servers (a harness Model)
    ("agents",),  # an agent CLI's turn
    ("daemon",),  # the run loop
    ("setup",),  # doctor: what `start` needs (status shows its checks)
    ("user",),  # what the user sees and does (CLI and panel share it), the demo
    ("replay",),  # a recorded run replayed through the daemon and the user's actions; bundles
    ("eval", "evals"),  # autodev eval and its shipped smoke suite
    ("panel",),
    ("cli", "__main__"),
]
RANK = {part: i for i, names in enumerate(LAYERS) for part in names}


def modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 2:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import of autodev in the file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("autodev")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("autodev"):
            assert not node.level, f"{path}:{node.lineno}: relative import"
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.append((sub, [], node.lineno) if sub in known else (node.module, [a.name], node.lineno))
    return out


def part(module: str) -> str:
    """The layer part a module belongs to: a module LAYERS names on its own, else its subpackage,
    or its own name at the root."""
    pieces = module.split(".")
    if ".".join(pieces[1:3]) in RANK:
        return ".".join(pieces[1:3])
    return pieces[1] if len(pieces) > 1 else "__init__"


def graph() -> dict[str, set[str]]:
    known = modules()
    return {
        name: {m for m, _, _ in imports(name, path, known) if m in known and m != name}
        for name, path in known.items()
    }


def test_every_part_has_a_layer():
    assert {part(m) for m in modules()} <= set(RANK), "add the new package to LAYERS"


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of `edges` (Tarjan's strongly connected components of more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs if RANK[part(a)] < RANK[part(b)])


def test_no_import_circles():
    assert circles(graph()) == []


def test_no_arrow_runs_back_up():
    assert upward(graph()) == []


def test_the_checks_catch_a_circle_and_an_arrow_back_up():
    edges = graph()
    edges["autodev.store.journal"] = edges["autodev.store.journal"] | {"autodev.store.thread"}
    edges["autodev.store.runs"] = edges["autodev.store.runs"] | {"autodev.daemon.loop"}
    assert ["autodev.store.journal", "autodev.store.thread"] in circles(edges)
    assert upward(edges) == ["autodev.store.runs -> autodev.daemon.loop"]


def test_no_private_name_crosses_a_package():
    known = modules()
    crossing = [
        f"{path.relative_to(PKG.parent)}:{line}: {m}.{n}"
        for name, path in known.items()
        for m, names, line in imports(name, path, known)
        for n in names
        if n.startswith("_") and not n.startswith("__") and part(m) != part(name)
    ]
    assert crossing == []


def test_one_process_group_helper_and_one_chromium_lookup():
    """Process groups are ended in `host/procgroup` only; Chromium is found in `harness/chromium` only."""
    killers = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if "os.killpg(" in p.read_text())
    finders = sorted(
        str(p.relative_to(PKG)) for p in PKG.rglob("*.py") if "def chromium_path(" in p.read_text()
    )
    assert killers == ["host/procgroup.py"]
    assert finders == ["harness/chromium.py"]
