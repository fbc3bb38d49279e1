"""First use reads true: `status` before any run, and the way back into a kept demo."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from tests.conftest import write_team
from tests.e2e.helpers import SOLO, WIDE, done_accepted


def test_status_before_the_first_run_says_so_and_how_to_start(autodev, repo):
    write_team(repo, SOLO, done_accepted("solo"))
    r = autodev(repo, "status", env=WIDE, check=True)
    assert r.stdout.startswith(f'no run yet in {repo}\n  start one with: autodev start "your objective"')
    assert "stopped" not in r.stdout
    st = json.loads(autodev(repo, "status", "--json", check=True).stdout)
    assert st["no_run_yet"] is True and st["state"] == "not_started"
    assert st["start_with"] == 'autodev start "your objective"'

    # A queued message is not a run yet either.
    autodev(repo, "send", "hello", check=True)
    assert json.loads(autodev(repo, "status", "--json", check=True).stdout)["no_run_yet"] is True

    r = autodev(repo, "start", "--foreground", "--until-idle", "finish")
    assert r.returncode == 0, r.stdout + r.stderr
    st = json.loads(autodev(repo, "status", "--json", check=True).stdout)
    assert st["no_run_yet"] is False and st["state"] == "complete" and st["start_with"] is None
    assert "no run yet" not in autodev(repo, "status", env=WIDE, check=True).stdout


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


def test_init_points_to_doctor_then_start(autodev, repo):
    r = autodev(repo, "init", "--team", "pair", check=True)
    assert "check with `autodev doctor`" in r.stdout and 'autodev start "your objective"' in r.stdout
    assert "no run yet" in autodev(repo, "status", env=WIDE, check=True).stdout
