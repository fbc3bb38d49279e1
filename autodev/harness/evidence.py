"""The evidence of a `done` post, computed (SPEC §22): the project's tests run twice in the
sandbox, with no network and no keys, each in a scratch copy of the repository in the run folder
(the base commit; the head plus the working tree, secret files left out), read per test from a machine format
(`testresults`), and classified.

Scratch copies, not `git worktree add`: a worktree registers itself in the repository's `.git`
(a crash would leave it there), and its gitdir would put the real `.git` inside the room,
writable, for the tests. A copy is the tree's files checked out from a private index through
`hostgit` (no filter, hook or program of the repository runs on the host), in a folder the room
binds as its repository.

Each run is cached in the run folder by the tree it ran on and the command (the base commit's
run once per run, a restarted audit's runs not again); each `done`'s evidence is kept by the
post, so an audit asked again after a crash or a `stop` reads it back.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from autodev.guard.redact import scrubbed_env
from autodev.guard.sandbox import Room
from autodev.guard.secrets import SECRET_FILES
from autodev.harness import testresults
from autodev.harness.commands import run_bash_capture
from autodev.harness.testresults import Chosen
from autodev.host import hostgit
from autodev.records.evidence import Evidence, Status, TestRun
from autodev.timeline.git import stage_worktree

_T = TypeVar("_T", Evidence, TestRun)
OUTPUT_CHARS = 20_000  # of a run's output kept in memory (a reason quotes its end)
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class EvidenceStopped(Exception):
    """The user stopped the run while the tests ran: nothing is cached; the audit asks again."""


@dataclass(frozen=True)
class TestSetup:
    """What the evidence needs from the run: where, which command, how long, which room."""

    __test__ = False

    repo: Path
    folder: Path  # <run folder>/evidence
    command: str
    chosen: Chosen
    timeout: float
    room_for: Callable[[Path], Room | None]  # the sandbox room whose repository is a scratch copy
    secret_env: tuple[str, ...] = ()
    secret_files: tuple[str, ...] = SECRET_FILES  # config secretFiles: never staged into the head copy
    stopping: Callable[[], bool] = lambda: False


def command_for(repo: Path, configured: str) -> tuple[str, Chosen] | None:
    """(command, "config" | "detected"), or None when the repository shows no tests."""
    if configured.strip():
        return configured.strip(), "config"
    found = testresults.detect(repo)
    return (found[0], "detected") if found else None


def evidence(setup: TestSetup, base: str | None, post_key: str) -> Evidence:
    """The evidence of the change from `base` to the head plus working tree; read back when
    this post's evidence was already computed."""
    setup.folder.mkdir(parents=True, exist_ok=True)
    kept = setup.folder / f"done-{_key(post_key, setup.command)}.json"
    if (old := _read(kept, Evidence)) is not None:
        return old
    _sweep(setup.folder)
    with tempfile.TemporaryDirectory(dir=setup.folder, prefix="index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        stage_worktree(setup.repo, index, setup.secret_files)
        head_tree = hostgit.out(setup.repo, "write-tree", env=index).strip()
        changed = hostgit.out(
            setup.repo, "diff", "--cached", "--no-renames", "--name-only", "-z", base or EMPTY_TREE, env=index
        ).split("\0")
    base_run, cached = (TestRun(outcome="no_tests", reason="no base commit"), False)
    if base:
        base_run, cached = _run(setup, base)
    head_run, _ = _run(setup, head_tree)
    ev = testresults.classify(
        base_run,
        head_run,
        command=setup.command,
        chosen=setup.chosen,
        changed=[c for c in changed if c and not c.startswith(".autodev/")],
        base_commit=base,
        base_cached=cached,
    )
    if base and ev.outcome == "ran" and ev.fail_to_pass and ev.code_changed and ev.tests_changed:
        ev = _without_code(setup, ev, base, head_tree)
    _write(kept, ev.model_dump_json())
    return ev


def _without_code(setup: TestSetup, ev: Evidence, base: str, head_tree: str) -> Evidence:
    """The run's test files on the base's code (a third run): a newly passing test that passes
    there too was written to pass, whatever the code does, so it does not show the change. No
    answer (a timeout, an error): the evidence stands as the two runs gave it."""
    run, _ = _run(setup, _tests_over(setup.repo, base, head_tree, ev.tests_changed))
    if run.outcome != "ran":
        return ev
    without = [t for t in ev.fail_to_pass if run.results.get(t) == "passed"]
    return ev.model_copy(update={"pass_without_code": without, "without_code_sec": round(run.seconds, 3)})


def _tests_over(repo: Path, base: str, head_tree: str, tests: list[str]) -> str:
    """The tree of `base` with the files `tests` as in `head_tree` (a deleted one deleted)."""
    with tempfile.TemporaryDirectory(prefix="autodev-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), "GIT_LITERAL_PATHSPECS": "1"}
        hostgit.run(repo, "read-tree", base, env=index)
        present: dict[str, str] = {}
        for i in range(0, len(tests), 500):
            listed = hostgit.out(repo, "ls-tree", "-r", "-z", head_tree, "--", *tests[i : i + 500], env=index)
            for entry in filter(None, listed.split("\0")):
                meta, path = entry.split("\t", 1)
                mode, _, sha = meta.split()
                present[path] = f"{mode},{sha},{path}"
        gone = [t for t in tests if t not in present]
        infos = list(present.values())
        for i in range(0, len(infos), 500):
            hostgit.run(
                repo,
                "update-index",
                "--add",
                *[a for c in infos[i : i + 500] for a in ("--cacheinfo", c)],
                env=index,
            )
        for i in range(0, len(gone), 500):
            hostgit.run(repo, "update-index", "--force-remove", "--", *gone[i : i + 500], env=index)
        return hostgit.out(repo, "write-tree", env=index).strip()


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def _read(path: Path, model: type[_T]) -> _T | None:
    try:
        return model.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None  # absent or torn: computed again


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _sweep(folder: Path) -> None:
    """Scratch copies a killed daemon left behind."""
    for old in folder.glob("copy-*"):
        shutil.rmtree(old, ignore_errors=True)


def _run(setup: TestSetup, treeish: str) -> tuple[TestRun, bool]:
    """The test command on `treeish` (a commit or a tree), cached by it and the command."""
    cache = setup.folder / f"run-{_key(treeish, setup.command)}.json"
    if (old := _read(cache, TestRun)) is not None:
        return old, True
    copy = Path(tempfile.mkdtemp(dir=setup.folder, prefix="copy-"))
    try:
        work = copy / "tree"
        work.mkdir()
        _checkout(setup.repo, treeish, work)
        result = _execute(setup, work)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    if result.outcome in ("ran", "no_tests"):
        _write(cache, result.model_dump_json())  # a timeout or an error is tried again next time
    return result, False


def _checkout(repo: Path, treeish: str, work: Path) -> None:
    """The files of `treeish` written under `work` through a private index (no .git there)."""
    with tempfile.TemporaryDirectory(prefix="autodev-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        hostgit.run(repo, "read-tree", treeish, env=index)
        hostgit.run(repo, "checkout-index", "-a", "-f", f"--prefix={work}/", env=index)


class _TimedOut(Exception):
    pass


def _execute(setup: TestSetup, work: Path) -> TestRun:
    unsupported = testresults.unsupported(setup.command)
    if unsupported:
        return TestRun(outcome="error", reason=unsupported)
    junit = work / testresults.JUNIT_FILE
    fmt = testresults.results_format(setup.command)
    env = scrubbed_env(setup.secret_env)
    env["AUTODEV_JUNIT"] = str(junit)
    # where the common JS JUnit reporters write, when the project already uses one (`npm test`)
    env |= {"JEST_JUNIT_OUTPUT_FILE": str(junit), "MOCHA_FILE": str(junit)}
    env["PYTEST_ADDOPTS"] = testresults.pytest_addopts(str(junit), env.get("PYTEST_ADDOPTS", ""))
    if fmt == "cargo-json":  # the binaries where the copy is; no network, so no index update tried
        env |= {"CARGO_TARGET_DIR": str(work / "target"), "CARGO_NET_OFFLINE": "true"}
    start = time.monotonic()
    exit_code, output = 0, ""
    try:
        if fmt == "cargo-json":
            results = _cargo(setup, work, env, start)
        else:
            run = _in_room(setup, work, env, _runnable(setup.command, work), setup.timeout)
            exit_code, output = run.exit_code, run.output
            if fmt == "go-json":
                results = testresults.parse_go_json(run.output)
            else:
                results = testresults.parse_junit(_results_file(junit), lambda p: _exists(work, p))
    except _TimedOut:
        return TestRun(
            outcome="timeout",
            seconds=time.monotonic() - start,
            reason=f"`{setup.command}` ran longer than testTimeoutSec = {setup.timeout:g}; it was killed",
        )
    except (OSError, ValueError, SyntaxError) as e:
        tail = (e.args[1] if len(e.args) > 1 else output).strip()[-300:]
        code = e.args[2] if len(e.args) > 2 else exit_code
        return TestRun(
            outcome="error",
            seconds=time.monotonic() - start,
            reason=f"`{setup.command}` exited {code} and left no readable results ({e.args[0] if e.args else e})"
            + (f"; its output ends: {tail}" if tail else ""),
        )
    seconds = time.monotonic() - start
    if not results:
        return TestRun(outcome="no_tests", seconds=seconds, reason=f"`{setup.command}` reported no tests")
    return TestRun(outcome="ran", results=results, seconds=seconds)


def _runnable(command: str, work: Path) -> str:
    """What runs for `command` in the scratch copy `work`: a plain `python3 -m unittest` as
    harness/unittest_junit.py (copied there: the sandbox's python3 runs it), which writes the
    JUnit XML unittest itself does not; any other command as it is."""
    if not testresults.is_unittest(command):
        return command
    shutil.copyfile(Path(__file__).with_name("unittest_junit.py"), work / testresults.UNITTEST_RUNNER)
    return testresults.unittest_command(command)


def _in_room(setup: TestSetup, work: Path, env: dict[str, str], command: str, timeout: float):
    """`command` run by bash in the room on `work`, its output kept (bounded)."""
    argv = ["bash", "-c", command]
    room = setup.room_for(work)
    if room is not None:
        env, argv = room.env(env), room.wrap(argv)
    run = run_bash_capture(
        argv, cwd=str(work), env=env, timeout=timeout, max_output=OUTPUT_CHARS, stopping=setup.stopping
    )
    if run.timed_out and setup.stopping():
        raise EvidenceStopped()
    if run.timed_out:
        raise _TimedOut()
    return run


def _cargo(setup: TestSetup, work: Path, env: dict[str, str], start: float) -> dict[str, Status]:
    """A plain `cargo test`, read per test: cargo builds the test binaries and lists them in its
    JSON messages (`--no-run --message-format=json`, stable), then each binary runs in its
    package's folder with libtest's JSON, whose `-Z unstable-options` libtest accepts on a stable
    toolchain only with RUSTC_BOOTSTRAP set, given to the binaries alone: no crate is built
    differently (docs/evidence.md). Doc tests are not run."""
    build = f"{testresults.CARGO_FILE}.jsonl"
    run = _in_room(
        setup, work, env, f"{setup.command} --no-run --message-format=json > {build}", setup.timeout
    )
    if run.exit_code != 0:
        raise ValueError("its test build failed", run.output, run.exit_code)
    binaries = testresults.cargo_binaries(_results_file(work / build), str(work))
    if not binaries:
        return {}
    lines = [
        f"(cd {shlex.quote(pkg)} && RUSTC_BOOTSTRAP=1 {shlex.quote(str(work / exe))} -Z unstable-options"
        f" --format json) > {testresults.CARGO_FILE}-{i}.jsonl"
        for i, (_, exe, pkg) in enumerate(binaries)
    ]
    left = setup.timeout - (time.monotonic() - start)
    if left <= 0:
        raise _TimedOut()
    run = _in_room(setup, work, env, "\n".join(lines), left)
    results: dict[str, Status] = {}
    for i, (src, _, _) in enumerate(binaries):
        data = _results_file(work / f"{testresults.CARGO_FILE}-{i}.jsonl")
        try:
            results.update(testresults.parse_libtest_json(data.decode(errors="replace"), src))
        except ValueError as e:
            raise ValueError(str(e), run.output, run.exit_code) from None
    return results


def _results_file(path: Path) -> bytes:
    """The results file the tests wrote: a regular file, never followed through a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise OSError("no JUnit XML was written") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("the results path is not a regular file")
        return f.read(testresults.MAX_RESULTS_BYTES + 1)


def _exists(work: Path, rel: str) -> bool:
    if rel.startswith("/") or ".." in Path(rel).parts:
        return False
    return os.path.lexists(work / rel)


__all__ = ["EvidenceStopped", "TestSetup", "command_for", "evidence"]
