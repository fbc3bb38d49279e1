"""Commands that never call a model must not pay for importing litellm (about 3 s), nor, with
telemetry off, for the OpenTelemetry SDK and its exporter."""

import os
import subprocess
import sys

import pytest

from tests.conftest import write_team

# These tests start programs as subprocesses (see the e2e marker in pyproject.toml).
pytestmark = pytest.mark.e2e

TEAM = """
[[participants]]
name = "builder"
model = "openai/gpt-5"
write = true
"""


@pytest.mark.parametrize(
    "args, code",
    [
        (["send", "hello"], 0),
        (["status"], 0),
        (["status", "--json"], 0),
        (["thread"], 2),  # no run yet: refused with the fix (issue 21), cheaply
        (["pause"], 0),
        (["resume"], 0),
        (["stop"], 0),
        (["approve"], 2),  # no gate is open: refused, but cheaply
        (["config"], 0),
        (["answer", "1", "yes"], 2),  # no such notice
        (["notice", "--release", "1"], 2),
        (["runs"], 0),
        (["runs", "--json"], 0),
        (["runs", "stats"], 0),
        (["trace", "export"], 2),  # no run to export, and telemetry is off: refused cheaply
        (["pick"], 2),  # no best-of group here: refused with the fix
        (["send", "--all", "hi"], 2),  # no group to send to
        (["runs", "prune", "--group", "nosuch"], 0),
    ],
)
def test_command_does_not_import_litellm(repo, args, code):
    write_team(repo, TEAM)
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autodev", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == code, r.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "litellm" not in imported
    assert not any(m.startswith("litellm.") for m in imported)
    assert not any(m.startswith(("opentelemetry.sdk", "opentelemetry.exporter")) for m in imported)


def test_panel_does_not_import_litellm():
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import autodev.panel.app"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "textual" in imported and "litellm" not in imported


def test_doctor_does_not_import_litellm_offline(repo):
    write_team(repo, TEAM)
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autodev", "doctor"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "OPENAI_API_KEY": "sk-test"},
    )
    assert r.returncode == 0, r.stdout + r.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "autodev.setup.doctor" in imported
    assert "litellm" not in imported


# -- the steering commands (issue 33): no typer, no pydantic, nothing heavy on their path

# Modules the steering commands must not load: typer (and click inside it) is only for help and
# the other commands; pydantic model building (the records, the config); rich; litellm; the harness.
HEAVY = (
    "typer",
    "click",
    "pydantic",
    "pydantic_core",
    "rich",
    "litellm",
    "autodev.harness",
    "autodev.config",
)
HEAVY = (*HEAVY, "autodev.records")  # its __init__ builds every record model class

OPEN = {
    "state": "paused",
    "gate": {"id": "1", "declarer": "builder", "text": "ship it?"},
    "notices": {"1": {"id": "1", "from": "builder", "text": "a key, please", "hold": "network"}},
    "controls": [{"n": 1, "action": "pause", "at": 1}],
    "control_seq": 1,
}


def _steering_repo(repo) -> None:
    """A run with a gate and a notice open and a pause queued: every steering command has
    something to act on, and `send` cancels the pause (a state.json write)."""
    import json

    from autodev.store.paths import RunPaths

    write_team(repo, TEAM)
    paths = RunPaths(repo)
    paths.run_dir.mkdir(parents=True, exist_ok=True)
    paths.state.write_text(json.dumps(OPEN))


@pytest.mark.parametrize(
    "args",
    [
        ["send", "hello"],
        ["approve"],
        ["deny", "1", "--reason", "not yet"],
        ["answer", "1", "here"],
        ["notice", "--release", "1"],
        ["pause"],
        ["resume"],
        ["stop"],
        ["--version"],
    ],
)
def test_steering_command_imports_nothing_heavy(repo, args):
    _steering_repo(repo)
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autodev", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    assert "autodev" in imported  # the list is real: importtime wrote it
    heavy = sorted(m for m in imported if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY)))
    assert not heavy, f"`autodev {' '.join(args)}` imports {heavy[:8]}"
    # dataclasses imports inspect (ast, dis, tokenize): about 9 ms of a 60 ms budget
    assert not imported & {"dataclasses", "inspect"}, f"`autodev {' '.join(args)}` imports dataclasses"
    # hashlib loads OpenSSL (_hashlib), 3 ms: the run folder's name uses CPython's own sha256
    assert "_hashlib" not in imported, f"`autodev {' '.join(args)}` loads OpenSSL through hashlib"


@pytest.mark.parametrize("args", [["status"], ["status", "--json"]])
def test_status_imports_no_model_once_cached(repo, args):
    """`status` reads state.json as plain JSON and the team's and config's values from the
    status cache the first (model) run filled: the second run builds no pydantic model and
    imports neither typer nor the config (issue 33: 120 ms on a run of 10⁵ posts)."""
    _steering_repo(repo)

    def imports() -> set[str]:
        r = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "autodev", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr[-2000:]
        return {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}

    first = imports()
    assert "autodev.user.status" in first  # no cache yet: the model path, which fills it
    second = imports()
    assert "autodev.user.quickstatus" in second
    heavy = tuple(h for h in HEAVY if h != "rich")  # status prints its table with rich
    assert not sorted(m for m in second if m in heavy or m.startswith(tuple(h + "." for h in heavy)))
    assert not {m for m in second if m.startswith(("rich.markdown", "rich.traceback", "rich.pretty"))}


@pytest.mark.parametrize("args", [["--help"], ["send", "--bogus"]])
def test_help_and_usage_errors_build_no_record_nor_markdown(repo, args):
    """A usage error prints through typer's rich help: without rich's Markdown and Traceback
    (cli/root.py's stand-ins) or the records (issue 33); `--help` prints typer's captured help
    without typer or pydantic at all (cli/quickhelp.py; typer's own argument parsing loads
    pydantic for a usage error: typer._adapters)."""
    write_team(repo, TEAM)
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "autodev", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode in (0, 2), r.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}
    unwanted = ("rich.markdown", "markdown_it", "rich.traceback", "autodev.records", "litellm")
    if args == ["--help"]:
        # quickhelp.py prints typer's captured help: no typer, no pydantic (a stale capture: see
        # tests/test_quickhelp.py)
        assert "autodev.cli.quickhelp" in imported
        unwanted += ("pydantic", "typer", "autodev.cli.full", "autodev.cli.root")
    else:
        assert "typer.rich_utils" in imported
    assert not sorted(m for m in imported if m.startswith(unwanted))
