"""Following events.jsonl: a bounded tail first, then only what is appended; a torn append is
read once it is whole; a replaced file starts again from its tail."""

from __future__ import annotations

import json
import os

from autodev.panel.feed import EventTail
from autodev.user.events_view import FOLD_CHARS, event_text


def append(path, *recs, raw: bytes = b"") -> None:
    with open(path, "ab") as f:
        for r in recs:
            f.write((json.dumps(r) + "\n").encode())
        f.write(raw)


def test_bounded_tail_then_follow(tmp_path):
    p = tmp_path / "events.jsonl"
    append(p, *({"type": "tool", "n": i} for i in range(1000)))
    t = EventTail(p, tail_records=50)
    first = t.read_new()
    assert [r["n"] for r in first] == list(range(950, 1000))
    assert t.read_new() == []
    append(p, {"type": "tool", "n": 1000}, raw=b'{"type": "to')  # the next append is torn
    assert [r["n"] for r in t.read_new()] == [1000]
    append(p, raw=b'ol", "n": 1001}\n')
    assert [r["n"] for r in t.read_new()] == [1001]


def test_byte_bound_cuts_the_first_partial_line(tmp_path):
    p = tmp_path / "events.jsonl"
    append(p, *({"type": "tool", "pad": "x" * 100, "n": i} for i in range(100)))
    got = EventTail(p, tail_records=1000, tail_bytes=1000).read_new()
    assert 0 < len(got) < 10 and got[-1]["n"] == 99
    assert [r["n"] for r in got] == list(range(100 - len(got), 100))


def test_missing_then_replaced_file(tmp_path):
    p = tmp_path / "events.jsonl"
    t = EventTail(p)
    assert t.read_new() == []
    append(p, {"type": "state", "n": 1}, {"type": "state", "n": 2})
    assert [r["n"] for r in t.read_new()] == [1, 2]
    tmp = tmp_path / "new.jsonl"
    append(tmp, {"type": "state", "n": 9})
    os.replace(tmp, p)
    assert [r["n"] for r in t.read_new()] == [9]


def test_feed_folds_long_posts_until_expanded():
    post = {
        "type": "post",
        "seq": 3,
        "from": "builder",
        "kind": "work_done",
        "handoff": "reviewer",
        "text": "y" * (FOLD_CHARS + 50),
        "credit": {"commits": ["abcdef1234"], "files": []},
    }
    folded, full = event_text(post).plain, event_text(post, expanded=True).plain
    assert "[credited: abcdef1]" in folded and "→ reviewer" in folded
    assert "folded" in folded and "y" * (FOLD_CHARS + 50) not in folded
    assert "y" * (FOLD_CHARS + 50) in full and "folded" not in full
    assert event_text({"type": "generation", "participant": "b"}) is None
    wait = event_text({"type": "wait", "participant": "b", "delay": 30, "due": 0}).plain
    assert "b waits 30s" in wait


def test_compaction_is_a_feed_line():
    line = event_text(
        {
            "type": "compacted",
            "participant": "b",
            "model": "openai/x",
            "hard": False,
            "stubbed": 3,
            "tokens_before": 9000,
            "tokens_after": 4000,
        }
    ).plain
    assert "b: compacted to fit openai/x's window" in line and "3 results" in line and "9000" in line
    hard = event_text({"type": "compacted", "participant": "b", "model": "m", "hard": True}).plain
    assert "hard" in hard


def _kinds() -> list[type]:
    from autodev.records import events

    return [
        c
        for c in vars(events).values()
        if isinstance(c, type) and issubclass(c, events.Event) and "type" in c.model_fields
        and isinstance(c.model_fields["type"].default, str)
    ]  # fmt: skip


def test_every_event_kind_reads_as_words_in_the_feed():
    from autodev.user.events_view import event_text

    kinds = _kinds()
    assert len(kinds) > 40
    for kind in kinds:
        name = kind.model_fields["type"].default
        rec = {"type": name, "run": "r1", "ts": "2026-12-03T10:00:00.000Z", "participant": "builder",
               "turn": 3, "seq": 4, "n": 1, "to_seq": 2, "server": "github", "agent": "claude"}  # fmt: skip
        line = event_text(rec)
        if line is None:  # generations: summed in the header, not a line
            continue
        assert name not in line.plain or "_" not in name, (name, line.plain)
    unknown = event_text({"type": "brand_new_thing", "run": "r1", "ts": "2026-12-03T10:00:00.000Z"})
    assert (
        unknown is not None and "brand new thing" in unknown.plain and "brand_new_thing" not in unknown.plain
    )
    stopped = event_text({"type": "turn_stopped", "run": "r1", "ts": "2026-12-03T10:00:00.000Z",
                          "participant": "builder", "turn": 3})  # fmt: skip
    assert (
        stopped is not None
        and stopped.plain == "■ turn 3 of builder cut by stop: it continues on the next start"
    )


# Every kind's Feed line on a line with its fields, pinned as the Feed showed it before its dispatch
# became one `match` per family (text and style).
_BASE = {"run": "r1", "ts": "2026-12-03T10:00:00.000Z", "participant": "builder", "turn": 3, "seq": 4,
         "n": 1, "to_seq": 2, "server": "github", "agent": "claude"}  # fmt: skip
_FIELDS: dict[str, dict[str, object]] = {
    "daemon_started": {"pid": 41},
    "state": {"state": "paused", "reason": {"code": "user", "text": "asked"}},
    "control": {"action": "pause"},
    "warning": {"message": "low disk"},
    "error": {"message": "boom"},
    "team_reloaded": {"participants": ["a", "b"]},
    "config_refused": {"message": "bad key"},
    "budget_reached": {"text": "spent $5"},
    "scheduled": {"rule": "handoff", "why": "asked"},
    "post": {"seq": 4, "from": "builder", "kind": "say", "text": "hi"},
    "turn_started": {},
    "turn_resumed": {"step": 2},
    "turn_ended": {"steps": 5, "posted": 7},
    "turn_stopped": {},
    "silent_turn": {"reason": "no post", "streak": 2},
    "generation": {},
    "failover": {"model": "m1", "to": "m2"},
    "retry": {"attempt": 2, "delay": 4, "error": "429"},
    "compacted": {"model": "m1", "hard": False, "stubbed": 3, "tokens_before": 900, "tokens_after": 300},
    "context_exceeded": {"model": "m1"},
    "tool": {"name": "shell"},
    "tool_interrupted": {"name": "shell"},
    "tool_crashed": {"name": "edit", "replay_safe": True},
    "tool_refused": {"name": "shell"},
    "command_refused": {"command": "git push"},
    "git_quarantined": {"paths": [".git", "x/.git"]},
    "branch_moved_back": {"branch": "main", "dropped": ["a", "b"], "restored": True},
    "turn_recovered": {"step": 3, "posted": 6},
    "effects_recovered": {},
    "nudged": {},
    "agent_started": {},
    "agent_finished": {"exit_code": 0},
    "agent_killed": {"pid": 77},
    "agent_timeout": {},
    "agent_text": {"text": "working"},
    "agent_limit": {"text": "5h window"},
    "agent_error": {"text": "crashed"},
    "wait": {"delay": 30, "due": 0},
    "gate_open": {"id": "g1", "declarer": "builder", "text": "push?"},
    "gate_decided": {"id": "g1", "decision": "approved", "by": "user"},
    "gate_used": {"ids": ["g1", "g2"]},
    "audit_started": {},
    "audit_stopped": {},
    "audit": {"accept": True},
    "evidence": {"summary": "✔ 12 passed", "command": "pytest"},
    "notice": {"id": "n2", "text": "heads up", "hold": "build"},
    "notice_answered": {"id": "n2"},
    "notice_pinned": {"id": "n2"},
    "notice_released": {"id": "n2"},
    "rewind": {"undo_of": 1},
    "hook": {
        "on": "post",
        "command": "make test",
        "subject": "#4",
        "ok": False,
        "problem": "exited 1",
        "output": "FAILED",
    },
    "notified": {"via": "ntfy", "state": "done"},
    "notify_failed": {"via": "ntfy", "state": "done", "error": "timeout"},
    "mcp_server_started": {"tools": ["a", "b"]},
    "mcp_server_restarted": {"tools": ["a"]},
    "mcp_server_down": {"error": "EOF", "restart_in": 2.5},
    "mcp_server_reaped": {"pgid": 99},
    "leftover_killed": {"pgid": 77, "program": "bash"},
}
_LINES: dict[str, tuple[str, str] | None] = {
    "daemon_started": ("⚑ daemon started (pid 41)", "dim"),
    "state": ("● run paused: asked", "bold"),
    "control": ("⏯ pause applied", "bold"),
    "warning": ("⚠ low disk", "yellow"),
    "error": ("✖ builder: boom", "bold red"),
    "team_reloaded": ("⚑ team reloaded: a, b", "dim"),
    "config_refused": ("⚠ a change to .autodev/ was refused: bad key", "yellow"),
    "budget_reached": ("$ spent $5", "yellow"),
    "scheduled": ("· turn 3: builder speaks (handoff: asked)", "dim"),
    "post": ("#4    💬 builder say\n      hi", "cyan"),
    "turn_started": ("▶ turn 3 started: builder", "dim"),
    "turn_resumed": ("▶ turn 3 resumed: builder at step 2", "dim"),
    "turn_ended": ("■ turn 3 ended: builder, 5 steps, posted #7", "dim"),
    "turn_stopped": ("■ turn 3 of builder cut by stop: it continues on the next start", "yellow"),
    "silent_turn": ("… builder ended a turn without posting (no post; 2 in a row)", "yellow"),
    "generation": None,
    "failover": ("⇄ builder: m1 hit a usage limit → m2", "yellow"),
    "retry": ("↻ builder: retry 2 in 4s (429)", "yellow"),
    "compacted": (
        "⇲ builder: compacted to fit m1's window (older tool results stubbed; 3 results, ~900 → ~300 tokens)",
        "yellow",
    ),
    "context_exceeded": ("⇲ builder: m1 said the context window was exceeded", "yellow"),
    "tool": ("  ⚙ builder: shell", "dim"),
    "tool_interrupted": ("  ⚙ builder: shell was interrupted by a restart", "yellow"),
    "tool_crashed": ("  ⚙ builder: edit was cut by a crash; run again", "yellow"),
    "tool_refused": ("  ⛔ builder: shell refused", "yellow"),
    "command_refused": ("⛔ builder: command refused without an approved gate: git push", "red"),
    "git_quarantined": ("⛔ builder: moved out of the repository (git would run them): .git, x/.git", "red"),
    "branch_moved_back": ("⛔ builder: main moved back, dropping 2 commit(s); put back", "red"),
    "turn_recovered": ("▶ turn 3 of builder recovered after a restart at step 3, its post #6 kept", "dim"),
    "effects_recovered": ("▶ what post #4 does was applied after a restart", "dim"),
    "nudged": ("… builder was reminded to post", "dim"),
    "agent_started": ("  ⧉ builder: claude started", "dim"),
    "agent_finished": ("  ⧉ builder: claude finished (exit 0)", "dim"),
    "agent_killed": ("  ⧉ builder: a left-over agent CLI (pid 77) was ended", "yellow"),
    "agent_timeout": ("  ⧉ builder: claude ran past the turn's deadline and was ended", "yellow"),
    "agent_text": ("  ⧉ builder (claude): working", "dim"),
    "agent_limit": ("⏳ builder: claude reached its usage limit: 5h window", "yellow"),
    "agent_error": ("✖ builder: claude failed: crashed", "red"),
    "wait": ("⏳ builder waits 30s; next check at ?", "yellow"),
    "gate_open": ("🚧 gate g1 by builder needs your decision: push?", "bold magenta"),
    "gate_decided": ("🚧 gate g1 approved by user", "green"),
    "gate_used": ("🚧 builder used approved gate(s) g1, g2", "dim"),
    "audit_started": ("🔎 audit 1 of done #4 started", "dim"),
    "audit_stopped": ("🔎 audit 1 of done #4 cut by stop: it runs again on the next start", "yellow"),
    "audit": ("🔎 audit accepted #4", "bold green"),
    "evidence": ("🧪 tests on done #4: ✔ 12 passed (pytest)", "green"),
    "notice": ("📣 notice n2 from builder (holds build): heads up", "bold yellow"),
    "notice_answered": ("📣 notice n2 answered", "dim"),
    "notice_pinned": ("📣 notice n2 pinned", "dim"),
    "notice_released": ("📣 notice n2 released", "dim"),
    "rewind": ("↶ rewind 1 undone", "bold"),
    "hook": ("  ⚓ hook post `make test` on #4 exited 1: FAILED", "bold red"),
    "notified": ("✉ notified (ntfy): done", "dim"),
    "notify_failed": ("✉ notification (ntfy) for done failed: timeout", "bold red"),
    "mcp_server_started": ("⚙ MCP server github started (2 tools)", "dim"),
    "mcp_server_restarted": ("⚙ MCP server github restarted (1 tools)", "dim"),
    "mcp_server_down": ("⚠ MCP server github is down: EOF; restarting in 2.5 s", "yellow"),
    "mcp_server_reaped": ("⚙ MCP server github: a previous daemon's process group 99 was ended", "dim"),
    "leftover_killed": ("⚙ a previous daemon's bash (group 77) was still running: ended", "yellow"),
}


def test_every_kind_has_its_pinned_feed_line():
    from autodev.records.events import EVENTS

    assert set(_LINES) == set(_FIELDS) == set(EVENTS)
    for kind, want in _LINES.items():
        line = event_text({**_BASE, "type": kind, **_FIELDS[kind]})
        got = None if line is None else (line.plain, str(line.spans[-1].style) if line.spans else "")
        assert got == want, kind
