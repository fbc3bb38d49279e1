"""The scripted model server, driven through litellm's real HTTP client on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from autodev.errors import ConfigError, UsageError
from autodev.harness import llm
from autodev.scripted import (
    Script,
    ScriptedServer,
    ScriptError,
    Step,
    ToolCallSpec,
    load_script,
)


def lm():
    """litellm, set up as the daemon sets it up; imported by the first test that needs it, not
    at collection (each xdist worker collects every module)."""
    return llm.load()


ROOT = Path(__file__).resolve().parents[2]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "post",
            "description": "make the move",
            "parameters": {
                "type": "object",
                "properties": {"kind": {"type": "string"}, "text": {"type": "string"}},
            },
        },
    }
]

SCRIPT = """
[[step]]
participant = "builder"
text = "writing it"
calls = [
  { tool = "write_file", args = { path = "hello.py", content = "print('hello')\\n" } },
  { tool = "run_command", args = { command = "git add -A && git commit -qm 'add hello'" } },
]

[[step]]
participant = "reviewer"
text = "looks fine"

[[step]]
participant = "builder"
calls = [{ tool = "post", args = { kind = "work_done", text = "hello.py added", handoff = "reviewer" } }]

[[step]]
participant = "builder"
error = 429
retry_after = 3

[[step]]
participant = "builder"
text = "after the limit"

[[step]]
participant = "builder"
error = 500

[[step]]
participant = "builder"
text = "after the crash"

[[step]]
participant = "audit"
calls = [{ tool = "verdict", args = { accept = false, gap = "no tests" } }]
"""


def write(tmp_path: Path, text: str, name: str = "script.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def script(tmp_path: Path) -> Script:
    return load_script(write(tmp_path, SCRIPT))


@pytest.fixture
def server(script: Script, tmp_path: Path):
    with ScriptedServer(script, tmp_path / "ledger.json", tmp_path / "requests.jsonl") as s:
        yield s


def ask(url: str, who: str, turn: str | None, messages: list[dict], **extra):
    headers = {"X-Autodev-Turn": turn} if turn is not None else {}
    return lm().completion(
        model=f"openai/{who}",
        api_base=url,
        api_key="scripted",
        messages=messages,
        tools=TOOLS,
        extra_headers=headers,
        num_retries=0,
        max_retries=0,
        **extra,
    )


def user(text: str = "go") -> list[dict]:
    return [{"role": "user", "content": text}]


def after(messages: list[dict], response) -> list[dict]:
    """The conversation a harness would send next: the answer plus a result per tool call."""
    msg = response.choices[0].message
    out = messages + [
        {
            "role": "assistant",
            "content": msg.content,
            **({"tool_calls": [t.model_dump() for t in msg.tool_calls]} if msg.tool_calls else {}),
        }
    ]
    for t in msg.tool_calls or []:
        out.append({"role": "tool", "tool_call_id": t.id, "content": "ok"})
    if not msg.tool_calls:
        out.append({"role": "user", "content": "continue"})
    return out


# ---------------------------------------------------------------- answers


def test_tool_calls_arrive_with_their_arguments(server):
    r = ask(server.base_url, "builder", "t1", user())
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert msg.content == "writing it"
    assert [t.function.name for t in msg.tool_calls] == ["write_file", "run_command"]
    assert json.loads(msg.tool_calls[0].function.arguments) == {
        "path": "hello.py",
        "content": "print('hello')\n",
    }
    assert json.loads(msg.tool_calls[1].function.arguments) == {
        "command": "git add -A && git commit -qm 'add hello'"
    }
    assert [t.id for t in msg.tool_calls] == ["call_t1_0_0", "call_t1_0_1"]
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_text_step_has_no_tool_call(server):
    r = ask(server.base_url, "reviewer", "r1", user())
    assert r.choices[0].message.content == "looks fine"
    assert not r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "stop"


def test_each_participant_gets_its_own_steps_in_order(server):
    # The audit's step is last in the file but first of its own.
    a = ask(server.base_url, "audit", "a1", user())
    assert a.choices[0].message.tool_calls[0].function.name == "verdict"
    assert json.loads(a.choices[0].message.tool_calls[0].function.arguments) == {
        "accept": False,
        "gap": "no tests",
    }
    b = ask(server.base_url, "builder", "t1", user())
    assert b.choices[0].message.tool_calls[0].function.name == "write_file"
    msgs = after(user(), b)
    b2 = ask(server.base_url, "builder", "t1", msgs)
    assert json.loads(b2.choices[0].message.tool_calls[0].function.arguments)["kind"] == "work_done"


def test_a_second_turn_continues_where_the_first_stopped(server):
    first = ask(server.base_url, "builder", "t1", user())
    ask(server.base_url, "builder", "t1", after(user(), first))
    with pytest.raises(lm().RateLimitError):  # t2 starts at index 2: the 429 step
        ask(server.base_url, "builder", "t2", user())
    r = ask(server.base_url, "builder", "t2", user())
    assert r.choices[0].message.content == "after the limit"


def test_a_repeated_request_gets_the_same_step(server):
    one = ask(server.base_url, "builder", "t1", user())
    two = ask(server.base_url, "builder", "t1", user())
    assert one.choices[0].message.tool_calls[0].id == two.choices[0].message.tool_calls[0].id
    assert two.choices[0].message.tool_calls[0].function.name == "write_file"
    # ...and the step after it is still there for the conversation's next request.
    nxt = ask(server.base_url, "builder", "t1", after(user(), one))
    assert nxt.choices[0].message.tool_calls[0].function.name == "post"


def test_a_restarted_server_resumes_from_the_ledger(script, tmp_path):
    ledger = tmp_path / "ledger.json"
    with ScriptedServer(script, ledger) as s:
        first = ask(s.base_url, "builder", "t1", user())
        second = ask(s.base_url, "builder", "t1", after(user(), first))
    assert second.choices[0].message.tool_calls[0].function.name == "post"

    with ScriptedServer(script, ledger) as s:  # a new instance, a new port, the same ledger
        again = ask(s.base_url, "builder", "t1", after(user(), first))
        assert again.choices[0].message.tool_calls[0].function.name == "post"
        assert again.choices[0].message.tool_calls[0].id == second.choices[0].message.tool_calls[0].id
        with pytest.raises(lm().RateLimitError):  # a new turn still moves on
            ask(s.base_url, "builder", "t2", user())
    data = json.loads(ledger.read_text())
    assert data["builder"]["next"] == 3
    assert data["builder"]["turns"]["t2"] == {"base": 2, "errors": 1}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_429_raises_rate_limit_and_the_retry_moves_on(server):
    first = ask(server.base_url, "builder", "t1", user())
    msgs = after(user(), first)
    ask(server.base_url, "builder", "t1", msgs)
    with pytest.raises(lm().RateLimitError) as exc:
        ask(server.base_url, "builder", "t2", user())
    assert exc.value.response.headers.get("retry-after") == "3"
    retry = ask(server.base_url, "builder", "t2", user())
    assert retry.choices[0].message.content == "after the limit"


def test_429_without_retry_after_says_zero(tmp_path):
    s = load_script(write(tmp_path, '[[step]]\nparticipant = "b"\nerror = 429\n'))
    with ScriptedServer(s, tmp_path / "l.json") as srv:
        with pytest.raises(lm().RateLimitError) as exc:
            ask(srv.base_url, "b", "t", user())
    assert exc.value.response.headers.get("retry-after") == "0"


def test_500_raises_a_server_error_and_the_retry_moves_on(tmp_path):
    s = load_script(
        write(
            tmp_path,
            '[[step]]\nparticipant = "b"\nerror = 500\n'
            '[[step]]\nparticipant = "b"\nerror = 503\n'
            '[[step]]\nparticipant = "b"\ntext = "up again"\n',
        )
    )
    with ScriptedServer(s, tmp_path / "l.json") as srv:
        with pytest.raises(lm().InternalServerError):
            ask(srv.base_url, "b", "t", user())
        with pytest.raises(lm().ServiceUnavailableError):
            ask(srv.base_url, "b", "t", user())
        assert ask(srv.base_url, "b", "t", user()).choices[0].message.content == "up again"


def test_an_exhausted_script_says_which_step_is_missing(server):
    a = ask(server.base_url, "audit", "a1", user())
    with pytest.raises(
        lm().BadRequestError, match=r"the script for audit has no step 2 \(it has 1 step for audit\)"
    ):
        ask(server.base_url, "audit", "a1", after(user(), a))
    with pytest.raises(lm().BadRequestError, match=r"the script for nobody has no step 1 \(it has 0 steps"):
        ask(server.base_url, "nobody", "n1", user())


def test_requests_are_logged_to_file_and_memory(server, tmp_path):
    ask(server.base_url, "builder", "t1", user("build hello"))
    ask(server.base_url, "reviewer", None, user("review it"))
    lines = [json.loads(x) for x in (tmp_path / "requests.jsonl").read_text().splitlines()]
    assert [(x["participant"], x["turn"], x["index"]) for x in lines] == [
        ("builder", "t1", 0),
        ("reviewer", "-", 0),
    ]
    assert lines[0]["body"]["messages"][0]["content"] == "build hello"
    assert lines[0]["body"]["tools"][0]["function"]["name"] == "post"
    assert server.requests == lines


def test_streaming_rebuilds_the_same_answer(server):
    chunks = list(
        ask(server.base_url, "builder", "t1", user(), stream=True, stream_options={"include_usage": True})
    )
    r = lm().stream_chunk_builder(chunks)
    msg = r.choices[0].message
    assert msg.content == "writing it"
    assert [t.function.name for t in msg.tool_calls] == ["write_file", "run_command"]
    assert json.loads(msg.tool_calls[1].function.arguments)["command"].startswith("git add")
    assert r.usage.completion_tokens > 0


def test_concurrent_participants_each_get_their_first_step(server):
    results: dict[str, str] = {}

    def run(who: str) -> None:
        r = ask(server.base_url, who, f"{who}-turn", user())
        m = r.choices[0].message
        results[who] = m.tool_calls[0].function.name if m.tool_calls else m.content

    threads = [threading.Thread(target=run, args=(w,)) for w in ("builder", "reviewer", "audit")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == {"builder": "write_file", "reviewer": "looks fine", "audit": "verdict"}
    ledger = json.loads(server.ledger_path.read_text())
    assert {k: v["next"] for k, v in ledger.items()} == {"builder": 1, "reviewer": 1, "audit": 1}


def test_unknown_route_is_a_404(server):
    req = urllib.request.Request(server.base_url + "/embeddings", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(req, timeout=5)
    assert exc.value.code == 404


# ---------------------------------------------------------------- the script file


def test_loaded_script_shape(script):
    assert len(script.steps) == 8
    assert script.steps[0] == Step(
        participant="builder",
        calls=[
            ToolCallSpec("write_file", {"path": "hello.py", "content": "print('hello')\n"}),
            ToolCallSpec("run_command", {"command": "git add -A && git commit -qm 'add hello'"}),
        ],
        text="writing it",
        error=None,
        retry_after=None,
    )
    assert [s.error for s in script.for_participant("builder")] == [None, None, 429, None, 500, None]
    assert script.steps[3].retry_after == 3.0
    assert script.for_participant("nobody") == []


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            '[[step]]\nparticipant = "b"\ntext = "x"\n[[step]]\nparticipant = "b"\ntxt = "y"\n',
            ["step 2", 'unknown key "txt"', 'did you mean "text"'],
        ),
        ('[[step]]\ntext = "x"\n', ["step 1", 'missing required key "participant"']),
        ('[[step]]\nparticipant = "b"\n', ["step 1", "no response"]),
        ('[[step]]\nparticipant = "b"\nerror = 429\ntext = "x"\n', ["step 1", "error cannot"]),
        ('[[step]]\nparticipant = "b"\nerror = 42\n', ["step 1", "error: must be at least 400 (got 42)"]),
        ('[[step]]\nparticipant = "b"\ntext = "x"\nretry_after = 1\n', ["step 1", "retry_after"]),
        (
            '[[step]]\nparticipant = "b"\ntext = "x"\ndelay_sec = -1\n',
            ["step 1", "delay_sec: must be at least 0 (got -1)"],
        ),
        (
            '[[step]]\nparticipant = "b"\ncalls = [{ tool = "post", arg = {} }]\n',
            ["step 1", 'unknown key "arg" in calls[0]', 'did you mean "args"'],
        ),
        (
            '[[step]]\nparticipant = "b"\ncalls = [{ args = {} }]\n',
            ["step 1", 'missing required key "tool" in calls[0]'],
        ),
        (
            '[[step]]\nparticipant = "b"\ncalls = [{ tool = "t", args = { at = 1979-05-27 } }]\n',
            ["step 1", "JSON"],
        ),
        ('[[steps]]\nparticipant = "b"\n', ['unknown key "steps"', 'did you mean "step"']),
        ("", ["no [[step]]"]),
        ('[[step]]\nparticipant = "  "\ntext = "x"\n', ["step 1", "participant: must not be empty"]),
        (
            '[[step]]\nparticipant = "b"\ntext = "x"\ndelay_sec = 4000\n',
            ["step 1", "delay_sec: must be at most 3600"],
        ),
        (
            '[[step]]\nparticipant = "b"\ncalls = [{ tool = "t", raw_args = 1 }]\n',
            ["calls[0].raw_args: must be a string"],
        ),
        (
            '[[step]]\nparticipant = "b"\ncalls = [{ tool = "t", args = {}, raw_args = "{" }]\n',
            ["step 1", "calls[0]: raw_args is used instead of args"],
        ),
        (
            '[[step]]\nparticipant = "b"\ntext = 3\n[[step]]\nparticipant = "c"\nerror = 700\n',
            ["2 problems", "step 1: text: must be a string (got 3)", "step 2: error: must be at most 599"],
        ),
    ],
)
def test_bad_scripts_name_file_step_and_key(tmp_path, body, expected):
    path = write(tmp_path, body)
    with pytest.raises(ScriptError) as exc:
        load_script(path)
    text = str(exc.value)
    assert str(path) in text
    for part in expected:
        assert part in text
    assert exc.value.fix
    assert isinstance(exc.value, ConfigError) and exc.value.exit_code == UsageError.exit_code


def test_toml_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path, '[[step]]\nparticipant = "b"\ntext = "unterminated\n')
    with pytest.raises(ScriptError) as exc:
        load_script(path)
    assert exc.value.line == 3
    assert "line 3" in str(exc.value) and str(path) in str(exc.value)


def test_missing_script_file_is_a_script_error(tmp_path):
    with pytest.raises(ScriptError, match="cannot read script"):
        load_script(tmp_path / "absent.toml")


def test_a_corrupt_ledger_is_refused_at_construction(script, tmp_path):
    ledger = tmp_path / "ledger.json"
    ledger.write_text("{not json")
    with pytest.raises(ConfigError, match="delete"):
        ScriptedServer(script, ledger)


# ---------------------------------------------------------------- manual entry point


@pytest.mark.e2e
def test_module_entry_point_serves_until_killed(tmp_path):
    path = write(tmp_path, '[[step]]\nparticipant = "b"\ntext = "from the cli"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "autodev.scripted", str(path), "--ledger", str(tmp_path / "l.json")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        body = json.dumps({"model": "b", "messages": user()}).encode()
        req = urllib.request.Request(
            url + "/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            answer = json.loads(resp.read())
        assert answer["choices"][0]["message"]["content"] == "from the cli"
        assert answer["object"] == "chat.completion"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.stderr.read() == ""


def test_price_table_is_checked_and_read(tmp_path):
    one = '[[step]]\nparticipant = "a"\ntext = "x"\n'
    p = tmp_path / "s.toml"
    p.write_text("[price]\ninput_per_token = 0.001\noutput_per_token = 0.002\n" + one)
    assert load_script(p).price == {"input_per_token": 0.001, "output_per_token": 0.002}
    p.write_text(one)
    assert load_script(p).price is None
    for bad, words in (
        ('[price]\ninput_per_token = "cheap"\n', 'price.input_per_token: must be a number (got "cheap")'),
        ("[price]\ninput_per_tokens = 1\n", 'unknown key "input_per_tokens" in price'),
    ):
        p.write_text(bad + one)
        with pytest.raises(ScriptError) as e:
            load_script(p)
        assert words in e.value.message and e.value.fix


def test_the_ledger_and_the_request_log_are_private(script, tmp_path):
    # Both live in the run folder, whose files are 0600 whatever the umask (SPEC §14).
    old = os.umask(0o022)
    try:
        log = tmp_path / "requests.jsonl"
        log.write_text("")
        log.chmod(0o644)  # left readable by an older autodev
        with ScriptedServer(script, tmp_path / "ledger.json", log) as s:
            ask(s.base_url, "builder", "t1", user("build hello"))
    finally:
        os.umask(old)
    assert (tmp_path / "ledger.json").stat().st_mode & 0o777 == 0o600
    assert log.stat().st_mode & 0o777 == 0o600
    assert json.loads(log.read_text().splitlines()[0])["participant"] == "builder"
