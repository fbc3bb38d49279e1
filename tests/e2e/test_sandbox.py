"""Participants stay in their room, through the real CLI and daemon: a participant cannot speak
for the user, cannot switch its own guard off, and the daemon holds no key in its environment."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from autodev.guard import bwrap, sandbox
from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import (
    BUILDER,
    PAIR,
    call,
    done_accepted,
    events,
    post,
    start_detached,
    state_of,
    status_json,
    status_text,
    step,
    stop_daemon,
    tool_results,
    turns_of,
    wait_for,
)

BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")
SECRET = "sk-test-e2e-sandbox-0123456789"
AUTODEV = f"{sys.executable} -m autodev"


@pytest.mark.full
@needs_bwrap
def test_a_participant_cannot_approve_its_own_gate(repo, autodev, inproc):
    attack = (
        f"{AUTODEV} approve; echo approve-exit=$?; "
        f"(setsid sh -c 'sleep 0.5; {AUTODEV} approve' > /dev/null 2>&1 &); "
        "tr '\\0' '\\n' < /proc/$PPID/environ | base64; ls $HOME/.autodev 2>&1 | head -3"
    )
    script = (
        step("alice", call("run_command", command=attack))
        + post("alice", "gate", "I need `git push origin main`")
        + done_accepted("alice")
    )
    write_team(repo, PAIR, script)
    r = autodev(repo, "start", "--foreground", "--until-idle", "publish", env={"DEMO_API_KEY": SECRET})
    assert r.returncode == 3, r.stdout + r.stderr
    time.sleep(1.5)  # the background approve would have fired by now
    st = state_of(repo)
    assert st["state"] == "gated", st
    assert not list((run_dir(repo) / "inbox").glob("*.json"))
    assert not [p for p in thread_of(repo) if "approv" in p["text"].lower()]
    [result] = tool_results(turns_of(repo, "alice")[0][1])
    assert SECRET not in result and "DEMO_API_KEY" not in result
    # The user can still approve, and the run completes.
    assert inproc(repo, "approve").returncode == 0
    r = autodev(repo, "start", "--foreground", "--until-idle")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.full
@needs_bwrap
def test_start_and_status_report_the_sandbox(repo, autodev, inproc):
    write_team(repo, BUILDER, step("builder", call("run_command", command="true")) + done_accepted("builder"))
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sandbox: bubblewrap" in r.stdout
    assert status_json(inproc, repo)["sandbox"]["active"] is True
    assert "sandbox: bubblewrap" in status_text(inproc, repo)


@pytest.mark.full
def test_without_bwrap_start_and_status_warn_and_bwrap_mode_refuses(repo, autodev, inproc):
    write_team(repo, BUILDER, done_accepted("builder"))
    missing = {bwrap.BWRAP_ENV: "/nonexistent/bwrap"}
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", env=missing)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "UNSANDBOXED" in r.stderr and "bubblewrap" in r.stderr
    st = inproc(repo, "status", env={**missing, "COLUMNS": "300"}).stdout
    assert "UNSANDBOXED" in st and "bubblewrap" in st
    assert [e for e in events(repo, "warning") if "UNSANDBOXED" in e["message"]]

    (repo / ".autodev" / "config.toml").write_text('sandbox = "bwrap"\n')
    r = autodev(repo, "start", "--foreground", "--until-idle", "again", env=missing)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "bubblewrap" in r.stderr and "sandbox" in r.stderr


@pytest.mark.full
def test_a_change_to_autodev_during_a_turn_is_refused(repo, autodev, inproc):
    """Unsandboxed (the worst case), a participant rewrites the config to drop its guard: the
    daemon keeps the old config, says so in status and events, and the guard still refuses."""
    attack = "printf 'gateRequired = []\\ngateMode = \"auto\"\\n' > .autodev/config.toml"
    push = "git push -q origin main"
    script = (
        step("builder", call("run_command", command=attack))
        + post("builder", "say", "config tuned")
        + step("builder", call("run_command", command=push))
        + done_accepted("builder")
    )
    write_team(repo, BUILDER, script, 'gateRequired = ["git push*"]\nsandbox = "off"\n')
    r = autodev(repo, "start", "--foreground", "--until-idle", "go")
    assert r.returncode == 0, r.stdout + r.stderr
    [refused] = events(repo, "config_refused")
    assert refused["participant"] == "builder" and refused["turn"] == 1
    assert not events(repo, "team_reloaded")
    second = turns_of(repo, "builder")[1]
    assert "gate" in tool_results(second[1])[0], tool_results(second[1])
    assert events(repo, "command_refused")
    st = status_json(inproc, repo)
    assert ".autodev/ changed during turn 1" in st["config_refused"]
    assert "autodev pause" in st["config_refused"]


@pytest.mark.full
def test_a_user_edit_between_turns_still_applies(repo, autodev, inproc):
    script = post("builder", "say", "what next?", "user") + done_accepted("builder")
    write_team(repo, BUILDER, script)
    start_detached(autodev, repo, "go")
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")
    (repo / ".autodev" / "config.toml").write_text("maxTalkTurns = 9\n")
    assert inproc(repo, "send", "finish it").returncode == 0
    wait_for("complete", lambda: state_of(repo).get("state") == "complete")
    assert events(repo, "team_reloaded") and not events(repo, "config_refused")


def _environ_of(pid: int) -> str:
    """The daemon's environment as another process sees it ("" when not dumpable hides it: a
    process without CAP_SYS_PTRACE, i.e. not root, cannot read it at all)."""
    try:
        return open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
    except PermissionError:
        return ""


@pytest.mark.full
def test_the_detached_daemon_starts_without_the_keys(repo, autodev):
    """The key reaches the daemon over a pipe: its /proc environ has none, yet it knows the
    value (it redacts it from the thread)."""
    script = post("builder", "say", f"I found {SECRET} in a file", "user") + done_accepted("builder")
    write_team(repo, BUILDER, script)
    env = {"DEMO_API_KEY": SECRET, "db_token": "db-secret-0123456789", "PLAIN_SETTING": "kept"}
    r = autodev(repo, "start", "go", env=env, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    pid = int(r.stdout.split("pid ")[1].split(")")[0])
    autodev.adopt(pid)
    wait_for("the question", lambda: state_of(repo).get("state") == "awaiting_user")
    environ = _environ_of(pid)
    assert SECRET not in environ and "DEMO_API_KEY" not in environ
    assert "db-secret" not in environ and "db_token" not in environ
    assert "PLAIN_SETTING=kept" in environ or (not environ and os.geteuid() != 0)
    assert thread_of(repo)[-1]["text"] == "I found [redacted] in a file"
    stop_daemon(autodev, repo)


@pytest.mark.full
def test_start_foreground_runs_without_the_keys_in_its_environment(repo, autodev):
    """The foreground daemon re-executes itself keyless; its own commands (unsandboxed here, to
    look at their parent) find no key in the parent's environment."""
    probe = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -c -e DEMO_API_KEY -e sk-test-e2e || true"
    script = step("builder", call("run_command", command=probe)) + done_accepted("builder")
    write_team(repo, BUILDER, script, 'sandbox = "off"\n')
    r = autodev(repo, "start", "--foreground", "--until-idle", "go", env={"DEMO_API_KEY": SECRET})
    assert r.returncode == 0, r.stdout + r.stderr
    [result] = tool_results(turns_of(repo, "builder")[0][1])
    assert result.split("output:")[1].strip() == "0", result
    assert os.environ.get("DEMO_API_KEY") is None  # the test's own environment was not the source


@needs_bwrap
def test_the_builder_commits_with_the_identity_only_in_a_global_config(
    repo, autodev, inproc, tmp_path, monkeypatch
):
    """The usual machine: the identity lives in ~/.gitconfig, the repository has none, and the
    sandbox hides $HOME. doctor reports the identity the sandbox sees; the commit lands."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ada Global\n\temail = ada@example.invalid\n")
    for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key in ("user.name", "user.email"):
        subprocess.run(["git", "config", "--unset", key], cwd=repo, check=True)
    commit = "echo hello > hello.txt && git add hello.txt && git commit -qm 'builder: hello'"
    write_team(repo, BUILDER, step("builder", call("run_command", command=commit)) + done_accepted("builder"))
    r = inproc(repo, "doctor")
    assert "Ada Global <ada@example.invalid> (in the sandbox)" in r.stdout, r.stdout
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello")
    assert r.returncode == 0, r.stdout + r.stderr
    [result] = tool_results(turns_of(repo, "builder")[0][1])
    assert "exit code: 0" in result, result
    log = subprocess.run(
        ["git", "log", "-1", "--format=%an <%ae>|%s"], cwd=repo, capture_output=True, text=True
    )
    assert log.stdout.strip() == "Ada Global <ada@example.invalid>|builder: hello"
