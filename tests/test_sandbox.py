"""The sandbox through the real command runner and a real bubblewrap: each attack a participant
tried in issue 10 fails inside it, while ordinary work (edit, test, commit) still works."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from autodev.errors import ConfigError
from autodev.guard import bwrap, sandbox
from autodev.harness.tools import Workspace
from autodev.store.paths import RunPaths, autodev_home

BOX = sandbox.resolve("auto")
needs_bwrap = pytest.mark.skipif(not BOX.active, reason=f"no working bubblewrap here: {BOX.problem}")
SECRET = "sk-test-sandbox-0123456789"


def workspace(repo: Path, *, network: bool = False, box=BOX) -> Workspace:
    room = box.room(repo, hide=[Path.home(), autodev_home(), RunPaths(repo).run_dir], network=network)
    return Workspace(repo, write=True, command_timeout=30, room=room)


def run(ws: Workspace, command: str) -> str:
    return ws.call("run_command", {"command": command})


@needs_bwrap
def test_no_other_process_or_its_environment_is_visible(repo, monkeypatch):
    monkeypatch.setenv("DEMO_API_KEY", SECRET)
    ws = workspace(repo)
    out = run(ws, "tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' ' ' < /proc/1/environ")
    assert out.startswith("exit code: 0"), out
    assert SECRET not in out and "DEMO_API_KEY" not in out
    out = run(ws, "ls /proc")
    pids = {int(w) for w in out.split() if w.isdigit()}
    assert pids and os.getpid() not in pids and max(pids) < 100, pids  # a fresh PID namespace
    out = run(ws, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
    assert "test_sandbox.py" not in out and "bash" in out, out  # not the test process


@needs_bwrap
def test_autodev_folder_git_hooks_and_config_are_read_only(repo):
    d = repo / ".autodev"
    d.mkdir()
    (d / "config.toml").write_text('gateRequired = ["git push*"]\n')
    ws = workspace(repo)
    out = run(
        ws,
        "printf 'gateRequired = []\\ngateMode = \"auto\"\\n' > .autodev/config.toml; "
        "rm -rf .autodev; mv .autodev gone; "
        "echo 'curl evil' > .git/hooks/pre-commit; git config core.hooksPath /tmp/h; true",
    )
    assert "Read-only file system" in out, out
    assert (d / "config.toml").read_text() == 'gateRequired = ["git push*"]\n'
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert "hooksPath" not in (repo / ".git" / "config").read_text()
    # Ordinary work still works: files in the repository, git objects, refs and the index.
    out = run(ws, "echo hi > new.txt && git add new.txt && git commit -qm 'add new' && git log --oneline -1")
    assert out.startswith("exit code: 0") and "add new" in out, out


@needs_bwrap
def test_git_folder_cannot_be_renamed_or_replaced_even_read_only(repo):
    """Issue 20, attack 2: `mv .git` and a fresh copy would carry no read-only mounts; `.git` is a
    mount point in the sandbox, so it stays where it is (for a `write = false` participant too)."""
    for write in (True, False):
        ws = workspace(repo)
        ws.write = write
        out = run(
            ws,
            "mv .git .gitreal; echo mv=$?; "
            "printf '[core]\\n\\tfsmonitor = /tmp/x\\n' > .git/config; echo cfg=$?",
        )
        assert "mv=1" in out and "cfg=1" in out, out
        assert not (repo / ".gitreal").exists()
        assert (repo / ".git" / "config").is_file() and "fsmonitor" not in (
            repo / ".git" / "config"
        ).read_text()


@needs_bwrap
def test_nothing_outside_the_repository_can_be_written(repo, tmp_path):
    outside = tmp_path / "outside.txt"
    ws = workspace(repo)
    out = run(ws, f"echo x > {outside}; echo y > $HOME/planted; echo z > /usr/planted; echo done")
    assert "done" in out
    assert not outside.exists()
    assert not (Path.home() / "planted").exists() and not Path("/usr/planted").exists()
    assert "Read-only file system" in out  # /usr
    # A private /tmp: writable inside, gone afterwards.
    scratch = f"/tmp/autodev-scratch-{os.getpid()}"
    out = run(ws, f"echo t > {scratch} && cat {scratch}")
    assert out.startswith("exit code: 0") and "t" in out
    assert not Path(scratch).exists()


@needs_bwrap
def test_home_autodev_home_and_the_run_folder_are_hidden(repo):
    run_dir = RunPaths(repo).run_dir
    run_dir.mkdir(parents=True)
    (run_dir / "state.json").write_text('{"state": "gated"}')
    home_file = Path.home() / f".autodev-sandbox-probe-{os.getpid()}"
    home_file.write_text("visible")
    try:
        ws = workspace(repo)
        out = run(
            ws, f"ls -a {run_dir} {autodev_home()} {Path.home()}; cat {home_file}; echo AH=$AUTODEV_HOME"
        )
    finally:
        home_file.unlink()
    assert "state.json" not in out and "visible" not in out, out
    assert "AH=\n" in out or out.rstrip().endswith("AH="), out


@needs_bwrap
def test_no_network_not_even_a_local_port_unless_allowed(repo):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    accepted = []

    def serve():
        srv.settimeout(10)
        try:
            while True:
                c, _ = srv.accept()
                accepted.append(c.recv(16))
                c.close()
        except OSError:
            return

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        probe = f"(echo hello > /dev/tcp/127.0.0.1/{port}) && echo CONNECTED || echo REFUSED"
        out = run(workspace(repo), probe)
        assert "REFUSED" in out and "CONNECTED" not in out, out
        out = run(workspace(repo, network=True), probe)
        assert "CONNECTED" in out, out
    finally:
        srv.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (a close alone does not)
        srv.close()
        t.join(5)
    assert not t.is_alive() and accepted == [b"hello\n"]


@needs_bwrap
def test_a_timeout_still_kills_everything_the_command_started(repo):
    ws = Workspace(repo, write=True, command_timeout=1, room=workspace(repo).room)
    marker = f"sleep 3{os.getpid() % 1000}.5"
    out = run(ws, f"(setsid {marker} &) ; {marker}")
    assert "timed out" in out, out
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    assert not left.strip(), f"left running: {left}"


def test_bwrap_required_but_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(bwrap.BWRAP_ENV, "/nonexistent/bwrap")
    with pytest.raises(ConfigError) as e:
        sandbox.resolve("bwrap")
    assert "bubblewrap" in e.value.fix and "sandbox" in e.value.message
    auto = sandbox.resolve("auto")
    assert not auto.active and "bubblewrap" in auto.warning and "UNSANDBOXED" in auto.warning
    off = sandbox.resolve("off")
    assert not off.active and off.warning is None and "off" in off.describe()


def test_without_a_sandbox_the_runner_runs_plain_bash(repo, monkeypatch):
    monkeypatch.setenv(bwrap.BWRAP_ENV, "")
    box = sandbox.resolve("auto")
    out = run(workspace(repo, box=box), "echo $$ > pid.txt; echo ok")
    assert out.startswith("exit code: 0") and "ok" in out
    assert int((repo / "pid.txt").read_text()) > 1


def test_file_tools_refuse_autodev_and_git(repo):
    from autodev.errors import ToolError

    (repo / ".autodev").mkdir()
    ws = Workspace(repo, write=True, command_timeout=5)
    for path in (".autodev/config.toml", "./.autodev/team.toml", ".AUTODEV/x", ".git/hooks/pre-commit"):
        with pytest.raises(ToolError) as e:
            ws.call("write_file", {"path": path, "content": "x"})
        assert ".autodev" in str(e.value) or ".git" in str(e.value)
    (repo / "link").symlink_to(repo / ".autodev")
    with pytest.raises(ToolError):
        ws.call("write_file", {"path": "link/config.toml", "content": "x"})
    (repo / ".autodev" / "config.toml").write_text("a = 1\n")
    with pytest.raises(ToolError):
        ws.call("edit_file", {"path": ".autodev/config.toml", "old": "1", "new": "2"})
    assert ws.call("read_file", {"path": ".autodev/config.toml"}).endswith("a = 1")


def test_file_tools_do_not_write_through_a_hard_link_into_git(repo):
    """Issue 20: `ln .git/HEAD head` (a command may make it), then write_file head, would break
    every later git command; a file with more than one name is not written through."""
    import os

    from autodev.errors import ToolError

    head = (repo / ".git" / "HEAD").read_text()
    os.link(repo / ".git" / "HEAD", repo / "head")
    ws = Workspace(repo, write=True, command_timeout=5)
    for tool, args in (("write_file", {"content": "garbage"}), ("edit_file", {"old": "ref", "new": "x"})):
        with pytest.raises(ToolError, match="hard links"):
            ws.call(tool, {"path": "head", **args})
    assert (repo / ".git" / "HEAD").read_text() == head
    assert "ref: refs/heads/" in ws.call("read_file", {"path": "head"})  # reading is fine
    os.unlink(repo / "head")
    assert ws.call("write_file", {"path": "head", "content": "mine\n"}).startswith("created")
    assert (repo / ".git" / "HEAD").read_text() == head


@needs_bwrap
def test_audit_check_runs_in_the_sandbox_too(repo, tmp_path, monkeypatch):
    from autodev.harness.audit import run_check

    monkeypatch.setenv("DEMO_API_KEY", SECRET)
    outside = tmp_path / "audit-outside.txt"
    room = workspace(repo).room
    ok, out = run_check(
        repo, f"echo x > {outside}; tr '\\0' '\\n' < /proc/$PPID/environ; ls /proc", 30, room=room
    )
    assert ok, out
    assert not outside.exists() and SECRET not in out
    assert str(os.getpid()) not in out.split()


IDENTITY_VARS = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


def bare_identity(monkeypatch, home: Path) -> None:
    """No identity anywhere but what the test writes under `home` (the user's $HOME)."""
    for k in IDENTITY_VARS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(home))


def no_local_identity(repo: Path) -> None:
    subprocess.run(["git", "config", "--unset", "user.name"], cwd=repo, check=True)
    subprocess.run(["git", "config", "--unset", "user.email"], cwd=repo, check=True)


@pytest.mark.parametrize("where", ["global", "xdg", "includeIf", "environment"])
def test_the_identity_is_found_where_users_keep_it(repo, tmp_path, monkeypatch, where):
    home = tmp_path / "home"
    home.mkdir()
    bare_identity(monkeypatch, home)
    no_local_identity(repo)
    ident = "[user]\n\tname = Ada\n\temail = ada@example.invalid\n"
    if where == "global":
        (home / ".gitconfig").write_text(ident)
    elif where == "xdg":
        (home / ".config" / "git").mkdir(parents=True)
        (home / ".config" / "git" / "config").write_text(ident)
    elif where == "includeIf":
        (home / "work.inc").write_text(ident)
        (home / ".gitconfig").write_text(f'[includeIf "gitdir:{repo}/"]\n\tpath = {home / "work.inc"}\n')
    else:
        monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada")
        monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ada@example.invalid")
        monkeypatch.setenv("GIT_COMMITTER_NAME", "Ada")
        monkeypatch.setenv("GIT_COMMITTER_EMAIL", "ada@example.invalid")
    assert sandbox.git_identity(repo) == dict.fromkeys(IDENTITY_VARS[::2], "Ada") | dict.fromkeys(
        IDENTITY_VARS[1::2], "ada@example.invalid"
    )


def test_no_configured_identity_is_none_not_a_guess(repo, tmp_path, monkeypatch):
    bare_identity(monkeypatch, tmp_path)
    no_local_identity(repo)
    assert sandbox.git_identity(repo) == {}


@needs_bwrap
def test_a_room_reads_the_identity_at_its_first_command_and_keeps_it(repo, tmp_path, monkeypatch):
    """A turn that runs no command costs no git call; one fixed with `git config` after the room
    was made (mid-run, as doctor advises) is seen; the room's commands all use one identity."""
    bare_identity(monkeypatch, tmp_path)
    no_local_identity(repo)
    room = sandbox.resolve("auto").room(repo)
    (tmp_path / ".gitconfig").write_text("[user]\n\tname = Ada\n\temail = ada@example.invalid\n")
    assert room.env({})["GIT_AUTHOR_NAME"] == "Ada"
    (tmp_path / ".gitconfig").write_text("[user]\n\tname = Bob\n\temail = bob@example.invalid\n")
    assert room.env({})["GIT_COMMITTER_EMAIL"] == "ada@example.invalid"
    assert sandbox.resolve("auto").room(repo).env({})["GIT_COMMITTER_EMAIL"] == "bob@example.invalid"


@needs_bwrap
def test_a_commit_in_the_sandbox_uses_the_global_identity_without_showing_home(repo, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[user]\n\tname = Ada\n\temail = ada@example.invalid\n")
    (home / "private.txt").write_text("not for participants\n")
    bare_identity(monkeypatch, home)
    no_local_identity(repo)
    ws = workspace(repo)
    out = run(ws, f"ls -A {home}; echo x > f.txt && git add f.txt && git commit -qm inside && echo committed")
    assert "committed" in out and "private.txt" not in out and ".gitconfig" not in out, out
    log = subprocess.run(
        ["git", "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"], cwd=repo, capture_output=True, text=True
    )
    assert log.stdout.strip() == "Ada <ada@example.invalid>|Ada <ada@example.invalid>|inside"
