"""An agent turn with the fake CLIs: real subprocesses in their own groups, autodev's real MCP
server (started by the fake CLI, called through the SDK), the real thread, harness log, events
and git crediting in a temp repository."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from autodev.agents.turn import AgentSpec, run_agent_turn
from autodev.harness.context import Limits, Logs, Models, Toolbox, Who
from autodev.harness.tools import Workspace
from autodev.harness.turn import AllModelsLimited, TurnContext
from autodev.store.events import Events
from autodev.store.journal import Journal
from autodev.store.thread import Thread
from tests.conftest import git, light

# Each turn starts the fake CLI and autodev's MCP server as programs of their own.
pytestmark = pytest.mark.e2e

AGENTS = ("claude", "codex", "copilot", "gemini")


def make_ctx(repo: Path, run: Path, *, timeout: float = 60.0, write: bool = True) -> TurnContext:
    run.mkdir(exist_ok=True)
    return TurnContext(
        Who(
            "r1", 1, "builder", can_write=write, team_writers={"builder": write, "reviewer": False}, repo=repo
        ),
        Logs(
            Thread(run / "thread.jsonl"), Events(run / "events.jsonl", "r1"), Journal(run / "harness.jsonl")
        ),
        Models([], "You are builder.", "Build the thing, then post."),
        Toolbox(Workspace(repo, write=write, command_timeout=30)),
        Limits(timeout_sec=timeout),
    )


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("agent", light(AGENTS))
def test_a_turn_edits_commits_and_posts_through_mcp(agent, repo, tmp_path, fakes):
    fakes.play(
        **{
            agent: [
                [
                    ["read", 1],
                    ["edit", "hello.txt", "hi\n"],
                    ["post", {"kind": "work_done", "text": "added hello"}],
                ]
            ]
        }
    )
    ctx = make_ctx(repo, tmp_path / "run")
    result = run_agent_turn(ctx, AgentSpec([agent], tmp_path / "run", model="m1"))
    assert result.post is not None and result.post.kind == "work_done"
    assert result.post.credit.files == ["hello.txt"]
    assert [p.text for p in ctx.logs.thread.read(1, 10)] == ["added hello"]
    assert result.spent.total.prompt_tokens == 150 and result.spent.total.completion_tokens == 20
    assert result.spent.models[f"agent:{agent}"].prompt_tokens == 150
    (call,) = fakes.calls()
    assert call["cwd"] == str(repo) and call["stdin_closed"]
    assert "m1" in call["argv"]
    raw = list((tmp_path / "run" / "agents").glob("t1-1-*.jsonl"))
    assert len(raw) == 1 and "autodev: posted as #1" in raw[0].read_text()
    types = [r["type"] for r in records(tmp_path / "run" / "harness.jsonl")]
    assert types[0] == "turn_started" and types[-1] == "turn_finished"
    assert {"agent_started", "agent_finished", "post_committed", "tool_started"} <= set(types)
    events = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "generation" and e["model"] == f"agent:{agent}" for e in events)


@pytest.mark.full
def test_only_the_first_post_counts(repo, tmp_path, fakes):
    fakes.play(claude=[[["post", {"kind": "say", "text": "one"}], ["post", {"kind": "say", "text": "two"}]]])
    ctx = make_ctx(repo, tmp_path / "run")
    result = run_agent_turn(ctx, AgentSpec(["claude"], tmp_path / "run"))
    assert result.post.text == "one"
    assert [p.text for p in ctx.logs.thread.read(1, 10)] == ["one"]
    raw = next((tmp_path / "run" / "agents").glob("*.jsonl")).read_text()
    assert "refused: you already posted this turn" in raw


@pytest.mark.full
def test_a_refused_post_reaches_the_agent_and_a_later_one_counts(repo, tmp_path, fakes):
    fakes.play(
        codex=[
            [
                ["post", {"kind": "work_done", "text": "nothing changed"}],
                ["post", {"kind": "say", "text": "ok"}],
            ]
        ]
    )
    ctx = make_ctx(repo, tmp_path / "run", write=False)
    result = run_agent_turn(ctx, AgentSpec(["codex"], tmp_path / "run"))
    assert result.post.text == "ok"
    raw = next((tmp_path / "run" / "agents").glob("*.jsonl")).read_text()
    assert "refused" in raw
    assert "read-only" in fakes.calls()[0]["argv"]


def test_exit_without_post_is_nudged_in_the_same_session_then_posts(repo, tmp_path, fakes):
    fakes.play(claude=[[["text", "thinking"]], [["post", {"kind": "say", "text": "after the nudge"}]]])
    ctx = make_ctx(repo, tmp_path / "run")
    result = run_agent_turn(ctx, AgentSpec(["claude"], tmp_path / "run"))
    assert result.post.text == "after the nudge"
    first, second = fakes.calls()
    assert first["resume"] is None and second["resume"].startswith("claude-session-")
    assert "post" in second["argv"][second["argv"].index("-p") + 1]  # the nudge is the prompt
    # Claude's cost of a resumed session includes the run before it: counted once
    assert result.spent.total.cost == pytest.approx(2 * 0.0123)
    assert (result.spent.total.prompt_tokens, result.spent.total.completion_tokens) == (300, 40)


@pytest.mark.full
def test_a_nudged_codex_session_counts_its_cumulative_usage_once(repo, tmp_path, fakes):
    fakes.play(codex=[[["text", "thinking"]], [["post", {"kind": "say", "text": "after the nudge"}]]])
    ctx = make_ctx(repo, tmp_path / "run")
    result = run_agent_turn(ctx, AgentSpec(["codex"], tmp_path / "run"))
    assert result.post.text == "after the nudge" and fakes.calls()[1]["resume"]
    # the resumed run reports 300/40 for the session: 150/20 of it are the first run's
    assert (
        result.spent.total.prompt_tokens,
        result.spent.total.completion_tokens,
        result.spent.total.cached_tokens,
    ) == (300, 40, 100)


def test_exit_twice_without_post_is_a_silent_turn(repo, tmp_path, fakes):
    fakes.play(gemini=[[["text", "hmm"]]])
    ctx = make_ctx(repo, tmp_path / "run")
    result = run_agent_turn(ctx, AgentSpec(["gemini"], tmp_path / "run"))
    assert result.post is None and result.reason == "the agent exited twice without posting"
    assert len(fakes.calls()) == 2
    assert ctx.logs.thread.last_seq == 0


@pytest.mark.full
@pytest.mark.parametrize("agent", AGENTS)
def test_a_usage_limit_fails_over_to_the_next_agent(agent, repo, tmp_path, fakes):
    other = "codex" if agent != "codex" else "claude"
    text = {
        "claude": "Claude AI usage limit reached",
        "codex": "You've hit your usage limit. Upgrade to Pro or try again at 11:59 PM.",
        "copilot": "Sorry, you have been rate-limited. Please wait a moment before trying again.",
        "gemini": "Quota exceeded for quota metric 'Gemini requests' (RESOURCE_EXHAUSTED)",
    }[agent]
    fakes.play(**{agent: [[["limit", text]]], other: [[["post", {"kind": "say", "text": "covered"}]]]})
    ctx = make_ctx(repo, tmp_path / "run")
    result = run_agent_turn(ctx, AgentSpec([agent, other], tmp_path / "run"))
    assert result.post.text == "covered"
    assert ctx.limited_until[f"agent:{agent}"] > time.time() + 60
    assert [c["agent"] for c in fakes.calls()] == [agent, other]


def test_every_agent_limited_raises_with_the_earliest_reset(repo, tmp_path, fakes):
    fakes.play(
        claude=[[["limit", "Claude AI usage limit reached"]]],
        codex=[[["limit", "You've hit your usage limit. Try again in 2 hours."]]],
    )
    ctx = make_ctx(repo, tmp_path / "run")
    with pytest.raises(AllModelsLimited) as e:
        run_agent_turn(ctx, AgentSpec(["claude", "codex"], tmp_path / "run"))
    # Claude's rate-limit event says one hour, Codex's text two: the run waits for the first.
    assert abs(e.value.reset_at - (time.time() + 3600)) < 120


def test_a_timeout_kills_the_process_group(repo, tmp_path, fakes):
    fakes.play(copilot=[[["sleep", 60]]])
    ctx = make_ctx(repo, tmp_path / "run", timeout=3)
    started = time.monotonic()
    result = run_agent_turn(ctx, AgentSpec(["copilot"], tmp_path / "run"))
    assert time.monotonic() - started < 15
    assert result.post is None and "turnTimeoutMin" in result.reason
    child, cli = (int(x) for x in fakes.child.read_text().split())
    for pid in (child, cli):
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), f"{pid} survived the turn's timeout"


@pytest.mark.full
def test_a_claude_run_killed_at_the_timeout_keeps_the_usage_it_reported_on_the_way(repo, tmp_path, fakes):
    fakes.play(claude=[[["text", "one"], ["text", "two"], ["sleep", 60]]])
    ctx = make_ctx(repo, tmp_path / "run", timeout=3)
    result = run_agent_turn(ctx, AgentSpec(["claude"], tmp_path / "run"))
    assert result.post is None and "turnTimeoutMin" in result.reason
    # two answers of 30 + 10 cached prompt tokens and 7 output tokens each; no final figure
    assert (
        result.spent.total.prompt_tokens,
        result.spent.total.completion_tokens,
        result.spent.total.cached_tokens,
    ) == (80, 14, 20)
    (finished,) = [r for r in records(tmp_path / "run" / "harness.jsonl") if r["type"] == "agent_finished"]
    assert finished["usage"]["prompt_tokens"] == 80 and finished["usage"]["model"] == "agent:claude"


def test_the_cli_gets_no_secret_but_its_own_key(repo, tmp_path, fakes, monkeypatch):
    from autodev.agents.turn import child_env

    monkeypatch.setenv("OTHER_API_KEY", "sk-other")
    monkeypatch.setenv("MY_ANTHROPIC_KEY", "sk-mine")
    env = child_env("claude", "MY_ANTHROPIC_KEY")
    assert "OTHER_API_KEY" not in env
    assert env["ANTHROPIC_API_KEY"] == "sk-mine" == env["MY_ANTHROPIC_KEY"]
    assert "OTHER_API_KEY" not in child_env("codex", None)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_git_identity_reaches_the_cli(repo):
    assert git(repo, "config", "user.name").strip() == "autodev tests"


@pytest.mark.full
@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_a_cli_settings_file_planted_during_the_run_stops_the_turn_before_the_cli_runs(
    agent, repo, tmp_path, fakes
):
    """Issue 20: a CLI runs outside the sandbox; settings a participant plants in the repository
    (MCP servers, hooks) would run there. What existed when the run began is the user's."""
    from autodev.agents import projectfiles
    from autodev.errors import RepositoryRefused

    (repo / ".gemini").mkdir()
    (repo / ".gemini" / "settings.json").write_text("{}")  # the user's own, before the run
    projectfiles.pin(repo)
    fakes.play(**{agent: [[["post", {"kind": "say", "text": "ok"}]]]})
    assert run_agent_turn(make_ctx(repo, tmp_path / "run"), AgentSpec([agent], tmp_path / "run")).post
    planted = {"codex": ".codex/config.toml", "gemini": ".gemini/settings.json"}[agent]
    (repo / planted).parent.mkdir(exist_ok=True)
    (repo / planted).write_text(
        '[mcp_servers.x]\ncommand = "touch"\n' if agent == "codex" else '{"mcpServers": {}}'
    )
    ctx = make_ctx(repo, tmp_path / "run2")
    with pytest.raises(RepositoryRefused, match=planted.split("/")[0]):
        run_agent_turn(ctx, AgentSpec([agent], tmp_path / "run2"))
    assert len(fakes.calls()) == 1  # the second turn never started the CLI


def test_claude_does_not_run_hooks_planted_in_the_repository(repo, tmp_path, fakes):
    mark = tmp_path / "MARK"
    (repo / ".claude").mkdir()
    hook = {"hooks": [{"type": "command", "command": f"touch {mark}"}]}
    (repo / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [hook]}}))
    fakes.play(claude=[[["post", {"kind": "say", "text": "ok"}]]])
    assert run_agent_turn(make_ctx(repo, tmp_path / "run"), AgentSpec(["claude"], tmp_path / "run")).post
    assert not mark.exists()
