"""Whole runs through the real CLI and daemon with a mixed team: a fake agent CLI builder, a
scripted-model reviewer and the scripted audit."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.conftest import git, shape, thread_of, write_team
from tests.e2e.helpers import (
    ACCEPT,
    events,
    post,
    start_detached,
    state_of,
    status_json,
    wait_for,
)


def team(agent: str, extra: str = "") -> str:
    return f"""
[[participants]]
name = "builder"
agent = "{agent}"
model = "fast-model"
write = true
{extra}

[[participants]]
name = "reviewer"
model = "scripted"

[audit]
model = "scripted"

[scripted]
path = "script.toml"
"""


REVIEW_DONE = post("reviewer", "done", "reviewed: fine") + ACCEPT
BUILD = [
    ["edit", "hello.txt", "hello\n"],
    ["post", {"kind": "work_done", "text": "hello added", "handoff": "reviewer"}],
]


def test_an_agent_builder_and_a_model_reviewer_run_to_an_accepted_done(repo, autodev, inproc, fakes):
    write_team(repo, team("codex"), REVIEW_DONE)
    fakes.play(codex=[BUILD])
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello.txt", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    posts = thread_of(repo)
    assert shape(posts) == [
        ("user", "say", None, None),
        ("builder", "work_done", "reviewer", True),
        ("reviewer", "done", None, None),
        ("audit", "say", None, None),
    ]
    assert posts[1]["credit"]["files"] == ["hello.txt"]
    (call,) = fakes.calls()
    assert call["argv"][:2] == ["exec", "--json"] and "fast-model" in call["argv"]
    st = status_json(inproc, repo)
    assert st["state"] == "complete"
    (builder,) = [p for p in st["participants"] if p["name"] == "builder"]
    assert builder["model"] == "agent:codex (fast-model)"
    assert (builder["prompt_tokens"], builder["completion_tokens"], builder["cached_tokens"]) == (150, 20, 50)
    assert builder["turns"] == 1 and builder["credited"] == 1
    gen = [e for e in events(repo, "generation") if e.get("model") == "agent:codex"]
    assert gen and gen[0]["prompt_tokens"] == 150


@pytest.mark.full
def test_a_limit_fails_over_to_another_cli(repo, autodev, fakes):
    write_team(repo, team("claude", 'failover = ["agent:gemini"]'), REVIEW_DONE)
    fakes.play(claude=[[["limit", "Claude AI usage limit reached"]]], gemini=[BUILD])
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello.txt", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [c["agent"] for c in fakes.calls()] == ["claude", "gemini"]
    assert shape(thread_of(repo))[1] == ("builder", "work_done", "reviewer", True)
    (fo,) = [e for e in events(repo, "failover") if e["model"] == "agent:claude"]
    assert fo["to"] == "agent:gemini"


def test_every_cli_limited_waits_until_the_reset(repo, autodev, inproc, fakes):
    write_team(repo, team("claude"), REVIEW_DONE)
    fakes.play(claude=[[["limit", "Claude AI usage limit reached"]]])
    start_detached(autodev, repo, "add hello.txt")
    wait_for("waiting", lambda: state_of(repo).get("state") == "waiting", timeout=90)
    st = state_of(repo)
    assert st["reason"]["code"] == "usage_limit"
    assert abs(st["wait"]["due"] - (time.time() + 3600)) < 120  # the rate-limit event's resetsAt
    inproc(repo, "stop", check=True)


@pytest.mark.full
def test_a_cli_that_never_posts_is_nudged_then_the_turn_is_silent(repo, autodev, fakes):
    write_team(repo, team("copilot"), REVIEW_DONE)
    fakes.play(copilot=[[["text", "I looked around"]], [["text", "still looking"]], BUILD])
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello.txt", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    silent = [e for e in events(repo, "turn_ended") if e["participant"] == "builder"][0]
    assert silent["posted"] is None and silent["reason"] == "the agent exited twice without posting"
    first, second = fakes.calls()[:2]
    assert first["resume"] is None and second["resume"].startswith("copilot-session-")


@pytest.mark.full
def test_kill_9_mid_turn_restarts_the_cli_turn_and_credits_once(repo, autodev, inproc, fakes):
    write_team(repo, team("claude"), REVIEW_DONE)
    fakes.play(claude=[[["text", "starting"], *BUILD[:1], ["sleep", 120]], BUILD])
    pid = start_detached(autodev, repo, "add hello.txt")
    wait_for(
        "the CLI mid-turn",
        lambda: fakes.child.exists() and fakes.child.read_text().count("\n") == 2,
        timeout=90,
    )
    old_child, old_cli = (int(x) for x in fakes.child.read_text().split())
    os.kill(pid, signal.SIGKILL)
    wait_for("the daemon to die", lambda: not _alive(pid), timeout=10)
    # its own session, but it dies with the daemon (die_with_parent); what it started lives on
    # in its group until the restarted daemon ends that group, first of all (leftover_killed)
    wait_for("the CLI to die with the daemon", lambda: not _alive(old_cli), timeout=10)
    assert _alive(old_child)
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not _alive(old_cli) and not _alive(old_child)
    assert [e["pgid"] for e in events(repo, "leftover_killed")] == [old_cli]
    # the turn's own check (for what an older daemon, without the ledger, left) finds it ended
    assert events(repo, "agent_killed") == []
    posts = thread_of(repo)
    work = [p for p in posts if p["kind"] == "work_done"]
    assert len(work) == 1 and work[0]["credit"]["files"] == ["hello.txt"]
    assert len(work[0]["credit"]["commits"]) == 1
    assert git(repo, "log", "--format=%s").splitlines().count("claude: hello.txt") == 1
    assert shape(posts)[-2:] == [("reviewer", "done", None, None), ("audit", "say", None, None)]
    # the killed run's one answer (30 + 10 cached prompt, 7 output) counts, then the new run's
    # own figure (150 prompt with 50 cached, 20 output)
    (builder,) = [p for p in status_json(inproc, repo)["participants"] if p["name"] == "builder"]
    assert (builder["prompt_tokens"], builder["completion_tokens"], builder["cached_tokens"]) == (190, 27, 60)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.full
def test_a_limited_cli_fails_over_to_a_model_for_the_rest_of_the_turn(repo, autodev, fakes):
    from tests.e2e.helpers import call, step

    write_team(
        repo,
        team("gemini", 'failover = ["scripted"]'),
        step("builder", call("write_file", path="m.txt", content="m\n"))
        + post("builder", "work_done", "m added by the model", "reviewer")
        + REVIEW_DONE,
    )
    fakes.play(gemini=[[["limit", "Quota exceeded for quota metric (RESOURCE_EXHAUSTED)"]]])
    r = autodev(repo, "start", "--foreground", "--until-idle", "add m.txt", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    posts = thread_of(repo)
    assert shape(posts)[1] == ("builder", "work_done", "reviewer", True)
    assert posts[1]["text"] == "m added by the model" and posts[1]["credit"]["files"] == ["m.txt"]
    assert [e["to"] for e in events(repo, "failover")] == [None, "scripted"]


@pytest.mark.full
def test_agents_gated_overrides_auto_and_the_raw_stream_is_masked(repo, autodev, fakes):
    from tests.conftest import run_dir

    write_team(
        repo,
        team("claude", 'agent_permission = "auto"\napi_key_env = "MY_CLAUDE_KEY"'),
        REVIEW_DONE,
        config="agentsGated = true\n",
    )
    fakes.play(claude=[[["env", "ANTHROPIC_API_KEY"], ["tell", "please look at hello.txt"], *BUILD]])
    secret = "sk-ant-agents-test-0123456789"
    r = autodev(
        repo,
        "start",
        "--foreground",
        "--until-idle",
        "add hello.txt",
        timeout=180,
        env={"MY_CLAUDE_KEY": secret},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    (call,) = fakes.calls()
    allowed = call["argv"][call["argv"].index("--allowedTools") + 1].split(",")
    assert "Bash" not in allowed and "mcp__autodev__post" in allowed
    assert "Bash" not in call["argv"][call["argv"].index("--tools") + 1].split(",")
    assert call["argv"][call["argv"].index("--permission-mode") + 1] == "dontAsk"
    folder = run_dir(repo)
    raw = next((folder / "agents").glob("*.jsonl")).read_text()
    err = next((folder / "agents").glob("*.stderr")).read_text()
    assert "ANTHROPIC_API_KEY=[redacted]" in raw and "stderr has [redacted]" in err
    for f in folder.rglob("*"):
        if f.is_file():
            assert secret not in f.read_text(errors="replace"), f
    notices = [e for e in events(repo, "notice")] or [e for e in events(repo, "notice_raised")]
    assert "notice" in raw and notices, raw


@pytest.mark.full
def test_a_turn_past_turn_timeout_min_kills_the_cli_group_and_is_silent(repo, autodev, fakes):
    write_team(repo, team("codex"), REVIEW_DONE, config="turnTimeoutMin = 0.05\n")
    fakes.play(codex=[[["sleep", 120]]])
    r = autodev(repo, "start", "--foreground", "--until-idle", "add hello.txt", timeout=180)
    # Every turn is cut: after three silent turns in a row the run pauses (as for a model).
    assert r.returncode == 3 and "3 turns in a row without posting" in r.stdout, r.stdout + r.stderr
    cuts = events(repo, "agent_timeout")
    assert len(cuts) == 3
    child, cli = (int(x) for x in fakes.child.read_text().split())
    assert cuts[-1]["pid"] == cli and not _alive(cli) and not _alive(child)
    ended = [e for e in events(repo, "turn_ended") if e["participant"] == "builder"]
    assert [e["posted"] for e in ended] == [None] * 3
    assert all("turnTimeoutMin" in e["reason"] for e in ended)


@pytest.mark.full
def test_stop_mid_turn_kills_the_cli_and_start_continues_the_turn(repo, autodev, inproc, fakes):
    write_team(repo, team("gemini"), REVIEW_DONE)
    fakes.play(gemini=[[["sleep", 120]], BUILD])
    start_detached(autodev, repo, "add hello.txt")
    wait_for(
        "the CLI mid-turn",
        lambda: fakes.child.exists() and fakes.child.read_text().count("\n") == 2,
        timeout=90,
    )
    child, cli = (int(x) for x in fakes.child.read_text().split())
    inproc(repo, "stop", check=True)
    wait_for("the daemon to exit", lambda: status_json(inproc, repo)["daemon_pid"] is None, timeout=60)
    assert not _alive(cli) and not _alive(child)
    assert [e["participant"] for e in events(repo, "turn_stopped")] == ["builder"]
    r = autodev(repo, "start", "--foreground", "--until-idle", timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    posts = thread_of(repo)
    assert shape(posts)[1] == ("builder", "work_done", "reviewer", True)
    assert posts[1]["turn"] == 1  # the same turn, continued


def test_a_gemini_participant_whose_settings_gemini_would_ignore_is_refused(repo, inproc, tmp_path):
    """Every place for the settings file lies below world-writable /tmp (AUTODEV_HOME and HOME
    there, no XDG_RUNTIME_DIR): Gemini CLI 0.61.0 would ignore it, so start refuses with the fix."""
    from autodev.agents.adapters import world_writable_above

    if world_writable_above(tmp_path) is None:
        pytest.skip(f"{tmp_path} is not below a world-writable folder here")
    write_team(repo, team("gemini"), REVIEW_DONE)
    env = {"HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": "", "AUTODEV_GEMINI_SETTINGS_DIR": ""}
    r = inproc(repo, "start", "--foreground", "--until-idle", "go", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Gemini CLI 0.61.0 ignores a settings file below the world-writable" in r.stderr
    assert "AUTODEV_GEMINI_SETTINGS_DIR" in r.stderr and not thread_of(repo)
