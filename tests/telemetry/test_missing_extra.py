"""Telemetry on (OTEL_EXPORTER_OTLP_ENDPOINT set) in an install without the `telemetry` extra:
`trace export` refuses in one line with the fix for pipx, uv and pip (exit 2, no traceback),
`doctor` warns with it, `start` prints it and runs untraced. The missing SDK is simulated at the
outermost boundary: an import blocker on sys.meta_path in the real CLI's own process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import write_team
from tests.e2e.helpers import SOLO, call, done_accepted, step

pytestmark = pytest.mark.e2e

BLOCKED = """
import sys

class NoOpenTelemetry:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoOpenTelemetry())
from autodev.cli import main
sys.argv = ["autodev", *sys.argv[1:]]
main()
"""


def without_otel(repo, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED, *args], cwd=repo, capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def says_the_extra(text: str) -> None:
    assert "OpenTelemetry, the `telemetry` extra, is not installed (opentelemetry is missing)" in text, text
    assert "pipx inject autodev-team opentelemetry-sdk==" in text
    assert "uv tool install --with opentelemetry-sdk==" in text
    assert "pip install 'autodev-team[telemetry]'" in text
    assert "Traceback" not in text and "ModuleNotFoundError" not in text


def test_without_the_extra_export_refuses_doctor_warns_start_runs_untraced(repo):
    write_team(
        repo, SOLO, step("solo", call("post", kind="work_done", text="nothing to do")) + done_accepted("solo")
    )
    r = without_otel(repo, "start", "--foreground", "--until-idle", "check it")
    assert r.returncode == 0, r.stdout + r.stderr
    warning = [line for line in r.stderr.splitlines() if line.startswith("autodev: warning: telemetry is on")]
    assert len(warning) == 1 and warning[0].endswith("; the run goes on without telemetry"), r.stderr
    says_the_extra(r.stderr)

    r = without_otel(repo, "trace", "export")
    assert r.returncode == 2, r.stdout + r.stderr
    said, fix = r.stderr.splitlines()
    assert said.startswith("autodev: telemetry is on (traces to http://127.0.0.1:9/v1/traces)")
    assert fix.startswith("  fix: ")
    says_the_extra(r.stderr)

    r = without_otel(repo, "doctor")
    line = next(x for x in r.stdout.splitlines() if "telemetry" in x)
    assert "warn" in line.lower(), r.stdout
    says_the_extra(r.stdout)


def test_trace_export_help_names_the_config_table(tmp_path, inproc):
    out = inproc(tmp_path, "trace", "export", "--help", env={"COLUMNS": "200"}).stdout
    assert "OTEL_EXPORTER_OTLP_ENDPOINT (or of the telemetry table of .autodev/config.toml)" in out, out
    assert "(or )" not in out
