"""The turn loop on the in-process scripted model: real journals, a real git repository and the
real tools, no HTTP and no daemon, so each test runs in milliseconds."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest

from autodev import records
from autodev.errors import ProviderError
from autodev.harness import providers
from autodev.harness.context import Limits, Logs, Models, Toolbox, Who
from autodev.harness.recovery import INTERRUPTED, rebuild
from autodev.harness.tools import Workspace
from autodev.harness.turn import AllModelsLimited, TurnContext, TurnStopped, run_turn
from autodev.records import ToolStarted
from autodev.scripted.model import ScriptedModel
from autodev.scripted.script import load_script
from autodev.store.events import Events
from autodev.store.journal import Journal, iter_records
from autodev.store.thread import Thread


class Run:
    """One run folder with its thread, events and harness log, over the `repo` fixture."""

    def __init__(self, repo: Path, tmp: Path):
        self.repo, self.dir = repo, tmp / "run"
        self.thread = Thread(self.dir / "thread.jsonl")
        self.events = Events(self.dir / "events.jsonl", "r1")
        self.hlog = Journal(self.dir / "harness.jsonl")

    def model(self, script: str, ledger: Path | None = None) -> ScriptedModel:
        path = self.dir / f"script-{time.monotonic_ns()}.toml"
        path.write_text(textwrap.dedent(script))
        return ScriptedModel(load_script(path), ledger)

    def context(
        self,
        model: ScriptedModel,
        who: str = "builder",
        turn: int = 1,
        *,
        workspace: Workspace | None = None,
        write: bool = True,
        targets: list[providers.Target] | None = None,
        limited_until: dict[str, float] | None = None,
        max_steps: int = 40,
        max_retries: int = 4,
    ) -> TurnContext:
        ws = workspace or Workspace(self.repo, write=write, command_timeout=10)
        return TurnContext(
            Who(
                "r1",
                turn,
                who,
                can_write=ws.write,
                team_writers={who: ws.write, "reviewer": False},
                repo=self.repo,
            ),
            Logs(self.thread, self.events, self.hlog),
            Models(targets or model.targets(who), "you build", f"turn {turn}: your move", model=model),
            Toolbox(ws),
            Limits(max_steps=max_steps, max_retries=max_retries, retry_backoff_sec=0.0),
            limited_until=limited_until or {},
        )

    def records(self, kind: str | None = None) -> list[dict]:
        recs = list(iter_records(self.hlog.path))
        return [r for r in recs if kind is None or r["type"] == kind]

    def events_of(self, kind: str) -> list[dict]:
        return [e for e in iter_records(self.events.journal.path) if e["type"] == kind]


@pytest.fixture
def run(repo: Path, tmp_path: Path) -> Run:
    return Run(repo, tmp_path)


POST_DONE = '{ tool = "post", args = { kind = "work_done", text = "wrote hello.txt" } }'


def test_a_turn_writes_then_posts_credited_work(run: Run) -> None:
    model = run.model(
        f"""
        [[step]]
        participant = "builder"
        calls = [{{ tool = "write_file", args = {{ path = "hello.txt", content = "hi\\n" }} }}]
        [[step]]
        participant = "builder"
        calls = [{POST_DONE}]
        """
    )
    result = run_turn(run.context(model))
    assert result.post is not None and result.post.kind == "work_done"
    assert result.post.credit.files == ["hello.txt"]
    assert (run.repo / "hello.txt").read_text() == "hi\n"
    assert result.steps == 2 and result.reason == ""
    assert [r["type"] for r in run.records()] == [
        "turn_started",
        "generation_started",
        "generation_finished",
        "tool_started",
        "tool_finished",
        "generation_started",
        "generation_finished",
        "post_started",
        "post_committed",
        "turn_finished",
    ]
    # The second request carried the tool's result back to the model under its call id.
    sent = model.requests[1]["messages"]
    assert sent[-1]["role"] == "tool" and sent[-1]["content"].startswith("created hello.txt")
    assert sent[-1]["tool_call_id"] == sent[-2]["tool_calls"][0]["id"]
    assert run.thread.tail(1)[0].id == "r1:t1:post"


def test_usage_and_the_scripts_prices_are_counted_per_model(run: Run) -> None:
    model = run.model(
        f"""
        [price]
        input_per_token = 0.001
        output_per_token = 0.002
        [[step]]
        participant = "builder"
        calls = [{POST_DONE}]
        """
    )
    result = run_turn(run.context(model))
    assert result.spent.total.prompt_tokens > 0 and result.spent.total.completion_tokens > 0
    assert result.spent.total.cost == pytest.approx(
        result.spent.total.prompt_tokens * 0.001 + result.spent.total.completion_tokens * 0.002
    )
    assert result.spent.models["scripted"].generations == 1
    assert result.spent.models["scripted"].cost == pytest.approx(result.spent.total.cost)


def test_a_model_that_stops_twice_without_posting_ends_the_turn_silent(run: Run) -> None:
    model = run.model(
        """
        [[step]]
        participant = "builder"
        text = "thinking..."
        [[step]]
        participant = "builder"
        text = "still thinking"
        """
    )
    result = run_turn(run.context(model))
    assert result.post is None
    assert result.reason == "the model stopped twice without posting"
    assert len(run.records("nudged")) == 1
    assert "A turn ends only with a call to the `post` tool" in model.requests[1]["messages"][-1]["content"]


def test_max_steps_ends_the_turn(run: Run) -> None:
    read = '{ tool = "read_file", args = { path = "README.md" } }'
    model = run.model("\n".join(f'[[step]]\nparticipant = "builder"\ncalls = [{read}]' for _ in range(3)))
    result = run_turn(run.context(model, max_steps=2))
    assert result.post is None and result.steps == 2
    assert result.reason == "reached maxStepsPerTurn (2) without a post"


def test_refusals_reach_the_model_and_the_turn_goes_on(run: Run) -> None:
    model = run.model(
        """
        [[step]]
        participant = "reviewer"
        calls = [
          { tool = "write_file", args = { path = "x.txt", content = "no" } },
          { tool = "no_such_tool" },
          { tool = "read_file", raw_args = "{not json" },
          { tool = "read_file", args = { path = "README.md", bogus = 1 } },
        ]
        [[step]]
        participant = "reviewer"
        calls = [{ tool = "post", args = { kind = "say", text = "looked" } }]
        """
    )
    result = run_turn(run.context(model, who="reviewer", write=False))
    assert result.post is not None and result.post.kind == "say"
    answers = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert "cannot change files (write = false)" in answers[0]
    assert answers[1].startswith("error: unknown tool 'no_such_tool'; your tools are:")
    assert "are not valid JSON" in answers[2]
    assert "unknown argument(s) bogus" in answers[3]
    assert not (run.repo / "x.txt").exists()


def test_a_usage_limit_fails_over_to_the_next_model(run: Run) -> None:
    model = run.model(
        f"""
        [[step]]
        participant = "builder"
        error = 429
        retry_after = 60
        [[step]]
        participant = "backup"
        calls = [{POST_DONE.replace("work_done", "say")}]
        """
    )
    targets = [*model.targets("builder"), providers.Target("backup-model", "openai/backup")]
    ctx = run.context(model, targets=targets)
    result = run_turn(ctx)
    assert result.post is not None and result.spent.models.keys() == {"backup-model"}
    assert ctx.limited_until["scripted"] > time.time() + 50
    (failover,) = run.events_of("failover")
    assert failover["model"] == "scripted" and failover["to"] == "backup-model"
    # With every model limited, the turn says until when instead of calling any.
    with pytest.raises(AllModelsLimited):
        run_turn(run.context(model, turn=2, targets=targets[:1], limited_until=dict(ctx.limited_until)))


def test_transient_errors_are_retried_and_counted_then_give_up(run: Run) -> None:
    model = run.model(
        f"""
        [[step]]
        participant = "builder"
        error = 503
        [[step]]
        participant = "builder"
        calls = [{POST_DONE.replace("work_done", "say")}]
        [[step]]
        participant = "builder"
        error = 500
        [[step]]
        participant = "builder"
        error = 500
        """
    )
    result = run_turn(run.context(model))
    assert result.post is not None
    assert [r["attempt"] for r in run.records("generation_started")] == [1, 2]
    assert len(run.events_of("retry")) == 1
    with pytest.raises(ProviderError, match="failed 2 times"):
        run_turn(run.context(model, turn=2, max_retries=1))


def test_a_refused_request_pauses_with_the_fix(run: Run) -> None:
    model = run.model('[[step]]\nparticipant = "builder"\nerror = 401\n')
    with pytest.raises(ProviderError, match="authentication failed") as err:
        run_turn(run.context(model))
    assert "API key" in err.value.fix


def test_stop_ends_the_turn_at_a_step_boundary_and_leaves_it_open(run: Run) -> None:
    model = run.model(f'[[step]]\nparticipant = "builder"\ncalls = [{POST_DONE}]\n')
    ws = Workspace(run.repo, write=True, command_timeout=10)
    ws.limit(None, lambda: True)
    with pytest.raises(TurnStopped):
        run_turn(run.context(model, workspace=ws))
    assert run.records("turn_finished") == [] and model.requests == []


SLOW = f"""
    [[step]]
    participant = "builder"
    delay_sec = 60
    calls = [{POST_DONE}]
    """


def test_stop_cuts_a_slow_model_request_and_the_turn_resumes(run: Run) -> None:
    ledger = run.dir / "ledger.json"
    ws = Workspace(run.repo, write=True, command_timeout=10)
    asked = time.monotonic()
    ws.limit(None, lambda: time.monotonic() - asked > 0.3)  # `stop` arrives mid-request
    with pytest.raises(TurnStopped):
        run_turn(run.context(run.model(SLOW, ledger), workspace=ws))
    assert time.monotonic() - asked < 10, "stop waited for the model's answer"
    assert [r["type"] for r in run.records()] == ["turn_started", "generation_started"]
    # The next start continues the open turn: the same request, answered (at once) this time.
    model = run.model(SLOW, ledger)
    result = run_turn(run.context(model), rebuild(run.records()))
    assert result.post is not None and result.post.text == "wrote hello.txt"
    assert [r["attempt"] for r in run.records("generation_started")] == [1, 2]


def test_the_turn_deadline_cuts_a_slow_model_request(run: Run) -> None:
    ws = Workspace(run.repo, write=True, command_timeout=10)
    ws.limit(time.monotonic() + 0.3)
    began = time.monotonic()
    result = run_turn(run.context(run.model(SLOW), workspace=ws))
    assert time.monotonic() - began < 10
    assert result.post is None and result.reason == "turn ran past turnTimeoutMin without a post"
    assert run.records("turn_finished")[0]["reason"] == result.reason


def test_a_small_window_compacts_old_tool_results(run: Run) -> None:
    (run.repo / "big.txt").write_text("".join(f"line {i} of a long file\n" for i in range(300)))
    read = '{ tool = "read_file", args = { path = "big.txt" } }'
    model = run.model(
        "\n".join(f'[[step]]\nparticipant = "builder"\ncalls = [{read}]' for _ in range(3))
        + f'\n[[step]]\nparticipant = "builder"\ncalls = [{POST_DONE}]\n'
    )
    ctx = run.context(model, targets=model.targets("builder", window=9000))
    result = run_turn(ctx)
    assert result.post is not None and result.compactions >= 1
    assert run.records("compacted") and run.events_of("compacted")
    last = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert any(len(c) < 400 for c in last[:-1])  # an older result became a stub


def test_resume_after_a_crash_answers_an_unsafe_call_interrupted_and_reruns_a_read(run: Run) -> None:
    ledger = run.dir / "ledger.json"
    script = f"""
        [[step]]
        participant = "builder"
        calls = [
          {{ tool = "read_file", args = {{ path = "README.md" }} }},
          {{ tool = "run_command", args = {{ command = "echo ran >> ran.txt" }} }},
        ]
        [[step]]
        participant = "builder"
        calls = [{POST_DONE.replace("work_done", "say")}]
        """
    first = run_turn(run.context(run.model(script, ledger)))
    assert first.post is not None
    assert (run.repo / "ran.txt").read_text() == "ran\n"
    # A crash while both tools ran: the log ends after the two tool_started records.
    records = run.records()
    cut = max(i for i, r in enumerate(records) if r["type"] == "tool_started") + 1
    prefix = [r for r in records[:cut] if r["type"] != "tool_finished"]
    resume = rebuild(prefix)
    assert [c["function"]["name"] for c, _ in resume.pending] == ["read_file", "run_command"]

    fresh = Run(run.repo, run.dir.parent / "again")
    for rec in prefix:
        fresh.hlog.append(rec)
    model = run.model(script, ledger)  # the same ledger: the turn's next step answers again
    result = run_turn(fresh.context(model), resume)
    assert result.post is not None and result.steps == 2
    tools = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert tools[0].startswith("README.md: 1 lines") and tools[1] == INTERRUPTED
    assert (run.repo / "ran.txt").read_text() == "ran\n"  # the command did not run twice
    synthetic = [r for r in fresh.records("tool_finished") if r.get("synthetic")]
    assert [r["result"] for r in synthetic] == [INTERRUPTED]
    assert (
        result.spent.total.prompt_tokens > resume.spent.total.prompt_tokens > 0
    )  # what was spent before the crash counts


def test_a_hook_decision_recorded_before_a_crash_is_not_asked_again(run: Run) -> None:
    # The recorded decision travels in tool_started; rebuild hands it back with the call.
    call = {"id": "c1", "type": "function", "function": {"name": "run_command", "arguments": json.dumps({})}}
    started = {"type": "tool_started", "run": "r", "turn": 1, "call_id": "c1", "name": "run_command"}
    began = records.harness({**started, "args": {}, "replay_safe": False, "hook": {"blocked": "no pushes"}})
    from autodev.harness.calls import resume_call
    from autodev.harness.recovery import Began
    from autodev.harness.turn import TurnResult

    assert isinstance(began, ToolStarted)
    model = run.model(f'[[step]]\nparticipant = "builder"\ncalls = [{POST_DONE}]\n')
    out = resume_call(run.context(model), call, Began(began, 1), None, TurnResult(None))
    assert out == "blocked by a before_tool hook: no pushes"


def test_hostile_sizes_are_refused_before_any_log_or_state(run: Run) -> None:
    """Issue 20: 100k-deep arguments, oversized arguments and an oversized post are refused with
    a short answer; none of them reaches the thread or a tool."""
    from autodev.harness.calls import MAX_ARGS_CHARS
    from autodev.rules.moves import MAX_POST_CHARS

    deep = "[" * 100_000 + "]" * 100_000
    big = '{"path": "' + "x" * (MAX_ARGS_CHARS + 1) + '"}'
    huge_post = json.dumps({"kind": "say", "text": "y" * (MAX_POST_CHARS + 1)})
    model = run.model(
        f"""
        [[step]]
        participant = "reviewer"
        calls = [
          {{ tool = "read_file", raw_args = '{{"path": {deep}}}' }},
          {{ tool = "read_file", raw_args = '{big}' }},
          {{ tool = "read_file", raw_args = '{{"path": {"[" * 40 + "]" * 40}}}' }},
          {{ tool = "post", raw_args = '{huge_post}' }},
        ]
        [[step]]
        participant = "reviewer"
        calls = [{{ tool = "post", args = {{ kind = "say", text = "short" }} }}]
        """
    )
    result = run_turn(run.context(model, who="reviewer", write=False))
    assert result.post is not None and result.post.text == "short"
    answers = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert "nest deeper than 32 levels" in answers[0] and len(answers[0]) < 300
    assert f"more than the {MAX_ARGS_CHARS}" in answers[1] and len(answers[1]) < 300
    assert "nest deeper than 32 levels" in answers[2]
    assert f"more than the {MAX_POST_CHARS} a post may have" in answers[3]
    assert [p.text for p in run.thread.read(1, 10)] == ["short"]
    assert "tool_started" not in (run.dir / "harness.jsonl").read_text()  # no tool ran on them


def test_a_result_quoting_a_lone_surrogate_reaches_the_model_as_valid_utf8(run: Run) -> None:
    # Found by `make fuzz`: a model's path argument carried a lone surrogate (valid JSON, `\udc85`),
    # the refusal quoted it, and the next request failed to encode, five times, pausing the run.
    model = run.model(
        r"""
        [[step]]
        participant = "builder"
        calls = [{ tool = "read_file", raw_args = '{"path": "\udc85x"}' }]
        [[step]]
        participant = "builder"
        calls = [{ tool = "post", args = { kind = "say", text = "looked" } }]
        """
    )
    result = run_turn(run.context(model))
    assert result.post is not None and result.post.kind == "say"
    [answer] = [m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"]
    answer.encode("utf-8")  # what the provider's client does: a lone surrogate raises here
    assert "no file '\\x85x'" in answer


def test_the_context_knows_from_memory_whether_a_tool_ran_as_the_log_tells_it(run: Run) -> None:
    """`ran` (the daemon's turn end looks at git only then) agrees with the harness log's intent
    records: False for a turn that only posts, True once a tool call's intent is appended."""
    talk = run.model(
        """
        [[step]]
        participant = "builder"
        calls = [{ tool = "post", args = { kind = "say", text = "just talking" } }]
        """
    )
    ctx = run.context(talk)
    run_turn(ctx)
    assert not ctx.ran and "tool_started" not in [r["type"] for r in run.records()]

    work = run.model(
        f"""
        [[step]]
        participant = "builder"
        calls = [{{ tool = "read_file", args = {{ path = "README.md" }} }}]
        [[step]]
        participant = "builder"
        calls = [{POST_DONE}]
        """
    )
    ctx = run.context(work, turn=2)
    run_turn(ctx)
    assert ctx.ran and [r["name"] for r in run.records("tool_started") if r["turn"] == 2] == ["read_file"]
