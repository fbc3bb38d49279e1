"""The harness log's bytes: every record kind, as main wrote it before its writers took the
models (lines of scripted runs, and the daemon's, rewind's and recovery's lines from their code),
is written back byte for byte from its model, key order included; and a turn run now writes
each kind with the keys main wrote."""

from __future__ import annotations

import json
import typing
from pathlib import Path

from autodev import records
from autodev.records.harness_log import HarnessRecord, line
from tests.harness.test_turn import POST_DONE, Run

# As main (8bd0d8a) wrote them.
LINES = [
    '{"type":"turn_started","run":"r1","turn":1,"ts":1796472235.33423,"participant":"builder","head":"c3c2188b0b21da44eba790da965f3c38d69794a4","baseline":{"head":"c3c2188b0b21da44eba790da965f3c38d69794a4","dirty":{},"branch":"refs/heads/main"},"messages":[{"role":"system","content":"you build"},{"role":"user","content":"turn 1: your move"}]}',
    '{"type":"generation_started","run":"r1","turn":1,"ts":1796472235.33502,"step":1,"attempt":1,"model":"scripted"}',
    '{"type":"generation_finished","run":"r1","turn":1,"ts":1796472235.335689,"step":1,"message":{"role":"assistant","content":"thinking..."},"source":"openai/builder","finish_reason":"stop","response_model":"openai/builder","model":"scripted","prompt_tokens":1278,"completion_tokens":2,"cached_tokens":0,"cost":null}',
    '{"type":"tool_started","run":"r1","turn":1,"ts":1796472235.645406,"call_id":"call_r1_1_0_1","name":"no_such_tool","args":{},"replay_safe":false}',
    '{"type":"tool_finished","run":"r1","turn":1,"ts":1796472236.290318,"call_id":"c1","result":"blocked by a before_tool hook: no pushes"}',
    '{"type":"post_started","run":"r1","turn":1,"ts":1796472236.180221,"id":"r1:t1:post:intent"}',
    '{"type":"post_committed","run":"r1","turn":1,"ts":1796472237.45033,"seq":1}',
    '{"type":"turn_finished","run":"r1","turn":1,"ts":1796472262.04092,"seq":1,"reason":""}',
    '{"type":"tool_finished","run":"r1","turn":1,"ts":1796472236.157497,"call_id":"call_r1_1_0_1","result":"interrupted: autodev restarted while this tool was running, so it may or may not have taken effect. Check the repository\'s state before you run it again.","synthetic":true}',
    '{"type":"compacted","run":"r1","turn":1,"ts":1796472235.719505,"step":4,"hard":false,"stubs":{"call_r1_1_0_0":"[compacted] The result of read_file({\\"path\\": \\"big.txt\\"}) was dropped to fit the context window; call it again if you still need it."}}',
    '{"type":"turn_started","run":"r1","turn":1,"ts":1796472248.76104,"participant":"builder","head":"c3c2188b0b21da44eba790da965f3c38d69794a4","baseline":{"head":"c3c2188b0b21da44eba790da965f3c38d69794a4","dirty":{},"branch":"refs/heads/main"},"messages":[{"role":"user","content":"You are builder.\\n\\nBuild the thing, then post."}],"agent":"gemini"}',
    '{"type":"agent_started","run":"r1","turn":1,"ts":1796472250.457809,"agent":"codex","pid":17469,"started":2032903.0,"resume":null,"stream":"agents/t1-2-codex.jsonl"}',
    '{"type":"agent_finished","run":"r1","turn":1,"ts":1796472255.476864,"agent":"copilot","pid":17484,"exit_code":null,"session":"copilot-session-17484","timed_out":true,"limit":null,"usage":null}',
    '{"type":"nudged","run":"r1","turn":1,"ts":1796472243.289712,"message":{"role":"user","content":"nudge"}}',
    '{"type":"generation_finished","run":"7134a206","turn":1,"ts":1796472280.233474,"step":1,"message":{"role":"assistant","tool_calls":[{"function":{"arguments":"{\\"kind\\": \\"done\\", \\"text\\": \\"ok\\"}","name":"post"},"id":"call_7134a206_1_0_0","type":"function"}],"content":null},"source":"openai/solo","finish_reason":"tool_calls","response_model":"solo","model":"scripted","prompt_tokens":1765,"completion_tokens":7,"cached_tokens":0,"cost":null}',
    '{"type":"tool_started","run":"r1","turn":1,"ts":1796472237.600201,"call_id":"call_r1_1_0_0","name":"read_file","args":{"path":"\\\\x85x"},"replay_safe":true}',
    '{"type":"turn_started","run":"r1","turn":1,"ts":1796472235.615625,"participant":"builder","head":"c3c2188b0b21da44eba790da965f3c38d69794a4","baseline":{"head":"c3c2188b0b21da44eba790da965f3c38d69794a4","dirty":{"big.txt":"10a49a40e20fe10fd6fa0b5704752da3c9bf695a03f5341e96bee4ee6f41db8f"},"branch":"refs/heads/main"},"messages":[{"role":"system","content":"you build"},{"role":"user","content":"turn 1: your move"}]}',
    '{"type":"generation_finished","run":"r1","turn":1,"ts":1796472235.624912,"step":1,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_r1_1_0_0","type":"function","function":{"name":"read_file","arguments":"{\\"path\\": \\"big.txt\\"}"}}]},"source":"openai/builder","finish_reason":"tool_calls","response_model":"openai/builder","model":"scripted","prompt_tokens":1278,"completion_tokens":4,"cached_tokens":0,"cost":null}',
    '{"type":"agent_finished","run":"r1","turn":1,"ts":1796472249.302993,"agent":"gemini","pid":17444,"exit_code":0,"session":"gemini-session-17444","timed_out":false,"limit":null,"usage":{"model":"agent:gemini","generations":1,"prompt_tokens":150,"completion_tokens":20,"cached_tokens":50,"cost":0.0}}',
    '{"type":"agent_finished","run":"r1","turn":1,"ts":1796472250.98732,"agent":"codex","pid":17469,"exit_code":1,"session":"codex-session-17469","timed_out":false,"limit":1796479450.9003778,"usage":null}',
    '{"type":"generation_finished","run":"r1","turn":1,"ts":1796472235.07515,"step":1,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_r1_1_0_0","type":"function","function":{"name":"post","arguments":"{\\"kind\\": \\"work_done\\", \\"text\\": \\"wrote hello.txt\\"}"}}]},"source":"openai/builder","finish_reason":"tool_calls","response_model":"openai/builder","model":"scripted","prompt_tokens":1278,"completion_tokens":12,"cached_tokens":0,"cost":1.302}',
    '{"type":"tool_started","run":"r1","turn":1,"ts":1796472236.290101,"call_id":"c1","name":"run_command","args":{"command":"git push"},"replay_safe":false,"hook":{"blocked":"no pushes","args":{"command":"git push"}}}',
    '{"type":"tool_started","run":"r1","turn":1,"ts":1796472236.290101,"call_id":"c2","name":"write_file","args":{"path":"a.txt","content":"x"},"replay_safe":false,"hook":{"blocked":null,"args":{"path":"b.txt","content":"x"}}}',
    '{"type":"generation_failed","run":"r1","turn":2,"ts":1796472236.1234567,"error":"the provider answered 500"}',
    '{"type":"turn_finished","run":"r1","turn":3,"ts":1796472236.1234567,"seq":null,"reason":"its participant left the team"}',
    '{"type":"turn_finished","run":"r1","turn":3,"seq":null,"reason":"rewound"}',
    '{"type":"agent_finished","run":"r1","turn":1,"ts":1796472249.3029935,"agent":"gemini","pid":17444,"exit_code":null,"session":null,"timed_out":false,"limit":null,"usage":{"model":"agent:gemini","generations":1,"prompt_tokens":150,"completion_tokens":20,"cached_tokens":50,"cost":0.0},"recovered":true}',
    '{"type":"agent_finished","run":"r1","turn":1,"ts":1796472249.3029935,"agent":"codex","pid":17445,"exit_code":null,"session":null,"timed_out":false,"limit":null,"usage":null,"recovered":true}',
    '{"type":"turn_started","run":"r1","turn":2,"ts":1796472235.615625,"participant":"builder","head":null,"baseline":{"head":null,"dirty":{"a.txt":"deleted"},"off_branch":true},"messages":[{"role":"system","content":"you build"},{"role":"user","content":"go"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}],"thinking_blocks":[{"type":"thinking","thinking":"hm","signature":"s"}],"provider_specific_fields":{"x":1}},{"role":"tool","tool_call_id":"c1","content":"ok"}]}',
]


def _dumps(rec: HarnessRecord) -> str:
    return json.dumps(line(rec), ensure_ascii=False, separators=(",", ":"))


def test_every_line_main_wrote_is_written_back_byte_for_byte() -> None:
    for text in LINES:
        assert _dumps(records.harness(json.loads(text))) == text


def test_the_lines_cover_every_record_kind() -> None:
    union = typing.get_args(typing.get_args(HarnessRecord)[0])
    kinds = {typing.get_args(k.model_fields["type"].annotation)[0] for k in union}
    assert {json.loads(t)["type"] for t in LINES} == kinds


def test_a_messages_keys_keep_their_order_and_extras() -> None:
    text = next(t for t in LINES if "provider_specific_fields" in t)
    rec = records.harness(json.loads(text))
    assert isinstance(rec, records.TurnStarted)
    assert list(rec.messages[2]) == [
        "role",
        "content",
        "tool_calls",
        "thinking_blocks",
        "provider_specific_fields",
    ]


def test_a_turn_writes_each_kind_with_the_keys_main_wrote(repo: Path, tmp_path: Path) -> None:
    run = Run(repo, tmp_path)
    model = run.model(
        f"""
        [[step]]
        participant = "builder"
        calls = [{{ tool = "write_file", args = {{ path = "hello.txt", content = "hi\\n" }} }}]
        [[step]]
        participant = "builder"
        text = "thinking..."
        [[step]]
        participant = "builder"
        calls = [{POST_DONE}]
        """
    )
    from autodev.harness.turn import run_turn

    run_turn(run.context(model))
    known: dict[str, set[tuple[str, ...]]] = {}
    for t in LINES:
        d = json.loads(t)
        known.setdefault(d["type"], set()).add(tuple(d))
    written = run.hlog.path.read_text().splitlines()
    assert {json.loads(t)["type"] for t in written} >= {"turn_started", "generation_finished", "nudged"}
    for text in written:
        assert tuple(json.loads(text)) in known[json.loads(text)["type"]], text
        assert _dumps(records.harness(json.loads(text))) == text


def test_a_hooks_outcome_is_written_only_when_a_hook_answered(repo: Path, tmp_path: Path) -> None:
    from autodev.harness.calls import log_started

    run = Run(repo, tmp_path)
    ctx = run.context(run.model('[[step]]\nparticipant = "builder"\ntext = "x"\n'))
    log_started(
        ctx,
        "c1",
        "run_command",
        {"command": "git push"},
        False,
        {"blocked": "no pushes", "args": {"command": "git push"}},
    )
    log_started(ctx, "c2", "read_file", {"path": "a"}, True)
    first, second = run.hlog.path.read_text().splitlines()
    ts = json.loads(first)["ts"]
    assert first == next(t for t in LINES if '"blocked":"no pushes"' in t).replace(
        "1796472236.290101", repr(ts)
    )
    assert second.endswith(',"call_id":"c2","name":"read_file","args":{"path":"a"},"replay_safe":true}')
