"""`autodev status` without pydantic (user/quickstatus.py) says what the model path says: the
same JSON, key for key and in the same order, and the same text; and it steps aside (None)
whenever only the models can say it."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from autodev.store.paths import RunPaths
from autodev.user import quickstatus, statustext
from autodev.user.status import EvidenceLine, Row, gather
from tests.conftest import write_team
from tests.test_status_json import FIXTURES, TEAM, gated_run


def _both(paths: RunPaths) -> tuple[str, str | None]:
    """(the model path's JSON, the plain path's) once the model path filled the cache."""
    slow = gather(paths).to_json()
    quickstatus.remember(paths)
    quick = quickstatus.gather_json(paths)
    return json.dumps(slow, indent=1), None if quick is None else json.dumps(quick, indent=1)


def _with_evidence(paths: RunPaths) -> None:
    post = {"seq": 9, "from": "audit", "kind": "say", "text": "verdict"}
    post["evidence"] = {"of": 8, "summary": "✔ 3 passed", "outcome": "passed", "command": "pytest -q"}
    post["evidence"]["counts"] = {"passed": 3}
    with paths.thread.open("a") as f:
        f.write(json.dumps(post) + "\n")


@pytest.mark.parametrize("case", ["gated", "not-started", "evidence", "fresh-run-dir", "usage"])
def test_plain_status_is_the_model_path_s(repo, case):
    if case == "not-started":
        write_team(repo, TEAM)
        paths = RunPaths(repo)
        paths.run_dir.mkdir(parents=True)
    elif case == "fresh-run-dir":
        write_team(repo, TEAM, config='maxCostUsd = 5.0\nmaxTokens = 1000\nsandbox = "off"\n')
        paths = RunPaths(repo)
        paths.ensure()
        paths.state.write_text(
            json.dumps({"state": "paused", "run_id": "r1", "turn": 3, "objective": "a\nb"})
        )
    else:
        paths = gated_run(repo)
        if case == "evidence":
            _with_evidence(paths)
        if case == "usage":
            st = json.loads(paths.state.read_text())
            st["next"] = {"speaker": "alice", "why": "handoff", "rule": "handoff"}
            st["participants"]["alice"]["cached_tokens"] = 5
            st["reason"] = {"text": "held", "continue": "autodev resume", "code": "user_pause"}
            paths.state.write_text(json.dumps(st, sort_keys=True))
    slow, quick = _both(paths)
    assert quick is not None, "the plain path stepped aside: this case tests nothing"
    assert quick == slow


def test_plain_status_prints_the_golden_text(repo, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    paths = gated_run(repo)
    quickstatus.remember(paths)
    data = quickstatus.gather_json(paths)
    assert data is not None
    data["sandbox"] = {"mode": "?", "active": False, "describe": "<machine>"}
    statustext.render(data)
    got = capsys.readouterr().out.replace(str(paths.run_dir), "<run_dir>").replace(str(paths.repo), "<repo>")
    assert got == (FIXTURES / "status-gated.txt").read_text()


def test_plain_status_steps_aside(repo):
    paths = gated_run(repo)
    assert quickstatus.gather_json(paths) is None  # no cache yet
    quickstatus.remember(paths)
    assert quickstatus.gather_json(paths) is not None
    # an edit of team.toml (its bytes): the cache no longer speaks for it
    paths.team_file.write_text(paths.team_file.read_text() + "\n# edited\n")
    assert quickstatus.gather_json(paths) is None
    quickstatus.remember(paths)
    assert quickstatus.gather_json(paths) is not None
    # a value the model would convert (an int where the figures keep a float)
    st = json.loads(paths.state.read_text())
    st["participants"]["alice"]["cost"] = 1
    paths.state.write_text(json.dumps(st))
    assert quickstatus.gather_json(paths) is None
    # a daemon that is gone: only the model path says why
    st["participants"]["alice"]["cost"] = 1.0
    st.update(state="running", reason=None, gate=None)
    paths.state.write_text(json.dumps(st))
    assert quickstatus.gather_json(paths) is None
    # a team that does not load is never cached
    paths.team_file.write_text("[[participants]]\nname = 3\n")
    quickstatus.remember(paths)
    assert quickstatus.gather_json(paths) is None


def test_field_orders_are_the_models():
    from autodev.records.state import Next, Reason, Usage, Wait

    for name, model in {
        "Row": Row,
        "Reason": Reason,
        "Next": Next,
        "Wait": Wait,
        "Usage": Usage,
        "EvidenceLine": EvidenceLine,
    }.items():
        assert quickstatus.ORDER[name] == tuple(f.alias or n for n, f in model.model_fields.items()), name
    # the figures a row shows are Row's, in its order (quickstatus.Counted)
    counted = tuple(quickstatus.Counted.__annotations__)
    assert counted == tuple(k for k in quickstatus.ORDER["Row"] if k in counted)


def test_the_plain_state_types_are_the_models_fields():
    """plainstate.py's TypedDicts name fields the models have, required exactly where the model
    requires them (store/plain.py's shapes, generated from the records)."""
    from autodev.store.shapes import SHAPES
    from autodev.user import plainstate as ps

    for td, model in [
        (ps.PlainState, "RunState"),
        (ps.PlainReason, "Reason"),
        (ps.PlainQuestion, "Question"),
        (ps.PlainNotice, "Notice"),
        (ps.PlainGate, "Gate"),
        (ps.PlainNext, "Next"),
        (ps.PlainWait, "Wait"),
        (ps.PlainUsage, "Usage"),
        (ps.PlainFigures, "Figures"),
        (ps.PlainConfigRefused, "ConfigRefused"),
    ]:
        fields = SHAPES[model]["fields"]
        keys = td.__required_keys__ | td.__optional_keys__
        assert keys <= set(fields), (model, keys - set(fields))
        assert td.__required_keys__ == {k for k in keys if fields[k][1]}, model
    assert set(get_args(ps.State)) == set(SHAPES["RunState"]["fields"]["state"][0][1:])
