"""First use reads true: `status` before any run, and the way back into a kept demo."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autodev.cli import app
from autodev.errors import NotARepositoryError
from autodev.store.paths import find_repo
from tests.conftest import write_team
from tests.e2e.helpers import SOLO, WIDE, done_accepted


@pytest.mark.full
def test_status_before_the_first_run_says_so_and_how_to_start(autodev, inproc, repo):
    write_team(repo, SOLO, done_accepted("solo"))
    r = inproc(repo, "status", env=WIDE, check=True)
    assert r.stdout.startswith(f'no run yet in {repo}\n  start one with: autodev start "your objective"')
    assert "stopped" not in r.stdout
    st = json.loads(inproc(repo, "status", "--json", check=True).stdout)
    assert st["no_run_yet"] is True and st["state"] == "not_started"
    assert st["start_with"] == 'autodev start "your objective"'

    # A queued message is not a run yet either.
    inproc(repo, "send", "hello", check=True)
    assert json.loads(inproc(repo, "status", "--json", check=True).stdout)["no_run_yet"] is True

    r = autodev(repo, "start", "--foreground", "--until-idle", "finish")
    assert r.returncode == 0, r.stdout + r.stderr
    st = json.loads(inproc(repo, "status", "--json", check=True).stdout)
    assert st["no_run_yet"] is False and st["state"] == "complete" and st["start_with"] is None
    assert "no run yet" not in inproc(repo, "status", env=WIDE, check=True).stdout


@pytest.mark.e2e  # the demo's daemon runs as a process of its own
def test_demo_keep_prints_the_lines_that_reach_the_kept_run(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "COLUMNS": "400"}
    r = subprocess.run(
        [sys.executable, "-m", "autodev", "demo", "--keep"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cd = re.search(r"^  cd (\S+)$", r.stdout, re.M)
    look = re.search(r"^  AUTODEV_HOME=(\S+) autodev status   \(or: autodev panel\)$", r.stdout, re.M)
    assert cd and look, r.stdout[-1000:]
    # Follow the printed lines as a user would: status there shows the demo's finished run.
    st = subprocess.run(
        [sys.executable, "-m", "autodev", "status", "--json"],
        cwd=cd.group(1),
        env={**env, "AUTODEV_HOME": look.group(1)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert st.returncode == 0, st.stderr
    data = json.loads(st.stdout)
    assert data["state"] == "complete" and data["no_run_yet"] is False and data["totals"]["credited"] >= 3
    # `autodev runs` in the user's own AUTODEV_HOME lists the kept demo too.
    rows = subprocess.run(
        [sys.executable, "-m", "autodev", "runs", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert [r["repo"] for r in json.loads(rows.stdout)] == [cd.group(1)], rows.stdout + rows.stderr


def test_init_points_to_doctor_then_start(inproc, repo):
    r = inproc(repo, "init", "--team", "pair", check=True)
    assert "check with `autodev doctor`" in r.stdout and 'autodev start "your objective"' in r.stdout
    assert "no run yet" in inproc(repo, "status", env=WIDE, check=True).stdout


def test_a_bare_repository_is_named_as_one_with_the_fix(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "origin.git")], check=True)
    with pytest.raises(NotARepositoryError) as e:
        find_repo(tmp_path / "origin.git" / "refs")
    assert "is a bare git repository" in e.value.message and "git init" not in e.value.fix
    assert f"git clone {tmp_path / 'origin.git'} work" in e.value.fix


def test_thread_without_a_run_or_with_a_count_below_one_is_an_error(inproc, repo):
    write_team(repo, SOLO, done_accepted("solo"))
    r = inproc(repo, "thread")
    assert r.returncode == 2 and "no run yet" in r.stderr and "autodev start" in r.stderr, r.stderr
    r = inproc(repo, "thread", "-n", "-1")
    assert r.returncode == 2 and "--last -1" in r.stderr, r.stderr


def test_status_before_any_run_keeps_no_old_team_and_doctor_files_config_errors_under_config(inproc, repo):
    write_team(repo, SOLO, done_accepted("solo"), "gateMode = 7\n")
    r = inproc(repo, "doctor", env=WIDE)
    lines = {ln.split()[1]: ln.split(None, 1)[0] for ln in r.stdout.splitlines()[:-1] if len(ln.split()) > 1}
    assert lines["config"] == "FAIL" and lines["team"] == "ok", r.stdout
    assert "1 participant (solo)" in r.stdout and "gateMode" in r.stdout
    (repo / ".autodev" / "team.toml").write_text("[[participants]]\nname = 3\n")
    out = inproc(repo, "status", env=WIDE).stdout
    assert "team file problem:" in out and "old team" not in out, out


def test_help_shows_no_type_beside_flags_and_names_the_scripted_server():
    runner = CliRunner()
    out = runner.invoke(app, ["thread", "--help"], env={"COLUMNS": "100"}).output
    assert "--json" in out and "<bool>" not in out and "<int>" in out, out
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    assert "autodev-scripted SCRIPT.toml" in " ".join(out.split()), out


def test_bench_help_prints_usage_and_runs_nothing():
    bench = Path(__file__).parents[1] / "bench" / "run.py"
    r = subprocess.run([sys.executable, str(bench), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("usage: bench/run.py") and "running" not in r.stderr
    r = subprocess.run([sys.executable, str(bench), "--nope"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown option '--nope'" in r.stderr
