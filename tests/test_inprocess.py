"""The `inproc` fixture (tests/inprocess.py) answers as the console script does, sees each call's
environment as a fresh process would, and leaves nothing behind for the next call or test."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from autodev.host import hostgit
from tests.conftest import run_dir, write_team
from tests.e2e.helpers import SOLO, WIDE, done_accepted
from tests.inprocess import StartedInProcess


def _doctor_lines(r) -> dict[str, tuple[str, str]]:
    lines = {}
    for line in r.stdout.splitlines()[:-1]:
        status, rest = line.split(None, 1)
        lines[rest[:18].strip()] = (status, rest[18:].strip())
    return lines


def test_in_process_and_the_console_script_answer_alike(repo, autodev, inproc):
    write_team(repo, SOLO, done_accepted("solo"))
    for args in (("status",), ("thread", "-n", "-1")):
        a, b = autodev(repo, *args, env=WIDE), inproc(repo, *args, env=WIDE)
        assert (b.returncode, b.stdout, b.stderr) == (a.returncode, a.stdout, a.stderr), args


def test_each_call_sees_its_own_path_and_leaves_no_cache_or_environment_behind(repo, inproc, tmp_path):
    write_team(repo, SOLO, done_accepted("solo"))
    before = (dict(os.environ), os.getcwd(), list(sys.path), sys.argv, sys.stdin, sys.stdout, sys.stderr)
    cached = list(hostgit._git_binary)
    pins = dict(hostgit._run_pins)  # what tests before this one in the same worker left
    empty = tmp_path / "empty"
    empty.mkdir()
    # git_binary() keeps the first git it finds for the life of a process: each call is a new one.
    lines = _doctor_lines(inproc(repo, "doctor", env={"PATH": str(empty)}))
    assert lines["git"][0] == "FAIL" and "git is not on PATH" in lines["git"][1]
    own = tmp_path / "bin"
    own.mkdir()
    (own / "git").symlink_to(shutil.which("git"))
    assert _doctor_lines(inproc(repo, "doctor", env={"PATH": str(own), "AUTODEV_X": "1"}))["git"][0] == "ok"
    shutil.rmtree(own)  # a git cached from that call would now be a missing file
    r = inproc(repo, "doctor", env=WIDE)
    assert _doctor_lines(r)["git"][0] == "ok", r.stdout + r.stderr
    assert hostgit._git_binary == cached and hostgit._run_pins == pins
    after = (dict(os.environ), os.getcwd(), list(sys.path), sys.argv, sys.stdin, sys.stdout, sys.stderr)
    assert after == before


def test_start_past_its_checks_fails_the_test_before_any_daemon(repo, inproc):
    write_team(repo, SOLO, done_accepted("solo"))
    with pytest.raises(StartedInProcess, match="use the `autodev` fixture"):
        inproc(repo, "start", "--foreground", "--until-idle", "an objective")
    assert not (run_dir(repo) / "daemon.lock").exists() and not (run_dir(repo) / "thread.jsonl").exists()
    with pytest.raises(AssertionError, match="run `panel` as a process"):
        inproc(repo, "panel")


def test_stdin_is_bytes_and_not_a_terminal(repo, inproc):
    write_team(repo, SOLO, done_accepted("solo"))
    r = inproc(repo, "send", "-", input=b"  \n")
    assert r.returncode == 2 and "empty" in r.stderr, r.stderr
    r = inproc(repo, "send", "-", input="caf\u00e9 \xff".encode("latin-1"))
    assert r.returncode == 0, r.stderr
    (queued,) = (run_dir(repo) / "inbox").glob("*.json")
    assert json.loads(queued.read_text())["text"] == "caf\\xe9 \\xff"  # not UTF-8: escaped, as `send` does
