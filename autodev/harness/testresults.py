"""The project's tests as evidence, the pure part (SPEC §22): which test command a repository
uses, per-test results read from a machine format (JUnit XML, `go test -json`, libtest's JSON
for `cargo test`), and the classification of a base run against a head run. Never from
scraping a runner's text output.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Literal
from xml.etree import ElementTree

from autodev.records.evidence import Evidence, Status, TestRun
from autodev.store.journal import JsonObject, is_object

Chosen = Literal["config", "detected"]  # the test command: testCommand as given, or detected

JUNIT_FILE = ".autodev-evidence-junit.xml"  # written by the test run in its scratch copy
CARGO_FILE = ".autodev-evidence-cargo"  # cargo's build output (.jsonl), each binary's (-<n>.jsonl)
MAX_RESULTS_BYTES = 50_000_000  # a results file larger than this is an error, never parsed
_WALKED = 5000  # entries looked at when detecting tests, so a huge tree costs little
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", "target", "dist", "build"}
_DOCS = (".md", ".rst", ".txt", ".adoc")
NPM_NO_TEST = "no test specified"  # npm init's placeholder test script


def detect(repo: Path) -> tuple[str, str] | None:
    """(command, why) for the test runner the repository uses, or None when it shows none:
    pytest (or unittest), `npm test`, `go test ./...` or `cargo test`, in that order."""
    repo = Path(repo)
    python = _python_tests(repo)
    if python == "unittest":
        return "python3 -m unittest", "Python unittest tests (test files import unittest; no pytest)"
    if python == "pytest":
        return "python3 -m pytest -q", "Python tests (pytest configuration or test_*.py files)"
    pkg = repo / "package.json"
    if pkg.is_file():
        try:
            test = json.loads(pkg.read_text(errors="replace")).get("scripts", {}).get("test", "")
        except (ValueError, AttributeError, OSError):
            test = ""
        if isinstance(test, str) and test.strip() and NPM_NO_TEST not in test:
            return "npm test", "package.json has a test script"
    if (repo / "go.mod").is_file():
        return "go test -json ./...", "go.mod"
    if (repo / "Cargo.toml").is_file():
        return (
            "cargo test",
            'Cargo.toml; the sandbox must show the toolchain: sandboxRead = ["~/.cargo", "~/.rustup"]',
        )
    return None


def describe(repo: Path, configured: str) -> str:
    """One line for `doctor`: the test command evidence would use, and why."""
    if configured.strip():
        return f"testCommand = {configured.strip()!r} (config.toml)"
    found = detect(repo)
    if found is None:
        return (
            "no tests detected (pytest, unittest, npm test, go test, cargo test): done has no test evidence"
        )
    return f"{found[0]} (detected: {found[1]}; set testCommand in .autodev/config.toml to change it)"


def _python_tests(repo: Path) -> Literal["pytest", "unittest"] | None:
    """Which runner a repository's Python tests are written for: pytest when it is configured or
    a test file mentions it (or is neither: only pytest runs bare test functions), unittest when
    its test files import unittest and none mentions pytest; None without test files."""
    if (repo / "pytest.ini").is_file() or (repo / "conftest.py").is_file():
        return "pytest"
    for name, section in (
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ):
        try:
            if section in (repo / name).read_text(errors="replace"):
                return "pytest"
        except OSError:
            pass
    found = _test_files(repo)
    if not found:
        return None
    texts = [_head(f) for f in found[:_READ_TESTS]]
    if any(_PYTEST_USE.search(t) for t in texts) or not all(_UNITTEST_USE.search(t) for t in texts):
        return "pytest"
    return "unittest"


_READ_TESTS = 20  # test files read to tell pytest from unittest (their first 64 KiB each)
_PYTEST_USE = re.compile(r"^\s*(import|from)\s+pytest\b|\bpytest\.", re.M)
_UNITTEST_USE = re.compile(r"^\s*(import|from)\s+unittest\b", re.M)


def _head(path: Path) -> str:
    try:
        with path.open("rb") as f:
            return f.read(65536).decode(errors="replace")
    except OSError:
        return ""


def _test_files(repo: Path) -> list[Path]:
    """Python test files (test_*.py, *_test.py) near the top of the repository, bounded."""
    out: list[Path] = []
    seen = 0
    for folder, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            seen += 1
            if f.endswith(".py") and (f.startswith("test_") or f.endswith("_test.py")):
                out.append(Path(folder) / f)
        if seen > _WALKED or len(Path(folder).relative_to(repo).parts) > 3 or len(out) >= _READ_TESTS:
            dirs[:] = []
    return out


def is_pytest(command: str) -> bool:
    return re.search(r"(^|[\s/])(py\.test|pytest)(\s|$)", command) is not None


_UNITTEST = re.compile(r"""^\s*(python3?)\s+-m\s+unittest((\s+[^\s;&|<>`$()\\'"]+)*)\s*$""")
UNITTEST_RUNNER = ".autodev-evidence-unittest.py"  # harness/unittest_junit.py, copied into the scratch copy


def is_unittest(command: str) -> bool:
    """A plain `python3 -m unittest [args]`: run as harness/unittest_junit.py, which writes
    unittest's per-test results as JUnit XML (unittest itself writes no machine format)."""
    return _UNITTEST.match(command) is not None


def unittest_command(command: str) -> str:
    """The plain unittest command as its evidence run: the same interpreter and arguments, the
    runner in place of `-m unittest`."""
    m = _UNITTEST.match(command)
    if m is None:
        raise ValueError(f"not a plain `python3 -m unittest` command: {command!r}")
    return f"{m.group(1)} {UNITTEST_RUNNER}{m.group(2)}"


def is_go_json(command: str) -> bool:
    return re.search(r"(^|\s)go\s+test\b", command) is not None and " -json" in f" {command} "


_CARGO = re.compile(r"^\s*cargo\s+test(\s|$)")
_SHELL = re.compile(r"[;&|<>`$()\\\n'\"]")


def is_cargo_test(command: str) -> bool:
    """A plain `cargo test [cargo options]`: the one cargo form whose results autodev reads
    (built with `--no-run --message-format=json`, each test binary run with libtest's JSON)."""
    return bool(_CARGO.match(command)) and not _SHELL.search(command) and " -- " not in f" {command} "


def results_format(command: str) -> str:
    """How a command's per-test results are read: `go test -json` from its output, a plain
    `cargo test` from libtest's JSON per test binary, everything else from the JUnit XML file
    it wrote ($AUTODEV_JUNIT; pytest writes it by itself through PYTEST_ADDOPTS, wherever in
    the command it runs)."""
    if is_cargo_test(command):
        return "cargo-json"
    return "go-json" if is_go_json(command) else "junit"


def pytest_addopts(junit: str, existing: str = "") -> str:
    """PYTEST_ADDOPTS for the evidence runs: JUnit XML to `junit`, no cache folder written."""
    return f"{existing} -p no:cacheprovider --junitxml={junit}".strip()


def simple_pytest(command: str) -> bool:
    """One pytest invocation with no shell operators: test ids may be appended to it."""
    return is_pytest(command) and not re.search(r"[;&|<>`$()]", command)


def unsupported(command: str) -> str:
    """Why a command's results cannot be read here (empty: they can)."""
    if re.search(r"(^|\s)cargo\s+test\b", command) and not is_cargo_test(command):
        return (
            "unsupported test command: autodev reads cargo's results only from a plain `cargo test "
            "[cargo options]` (no shell operators, nothing after `--`); set testCommand to that, or "
            "to a command that writes JUnit XML to $AUTODEV_JUNIT (e.g. cargo nextest with a JUnit "
            "profile, the file copied there)"
        )
    if re.search(r"(^|\s)-m\s+unittest\b", command) and not is_unittest(command):
        return (
            "unsupported test command: autodev reads unittest's results only from a plain `python3 -m "
            "unittest [args]` (no shell operators); set testCommand to that, or to a command that "
            "writes JUnit XML to $AUTODEV_JUNIT"
        )
    return ""


def cargo_binaries(data: bytes, work: str) -> list[tuple[str, str, str]]:
    """(source, executable, package folder), each relative to `work`, of the test binaries in
    `cargo test --no-run --message-format=json` output: the compiler artifacts built for tests.
    One outside `work` (a target folder elsewhere) or with `..` in it is left out."""
    if len(data) > MAX_RESULTS_BYTES:
        raise ValueError(f"cargo's build output has {len(data)} bytes (more than {MAX_RESULTS_BYTES})")
    out: list[tuple[str, str, str]] = []
    for line in data.decode(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        msg = _json_object(line)
        if msg is None or msg.get("reason") != "compiler-artifact":
            continue
        if not _field(msg.get("profile"), "test") or not msg.get("executable"):
            continue
        source = _inside(str(_field(msg.get("target"), "src_path") or ""), work)
        binary = _inside(str(msg.get("executable") or ""), work)
        package = _inside(os.path.dirname(str(msg.get("manifest_path") or "")), work)
        if source is not None and binary is not None and package is not None:
            out.append((source, binary, package))
    return out


def _json_object(line: str) -> JsonObject | None:
    """One line of a tool's JSON output as an object, or None (not JSON, or not an object)."""
    try:
        value: object = json.loads(line)
    except ValueError:
        return None
    return value if is_object(value) else None


def _field(obj: object, key: str) -> object:
    """`obj[key]` when `obj` is a JSON object, else None."""
    return obj.get(key) if is_object(obj) else None


def _inside(path: str, work: str) -> str | None:
    if not path.startswith(work.rstrip("/") + "/") and path != work:
        return None
    rel = os.path.relpath(path, work)
    return None if ".." in PurePosixPath(rel).parts else rel


def parse_libtest_json(text: str, source: str) -> dict[str, Status]:
    """Per-test status from one test binary's libtest JSON (`-Z unstable-options --format json`),
    as `source::name` ids. A test that started and never ended (the binary died) failed."""
    out: dict[str, Status] = {}
    started: set[str] = set()
    suite = False
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        match _json_object(line):  # libtest's own JSON: a line is told by its "type"
            case {"type": "suite"}:
                suite = True
            case {"type": "test", "name": name} as ev if name:
                ident = f"{source}::{name}"
                event = ev.get("event")
                if status := _LIBTEST.get(str(event)):
                    out[ident] = status
                elif event == "started":
                    started.add(ident)
            case _:
                pass  # not JSON, or another of libtest's lines
    if not suite:  # libtest's format changed, or the binary is no libtest harness: said, not 0 tests
        raise ValueError(f"the test binary of {source} wrote no libtest JSON")
    return {**{i: "failed" for i in started if i not in out}, **out}


def parse_junit(data: bytes, where: Callable[[str], bool]) -> dict[str, Status]:
    """Per-test status from JUnit XML. `where(path)` says whether a file exists in the tested
    copy, so pytest's dotted class names become `tests/test_x.py::Class::test` ids."""
    if len(data) > MAX_RESULTS_BYTES:
        raise ValueError(f"the results file has {len(data)} bytes (more than {MAX_RESULTS_BYTES})")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ValueError("the results file declares a DTD or entities; JUnit XML has none")
    root = ElementTree.fromstring(data)
    out: dict[str, Status] = {}
    for case in root.iter("testcase"):
        name = case.get("name") or ""
        ident = test_id(case.get("classname") or "", name, case.get("file"), where)
        tags = {child.tag for child in case}
        status: Status = "passed"
        if tags & {"failure", "error"}:
            status = "failed"
        elif "skipped" in tags:
            status = "skipped"  # xfail included: pytest reports it as skipped
        if out.get(ident) == "failed":
            continue  # a teardown error after a pass is a second case of the same test
        out[ident] = status
    return out


def test_id(classname: str, name: str, file: str | None, where: Callable[[str], bool]) -> str:
    """`path::Class::name` when the class name is a module path that exists, else
    `classname::name`."""
    parts = [p for p in classname.split(".") if p]
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if where(path):
            return "::".join([path, *parts[i:], name])
    if file and where(file):
        return f"{file}::{name}"
    return f"{classname}::{name}" if classname else name


test_id.__test__ = False  # pyright: ignore[reportFunctionMemberAccess]  # pytest's mark: not a test function


def parse_go_json(text: str) -> dict[str, Status]:
    """Per-test status from `go test -json` lines (`Action` pass/fail/skip of a `Test`)."""
    out: dict[str, Status] = {}
    for line in text.splitlines():
        if not line.startswith("{"):
            continue
        ev = _json_object(line)
        if ev is None or not ev.get("Test"):
            continue
        action = _GO.get(str(ev.get("Action")))
        if action:
            out[f"{ev.get('Package', '')}::{ev['Test']}"] = action
    return out


_LIBTEST: dict[str, Status] = {"ok": "passed", "failed": "failed", "timeout": "failed", "ignored": "skipped"}
_GO: dict[str, Status] = {"pass": "passed", "fail": "failed", "skip": "skipped"}


def is_test_path(path: str) -> bool:
    """A file the run changed that is a test (its changes are listed beside the evidence)."""
    p = PurePosixPath(path)
    name = p.name
    if any(part in {"tests", "test", "__tests__", "spec", "testdata"} for part in p.parts[:-1]):
        return True
    return (
        (name.startswith("test_") and name.endswith(".py"))
        or name.endswith(("_test.py", "_test.go", ".test.js", ".test.ts", ".spec.js", ".spec.ts"))
        or name in {"conftest.py", "pytest.ini"}
    )


def is_doc_path(path: str) -> bool:
    return path.lower().endswith(_DOCS)


def classify(
    base: TestRun,
    head: TestRun,
    *,
    command: str,
    chosen: Chosen,
    changed: Iterable[str],
    base_commit: str | None = None,
    base_cached: bool = False,
) -> Evidence:
    """The evidence of a change from the base run and the head run (pure). A test present and
    not skipped at the base that is missing, skipped or xfailed at the head counts as broken."""
    changed = sorted(set(changed))
    tests = [c for c in changed if is_test_path(c)]
    code = [c for c in changed if not is_test_path(c) and not is_doc_path(c)]
    made = functools.partial(
        Evidence,
        command=command,
        chosen=chosen,
        tests_changed=tests,
        code_changed=code,
        base=base_commit,
        base_sec=round(base.seconds, 3),
        head_sec=round(head.seconds, 3),
        base_cached=base_cached,
    )
    for run in (head, base):
        if run.outcome in ("timeout", "error"):
            which = "base commit" if run is base else "head"
            return made(outcome=run.outcome, reason=f"at the {which}: {run.reason}")
    if head.outcome == "no_tests" and base.outcome == "no_tests":
        return made(outcome="no_tests", reason=head.reason)
    f2p: list[str] = []
    p2f: list[str] = []
    p2p: list[str] = []
    still: list[str] = []
    for ident in sorted(set(base.results) | set(head.results)):
        before, after = base.results.get(ident), head.results.get(ident)
        if after == "passed":
            (p2p if before == "passed" else f2p).append(ident)
        elif before in ("passed", "failed") and after in (None, "skipped"):
            p2f.append(ident)  # vanished, newly skipped or xfailed
        elif before == "passed" and after == "failed":
            p2f.append(ident)
        elif after == "failed":
            still.append(ident)
    return made(outcome="ran", fail_to_pass=f2p, pass_to_fail=p2f, pass_to_pass=p2p, still_failing=still)
