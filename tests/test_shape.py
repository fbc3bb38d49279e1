"""The code stays in small, typed parts (issue 31): module and function sizes, bare `dict`/`list`
in signatures, lines that name the type `Any` (in code, not prose), and string dispatch on a log
line's "type".

Each figure has a ceiling that only goes down: lower it when you remove more, never raise it.
Run as a script to print the figures and the offenders: `python tests/test_shape.py`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import autodev

PKG = Path(autodev.__file__).parent

MODULE_LINES = 400
FUNCTION_LINES = 60
# Generated, not written: the plain-JSON shapes of the records (store/plain.py makes it).
GENERATED = {"store/shapes.py"}

# How many break each rule today; the goal of issue 31 is 0 for each (and at most 10 lines naming
# the type Any in code: prose in comments and docstrings is not counted).
CEILING_BIG_MODULES = 0
CEILING_BIG_FUNCTIONS = 0
CEILING_BARE_SIGNATURES = 0
CEILING_ANY_LINES = 0
CEILING_TYPE_STRINGS = 0

_BARE = re.compile(r"(^|[\s|\[(,])(dict|list)($|[\s|\]),])")
_TYPE_STRING = re.compile(r"""(\.get\(["']type["']\)|\[["']type["']\])\s*(==|!=|in\b|not\s+in\b)""")


def _sources() -> list[tuple[str, str]]:
    return [
        (str(p.relative_to(PKG)), p.read_text())
        for p in sorted(PKG.rglob("*.py"))
        if str(p.relative_to(PKG)) not in GENERATED
    ]


def _functions(src: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def big_modules() -> list[str]:
    return [
        f"{rel}: {len(src.splitlines())} lines"
        for rel, src in _sources()
        if len(src.splitlines()) > MODULE_LINES
    ]


def big_functions() -> list[str]:
    out = []
    for rel, src in _sources():
        for fn in _functions(src):
            n = (fn.end_lineno or fn.lineno) - fn.lineno + 1
            if n > FUNCTION_LINES:
                out.append(f"{rel}:{fn.lineno} {fn.name}: {n} lines")
    return out


def bare_signatures() -> list[str]:
    """Parameters and returns typed as a bare `dict` or `list` (say what they hold, or pass a model)."""
    out = []
    for rel, src in _sources():
        for fn in _functions(src):
            a = fn.args
            args = (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
            anns = [x.annotation for x in args if x is not None and x.annotation is not None]
            for ann in [*anns, fn.returns]:
                if ann is not None and _BARE.search(ast.unparse(ann).strip("'\"")):
                    out.append(f"{rel}:{fn.lineno} {fn.name}: {ast.unparse(ann)}")
    return out


def _any_at(src: str) -> set[int]:
    """Lines where code names the type `Any` (`Any`, `typing.Any`, its import, or inside a string
    annotation such as `cast("dict[str, Any]", ...)`); prose in comments and docstrings does not count."""
    tree = ast.parse(src)
    docstrings = {
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    found: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == "Any" or isinstance(n, ast.Attribute) and n.attr == "Any":
            found.add(n.lineno)
        elif isinstance(n, ast.ImportFrom) and any(a.name == "Any" for a in n.names):
            found.add(n.lineno)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and "Any" in n.value:
            if id(n) in docstrings:
                continue
            try:
                inner = ast.parse(n.value.strip(), mode="eval")
            except (SyntaxError, ValueError):
                continue
            if any(isinstance(m, ast.Name) and m.id == "Any" for m in ast.walk(inner)):
                found.add(n.lineno)
    return found


def any_lines() -> list[str]:
    return [f"{rel}:{i}" for rel, src in _sources() for i in sorted(_any_at(src))]


def type_strings() -> list[str]:
    """`.get("type") == "..."` (or `["type"] ==`, `!=`, `in`): a line dispatched by its string where
    it should be read into its model and matched."""
    return [
        f"{rel}:{i}"
        for rel, src in _sources()
        for i, line in enumerate(src.splitlines(), 1)
        if _TYPE_STRING.search(line)
    ]


def test_modules_stay_small():
    assert len(big_modules()) <= CEILING_BIG_MODULES, big_modules()


def test_functions_stay_small():
    assert len(big_functions()) <= CEILING_BIG_FUNCTIONS, big_functions()


def test_no_new_bare_dict_or_list_in_signatures():
    assert len(bare_signatures()) <= CEILING_BARE_SIGNATURES, bare_signatures()


def test_any_does_not_spread():
    assert len(any_lines()) <= CEILING_ANY_LINES, any_lines()


def test_lines_are_matched_by_model_not_by_type_string():
    assert len(type_strings()) <= CEILING_TYPE_STRINGS, type_strings()


def test_the_checks_see_what_they_count():
    src = "def f(x: dict, y: list[int] | None) -> dict[str, int]:\n    return {}\n"
    fn = _functions(src)[0]
    found = [
        ast.unparse(a.annotation)
        for a in fn.args.args
        if a.annotation and _BARE.search(ast.unparse(a.annotation))
    ]
    assert found == ["dict"]
    assert _BARE.search("list | None") and not _BARE.search("list[str]") and not _BARE.search("JsonList")
    any_src = (
        '"""Any docstring."""\nfrom typing import Any\n# Any comment\nx: Any = 1\n'
        'y = cast("dict[str, Any]", {})\nz = "Any other text, prose."\nimport typing\nw: typing.Any\n'
    )
    assert sorted(_any_at(any_src)) == [2, 4, 5, 8]
    assert _TYPE_STRING.search('if rec.get("type") == "post":') and not _TYPE_STRING.search(
        'rec.get("types")'
    )
    for dispatch in ('rec["type"] == "post"', "rec['type'] != 'post'", 'r.get("type") not in KINDS'):
        assert _TYPE_STRING.search(dispatch), dispatch
    assert not _TYPE_STRING.search('{"type": "post"}') and not _TYPE_STRING.search('rec["type"] = "post"')


if __name__ == "__main__":
    for title, found in [
        ("modules over 400 lines", big_modules()),
        ("functions over 60 lines", big_functions()),
        ("bare dict/list in signatures", bare_signatures()),
        ("lines naming the type Any", any_lines()),
        ('"type" string comparisons (.get("type") or ["type"])', type_strings()),
    ]:
        print(f"{title}: {len(found)}")
        for f in found:
            print(f"  {f}")
