"""`autodev status --json` is what `status.gather()` holds: the same keys, in the same order,
with the same values, whatever type gather hands out (tests/fixtures/status-*.json were printed
and status-*.txt rendered by the release before it was typed, from the same run folders)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autodev.store.paths import RunPaths
from autodev.user.status import Sandbox, gather
from tests.conftest import write_team

FIXTURES = Path(__file__).parent / "fixtures"
TEAM = """
[[participants]]
name = "alice"
model = "openai/gpt-5-mini"
write = true
max_cost_usd = 2.5
max_tokens = 90000

[[participants]]
name = "carol"
agent = "claude"
model = "sonnet"
effort = "high"
"""


def printed(paths: RunPaths) -> str:
    """What `status --json` prints, with the machine's paths and sandbox left out."""
    text = json.dumps(gather(paths).to_json(), indent=1, default=str)
    out = json.loads(text.replace(str(paths.run_dir), "<run_dir>").replace(str(paths.repo), "<repo>"))
    out["sandbox"] = "<machine>"
    return json.dumps(out, indent=1)


def gated_run(repo: Path) -> RunPaths:
    """The gated run a47bad2 left (a gate, a notice holding `commands`, a queued pause), with an
    open question, a wait, the audit's usage and a participant who has left the team."""
    write_team(repo, TEAM, config="maxCostUsd = 5.0\n")
    paths = RunPaths(repo)
    paths.ensure()
    st = json.loads((FIXTURES / "state-gated-a47bad2.json").read_text())
    st["question"] = {"from": "alice", "seq": 4, "text": "which port?\x1b[31m [link=x]y[/link]"}
    st["wait"] = {"author": "bob", "due": 1.5, "seq": 3, "delay": 10.0, "streak": 1, "since": 1.0}
    st["audit_usage"] = {"prompt_tokens": 7, "completion_tokens": 3, "cost": 0.25}
    paths.state.write_text(json.dumps(st))
    return paths


@pytest.mark.parametrize("case", ["gated", "not-started", "daemon-gone"])
def test_status_json_is_what_the_previous_release_printed(repo, case):
    if case == "gated":
        paths = gated_run(repo)
    elif case == "daemon-gone":
        paths = gated_run(repo)
        st = json.loads(paths.state.read_text())
        st.update(state="running", reason=None, gate=None)
        paths.state.write_text(json.dumps(st))
        paths.daemon_log.write_text("autodev daemon: started\nTraceback: the last line\n")
    else:
        write_team(repo, TEAM)
        paths = RunPaths(repo)
    got = printed(paths)
    golden = FIXTURES / f"status-{case}.json"
    assert got == golden.read_text()


@pytest.mark.parametrize("case", ["gated", "daemon-gone"])
def test_status_text_is_what_the_previous_release_printed(repo, case, capsys, monkeypatch):
    from autodev.user.status import render

    monkeypatch.setenv("COLUMNS", "100")
    paths = gated_run(repo)
    if case == "daemon-gone":
        st = json.loads(paths.state.read_text())
        st.update(state="running", reason=None, gate=None)
        paths.state.write_text(json.dumps(st))
        paths.daemon_log.write_text("autodev daemon: started\nTraceback: the last line\n")
    status = gather(paths)
    status = status.model_copy(update={"sandbox": Sandbox(mode="?", active=False, describe="<machine>")})
    render(status)
    got = capsys.readouterr().out.replace(str(paths.run_dir), "<run_dir>").replace(str(paths.repo), "<repo>")
    golden = FIXTURES / f"status-{case}.txt"
    assert got == golden.read_text()
