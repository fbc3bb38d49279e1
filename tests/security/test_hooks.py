"""Hooks run in the sandbox (SPEC §21: "hooks' repository commands"): a hook is the user's
config, but what it starts may load the repository's code, e.g. `python3 -c 'import json'` with
the repository as working directory imports a `json.py` a participant left there. Through the
real daemon and the scripted model, with real bubblewrap."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from autodev.guard import sandbox
from tests.conftest import git, write_team
from tests.e2e.helpers import SOLO, call, done_accepted, events, run_until_idle, step

BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")

SCRIPT = step("solo", call("read_file", path="a.txt")) + done_accepted("solo")


def _plant(repo: Path, marker: Path) -> None:
    # What a participant could leave: a module named like the standard library's, which writes
    # what it finds on the host (the home it sees) to a file outside the repository.
    (repo / "json.py").write_text(
        f"import os\nopen({str(marker)!r}, 'w').write(os.environ.get('HOME', ''))\n"
    )
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a participant's json.py")


def _config(host: bool) -> str:
    return (
        '[[hooks]]\non = "before_tool"\nmatch = "read_file"\n'
        "command = \"cat > /dev/null; python3 -c 'import json'; exit 0\"\n"
        + ("host = true\n" if host else "")
    )


@needs_bwrap
@pytest.mark.e2e
def test_a_hook_that_loads_the_repositorys_code_runs_it_in_the_sandbox(repo, autodev):
    marker = Path("/tmp") / f"autodev-hook-{uuid.uuid4().hex}"
    _plant(repo, marker)
    write_team(repo, SOLO, SCRIPT, config=_config(host=False))
    try:
        run_until_idle(autodev, repo, "read a", expect=0)
        hooks = events(repo, "hook")
        assert [(h["on"], h["ok"]) for h in hooks] == [("before_tool", True)], hooks
        # the planted module ran, but in the room: its /tmp is private, nothing reached the host's
        assert not marker.exists()
    finally:
        marker.unlink(missing_ok=True)


@needs_bwrap
@pytest.mark.e2e
def test_a_hook_the_user_put_on_the_host_runs_there_as_documented(repo, autodev):
    """`host = true` is the user's choice, and the attack is real: the same hook on the host runs
    the participant's module with the user's home (docs/security.md says so)."""
    marker = Path("/tmp") / f"autodev-hook-{uuid.uuid4().hex}"
    _plant(repo, marker)
    write_team(repo, SOLO, SCRIPT, config=_config(host=True))
    try:
        run_until_idle(autodev, repo, "read a", expect=0)
        assert marker.exists()
    finally:
        marker.unlink(missing_ok=True)


@pytest.mark.e2e
def test_notify_command_runs_in_the_run_folder_not_the_repository(repo, autodev, tmp_path):
    """notifyCommand runs on the host (it reaches the desktop or a chat), so it never runs where
    a participant's files are: `python3 -c 'import json'` in it loads the standard library's."""
    marker = Path("/tmp") / f"autodev-notify-{uuid.uuid4().hex}"
    _plant(repo, marker)
    out = tmp_path / "notified.jsonl"
    config = f"notifyCommand = \"python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)))' >> {out}\"\n"
    write_team(repo, SOLO, SCRIPT, config=config)
    try:
        run_until_idle(autodev, repo, "read a", expect=0)
        sent = [json.loads(line) for line in out.read_text().splitlines()]
        assert [s["state"] for s in sent] == ["complete"] and not marker.exists()
    finally:
        marker.unlink(missing_ok=True)
