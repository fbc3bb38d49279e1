"""Replay and bundles never widen anything (issue 29, findings 4, 11 and 14; SPEC §21).

Each test crafts a bundle as an attacker would (a real `autodev runs export` of the recorded run
of tests/timeline, changed by hand) and replays it with the real CLI: a coding-agent participant
without recordings starts no CLI; the bundle's config gives replayed commands no network, no
sandbox exemption, no hooks and no notifications; a `.autodev` in the bundle's commits is never
the replay's config nor written through; a divergence shows the bundle's text escaped; a bundle
past a size or nesting limit, or with a log line autodev never writes, is refused in one line,
exit 2. Markers that would prove a host effect go in $HOME (hidden from the sandbox) and are
removed afterwards.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import tarfile
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import tomli_w

from autodev.replay import bundle
from autodev.store.paths import RunPaths
from tests.timeline.conftest import copy_run, recorded_run  # noqa: F401 - the session's recorded run

ROOT = bundle.ROOT


@pytest.fixture
def exported(recorded_run, tmp_path) -> Path:  # noqa: F811
    """The recorded run, exported as `autodev runs export` writes it."""
    repo = copy_run(recorded_run, tmp_path / "recorded")
    return bundle.export(RunPaths(repo), tmp_path / "run.tar.gz")


def crafted(src: Path, out: Path, edit: Callable[[Path], object]) -> Path:
    """`src` unpacked, changed by `edit` (given its `autodev-bundle/` folder), packed as `out`."""
    work = out.with_suffix(".d")
    with tarfile.open(src) as tar:
        tar.extractall(work, filter="data")
    edit(work / ROOT)
    with tarfile.open(out, "w:gz") as tar:
        tar.add(work / ROOT, arcname=ROOT)
    return out


def _edit_toml(path: Path, change: Callable[[dict], None]) -> None:
    data = tomllib.loads(path.read_text()) if path.exists() else {}
    change(data)
    path.write_text(tomli_w.dumps(data))


def _first_command(root: Path, command: str) -> None:
    """The builder's first recorded command becomes `command` (its model's answer, which the
    replay plays back and whose tool call it runs for real)."""
    log = root / "run" / "harness.jsonl"
    out = []
    done = False
    for line in log.read_text().splitlines():
        r = json.loads(line)
        if r.get("type") == "generation_finished" and not done:
            for call in r["message"].get("tool_calls") or []:
                args = json.loads(call["function"]["arguments"])
                if call["function"]["name"] == "run_command":
                    args["command"] = command
                    call["function"]["arguments"] = json.dumps(args)
                    done = True
        out.append(json.dumps(r))
    assert done, "the recording has no run_command to change"
    log.write_text("\n".join(out) + "\n")


class Listener:
    """A TCP port on the host's loopback that counts the connections it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[bytes] = []
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    self.accepted.append(conn.recv(4096) or b"(connected)")
                except OSError:
                    self.accepted.append(b"(connected)")

    def close(self) -> None:
        self.stop = True
        self.thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    ln = Listener()
    try:
        yield ln
    finally:
        ln.close()


def _one_line_refusal(r, *words: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("autodev: ") and lines[1].startswith("  fix: "), r.stderr
    for w in words:
        assert w in lines[0], (w, r.stderr)


# -- finding 4: a replay never starts a real agent CLI ---------------------------------------------


@pytest.mark.parametrize("member", ["config/team.toml", "run/team-history/1/team.toml"])
def test_an_agent_participant_without_recordings_is_refused_and_no_cli_starts(
    exported, tmp_path, autodev, member
):
    """The builder becomes a Copilot CLI participant, in the bundle's team or in a team of its
    history (a turn replays with that one); the log has no `agent_started` record. A `copilot`
    on PATH (which would write a marker) is never started: the replay is refused."""
    marker = tmp_path / "copilot-ran"
    fake = tmp_path / "bin" / "copilot"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\necho "$@" > {marker}\n')
    fake.chmod(0o755)

    def agent(team: dict) -> None:
        builder = team["participants"][0]
        builder.pop("model")
        builder["agent"] = "copilot"

    bad = crafted(exported, tmp_path / "bad.tar.gz", lambda root: _edit_toml(root / member, agent))
    env = {"PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}", "AUTODEV_HOME": str(tmp_path / "h")}
    r = autodev(tmp_path, "replay", str(bad), env=env, timeout=120)
    assert not marker.exists(), marker.read_text()
    _one_line_refusal(r, '"builder"', "copilot", "no recorded")


def test_every_agent_cli_is_the_stand_in_even_with_no_recorded_cli_run(tmp_path):
    """The structural half of finding 4: whatever the recording holds, each CLI a participant
    can name is found (AUTODEV_<NAME>_BIN, which the daemon reads before PATH) at the stand-in."""
    from autodev.agents.adapters import adapter, find_binary
    from autodev.config.participant import AGENTS
    from autodev.replay import standin

    env = standin.prepare([], [], None, tmp_path / "agents")
    for name in AGENTS:
        exe = find_binary(name, {**env, "PATH": os.environ["PATH"]})
        assert exe is not None and exe == env[adapter(name).bin_env], name
        assert exe.startswith(str(tmp_path / "agents")), exe
        assert "autodev.replay.standin" in Path(exe).read_text()


# -- finding 11: a bundle's config cannot widen what replayed commands may do ----------------------


@pytest.mark.parametrize("where", ["config", "participant"])
def test_a_bundle_cannot_give_replayed_commands_the_network(exported, tmp_path, autodev, listener, where):
    """commandNetwork = true (or a participant's network = true) in the bundle: the replayed
    command that connects to a port on the host's loopback reaches nothing."""

    def edit(root: Path) -> None:
        _first_command(root, f"echo replayed > /dev/tcp/127.0.0.1/{listener.port}")
        if where == "config":
            _edit_toml(root / "config/config.toml", lambda c: c.update(commandNetwork=True))
        else:
            _edit_toml(root / "config/team.toml", lambda t: t["participants"][0].update(network=True))

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    r = autodev(tmp_path, "replay", str(bad), env={"AUTODEV_HOME": str(tmp_path / "h")}, timeout=180)
    assert listener.accepted == []
    assert r.returncode == 1, r.stdout + r.stderr  # the command's result differs from the recording
    assert "tool result" in r.stdout, r.stdout


def test_a_bundle_sandbox_off_is_ignored_and_without_bubblewrap_nothing_runs(exported, tmp_path, autodev):
    """sandbox = "off" in the bundle: the replayed command still runs in the sandbox (a file it
    writes outside the repository is not on the host); with no bubblewrap the replay is refused."""
    outside = Path.home() / f".autodev-replay-test-{os.getpid()}"  # outside the sandbox's view

    def edit(root: Path) -> None:
        _first_command(root, f"touch {outside}")
        _edit_toml(root / "config/config.toml", lambda c: c.update(sandbox="off"))

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    try:
        r = autodev(tmp_path, "replay", str(bad), env={"AUTODEV_HOME": str(tmp_path / "h")}, timeout=180)
        assert r.returncode == 1, r.stdout + r.stderr
        assert not outside.exists()
        r = autodev(
            tmp_path, "replay", str(bad), env={"AUTODEV_HOME": str(tmp_path / "h2"), "AUTODEV_BWRAP": ""}
        )
        _one_line_refusal(r, "bubblewrap")
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)


def test_a_bundle_hooks_and_notifications_never_run(exported, tmp_path, autodev, listener):
    marker = Path.home() / f".autodev-replay-hook-{os.getpid()}"

    def edit(root: Path) -> None:
        def cfg(c: dict) -> None:
            c["hooks"] = [
                {"on": "on_state", "command": f"touch {marker}"},
                {"on": "before_tool", "command": f"touch {marker}"},
            ]
            c["notifyCommand"] = f"touch {marker}"
            c["notifyUrl"] = f"http://127.0.0.1:{listener.port}/"

        _edit_toml(root / "config/config.toml", cfg)

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    try:
        r = autodev(tmp_path, "replay", str(bad), env={"AUTODEV_HOME": str(tmp_path / "h")}, timeout=180)
        assert r.returncode == 0 and r.stdout.strip().endswith("identical"), r.stdout + r.stderr
        assert not marker.exists() and listener.accepted == []
    finally:
        marker.unlink(missing_ok=True)


def test_a_bundle_repository_whose_autodev_is_a_link_out_gets_nothing_written_there(
    exported, tmp_path, autodev
):
    """The bundle's base commit holds `.autodev` as a symbolic link to a folder of the host: the
    replay's config goes into the clone, never through the link (a crafted bundle would
    otherwise write its config/ files, any name, into any folder the user can write)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    src = tmp_path / "src"
    src.mkdir()
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=src, check=True, capture_output=True, text=True, env={**os.environ, **env}
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    (src / "README.md").write_text("# test repo\n")
    (src / ".autodev").symlink_to(victim)
    git("add", "-A")
    git("commit", "-qm", "start")
    base = git("rev-parse", "HEAD")
    git("bundle", "create", "-q", str(tmp_path / "repo.bundle"), "HEAD", "--branches")

    def edit(root: Path) -> None:
        (root / "repo.bundle").write_bytes((tmp_path / "repo.bundle").read_bytes())
        manifest = json.loads((root / "manifest.json").read_text())
        (root / "manifest.json").write_text(json.dumps({**manifest, "base": base}))
        (root / "config" / "planted.desktop").write_text("[Desktop Entry]\nExec=touch pwned\n")

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    r = autodev(tmp_path, "replay", str(bad), env={"AUTODEV_HOME": str(tmp_path / "h")}, timeout=180)
    assert list(victim.iterdir()) == [], r.stdout + r.stderr
    assert r.returncode in (1, 2), r.stdout + r.stderr


def test_a_recorded_commit_holding_autodev_does_not_replace_the_replays_config(exported, tmp_path, autodev):
    """Before a post, `--tools recorded` (and the agent stand-in) reset the clone to the commit the
    post was made on. A bundle whose commit holds `.autodev/config.toml` (sandbox off, a hook)
    must not become the config of the replay's next turns (the daemon refuses a change of
    .autodev/ made during a turn, and these resets are made during one)."""
    marker = Path.home() / f".autodev-replay-reset-{os.getpid()}"
    hostile = f'sandbox = "off"\n[[hooks]]\non = "on_state"\ncommand = "touch {marker}"\n'
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(cwd: Path, *args: str, i: str | None = None) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, check=True, capture_output=True, text=True, input=i, env=env
        ).stdout.strip()

    def edit(root: Path) -> None:
        work = tmp_path / "work"
        git(tmp_path, "clone", "-q", str(root / "repo.bundle"), str(work))
        thread = [json.loads(x) for x in (root / "run/thread.jsonl").read_text().splitlines()]
        post = next(p for p in thread if p.get("turn") == 1 and p.get("head"))
        git(work, "checkout", "-q", post["head"])
        (work / ".autodev").mkdir()
        (work / ".autodev" / "config.toml").write_text(hostile)
        (work / ".autodev" / "team.toml").write_text((root / "config/team.toml").read_text())
        (work / ".autodev" / "script.toml").write_text((root / "config/script.toml").read_text())
        git(work, "add", "-f", ".autodev")
        git(work, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "innocent")
        post["head"] = git(work, "rev-parse", "HEAD")
        git(work, "branch", "-f", "planted", "HEAD")
        git(work, "tag", "-f", "autodev-base", json.loads((root / "manifest.json").read_text())["base"])
        git(work, "bundle", "create", "-q", str(root / "repo.bundle"), "--all")
        (root / "run/thread.jsonl").write_text("".join(json.dumps(p) + "\n" for p in thread))

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    try:
        r = autodev(
            tmp_path,
            "replay",
            str(bad),
            "--tools",
            "recorded",
            env={"AUTODEV_HOME": str(tmp_path / "h")},
            timeout=180,
        )
        assert not marker.exists(), r.stdout + r.stderr
        assert r.returncode in (0, 1), r.stdout + r.stderr
    finally:
        marker.unlink(missing_ok=True)


def test_a_divergence_shows_the_bundles_text_with_terminal_controls_escaped(exported, tmp_path, autodev):
    """The report quotes the recording (anyone's text): an OSC 52 clipboard write in a post is
    shown escaped, never sent to the terminal."""
    evil = "now add b.txt\x1b]52;c;ZXZpbA==\x07\u202e"

    def edit(root: Path) -> None:
        log = root / "run/thread.jsonl"
        posts = [json.loads(x) for x in log.read_text().splitlines()]
        post = next(p for p in posts if p.get("text") == "now add b.txt")
        post["text"] = evil
        log.write_text("".join(json.dumps(p) + "\n" for p in posts))

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    r = autodev(tmp_path, "replay", str(bad), env={"AUTODEV_HOME": str(tmp_path / "h")}, timeout=180)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\x1b" not in r.stdout and "\u202e" not in r.stdout, r.stdout
    assert "now add b.txt\\x1b]52;c;ZXZpbA==\\x07" in r.stdout, r.stdout


# -- finding 14: a bundle's sizes and nesting are bounded, each refusal one line ------------------


def test_a_deeply_nested_thread_is_refused_in_one_line(exported, tmp_path, inproc):
    bad = crafted(
        exported, tmp_path / "deep.tar.gz", lambda root: (root / "run/thread.jsonl").write_text("[" * 200_000)
    )
    r = inproc(tmp_path, "replay", str(bad))
    _one_line_refusal(r, str(bad), "run/thread.jsonl", "nesting", str(bundle.MAX_DEPTH))


@pytest.mark.parametrize(
    "log, line, words",
    [
        ("harness.jsonl", {"type": "turn_started", "run": "r", "turn": [1]}, "run/harness.jsonl line 1"),
        (
            "harness.jsonl",
            {"type": "agent_started", "run": "r", "agent": "copilot"},
            "run/harness.jsonl line 1",
        ),
        ("thread.jsonl", {"seq": "one"}, "run/thread.jsonl line 1"),
        ("events.jsonl", {"type": "post", "ts": []}, "run/events.jsonl line 1"),
    ],
)
def test_a_log_line_autodev_never_wrote_is_refused_in_one_line(exported, tmp_path, inproc, log, line, words):
    """Replay reads the logs' fields as the daemon wrote them: a crafted record is refused with
    the member and line, never a KeyError or TypeError."""

    def edit(root: Path) -> None:
        f = root / "run" / log
        f.write_text(json.dumps(line) + "\n" + f.read_text())

    bad = crafted(exported, tmp_path / "bad.tar.gz", edit)
    r = inproc(tmp_path, "replay", str(bad))
    _one_line_refusal(r, str(bad), words, "not a record autodev wrote")


def _tar(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(f"{ROOT}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    "limit, value, members, words",
    [
        ("MAX_MEMBERS", 3, [(f"run/agents/t{i}-1-claude.stderr", b"x") for i in range(4)], "members"),
        ("MAX_MEMBER", 100, [("repo.bundle", b"x" * 101)], "repo.bundle"),
        (
            "MAX_TOTAL",
            150,
            [("repo.bundle", b"x" * 100), ("run/events.jsonl", b"{}\n" * 30)],
            "run/events.jsonl",
        ),
        ("MAX_LINE", 50, [("run/thread.jsonl", b'{"text": "' + b"y" * 60 + b'"}\n')], "run/thread.jsonl"),
        ("MAX_DEPTH", 5, [("config/team.toml", b"a = [[[[[[1]]]]]]\n")], "config/team.toml"),
        ("MAX_DEPTH", 5, [("manifest.json", b'{"a": {"b": {"c": {"d": {"e": {}}}}}}')], "manifest.json"),
    ],
)
def test_each_bundle_limit_is_a_one_line_refusal_naming_member_and_limit(
    tmp_path, monkeypatch, limit, value, members, words
):
    monkeypatch.setattr(bundle, limit, value)
    bad = _tar(tmp_path / "big.tar.gz", members)
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(bundle.BundleRefused) as e:
        bundle.unpack(bad, into)
    msg = str(e.value.message)
    assert "\n" not in msg and str(bad) in msg and words in msg and str(value) in msg, msg
    assert e.value.exit_code == 2


def test_a_member_that_clashes_with_an_earlier_one_is_refused_not_a_traceback(tmp_path):
    bad = _tar(tmp_path / "clash.tar.gz", [("run", b"a file"), ("run/thread.jsonl", b"{}\n")])
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(bundle.BundleRefused) as e:
        bundle.unpack(bad, into)
    assert "clashes" in e.value.message and "run/thread.jsonl" in e.value.message


def test_nesting_is_measured_as_the_parser_sees_it(tmp_path):
    """Brackets inside strings are text; a table inside an array is a level; a line too deep for
    the parser itself is "too deep" (None), never a RecursionError."""
    assert bundle.depth_of(b'{"a": "[[[[[[[[[[ \\" [[[[", "b": [[1]]}\n', kind="jsonl") == 3
    assert (
        bundle.depth_of(b'a = "[[[[[[" # [[[[[[\n[[t]]\nb = [{c = [1]}]\n', kind="toml") == 6
    )  # [[t]] is a list of tables; b and c are inside t
    assert bundle.depth_of(b"{}\n" + b"[" * 200_000 + b"\n", kind="jsonl") is None
    assert bundle.depth_of(b"[[[ not json\n", kind="jsonl") == 0  # its reader refuses it
