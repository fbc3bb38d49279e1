"""The real coding-agent CLIs, offline: an agent turn (autodev's real MCP server, thread, harness
log) run by the CLI at the version pinned in the Makefile, its model served by a local server.

Opt-in: `make real-agents` installs the pinned CLIs (npm) and sets $AUTODEV_REAL_AGENTS_BIN to
their bin folder; without it these tests are skipped. With $AUTODEV_RECORD_FIXTURES set to a
folder, the raw streams are copied there (that is how tests/agents/fixtures was recorded).

Claude Code takes ANTHROPIC_BASE_URL: tests/agents/anthropic_local.py answers it. Codex takes a
model provider of its own (`-c model_providers.local...`, wire_api "responses") or its built-in
one (`-c openai_base_url=...`): tests/agents/responses_local.py answers both. Gemini CLI takes GOOGLE_GEMINI_BASE_URL:
tests/agents/gemini_local.py answers it. Copilot CLI has an offline mode with a model provider
of its own (COPILOT_OFFLINE, COPILOT_PROVIDER_BASE_URL, type "anthropic"): anthropic_local.py
answers it too. HOME (and CODEX_HOME) is a temp folder, so no login
of yours is read and nothing of the CLI's lands in your home."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from autodev.agents.turn import AgentSpec, run_agent_turn
from tests.agents.anthropic_local import AnthropicLocal, post, tool
from tests.agents.gemini_local import GeminiLocal
from tests.agents.gemini_local import call as gemini_call
from tests.agents.gemini_local import say as say_gemini
from tests.agents.responses_local import ResponsesLocal, say
from tests.agents.responses_local import call as codex_call
from tests.agents.test_agent_turn import make_ctx, records

pytestmark = pytest.mark.e2e

BIN = os.environ.get("AUTODEV_REAL_AGENTS_BIN", "")


def cli(name: str) -> str:
    exe = Path(BIN) / name
    if not BIN or not exe.exists():
        pytest.skip(f"the real {name} CLI is not installed: `make real-agents` runs these tests")
    return str(exe)


def version(exe: str) -> str:
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    return re.search(r"\d+\.\d+\.\d+", out.stdout).group(0)  # "2.1.332 (Claude Code)", "codex-cli 0.171.0"


def record(run: Path, name: str) -> None:
    to = os.environ.get("AUTODEV_RECORD_FIXTURES")
    if to:
        for f in sorted((run / "agents").glob("*.jsonl")):
            shutil.copy(f, Path(to) / f"{name}-{f.stem.split('-')[1]}.jsonl")  # t1-2-claude: run 2


@pytest.fixture
def claude(tmp_path, monkeypatch):
    exe = cli("claude")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AUTODEV_CLAUDE_BIN", exe)
    monkeypatch.setenv("LOCAL_ANTHROPIC_KEY", "sk-ant-local-not-a-key")
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
    return exe


def test_claude_gated_turn_refuses_the_shell_writes_and_posts_through_mcp(
    repo, tmp_path, claude, monkeypatch
):
    steps = [
        tool("Bash", {"command": "ls", "description": "list"}, 1),
        tool("Write", {"file_path": str(repo / "hello.txt"), "content": "hi\n"}, 2),
        post({"kind": "say", "text": "hello from the real claude"}),
    ]
    with AnthropicLocal(steps) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        ctx = make_ctx(repo, tmp_path / "run", timeout=120)
        spec = AgentSpec(["claude"], tmp_path / "run", effort="low", key_env="LOCAL_ANTHROPIC_KEY")
        result = run_agent_turn(ctx, spec)
    record(tmp_path / "run", f"claude-{version(claude)}-gated")
    assert result.post is not None and result.post.text == "hello from the real claude"
    assert [p.text for p in ctx.logs.thread.read(1, 10)] == ["hello from the real claude"]
    assert (repo / "hello.txt").read_text() == "hi\n"
    convo = [r["body"] for r in srv.requests if r["body"].get("tools")]
    assert all(b.get("output_config", {}).get("effort") == "low" for b in convo)  # --effort low
    assert not any(t["name"] == "Bash" for t in convo[0]["tools"])  # gated: no shell at all
    raw = next((tmp_path / "run" / "agents").glob("*.jsonl")).read_text()
    refusal = [json.loads(x) for x in raw.splitlines() if '"tool_result"' in x][0]
    assert refusal["message"]["content"][0]["is_error"], refusal  # the Bash call was refused
    assert result.spent.total.prompt_tokens == 4 * 160 and result.spent.total.completion_tokens == 4 * 30
    assert [r["type"] for r in records(tmp_path / "run" / "harness.jsonl")][-1] == "turn_finished"


def test_claude_exit_without_post_is_nudged_in_its_own_session(repo, tmp_path, claude, monkeypatch):
    steps = [
        [{"type": "text", "text": "thinking, no post yet"}],
        post({"kind": "say", "text": "after the nudge"}),
    ]
    with AnthropicLocal(steps) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        ctx = make_ctx(repo, tmp_path / "run", timeout=120)
        result = run_agent_turn(ctx, AgentSpec(["claude"], tmp_path / "run", key_env="LOCAL_ANTHROPIC_KEY"))
    record(tmp_path / "run", f"claude-{version(claude)}-nudged")
    assert result.post is not None and result.post.text == "after the nudge"
    started = [r for r in records(tmp_path / "run" / "harness.jsonl") if r["type"] == "agent_started"]
    assert started[0]["resume"] is None and started[1]["resume"]  # --resume SESSION
    convo = [r["body"] for r in srv.requests if r["body"].get("tools")]
    assert len(convo[1]["messages"]) > len(convo[0]["messages"])  # the session's history came back
    # tokens are each run's own, the cost of the resumed run is counted once
    first, second = (
        r["usage"] for r in records(tmp_path / "run" / "harness.jsonl") if r["type"] == "agent_finished"
    )
    assert second["cost"] == pytest.approx(first["cost"] * 2, rel=0.01)  # two answers vs one
    assert result.spent.total.cost == pytest.approx(first["cost"] + second["cost"])


def codex_provider(provider: str, url: str) -> list[str]:
    """`-c` flags pointing Codex at the local server: a provider of its own, or the built-in one."""
    if provider == "openai":
        # `openai_base_url` (OPENAI_BASE_URL is not read by 0.171.0); `chatgpt_base_url` keeps
        # its model-list fetch local. It tries a websocket first, then falls back to HTTP (~6 s).
        return ["-c", f'openai_base_url="{url}"', "-c", f'chatgpt_base_url="{url}"']
    conf = {"name": "local", "base_url": url, "wire_api": "responses", "env_key": "LOCAL_OPENAI_KEY"}
    args = ["-c", 'model_provider="local"']
    for k, v in conf.items():
        args += ["-c", f'model_providers.local.{k}="{v}"']
    return args


def test_codex_resumes_its_session_and_its_cumulative_usage_counts_once(repo, tmp_path, monkeypatch):
    exe = cli("codex")
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    for k, v in {"HOME": home, "CODEX_HOME": home / ".codex", "AUTODEV_CODEX_BIN": exe}.items():
        monkeypatch.setenv(k, str(v))
    monkeypatch.setenv("LOCAL_OPENAI_KEY", "sk-local-not-a-key")
    with ResponsesLocal([say("thinking, no post yet")]) as srv:
        args = codex_provider("local", srv.url)
        ctx = make_ctx(repo, tmp_path / "run", timeout=120)
        spec = AgentSpec(["codex"], tmp_path / "run", model="gpt-local", effort="low", extra_args=args)
        spec.key_env = "LOCAL_OPENAI_KEY"
        result = run_agent_turn(ctx, spec)
    record(tmp_path / "run", f"codex-{version(exe)}-nudged")
    assert result.post is None and result.reason == "the agent exited twice without posting"
    started = [r for r in records(tmp_path / "run" / "harness.jsonl") if r["type"] == "agent_started"]
    finished = [r for r in records(tmp_path / "run" / "harness.jsonl") if r["type"] == "agent_finished"]
    assert started[1]["resume"] == finished[0]["session"]  # `codex exec ... resume SESSION`
    first, second = (b["body"] for b in srv.requests)
    assert len(second["input"]) > len(first["input"]) and first["reasoning"]["effort"] == "low"
    # the resumed run's turn.completed says 400/50 for the session; 200/25 of it were the first run's
    assert [f["usage"]["prompt_tokens"] for f in finished] == [200, 200]
    assert (
        result.spent.total.prompt_tokens,
        result.spent.total.completion_tokens,
        result.spent.total.cached_tokens,
    ) == (400, 50, 100)


@pytest.mark.parametrize("provider", ["local", "openai"])
def test_codex_exec_posts_through_mcp_uncancelled(repo, tmp_path, monkeypatch, provider):
    exe = cli("codex")
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    for k, v in {"HOME": home, "CODEX_HOME": home / ".codex", "AUTODEV_CODEX_BIN": exe}.items():
        monkeypatch.setenv(k, str(v))
    monkeypatch.setenv("LOCAL_OPENAI_KEY", "sk-local-not-a-key")
    with ResponsesLocal([codex_call("post", {"kind": "say", "text": "hello from the real codex"})]) as srv:
        ctx = make_ctx(repo, tmp_path / "run", timeout=120)
        spec = AgentSpec(
            ["codex"], tmp_path / "run", model="gpt-local", extra_args=codex_provider(provider, srv.url)
        )
        spec.key_env = "LOCAL_OPENAI_KEY"
        result = run_agent_turn(ctx, spec)
    if provider == "local":  # the two streams are alike
        record(tmp_path / "run", f"codex-{version(exe)}-posted")
    assert result.post is not None and result.post.text == "hello from the real codex"
    assert [p.text for p in ctx.logs.thread.read(1, 10)] == ["hello from the real codex"]
    convo = [r["body"] for r in srv.requests if r["body"].get("tools")]
    autodev = [t for t in convo[0]["tools"] if t.get("name") == "mcp__autodev"]
    assert autodev and autodev[0]["type"] == "namespace"  # the MCP tools, offered as one namespace
    # exec mode did not cancel the call (openai/codex#16685): its result went back to the model
    outputs = [i for i in convo[-1]["input"] if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and "posted" in json.dumps(outputs).lower(), outputs
    raw = next((tmp_path / "run" / "agents").glob("*.jsonl")).read_text()
    calls = [
        json.loads(x)["item"] for x in raw.splitlines() if '"mcp_tool_call"' in x and "item.completed" in x
    ]
    assert [(c["server"], c["tool"], c["status"]) for c in calls] == [("autodev", "post", "completed")]
    assert [r["type"] for r in records(tmp_path / "run" / "harness.jsonl")][-1] == "turn_finished"


@pytest.fixture
def gemini_run(tmp_path, monkeypatch):
    """The real Gemini CLI's environment and a run folder for its turn."""
    exe = cli("gemini")
    # Gemini CLI 0.61.0 skips a settings file below a world-writable folder (/tmp, where pytest's
    # temp folders are, and the checkout may be): the run folder stays in /tmp, and the settings
    # file goes to a private folder in the user's real home, as AUTODEV_GEMINI_SETTINGS_DIR says.
    private = Path(tempfile.mkdtemp(prefix="gemini-settings-", dir=_private_base()))
    home = tmp_path / "home"
    home.mkdir()
    for k, v in {
        "HOME": home,
        "AUTODEV_GEMINI_BIN": exe,
        "LOCAL_GEMINI_KEY": "local-not-a-key",
        "AUTODEV_GEMINI_SETTINGS_DIR": private,
    }.items():
        monkeypatch.setenv(k, str(v))
    run = tmp_path / "run"
    run.mkdir()
    yield exe, run
    assert not list(private.glob("gemini-settings-*"))  # it held the turn's token
    shutil.rmtree(private, ignore_errors=True)


def _private_base() -> Path:
    """A folder no other user may write to, above it too (the real home's cache)."""
    from autodev.agents.adapters import world_writable_above

    base = Path.home() / ".cache" / "autodev-tests"
    base.mkdir(parents=True, exist_ok=True, mode=0o700)
    if world_writable_above(base) is not None:
        pytest.skip(f"no private folder for Gemini's settings: {base} is below a world-writable folder")
    return base


def gemini_turn(repo: Path, run: Path, steps: list[dict], monkeypatch):
    with GeminiLocal(steps) as srv:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.url)
        ctx = make_ctx(repo, run, timeout=120)
        return run_agent_turn(
            ctx, AgentSpec(["gemini"], run, model="gemini-2.5-flash", key_env="LOCAL_GEMINI_KEY")
        )


def test_gemini_posts_through_mcp_and_writes_with_auto_edit(repo, gemini_run, monkeypatch):
    exe, run = gemini_run
    steps = [
        gemini_call("write_file", {"file_path": str(repo / "hello.txt"), "content": "hi\n"}),
        gemini_call("post", {"kind": "say", "text": "hello from the real gemini"}),
    ]
    result = gemini_turn(repo, run, steps, monkeypatch)
    record(run, f"gemini-{version(exe)}-write-post")
    assert result.post is not None and result.post.text == "hello from the real gemini"
    assert (repo / "hello.txt").read_text() == "hi\n"  # auto_edit, with --skip-trust
    assert not list((run / "agents").glob("gemini-settings-*"))  # it held the turn's token
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert [e["name"] for e in events if e["type"] == "tool" and e.get("agent")] == ["write_file"]
    assert result.spent.total.prompt_tokens > 0 and result.spent.total.completion_tokens > 0


def test_gemini_exit_without_post_is_nudged_in_its_own_session(repo, gemini_run, monkeypatch):
    exe, run = gemini_run
    # The local server answers by how many model replies the request carries, so the post
    # comes only if the nudge run really resumed the first run's session (its history).
    steps = [
        say_gemini("thinking, no post yet"),
        gemini_call("post", {"kind": "say", "text": "after the nudge"}),
    ]
    result = gemini_turn(repo, run, steps, monkeypatch)
    record(run, f"gemini-{version(exe)}-nudged")
    assert result.post is not None and result.post.text == "after the nudge"
    started = [r for r in records(run / "harness.jsonl") if r["type"] == "agent_started"]
    finished = [r for r in records(run / "harness.jsonl") if r["type"] == "agent_finished"]
    assert started[0]["resume"] is None and started[1]["resume"] == finished[0]["session"]  # --resume


def test_copilot_gated_turn_denies_the_shell_and_posts_through_mcp(repo, tmp_path, monkeypatch):
    exe = cli("copilot")
    home = tmp_path / "home"
    home.mkdir()
    for k, v in {"HOME": home, "AUTODEV_COPILOT_BIN": exe, "COPILOT_OFFLINE": "true"}.items():
        monkeypatch.setenv(k, str(v))
    monkeypatch.setenv("COPILOT_PROVIDER_TYPE", "anthropic")
    monkeypatch.setenv("COPILOT_PROVIDER_API_KEY", "local-not-a-key")
    steps = [
        tool("bash", {"command": "touch pwned.txt", "description": "x"}, 1),
        post({"kind": "say", "text": "hello from the real copilot"}),
    ]
    with AnthropicLocal(steps) as srv:
        monkeypatch.setenv("COPILOT_PROVIDER_BASE_URL", srv.url)
        ctx = make_ctx(repo, tmp_path / "run", timeout=120)
        result = run_agent_turn(ctx, AgentSpec(["copilot"], tmp_path / "run", model="claude-sonnet-4.5"))
    record(tmp_path / "run", f"copilot-{version(exe)}-gated")
    assert result.post is not None and result.post.text == "hello from the real copilot"
    assert not (repo / "pwned.txt").exists()  # --deny-tool shell
    tools = [t["name"] for t in srv.requests[0]["body"]["tools"]]
    assert "autodev-post" in tools  # how Copilot CLI names autodev's post
    started, finished = (
        [r for r in records(tmp_path / "run" / "harness.jsonl") if r["type"] == t]
        for t in ("agent_started", "agent_finished")
    )
    assert len(started) == 1 and finished[0]["session"]  # the result line's sessionId


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_doctor_asks_the_cli_itself_whether_it_is_logged_in(agent, tmp_path):
    from autodev.agents.adapters import adapter

    exe = cli(agent)
    home = tmp_path / "home"
    home.mkdir()
    ad = adapter(agent)
    # the CLI's key variables are left out, as for a turn without api_key_env
    environ = {"HOME": str(home), "PATH": os.environ["PATH"], **{k: "sk-not-a-key" for k in ad.key_vars}}
    logged, how = ad.login(environ, None, exe)
    assert not logged and how == f"no login (`{agent} {' '.join(ad.status_args)}` exit 1)"
    assert ad.login({**environ, "MY_KEY": "k"}, "MY_KEY", exe) == (True, "API-key mode (MY_KEY set)")
