"""The wider command guard through the real daemon: the everyday forms issue 10 found running
ungated are refused with default settings, and an approved gate lets an opaque script run once."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import git, write_team
from tests.e2e.helpers import ACCEPT, PAIR, call, events, post, run_until_idle, step, tool_results, turns_of

REFUSED = [
    "bash push.sh",  # written by write_file in this run: the guard cannot see what it runs
    "rm -fr build",
    "echo push origin main | xargs git",
    "git -c alias.p=push p origin main",
    "git send-pack origin main",
    "git clean -fdx",
]


@pytest.mark.full
def test_everyday_forms_are_refused_by_default_and_a_gate_lets_the_script_run(repo, autodev, tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    git(repo, "remote", "add", "origin", str(remote))
    script = (
        step(
            "alice",
            call("write_file", path="push.sh", content="git push -q origin main\ntouch pushed-marker\n"),
            call("write_file", path="build/keep.txt", content="keep\n"),
            *[call("run_command", command=c) for c in REFUSED],
        )
        + post("alice", "gate", "I need to run `bash push.sh` to publish main")
        + step("alice", call("run_command", command="bash push.sh"))
        + post("alice", "done", "published")
        + ACCEPT
    )
    # Default gateRequired and gateOpaque; only the gate's decision is automatic.
    # The remote is a folder outside the repository, which a sandboxed push cannot write.
    write_team(repo, PAIR, script, 'gateAutoApprove = ["*bash push.sh*"]\nsandbox = "off"\n')
    run_until_idle(autodev, repo, "publish main", expect=0)

    t1, t2 = turns_of(repo, "alice")[:2]
    results = tool_results(t1[1])[2:]
    assert len(results) == len(REFUSED)
    for command, result in zip(REFUSED, results):
        assert result.startswith("error:") and "kind=gate" in result, (command, result)
    assert "push.sh" in results[0] and "gateOpaque" in results[0]
    assert (repo / "build" / "keep.txt").exists() and (repo / ".autodev").is_dir()
    assert [e["command"] for e in events(repo, "command_refused")] == REFUSED

    ran = tool_results(t2[1])[0]
    assert ran.startswith("exit code: 0"), ran
    assert (repo / "pushed-marker").exists()
    pushed = subprocess.run(
        ["git", "--git-dir", str(remote), "rev-parse", "main"], check=True, capture_output=True, text=True
    )
    assert pushed.stdout.strip() == git(repo, "rev-parse", "HEAD").strip()
    assert len(events(repo, "gate_used")) == 1
