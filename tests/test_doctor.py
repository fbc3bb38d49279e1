"""`autodev doctor`: one line per check with the fix, and an exit code that says whether `start`
would work. Each check is driven through the real command on a real repository: in-process
(`inproc`), and through the console script where a process of its own matters (the first test,
and Playwright shadowed on PYTHONPATH)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from autodev.harness import browser
from autodev.setup.doctor import PROVIDER_KEYS, disk_check
from autodev.store.lock import DaemonLock
from autodev.store.paths import RunPaths
from tests.conftest import write_team
from tests.e2e.helpers import SOLO, done_accepted, team_of_one

OPENAI_PAIR = """
[[participants]]
name = "builder"
model = "openai/gpt-5"
write = true

[[participants]]
name = "reviewer"
model = "anthropic/claude-sonnet-4-5"
"""


def doctor(run, cwd, *args, env=None):
    """`autodev doctor` through `run` (the `inproc` fixture, or `autodev` for the console script)."""
    r = run(cwd, "doctor", *args, env=env)
    lines = {}
    for line in r.stdout.splitlines()[:-1]:
        status, rest = line.split(None, 1)
        lines[rest[:18].strip()] = (status, rest[18:].strip())
    return r, lines


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch):
    for keys in PROVIDER_KEYS.values():
        for k in keys:
            monkeypatch.delenv(k, raising=False)


def test_scripted_team_is_ready(autodev, inproc, repo):
    write_team(repo, SOLO, done_accepted("solo"))
    r, lines = doctor(autodev, repo)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "start would work"
    for name in (
        "git",
        "repository",
        "git identity",
        "team",
        "provider: solo",
        "provider: audit",
        "daemon",
        "disk",
    ):
        assert lines[name][0] == "ok", (name, r.stdout)
    assert "1 participant (solo)" in lines["team"][1]
    data = json.loads(inproc(repo, "doctor", "--json").stdout)
    assert data["ready"] is True and {c["name"] for c in data["checks"]} >= {
        "git identity",
        "sandbox",
        "disk",
    }


def test_missing_provider_key_fails_and_names_it(inproc, repo):
    write_team(repo, OPENAI_PAIR)
    r, lines = doctor(inproc, repo)
    assert r.returncode == 2, r.stdout
    assert lines["provider: builder"][0] == "FAIL" and "OPENAI_API_KEY" in lines["provider: builder"][1]
    assert lines["provider: reviewer"][0] == "FAIL" and "ANTHROPIC_API_KEY" in lines["provider: reviewer"][1]
    assert "set it in the environment" in lines["provider: builder"][1]
    assert r.stdout.splitlines()[-1].startswith("start would not work")

    r, lines = doctor(inproc, repo, env={"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-test"})
    assert r.returncode == 0, r.stdout
    assert lines["provider: builder"] == ("ok", "openai/gpt-5: what the provider needs is set")
    # the secret itself never shows
    assert "sk-test" not in r.stdout


@pytest.mark.full
def test_online_asks_litellm_for_a_provider_the_table_does_not_know(inproc, repo):
    write_team(repo, '[[participants]]\nname = "solo"\nmodel = "gpt-5"\nwrite = true\n')
    r, lines = doctor(inproc, repo)
    assert r.returncode == 0 and lines["provider: solo"][0] == "warn", r.stdout
    assert "autodev doctor --online" in lines["provider: solo"][1]
    r, lines = doctor(inproc, repo, "--online")
    assert r.returncode == 2 and "OPENAI_API_KEY" in lines["provider: solo"][1], r.stdout


@pytest.fixture
def endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_endpoint_is_contacted_only_online(inproc, repo, endpoint):
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    write_team(
        repo,
        f"""
[[participants]]
name = "local"
model = "openai/qwen"
api_base = "{endpoint}"
write = true

[[participants]]
name = "gone"
model = "openai/qwen"
api_base = "{dead}"
""",
    )
    r, lines = doctor(inproc, repo)
    assert r.returncode == 0, r.stdout
    assert "not contacted" in lines["provider: gone"][1]
    r, lines = doctor(inproc, repo, "--online")
    assert r.returncode == 2, r.stdout
    assert lines["provider: local"] == ("ok", f"{endpoint} answers")
    assert lines["provider: gone"][0] == "FAIL" and "not reachable" in lines["provider: gone"][1]


def test_git_identity_missing_is_a_failure_with_the_fix(inproc, tmp_path, monkeypatch):
    bare = tmp_path / "noid"
    bare.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=bare, check=True)
    write_team(bare, SOLO, done_accepted("solo"))
    for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(k)
    env = {
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tmp_path),
    }
    r, lines = doctor(inproc, bare, env=env)
    assert r.returncode == 2, r.stdout
    status, text = lines["git identity"]
    assert status == "FAIL" and 'git config --global user.email "you@example.com"' in text


def test_outside_a_repository_and_without_a_team(inproc, tmp_path, repo):
    r, lines = doctor(inproc, tmp_path)
    assert r.returncode == 2 and lines["repository"][0] == "FAIL", r.stdout
    assert "git init" in lines["repository"][1]
    r, lines = doctor(inproc, repo)
    assert r.returncode == 2 and lines["team"][0] == "FAIL" and "autodev init" in lines["team"][1]


def test_a_broken_team_file_fails_with_its_message(inproc, repo):
    write_team(repo, '[[participants]]\nname = "solo"\nmodle = "scripted"\n')
    r, lines = doctor(inproc, repo)
    assert r.returncode == 2 and lines["team"][0] == "FAIL" and "modle" in lines["team"][1], r.stdout


def test_without_bubblewrap_the_sandbox_is_a_warning(inproc, repo, tmp_path):
    write_team(repo, SOLO, done_accepted("solo"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    r, lines = doctor(inproc, repo, env={"PATH": str(bin_dir)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert lines["sandbox"][0] == "warn" and "apt-get install bubblewrap" in lines["sandbox"][1]
    if shutil.which("bwrap"):
        r, lines = doctor(inproc, repo)
        assert lines["sandbox"][0] == "ok"


def test_a_running_daemon_means_start_would_not_work(inproc, repo):
    write_team(repo, SOLO, done_accepted("solo"))
    paths = RunPaths(repo)
    paths.ensure()
    lock = DaemonLock(paths.lock)
    lock.acquire()
    try:
        r, lines = doctor(inproc, repo)
    finally:
        os.close(lock.fd)
    assert r.returncode == 2 and lines["daemon"][0] == "FAIL" and "autodev stop" in lines["daemon"][1]


def test_disk_check_warns_below_the_minimum_as_start_runs_there(tmp_path):
    assert disk_check(tmp_path / "not" / "yet").status == "ok"
    low = disk_check(tmp_path, min_free_mb=10**12)
    # start checks only that the run folder is writable: doctor must not say it would fail
    assert low.status == "warn" and "start works" in low.detail and "AUTODEV_HOME" in low.fix


def test_offline_key_table_matches_litellm():
    from autodev.config.providers import _litellm_missing

    for provider, keys in PROVIDER_KEYS.items():
        missing, error = _litellm_missing(f"{provider}/some-model")
        assert not error and sorted(missing) == sorted(keys), provider


def _has_key(name: str) -> bool:
    from autodev.config import Participant

    return name in Participant.model_fields


def _fake_exe(folder, name):
    folder.mkdir(exist_ok=True)
    exe = folder / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


@pytest.mark.full
def test_browser_capability_is_checked_by_launching_chromium_through_playwright(autodev, repo, tmp_path):
    write_team(repo, team_of_one("solo", 'tools = ["browser"]'), done_accepted("solo"))
    r, lines = doctor(autodev, repo, env={"AUTODEV_CHROMIUM": "/nonexistent/chromium"})
    assert r.returncode == 2 and lines["browser"][0] == "FAIL", r.stdout
    assert (
        "no Chromium was found" in lines["browser"][1] and "apt-get install chromium" in lines["browser"][1]
    )
    # A Chromium that is there but does not start (here: not a browser at all) fails too.
    fake = _fake_exe(tmp_path / "bin", "chromium")
    r, lines = doctor(autodev, repo, env={"AUTODEV_CHROMIUM": str(fake)})
    assert lines["browser"][0] == "FAIL" and "could not be started by Playwright" in lines["browser"][1], (
        r.stdout
    )
    # Playwright missing from autodev's environment (what `pipx install` alone gives): the fix
    # names the pip, pipx and uv forms.
    shadow = tmp_path / "shadow" / "playwright"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('No module named playwright')\n")
    pythonpath = os.pathsep.join([str(shadow.parent), os.environ["PYTHONPATH"]])
    r, lines = doctor(autodev, repo, env={"PYTHONPATH": pythonpath})
    status, text = lines["browser"]
    assert status == "FAIL" and "Playwright for Python is not installed" in text, r.stdout
    assert "pipx inject autodev-team playwright==" in text and "uv tool install --with playwright==" in text
    assert "pip install 'autodev-team[browser]'" in text
    if browser.launch_problem() is None:
        r, lines = doctor(autodev, repo)
        assert lines["browser"][0] == "ok" and "started through Playwright" in lines["browser"][1], r.stdout


def test_the_pins_in_fixes_are_the_extras():
    import tomllib

    from autodev.errors import EXTRAS, extra_fix

    extra = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    assert extra["optional-dependencies"]["browser"] == [browser.PLAYWRIGHT]
    for name, pins in EXTRAS.items():
        assert extra["optional-dependencies"][name] == list(pins), name
    fix = extra_fix("telemetry")
    assert (
        "pipx inject autodev-team opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-http==1.45.2"
        in fix
    )
    assert "uv tool install --with opentelemetry-sdk==1.45.2 --with opentelemetry" in fix
    assert "pip install 'autodev-team[telemetry]'" in fix


def test_agent_cli_is_found_on_path_or_by_its_variable_with_its_version_and_login(inproc, repo, tmp_path):
    write_team(repo, '[[participants]]\nname = "coder"\nagent = "claude"\nwrite = true\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    home = tmp_path / "home"
    home.mkdir()
    r, lines = doctor(inproc, repo, env={"PATH": str(bin_dir), "HOME": str(home)})
    assert r.returncode == 2 and lines["agent: coder"][0] == "FAIL", r.stdout
    assert "AUTODEV_CLAUDE_BIN" in lines["agent: coder"][1]
    exe = tmp_path / "elsewhere" / "claude"
    exe.parent.mkdir()
    # It may answer --version and nothing else: doctor starts no session.
    # Its login as `claude auth status` (2.1.332) answers it: exit 0 logged in, 1 not.
    exe.write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "2.0.5 (Claude Code)" && exit 0\n'
        '[ "$1 $2" = "auth status" ] && [ -f "$HOME/.claude/.credentials.json" ] && exit 0\n'
        '[ "$1 $2" = "auth status" ] && exit 1\nexit 9\n'
    )
    exe.chmod(0o755)
    env = {"PATH": str(bin_dir), "AUTODEV_CLAUDE_BIN": str(exe), "HOME": str(home)}
    r, lines = doctor(inproc, repo, env=env)
    assert lines["agent: coder"][0] == "warn", r.stdout
    assert lines["agent: coder"][1].startswith(
        f"claude CLI at {exe}, version 2.0.5 (Claude Code); no login (`claude auth status` exit 1)"
    )
    (home / ".claude").mkdir()
    (home / ".claude" / ".credentials.json").write_text("{}")
    r, lines = doctor(inproc, repo, env=env)
    assert lines["agent: coder"][0] == "ok", r.stdout
    assert "subscription login (`claude auth status`)" in lines["agent: coder"][1]
    assert lines["audit"][0] == "FAIL" and "[audit]" in lines["audit"][1]  # agents only: no model


@pytest.mark.full
def test_mcp_servers_are_started_and_their_tools_listed(inproc, repo, tmp_path):
    team = team_of_one("solo") + '\n[mcp.notes]\ncommand = "autodev-no-such-server"\n'
    write_team(repo, team, done_accepted("solo"))
    r, lines = doctor(inproc, repo)
    assert r.returncode == 2 and lines["mcp: notes"][0] == "FAIL", r.stdout
    assert "was not found on PATH" in lines["mcp: notes"][1] and "[mcp.notes]" in lines["mcp: notes"][1]
    # Found, but it fails as it starts (a mistyped option): its own words are shown.
    exe = _fake_exe(tmp_path / "bin", "autodev-no-such-server")
    exe.write_text("#!/bin/sh\necho \"No such option '--repositry'\" >&2\nexit 2\n")
    path = {"PATH": f"{exe.parent}{os.pathsep}{os.environ['PATH']}"}
    r, lines = doctor(inproc, repo, env=path)
    assert r.returncode == 2 and lines["mcp: notes"][0] == "FAIL", r.stdout
    assert (
        "failed to start" in lines["mcp: notes"][1]
        and "No such option '--repositry'" in lines["mcp: notes"][1]
    )
    server = Path(__file__).parent / "mcp_server.py"
    team = (
        team_of_one("solo")
        + f"\n[mcp.notes]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(server))}]\n"
    )
    write_team(repo, team, done_accepted("solo"))
    r, lines = doctor(inproc, repo)
    assert lines["mcp: notes"][0] == "ok" and lines["mcp: notes"][1].endswith("started, 4 tools"), r.stdout


NO_USERNS = (
    "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace, likely because the kernel "
    "does not allow non-privileged user namespaces.' >&2\nexit 1\n"
)


@pytest.mark.parametrize("mode", ["auto", "bwrap"])
def test_a_bwrap_that_cannot_create_namespaces_fails_with_the_fix(inproc, repo, tmp_path, mode):
    # Installed, but the kernel (or a container) refuses it namespaces: start would run unsandboxed
    # ("auto") or refuse ("bwrap"); either way doctor says FAIL and how to fix it, never OK.
    write_team(repo, SOLO, done_accepted("solo"), config=f'sandbox = "{mode}"\n')
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text(NO_USERNS)
    fake.chmod(0o755)
    r, lines = doctor(inproc, repo, env={"AUTODEV_BWRAP": str(fake)})
    assert r.returncode == 2 and lines["sandbox"][0] == "FAIL", r.stdout
    assert "non-privileged user namespaces" in lines["sandbox"][1]
    assert "unprivileged_userns" in lines["sandbox"][1] and 'sandbox = "off"' in lines["sandbox"][1]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
def test_a_working_bwrap_ran_a_command_in_the_room_start_would_use(inproc, repo):
    write_team(repo, SOLO, done_accepted("solo"))
    r, lines = doctor(inproc, repo)
    assert lines["sandbox"][0] == "ok", r.stdout
    assert "bubblewrap" in lines["sandbox"][1] and "a test command ran in it" in lines["sandbox"][1]
    # a sandboxRead path that is not there: the room works without it, and doctor says so
    write_team(repo, SOLO, done_accepted("solo"), config='sandboxRead = ["/nonexistent-autodev-path"]\n')
    r, lines = doctor(inproc, repo)
    assert lines["sandbox"][0] == "warn" and "/nonexistent-autodev-path" in lines["sandbox"][1], r.stdout


def test_sandbox_bwrap_required_but_missing_fails(inproc, repo):
    write_team(repo, SOLO, done_accepted("solo"), config='sandbox = "bwrap"\n')
    r, lines = doctor(inproc, repo, env={"AUTODEV_BWRAP": ""})
    assert r.returncode == 2 and lines["sandbox"][0] == "FAIL", r.stdout
    assert "bubblewrap" in lines["sandbox"][1]


def test_git_identity_in_a_global_config_is_what_commits_get(inproc, repo, tmp_path, monkeypatch):
    """~/.gitconfig only (the usual setup): doctor asks git where commands run, and says where."""
    write_team(repo, SOLO, done_accepted("solo"))
    for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(k)
    subprocess.run(["git", "config", "--unset", "user.name"], cwd=repo, check=True)
    subprocess.run(["git", "config", "--unset", "user.email"], cwd=repo, check=True)
    (tmp_path / ".gitconfig").write_text("[user]\n\tname = Ada\n\temail = ada@example.invalid\n")
    env = {"HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1", "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    r, lines = doctor(inproc, repo, env=env)
    status, text = lines["git identity"]
    assert status == "ok" and text.startswith("Ada <ada@example.invalid> ("), text


def test_a_team_files_problems_print_one_a_line_under_the_check(repo, inproc):
    (repo / ".autodev").mkdir(exist_ok=True)
    (repo / ".autodev" / "team.toml").write_text(
        '[[participants]]\nname = "a b"\nmodel = 3\n[[participants]]\nname = "c"\nmodle = "x"\n'
    )
    out = inproc(repo, "doctor").stdout.splitlines()
    at = next(i for i, line in enumerate(out) if line.startswith("FAIL  team "))
    assert out[at].endswith("team.toml: 3 problems"), out[at]
    block = out[at + 1 : at + 8]
    assert all(line.startswith(" " * 25) for line in block), block
    assert any('unknown key "modle"' in line for line in block) and block[-1].strip().startswith("→ fix: ")
