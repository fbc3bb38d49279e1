"""`autodev replay` of a run whose participants are coding-agent CLIs (SPEC §16, §20): a run
recorded by the real daemon with scripted stand-ins for `claude` and `codex` on PATH
(tests/agents/fake_cli.py) replays "identical" with the recorded streams standing in for the
CLIs; a post changed in the recording is the first divergence."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autodev.records import Post
from autodev.replay import bundle, standin
from autodev.replay import replay as rp
from autodev.store.paths import RunPaths
from tests.agents.conftest import Fakes
from tests.conftest import run_dir, shape, thread_of, write_team
from tests.e2e.helpers import ACCEPT
from tests.timeline import typed

TEAM = """
[[participants]]
name = "builder"
agent = "claude"
write = true

[[participants]]
name = "reviewer"
agent = "codex"
write = false

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""


@pytest.mark.full
def test_an_agent_cli_run_replays_identical_and_a_changed_post_diverges(repo, autodev, tmp_path, monkeypatch):
    """Recorded by the real daemon: claude builds hello.txt (a commit) and hands off; codex,
    nudged once, reads the thread and says done; the scripted audit accepts."""
    fakes = Fakes(tmp_path / "fakes")
    for k, v in fakes.env().items():
        monkeypatch.setenv(k, v)
    write_team(repo, TEAM, ACCEPT)
    fakes.play(
        claude=[
            [
                ["text", "on it"],
                ["edit", "hello.txt", "hello\n"],
                ["post", {"kind": "work_done", "text": "hello added", "handoff": "reviewer"}],
            ]
        ],
        codex=[[["text", "looking"]], [["read", 1], ["post", {"kind": "done", "text": "reviewed: fine"}]]],
    )
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello.txt", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert shape(thread_of(repo)) == [
        ("user", "say", None, None),
        ("builder", "work_done", "reviewer", True),
        ("reviewer", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert [c["agent"] for c in fakes.calls()] == ["claude", "codex", "codex"]

    rec = rp.from_run(RunPaths(repo))
    assert rp.run(rec) is None
    assert rp.run(rec, recorded_tools=True) is None
    # exported, the run replays from the bundle on another AUTODEV_HOME (streams included)
    exported = bundle.export(RunPaths(repo), tmp_path / "run.tar.gz")
    home = os.environ["AUTODEV_HOME"]
    monkeypatch.setenv("AUTODEV_HOME", str(tmp_path / "elsewhere"))
    assert rp.run(bundle.recording(exported, tmp_path / "unpacked")) is None
    assert len(fakes.calls()) == 3  # the replays ran the stand-in, never the CLIs on PATH
    monkeypatch.setenv("AUTODEV_HOME", home)

    # The builder's post as its recorded stream shows the call: the replay posts that text, the
    # thread recorded the other one.
    stream = run_dir(repo) / "agents" / "t1-1-claude.jsonl"
    stream.write_text(stream.read_text().replace('"text": "hello added"', '"text": "hello changed"'))
    d = rp.run(rp.from_run(RunPaths(repo)), recorded_tools=True)
    assert d is not None and (d.turn, d.step) == (1, "post"), d
    assert "hello added" in d.expected and "hello changed" in d.got


def test_an_agent_posts_credit_and_schedule_are_compared():
    post = {"seq": 2, "from": "builder", "kind": "work_done", "text": "hello added", "turn": 1}
    want = _recording(
        typed.posts({**post, "credit": {"commits": ["abc1234"], "files": ["hello.txt"]}}), "builder"
    )
    got = _recording(
        typed.posts({**post, "credit": {"commits": ["def5678"], "files": ["other.txt"]}}), "builder"
    )
    d = rp.compare(want, got, paths=[])
    assert d is not None and (d.turn, d.step) == (1, "credit"), d
    assert "hello.txt" in d.expected and "other.txt" in d.got
    d = rp.compare(want, _recording(want.posts, "reviewer"), paths=[])
    assert d is not None and (d.turn, d.step) == (1, "scheduler decision"), d
    runs = _recording(want.posts, "builder", agents=["claude", "claude"])
    d = rp.compare(want, runs, paths=[])
    assert d is not None and (d.turn, d.step, d.got) == (1, "agent CLI runs", "claude, claude"), d
    # the thread-tool call ids name the CLI's pid, and read_thread shows times: both masked
    calls = [
        typed.harness(
            {"type": "tool_started", "turn": 1, "call_id": f"claude-{pid}-1", "name": "read_thread"},
            {
                "type": "tool_finished",
                "turn": 1,
                "call_id": f"claude-{pid}-1",
                "result": f"#1 user [say] {t}",
            },
        )
        for pid, t in ((41, "2026-12-02T04:51:31.467Z"), (97, "2026-12-03T01:00:00.000Z"))
    ]
    a, b = _recording(want.posts, "builder"), _recording(want.posts, "builder")
    a.harness += calls[0]
    b.harness += calls[1]
    assert rp.compare(a, b, paths=[]) is None


def _recording(posts: list[Post], scheduled: str, agents: list[str] | None = None) -> rp.Recording:
    harness = typed.harness(
        {"type": "turn_started", "turn": 1, "messages": [{"role": "user", "content": "p"}]},
        *({"type": "agent_started", "turn": 1, "agent": a} for a in agents or ["claude"]),
    )
    events = typed.events({"type": "scheduled", "turn": 1, "participant": scheduled, "rule": "handoff"})
    return rp.Recording(posts, events, harness, Path("."), "base", Path("."))


def test_the_stand_in_reads_each_clis_calls_and_server():
    assert standin.thread_calls(
        "codex",
        {
            "type": "item.started",
            "item": {
                "type": "mcp_tool_call",
                "server": "autodev",
                "tool": "post",
                "arguments": {"kind": "say"},
            },
        },
    ) == [("post", {"kind": "say"})]
    assert standin.thread_calls(
        "copilot",
        {"type": "tool.execution_start", "data": {"toolName": "autodev-read_thread", "arguments": "{}"}},
    ) == [("read_thread", {})]
    assert (
        standin.thread_calls("gemini", {"type": "tool_use", "tool_name": "write_file", "parameters": {}})
        == []
    )
    server = {"mcpServers": {"autodev": {"command": "py", "args": ["-m", "x"], "env": {}}}}
    assert (
        standin.mcp_launch("copilot", ["--additional-mcp-config", json.dumps(server)], {})
        == server["mcpServers"]["autodev"]
    )
