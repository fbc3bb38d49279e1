"""The adapters against streams recorded from the real CLIs (tests/agents/fixtures, the CLI's
version in the name; recorded by `make real-agents` runs against tests/agents/anthropic_local.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autodev.agents.adapters import Claude, adapter
from autodev.agents.invocation import Invocation, McpLaunch
from autodev.agents.usage import RunUsage

FIXTURES = Path(__file__).parent / "fixtures"


def parsed(agent: str, name: str) -> list:
    out = []
    for line in (FIXTURES / name).read_text().splitlines():
        out += adapter(agent).read(line)
    return out


def test_claude_2_1_332_gated_run_with_a_refused_shell_a_write_and_a_post():
    events = parsed("claude", "claude-2.1.332-gated-1.jsonl")
    (session,) = [e for e in events if e.kind == "session"]
    assert session.session and events[0] == session
    assert [e.name for e in events if e.kind == "tool"] == ["Bash", "Write", "post"]
    assert "I will post now." in [e.text for e in events if e.kind == "text"]
    (usage,) = [e for e in events if e.kind == "usage"]
    # four answers of 120 input + 40 cache-read tokens and 30 output tokens
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (640, 120, 160)
    assert usage.cost == pytest.approx(0.004352)
    (final,) = [e for e in events if e.kind == "final"]
    assert final.session == session.session and not final.is_error
    used = RunUsage()
    for e in events:
        used.see(e)
    # the answers it reported on the way: one figure per answer id, as the final one has them
    assert len(used.steps) == 4 and sum(e.input_tokens for e in used.steps.values()) == 640
    assert used.unreported() is None  # the run printed its final figure: that one counts


def test_claude_2_1_332_resumed_session_reports_the_session_cost_and_its_own_tokens():
    first = [e for e in parsed("claude", "claude-2.1.332-nudged-1.jsonl") if e.kind == "usage"][0]
    events = parsed("claude", "claude-2.1.332-nudged-2.jsonl")
    (usage,) = [e for e in events if e.kind == "usage"]
    assert (first.input_tokens, first.output_tokens) == (160, 30)  # the first run: one answer
    assert (usage.input_tokens, usage.output_tokens) == (320, 60)  # the resumed run's own two
    assert usage.cost == pytest.approx(3 * first.cost)  # but the cost of all three answers
    assert adapter("claude").session_totals == ("cost",)


def test_claude_invocation_flags_of_2_1_332(tmp_path):
    inv = Invocation("do it", McpLaunch("py", ["-m", "x"], {}), tmp_path, model="m", effort="high")
    argv = Claude().argv("claude", inv)
    assert argv[argv.index("--tools") + 1] == "Read,Grep,Glob"  # gated, read-only: no shell
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[argv.index("--effort") + 1] == "high" and Claude().env(inv) == {}
    # The repository's .claude/settings*.json and .mcp.json are not read (issue 20).
    assert argv[argv.index("--setting-sources") + 1] == "user" and "--strict-mcp-config" in argv
    inv.gated, inv.write = False, True
    argv = Claude().argv("claude", inv)
    assert argv[argv.index("--tools") + 1] == "Read,Grep,Glob,Edit,Write,Bash"
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"


def test_codex_0_171_0_stream_and_its_resumed_session_usage():
    first = parsed("codex", "codex-0.171.0-nudged-1.jsonl")
    second = parsed("codex", "codex-0.171.0-nudged-2.jsonl")
    (s1,), (s2,) = ([e for e in ev if e.kind == "session"] for ev in (first, second))
    assert s1.session and s1.session == s2.session  # `exec resume` keeps the thread
    assert [e.text for e in first if e.kind == "text"] == ["thinking, no post yet"]
    # its "Model metadata ... not found" item is a warning, not an error of the run
    assert not [e for e in first + second if e.kind in ("error", "limit")]
    (u1,), (u2,) = ([e for e in ev if e.kind == "usage"] for ev in (first, second))
    assert (u1.input_tokens, u1.output_tokens, u1.cached_tokens) == (200, 25, 50)
    assert (u2.input_tokens, u2.output_tokens) == (400, 50)  # the session's, both runs
    assert adapter("codex").session_totals == ("input_tokens", "output_tokens", "cached_tokens")


def test_codex_0_171_0_mcp_call_of_autodev_post_is_a_tool_event():
    events = parsed("codex", "codex-0.171.0-posted-1.jsonl")
    assert [e.name for e in events if e.kind == "tool"] == ["post"]  # server autodev: the bare name
    assert [e.kind for e in events][-2:] == ["usage", "final"]


def test_gemini_0_61_0_stream_names_autodev_tools_mcp_autodev_post():
    events = parsed("gemini", "gemini-0.61.0-write-post-1.jsonl")
    assert events[0].kind == "session" and events[0].session
    assert [e.name for e in events if e.kind == "tool"] == ["write_file", "post"]
    (usage,) = [e for e in events if e.kind == "usage"]
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (900, 120, 180)
    assert events[-1].kind == "final" and not events[-1].is_error


def test_copilot_1_0_102_stream_offline_byok_with_the_shell_denied():
    events = parsed("copilot", "copilot-1.0.102-gated-1.jsonl")
    assert [e.name for e in events if e.kind == "tool"] == ["bash", "post"]  # autodev-post
    assert "I will post now." in [e.text for e in events if e.kind == "text"]
    (final,) = [e for e in events if e.kind == "final"]
    assert final.session  # the result line's sessionId: what --resume takes
    # its result has premium requests, not tokens: a Copilot turn reports no token usage
    assert not [e for e in events if e.kind == "usage"]


def test_gemini_settings_go_where_gemini_reads_them(tmp_path):
    from autodev.agents.adapters import GEMINI_SETTINGS_ENV, gemini_settings_folder, world_writable_above

    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    run = open_dir / "run" / "agents"
    assert world_writable_above(run) == open_dir
    # Nowhere private: the run folder and what makes it unreadable for Gemini (doctor/start refuse).
    assert gemini_settings_folder(run, {"HOME": str(open_dir / "home")}) == (run, open_dir)
    # A private folder named for it wins; then XDG_RUNTIME_DIR; a private run folder is used as is.
    private = Path("/usr/share/autodev-never-created")
    assert gemini_settings_folder(run, {GEMINI_SETTINGS_ENV: str(private)}) == (private, None)
    assert gemini_settings_folder(run, {"XDG_RUNTIME_DIR": "/usr/share"}) == (
        Path("/usr/share/autodev"),
        None,
    )
    assert gemini_settings_folder(Path("/usr/share/x"), {}) == (Path("/usr/share/x"), None)


@pytest.mark.parametrize("agent", ["claude", "codex", "copilot", "gemini"])
def test_a_line_of_another_shape_yields_nothing(agent):
    # progress text, a JSON value that is not an object, an unknown type, a used field of
    # another type: none of them is the CLI's known shape (the raw stream keeps them)
    for line in (
        "Loading…",
        "[1, 2]",
        '{"type": "something.new"}',
        '{"type": "result", "usage": 3, "stats": 3}',
    ):
        assert adapter(agent).read(line) == []
