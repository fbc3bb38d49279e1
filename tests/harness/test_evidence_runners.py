"""The evidence read from runners other than pytest, for real in bubblewrap (issue 30 item 1):
a plain `cargo test` (cargo's JSON build messages, then libtest's JSON per test binary), a custom
cargo command (the named error), and a JS runner's JUnit reporter (`node --test`, no package
needed) writing to $AUTODEV_JUNIT."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from autodev.guard import sandbox
from autodev.harness import evidence
from autodev.store.paths import RunPaths
from tests.conftest import git


def setup(repo: Path, command: str, expose=(), timeout: float = 300) -> evidence.TestSetup:
    box = sandbox.resolve("auto")
    if not box.active:
        pytest.skip(f"no working bubblewrap here: {box.problem}")
    run_dir = RunPaths(repo).run_dir
    return evidence.TestSetup(
        repo=repo,
        folder=run_dir / "evidence",
        command=command,
        chosen="config",
        timeout=timeout,
        room_for=lambda work: box.room(work, hide=sandbox.hidden(run_dir), expose=list(expose)),
    )


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


def rust_toolchain() -> list[str]:
    """What the room must show for cargo: rustup's and cargo's homes (config sandboxRead)."""
    cargo = shutil.which("cargo")
    if cargo is None:
        pytest.skip("no cargo here")
    homes = [os.environ.get("CARGO_HOME", "~/.cargo"), os.environ.get("RUSTUP_HOME", "~/.rustup")]
    found = [os.path.realpath(os.path.expanduser(h)) for h in homes]
    return [p for p in [*found, os.path.dirname(os.path.realpath(cargo))] if os.path.isdir(p)]


LIB = """pub fn add(a: i32, b: i32) -> i32 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }
    #[test]
    fn zero() {
        assert_eq!(add(0, 0), 0);
    }
    #[test]
    #[ignore]
    fn slow() {}
}
"""
INTEGRATION = "use calc::add;\n\n#[test]\nfn integ() {\n    assert_eq!(add(4, 0), 4);\n}\n"
CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'


def test_a_plain_cargo_test_is_read_per_test_from_libtest_json(repo, autodev_home):
    base = commit(
        repo,
        {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, "tests/it.rs": INTEGRATION, ".gitignore": "target/\n"},
        "calc with a bug in add",
    )
    (repo / "src" / "lib.rs").write_text(LIB.replace("a - b", "a + b"))
    ev = evidence.evidence(setup(repo, "cargo test", rust_toolchain()), base, "done-1")
    assert ev.outcome == "ran", ev.reason
    assert ev.fail_to_pass == ["src/lib.rs::tests::adds"]
    assert ev.pass_to_pass == ["src/lib.rs::tests::zero", "tests/it.rs::integ"]
    assert ev.pass_to_fail == [] and ev.still_failing == []
    assert ev.summary() == "✔ 1 now pass, 0 broke"

    # a break, and a test binary that dies mid-run, read as broken tests, not as fewer tests
    (repo / "src" / "lib.rs").write_text(LIB.replace("a - b", "a * b + 1"))
    (repo / "tests" / "it.rs").write_text(
        INTEGRATION.replace("assert_eq!", "std::process::abort();\n    assert_eq!")
    )
    broke = evidence.evidence(setup(repo, "cargo test", rust_toolchain()), base, "done-2")
    assert broke.outcome == "ran", broke.reason
    assert broke.pass_to_fail == ["src/lib.rs::tests::zero", "tests/it.rs::integ"]
    assert broke.still_failing == ["src/lib.rs::tests::adds"] and broke.base_cached


def test_a_cargo_build_that_fails_and_a_custom_cargo_command_are_named_errors(repo, autodev_home):
    base = commit(repo, {"Cargo.toml": CARGO_TOML, "src/lib.rs": LIB, ".gitignore": "target/\n"}, "calc")
    (repo / "src" / "lib.rs").write_text(LIB.replace("a - b", "a +"))  # does not compile
    ev = evidence.evidence(setup(repo, "cargo test", rust_toolchain()), base, "done-1")
    assert ev.outcome == "error" and "at the head: `cargo test` exited 101" in ev.reason, ev.reason
    assert "its test build failed" in ev.reason and "error" in ev.reason.split("its output ends:")[1]
    custom = evidence.evidence(setup(repo, "cargo test -- --nocapture", rust_toolchain()), base, "done-2")
    assert custom.outcome == "error" and "unsupported test command: autodev reads cargo" in custom.reason
    assert "$AUTODEV_JUNIT" in custom.reason and custom.gaps()


def test_a_js_runners_junit_reporter_writes_to_autodev_junit(repo, autodev_home):
    if shutil.which("node") is None:
        pytest.skip("no node here")
    test_js = (
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const { add } = require('./calc.js');\n\n"
        "test('adds', () => { assert.strictEqual(add(2, 3), 5); });\n"
        "test('zero', () => { assert.strictEqual(add(0, 0), 0); });\n"
    )
    base = commit(
        repo, {"calc.js": "exports.add = (a, b) => a - b;\n", "calc.test.js": test_js}, "calc with a bug"
    )
    (repo / "calc.js").write_text("exports.add = (a, b) => a + b;\n")
    command = 'node --test --test-reporter=junit --test-reporter-destination="$AUTODEV_JUNIT"'
    ev = evidence.evidence(setup(repo, command), base, "done-1")
    assert ev.outcome == "ran", ev.reason
    assert ev.fail_to_pass == ["test::adds"] and ev.pass_to_pass == ["test::zero"]
