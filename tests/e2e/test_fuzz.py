"""Random bytes and unicode through a real daemon (scripted model): in `send`, in file names, in
tool arguments and in posts. Whatever arrives, the daemon never exits abnormally, every log stays
valid UTF-8, and `status` still works. Few examples and no deadline: `make test` stays fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import GIT_ENV, examples, write_team
from tests.e2e.helpers import SOLO

# Text a model may send inside JSON: anything, lone surrogates included (as \u escapes).
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40) | st.sampled_from(
    ["\ud800", "a\udfffb", "(a+)+$", "../../etc/passwd", ".git/config", "/", "\x00", "x" * 300]
)
NAME = st.binary(min_size=1, max_size=30).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)

# Bytes a user may type as `send`'s argument: anything but NUL, which no argv can carry.
ARGV = st.binary(max_size=40).map(lambda b: b.replace(b"\0", b""))


def _raw(tool: str, **args) -> str:
    """A call whose arguments are raw JSON text (ASCII, with \\u escapes), as TOML."""
    return f"{{ tool = {json.dumps(tool)}, raw_args = {json.dumps(json.dumps(args))} }}"


def _run(repo: Path, env: dict, *args: str | bytes, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autodev", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.full
@pytest.mark.timeout(120 + 60 * examples(2))  # every example runs a daemon: `make fuzz` runs 40
@settings(max_examples=examples(2), deadline=None, suppress_health_check=list(HealthCheck))
@given(message=ARGV, name=NAME, pattern=TEXT, path=TEXT, content=TEXT, said=TEXT)
def test_random_input_never_wedges_the_daemon(message, name, pattern, path, content, said):
    with tempfile.TemporaryDirectory(prefix="autodev-fuzz-") as tmp:
        env = {**os.environ, **GIT_ENV, "AUTODEV_HOME": os.path.join(tmp, "home")}
        repo = Path(tmp) / "repo"
        repo.mkdir()
        for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
        (repo / ".git" / "info" / "exclude").write_text(".autodev/\n")
        with open(os.path.join(os.fsencode(repo), name), "wb") as f:
            f.write(message + b"\n")
        calls = ", ".join(
            [
                _raw("list_files", depth=3),
                _raw("search", pattern=pattern),
                _raw("read_file", path=os.fsdecode(name)),
                _raw("read_file", path=path),
                _raw("write_file", path=path or "x", content=content),
            ]
        )
        script = f'[[step]]\nparticipant = "solo"\ncalls = [{calls}]\n'
        said = said if said.strip() else "."  # a blank post is refused (a rule): this one must land
        script += f'[[step]]\nparticipant = "solo"\ncalls = [{_raw("post", kind="say", text=said, handoff="user")}]\n'
        write_team(repo, SOLO, script)

        sent = _run(repo, env, "send", message)  # raw bytes in argv
        assert sent.returncode in (0, 2), sent.stderr  # 2: an empty message is refused
        r = _run(repo, env, "start", "--foreground", "--until-idle")
        assert r.returncode == 3, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
        assert b"Traceback" not in r.stderr
        run = next(d for d in (Path(tmp) / "home").iterdir() if d.is_dir())
        for log in ("thread.jsonl", "events.jsonl", "harness.jsonl", "state.json"):
            if (run / log).exists():
                (run / log).read_bytes().decode("utf-8")  # strictly valid UTF-8
        state = json.loads((run / "state.json").read_text())
        assert state["state"] == "awaiting_user"
        s = _run(repo, env, "status")
        assert s.returncode == 0, s.stderr
