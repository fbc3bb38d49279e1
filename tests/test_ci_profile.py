"""`make test` is deterministic: every property test runs derandomized, with no example database
carried between runs; `make fuzz` is where random exploration happens."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import settings

from tests.conftest import FUZZ, FUZZ_SCALE, examples

TESTS = Path(__file__).parent


def test_property_tests_run_derandomized_without_a_database():
    if FUZZ:
        assert not settings.default.derandomize and examples(10) == 10 * FUZZ_SCALE
    else:
        assert settings.default.derandomize and settings.default.database is None
        assert examples(10) == 10


def test_no_property_test_opts_out_of_the_profile():
    """A test's own `@settings(derandomize=...)` or `@seed` would overrule `make test`'s profile,
    and a literal max_examples would not grow under `make fuzz`."""
    found = []
    for path in TESTS.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("settings", "seed"):
                for kw in node.keywords:
                    if kw.arg == "derandomize" or (
                        kw.arg == "max_examples" and isinstance(kw.value, ast.Constant)
                    ):
                        found.append(f"{path.relative_to(TESTS)}:{node.lineno}: {kw.arg}")
                if getattr(node.func, "id", None) == "seed":
                    found.append(f"{path.relative_to(TESTS)}:{node.lineno}: seed")
    assert found == []
