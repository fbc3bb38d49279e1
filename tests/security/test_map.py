"""The security suite cannot rot: docs/security.md's threat table has a row for every surface
and its findings table one for every finding (issue 29's and the earlier ones), every test either
names exists, each finding's tests live in tests/security/, and nothing there is left out of
`make test`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "security.md"
SUITE = Path(__file__).parent
SURFACES = {
    "daemon", "CLI", "eval", "replay and bundles", "rewind and fork", "search and file tools",
    "telemetry", "MCP", "browser", "agent CLIs", "hooks and `notifyCommand`", "git (yours, after the run)",
}  # fmt: skip
FINDINGS = {
    *(f"29-{n}" for n in range(1, 15)),
    "29-rerun",
    "29-rerun-ext",
    "33-ref-fifo",
    *(f"20-{name}" for name in ("commondir", "renamed-git", "nested-fsmonitor", "attribute-drivers")),
    *(
        f"20-{name}"
        for name in ("stdlib-modules", "wrappers", "terminal-escapes", "inbox-fifo", "state-json")
    ),
}
# `tests/x/test_y.py::test_z`, `test_y.py::test_z` (in tests/security/), `::test_z` (the file before it on the line)
REF = re.compile(r"`((?:tests/[\w/]+/)?test_\w+\.py)?::(test_\w+)`")


def refs(line: str) -> list[tuple[Path, str]]:
    out, last = [], None
    for m in REF.finditer(line):
        if m.group(1):
            last = ROOT / m.group(1) if m.group(1).startswith("tests/") else SUITE / m.group(1)
        assert last is not None, f"docs/security.md: `::{m.group(2)}` with no file before it: {line[:120]}"
        out.append((last, m.group(2)))
    return out


def defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        names |= {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    return names


def table(heading: str) -> dict[str, str]:
    """The rows of the table under `heading`: first cell -> the whole line."""
    text = DOC.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("|---")]
    return {row.split(" | ")[0].removeprefix("| ").strip(): row for row in rows[1:]}


def test_every_test_security_md_names_exists():
    seen = 0
    for n, line in enumerate(DOC.read_text().splitlines(), 1):
        for path, name in refs(line):
            assert path.is_file(), (
                f"docs/security.md:{n} names {path.relative_to(ROOT)}, which does not exist"
            )
            assert name in defined(path), f"docs/security.md:{n}: no test {name} in {path.relative_to(ROOT)}"
            seen += 1
    assert seen > 60, seen


def test_the_threat_table_has_every_surface_with_a_test():
    rows = table("Threats by surface")
    assert SURFACES <= set(rows), SURFACES - set(rows)
    for surface, row in rows.items():
        cells = row.strip("|").split(" | ")
        assert len(cells) == 4 and all(c.strip() for c in cells), f"{surface}: {cells}"
        assert refs(cells[3]), f"the {surface} row names no test"


def test_every_finding_has_a_test_in_the_security_suite():
    rows = table("Findings and their tests")
    assert set(rows) == FINDINGS, (FINDINGS - set(rows), set(rows) - FINDINGS)
    for finding, row in rows.items():
        named = refs(row)
        assert named, f"finding {finding} names no test"
        for path, _ in named:
            assert path.parent == SUITE, (
                f"finding {finding}: {path.relative_to(ROOT)} is not in tests/security/"
            )


def test_the_whole_suite_runs_in_make_test():
    """`make test` runs `tests` with `-m "not full"`: a test of this suite marked `full` (or
    thinned out with conftest.light) would silently leave it."""
    make = (ROOT / "Makefile").read_text()
    target = make.split("\ntest: ", 1)[1].split("\n\n", 1)[0]
    assert '-m "not full" tests' in target, target
    for path in SUITE.glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            full = isinstance(node, ast.Attribute) and node.attr == "full"
            full = full and isinstance(node.value, ast.Attribute) and node.value.attr == "mark"  # type: ignore[union-attr]
            light = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "light"
            assert not (full or light), f"{path.name}:{getattr(node, 'lineno', '?')} leaves make test"
