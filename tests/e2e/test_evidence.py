"""A done that proves itself, as a user meets it (issue 30, SPEC §22): a real repository with
pytest and a bug, a scripted builder whose first fix breaks another test, `doneEvidence =
"required"`. The done is reopened by the tests, naming the broken test and the command that shows
it, without asking the audit model; the correct fix goes to the audit and is accepted with
`✔ 1 now pass`.

pytest inside the sandbox: the system's python3 here has no pytest, so testCommand is this
checkout's venv python, made visible with `sandboxRead` (its venv and base installation, which
may live under the home folder, e.g. pyenv: `sandbox.own_python()`)."""

from __future__ import annotations

import json
import sys

import pytest

from autodev.guard import sandbox
from tests.conftest import git, run_dir, thread_of, write_team
from tests.e2e.helpers import ACCEPT, BUILDER, call, events, requests_of, run_until_idle, state_of, step

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
WRONG = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"  # add fixed, mul broken
RIGHT = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = (
    "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_mul():\n    assert mul(2, 3) == 6\n"
)
COMMAND = f"{sys.executable} -m pytest -q"
READ = json.dumps(sandbox.own_python())  # config sandboxRead: this venv's python and pytest


def fix(content: str, text: str) -> str:
    return step(
        "builder", call("write_file", path="calc.py", content=content), call("post", kind="done", text=text)
    )


@pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")
def test_a_wrong_fix_is_reopened_by_the_tests_and_the_right_one_accepted(repo, autodev):
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug in add")
    config = (
        f'testCommand = "{COMMAND}"\ndoneEvidence = "required"\nsandbox = "bwrap"\nsandboxRead = {READ}\n'
    )
    script = fix(WRONG, "fixed add") + fix(RIGHT, "fixed add, mul intact") + ACCEPT
    write_team(repo, BUILDER, script, config)

    run_until_idle(autodev, repo, "add(2, 3) must be 5", expect=0)

    verdicts = [p for p in thread_of(repo) if p["from"] == "audit"]
    assert [v["verdict"] for v in verdicts] == ["reopen", "accept"]
    reopen, accept = verdicts
    assert reopen["by"] == "evidence" and reopen["handoff"] == "builder"
    assert "1 test(s) broke: tests/test_calc.py::test_mul" in reopen["text"]
    assert f"See them with: `{COMMAND} tests/test_calc.py::test_mul`" in reopen["text"]
    assert reopen["evidence"]["summary"] == "✘ 1 broke: tests/test_calc.py::test_mul"
    assert accept["evidence"]["summary"] == "✔ 1 now pass, 0 broke"
    assert accept["evidence"]["counts"]["pass_to_fail"] == 0

    audits = events(repo, "audit")
    assert [(a["accept"], a["by"]) for a in audits] == [(False, "evidence"), (True, "model")]
    evs = events(repo, "evidence")
    assert [e["summary"] for e in evs] == [reopen["evidence"]["summary"], accept["evidence"]["summary"]]
    assert evs[1]["fail_to_pass"] == ["tests/test_calc.py::test_add"] and evs[1]["base_cached"]

    shown = autodev(repo, "thread", check=True).stdout
    assert "[tests: ✘ 1 broke: tests/test_calc.py::test_mul]" in shown
    assert "[tests: ✔ 1 now pass, 0 broke]" in shown
    as_json = [json.loads(line) for line in autodev(repo, "thread", "--json", check=True).stdout.splitlines()]
    assert [p["evidence"]["summary"] for p in as_json if "evidence" in p] == [
        "✘ 1 broke: tests/test_calc.py::test_mul",
        "✔ 1 now pass, 0 broke",
    ]

    # status, the runs index and eval's outcome reader carry the newest done's evidence
    status = json.loads(autodev(repo, "status", "--json", check=True).stdout)
    assert status["evidence"]["summary"] == "✔ 1 now pass, 0 broke" and status["evidence"]["of"] > 0
    assert "tests on done #" in autodev(repo, "status", check=True).stdout
    [row] = json.loads(autodev(repo, "runs", "--json", check=True).stdout)
    assert row["evidence"] == "✔ 1 now pass, 0 broke"
    from autodev.eval.outcome import read_outcome

    evidence = read_outcome(run_dir(repo).parent).evidence
    assert evidence is not None and evidence.summary == "✔ 1 now pass, 0 broke"
    assert evidence.count("fail_to_pass") == 1

    [asked] = requests_of(repo, "audit")  # once: the first done never reached the model
    prompt = asked["body"]["messages"][0]["content"]
    assert (
        "## Test evidence" in prompt
        and "Now pass (failed or absent before): tests/test_calc.py::test_add" in prompt
    )
    assert "Broke (passed before; failing, skipped or gone now): none" in prompt


NOT_FIXED = "def add(a, b):\n    return b - a\n\n\ndef mul(a, b):\n    return a * b\n"  # still wrong
GAMED = TESTS.replace("assert add(2, 3) == 5", "assert add(2, 3) == -1")  # the failing test made to pass


@pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")
def test_tried_as_a_user_would_a_wrong_fix_and_a_gamed_test_are_reopened_the_right_fix_accepted(
    repo, autodev
):
    """Issue 30, as a user meets it: the builder's first "fix" leaves the bug (the failing test is
    named, with the command that runs it); its second rewrites the failing test so it passes and
    leaves the code (reopened: only tests changed); its third fixes the code and restores the test:
    accepted with `✔ 1 now pass`. The audit model is asked once, for the last."""
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug in add")
    config = f'testCommand = "{COMMAND}"\ndoneEvidence = "required"\nsandboxRead = {READ}\n'
    gamed = step(
        "builder",
        call("write_file", path="calc.py", content=CALC),
        call("write_file", path="tests/test_calc.py", content=GAMED),
        call("post", kind="done", text="add works now, its test passes"),
    )
    right = step(
        "builder",
        call("write_file", path="calc.py", content=RIGHT),
        call("write_file", path="tests/test_calc.py", content=TESTS),
        call("post", kind="done", text="fixed add for real"),
    )
    write_team(repo, BUILDER, fix(NOT_FIXED, "fixed add") + gamed + right + ACCEPT, config)

    run_until_idle(autodev, repo, "add(2, 3) must be 5", expect=0)

    verdicts = [p for p in thread_of(repo) if p["from"] == "audit"]
    assert [(v["verdict"], v.get("by")) for v in verdicts] == [
        ("reopen", "evidence"),
        ("reopen", "evidence"),
        ("accept", None),
    ]
    wrong, gamed_v, accept = verdicts
    assert (
        "no test newly passes, and the run changed code (still failing: tests/test_calc.py::test_add)"
        in (wrong["text"])
    )
    assert f"See them with: `{COMMAND} tests/test_calc.py::test_add`" in wrong["text"]
    assert wrong["evidence"]["summary"] == "✘ 0 now pass, 0 broke"
    assert "the run changed only tests (tests/test_calc.py) and no code" in gamed_v["text"]
    assert "newly passing: tests/test_calc.py::test_add" in gamed_v["text"]
    assert gamed_v["evidence"]["summary"] == "✘ only tests changed (1 now pass)"
    assert accept["evidence"]["summary"] == "✔ 1 now pass, 0 broke"
    assert accept["evidence"]["counts"]["tests_changed"] == 0
    assert [(a["accept"], a["by"]) for a in events(repo, "audit")] == [
        (False, "evidence"),
        (False, "evidence"),
        (True, "model"),
    ]
    assert len(requests_of(repo, "audit")) == 1
    shown = autodev(repo, "thread", check=True).stdout
    assert "[tests: ✘ only tests changed (1 now pass)]" in shown and "[tests: ✔ 1 now pass, 0 broke]" in shown
    assert state_of(repo)["state"] == "complete"


@pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")
def test_shown_gives_the_audit_the_evidence_and_the_model_decides(repo, autodev):
    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug in add")
    config = f'testCommand = "{COMMAND}"\nsandboxRead = {READ}\n'  # doneEvidence: "shown", the default
    write_team(repo, BUILDER, fix(WRONG, "fixed add") + ACCEPT, config)

    run_until_idle(autodev, repo, "add(2, 3) must be 5", expect=0)

    [verdict] = [p for p in thread_of(repo) if p["from"] == "audit"]
    assert verdict["verdict"] == "accept"  # the model accepted, with the evidence in front of it
    assert verdict["evidence"]["summary"] == "✘ 1 broke: tests/test_calc.py::test_mul"
    [asked] = requests_of(repo, "audit")
    assert (
        "Broke (passed before; failing, skipped or gone now): tests/test_calc.py::test_mul"
        in asked["body"]["messages"][0]["content"]
    )


def _without_times(records: list[dict]) -> list[dict]:
    """A run's records without what differs between any two runs (times, run ids, pids)."""
    drop = {"ts", "run", "id", "pid", "started_at", "duration_sec", "post_id", "due"}
    return [{k: v for k, v in r.items() if k not in drop} for r in records]


def test_a_repository_without_tests_runs_as_with_evidence_off(repo, autodev, tmp_path):
    """Item 6: no test command detected → the default ("shown") writes the same thread and
    events as "off" (times and ids aside)."""
    import shutil

    from tests.e2e.helpers import events_of

    other = tmp_path / "other"
    shutil.copytree(repo, other)
    script = fix(RIGHT, "wrote calc") + ACCEPT
    write_team(repo, BUILDER, script, "")
    write_team(other, BUILDER, script, 'doneEvidence = "off"\n')
    run_until_idle(autodev, repo, "write calc", expect=0)
    run_until_idle(autodev, other, "write calc", expect=0)
    assert _without_times(thread_of(repo)) == _without_times(thread_of(other))
    assert _without_times(events_of(repo)) == _without_times(events_of(other))
    assert not events(repo, "evidence")
    assert not (run_dir(repo) / "evidence").exists()


@pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")
def test_no_tests_is_said_once_and_never_reopens(repo, autodev):
    config = f'testCommand = "{COMMAND}"\ndoneEvidence = "required"\nsandboxRead = {READ}\n'
    reopen = step("audit", call("verdict", accept=False, gap="say what you did"))
    script = fix(RIGHT, "wrote calc") + reopen + fix(RIGHT + "\n", "wrote calc, really") + ACCEPT
    write_team(repo, BUILDER, script, config)
    run_until_idle(autodev, repo, "write calc", expect=0)
    [said] = events(repo, "evidence")
    assert said["outcome"] == "no_tests" and said["summary"] == "no tests found"
    assert [(a["accept"], a["by"]) for a in events(repo, "audit")] == [(False, "model"), (True, "model")]


@pytest.mark.skipif(not sandbox.resolve("auto").active, reason="needs a working bubblewrap")
def test_a_daemon_killed_during_the_tests_audits_the_done_once_after_restart(repo, autodev, tmp_path):
    """Intent before effect: kill -9 while the head's tests run; `start` computes the evidence
    again (the base run from its cache) and the done gets exactly one verdict."""
    from tests.e2e.helpers import kill_group, start_detached, wait_for

    (repo / "calc.py").write_text(CALC)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "calc with a bug in add")
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "slow").touch()
    read = json.dumps([*sandbox.own_python(), str(gate)])
    # the head's run (the base has no marker.txt) sleeps while the gate's marker is there
    command = f"if [ -f marker.txt ] && [ -f {gate}/slow ]; then sleep 60; fi; {COMMAND}"
    config = f'testCommand = {json.dumps(command)}\ndoneEvidence = "required"\nsandboxRead = {read}\n'
    script = (
        step(
            "builder",
            call("write_file", path="marker.txt", content="x\n"),
            call("write_file", path="calc.py", content=RIGHT),
            call("post", kind="done", text="fixed add"),
        )
        + ACCEPT
    )
    write_team(repo, BUILDER, script, config)
    pid = start_detached(autodev, repo, "add(2, 3) must be 5")
    folder = run_dir(repo) / "evidence"
    wait_for(
        "the head's tests to run", lambda: list(folder.glob("run-*.json")) and list(folder.glob("copy-*")), 60
    )
    kill_group(pid)
    (gate / "slow").unlink()

    run_until_idle(autodev, repo, expect=0)

    verdicts = [p for p in thread_of(repo) if p["from"] == "audit"]
    assert [v["verdict"] for v in verdicts] == ["accept"]
    assert verdicts[0]["evidence"]["summary"] == "✔ 1 now pass, 0 broke"
    [ev] = events(repo, "evidence")
    assert ev["base_cached"] is True
    assert not list(folder.glob("copy-*")), "the killed daemon's scratch copy is swept"
