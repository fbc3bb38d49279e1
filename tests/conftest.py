"""Shared fixtures: an isolated AUTODEV_HOME, no network beyond loopback, git repositories
with an identity, and runners for the real `autodev` command: as a subprocess (`autodev`) and
in this process (`inproc`)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# A shell with PYTHONDONTWRITEBYTECODE set would have every test process recompile autodev and
# pytest re-rewrite every test module (about 5 CPU-s of each worker's collection), and every
# `autodev` subprocess and daemon compile the modules it imports again: the tests keep their
# compiled modules in __pycache__ (ignored by git) as an ordinary shell does.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# A suite started in the background by a non-interactive shell (`make test &`, nohup, a CI
# runner's `cmd &`) inherits SIGINT ignored, and every program it starts keeps it ignored: the
# tests that press Ctrl-C on an eval would then wait for nothing. Programs are started as from a
# terminal: with Python's usual SIGINT handler here, each child starts with the default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "autodev tests",
    "GIT_AUTHOR_EMAIL": "tests@autodev.invalid",
    "GIT_COMMITTER_NAME": "autodev tests",
    "GIT_COMMITTER_EMAIL": "tests@autodev.invalid",
}


# Property tests are derandomized in `make test`: the same examples on every run, so a CI result
# depends on the code alone. `make fuzz` (AUTODEV_FUZZ=1) explores at random, with more examples.
FUZZ = os.environ.get("AUTODEV_FUZZ", "") not in ("", "0")
FUZZ_SCALE = 20
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("fuzz", derandomize=False, deadline=None, print_blob=True)
settings.load_profile("fuzz" if FUZZ else "ci")


def examples(n: int) -> int:
    """How many examples a property test tries: `n` in `make test`, FUZZ_SCALE times more in `make fuzz`."""
    return n * FUZZ_SCALE if FUZZ else n


def light(values, keep=None) -> list:
    """Parameters for a parametrized end-to-end test: `make test` runs those in `keep` (the first
    one if not given), `make test-all` runs them all."""
    keep = set(keep) if keep is not None else set(list(values)[:1])
    return [v if v in keep else pytest.param(v, marks=pytest.mark.full) for v in values]


def pytest_collection_modifyitems(config, items):
    """A test that runs the real `autodev` command (the `autodev` fixture; `leak_eval`, an eval of
    tests/security), uses the run a daemon recorded (`recorded_run`, tests/timeline) or lives in
    tests/e2e/ is `e2e`, like those marked
    by hand for other programs they start: `-m "not e2e"` keeps the fast ones (`make test-fast`:
    no subprocess daemons)."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if {"autodev", "recorded_run", "scenario", "scenario_fork", "leak_eval"} & set(
            names
        ) or "e2e" in item.path.parts:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(autouse=True)
def autodev_home(tmp_path_factory, monkeypatch) -> Path:
    home = tmp_path_factory.mktemp("autodev-home")
    monkeypatch.setenv("AUTODEV_HOME", str(home))
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    # Subprocesses load tests/guard/sitecustomize.py, which forbids non-loopback connections.
    guard = str(Path(__file__).parent / "guard")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [guard, os.environ.get("PYTHONPATH")])))
    return home


_real_connect = socket.socket.connect


def _guarded_connect(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if (
        isinstance(host, str)
        and not (host.startswith("127.") or host in ("localhost", "::1"))
        and self.family in (socket.AF_INET, socket.AF_INET6)
    ):
        raise RuntimeError(f"tests may not reach the network: connection to {address!r} refused")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any connection outside loopback fails the test (no real provider is ever called)."""
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


class RepoTemplates:
    """Git repositories built once per worker and copied for each test: a copy starts no git
    process, where building one starts five or more (the copy is a real repository all the same)."""

    def __init__(self, root: Path):
        self.root = root
        self.built: dict[str, Path] = {}

    def __call__(self, dest: Path, build: Callable[[Path], None]) -> Path:
        key = f"{build.__module__}.{build.__qualname__}"
        src = self.built.get(key)
        if src is None:
            src = self.root / str(len(self.built))
            src.mkdir()
            build(src)
            self.built[key] = src
        shutil.copytree(src, dest, symlinks=True)
        return dest


@pytest.fixture(scope="session")
def repo_templates(tmp_path_factory) -> RepoTemplates:
    return RepoTemplates(tmp_path_factory.mktemp("repo-templates"))


def _one_commit(r: Path) -> None:
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.name", "autodev tests")
    git(r, "config", "user.email", "tests@autodev.invalid")
    (r / "README.md").write_text("# test repo\n")
    (r / ".git" / "info" / "exclude").write_text(".autodev/\n__pycache__/\n")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "start")


@pytest.fixture
def repo(tmp_path, repo_templates) -> Path:
    """A git repository with one commit and an identity of its own."""
    return repo_templates(tmp_path / "repo", _one_commit)


def write_team(repo: Path, team: str, script: str = "", config: str = "") -> None:
    d = repo / ".autodev"
    d.mkdir(exist_ok=True)
    (d / "team.toml").write_text(textwrap.dedent(team))
    if script:
        (d / "script.toml").write_text(textwrap.dedent(script))
    (d / "config.toml").write_text(textwrap.dedent(config))


class Runner:
    """Runs the real `autodev` CLI in a subprocess, in its own process group, and kills the
    whole group afterwards even when the test failed."""

    def __init__(self):
        self.groups: list[int] = []

    def __call__(
        self, repo: Path, *args: str, timeout: float = 120, env: dict | None = None, check: bool = False
    ) -> subprocess.CompletedProcess:
        e = {**os.environ, **(env or {})}
        p = subprocess.Popen(
            [sys.executable, "-m", "autodev", *args],
            cwd=repo,
            env=e,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        self.groups.append(p.pid)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            raise AssertionError(f"autodev {' '.join(args)} timed out\n{out}\n{err}") from None
        cp = subprocess.CompletedProcess(p.args, p.returncode, out, err)
        if check and p.returncode != 0:
            raise AssertionError(f"autodev {' '.join(args)} exited {p.returncode}\n{out}\n{err}")
        return cp

    def popen(self, repo: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
        p = subprocess.Popen(
            [sys.executable, "-m", "autodev", *args],
            cwd=repo,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
        )
        self.groups.append(p.pid)
        return p

    def adopt(self, pid: int) -> None:
        """Also kill this process group (e.g. a detached daemon) on teardown."""
        assert pid > 0, f"no process group to adopt: {pid}"
        self.groups.append(pid)

    def cleanup(self) -> None:
        for g in self.groups:
            try:
                os.killpg(g, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.fixture
def inproc(monkeypatch):
    """`autodev ...` in this process (tests/inprocess.py): argument and error handling, refusals,
    and commands that answer without a daemon, without a Python start-up per call."""
    from tests.inprocess import InProcess

    return InProcess(monkeypatch)


@pytest.fixture
def receiver():
    """A real OTLP/HTTP receiver on 127.0.0.1 (tests/e2e/otlp_receiver.py), closed after the test."""
    from tests.e2e.otlp_receiver import Receiver

    r = Receiver()
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def autodev():
    r = Runner()
    try:
        yield r
    finally:
        r.cleanup()


def run_dir(repo: Path) -> Path:
    from autodev.store.paths import RunPaths

    return RunPaths(repo).run_dir


def thread_of(repo: Path) -> list[dict]:
    import json

    p = run_dir(repo) / "thread.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def shape(posts: list[dict]) -> list[tuple]:
    """(from, kind, handoff, credited) per post: what end-to-end tests compare."""
    out = []
    for p in posts:
        credited = None
        if p["kind"] == "work_done" and p["from"] != "system":
            credited = bool(p.get("credit"))
        out.append((p["from"], p["kind"], p.get("handoff"), credited))
    return out
