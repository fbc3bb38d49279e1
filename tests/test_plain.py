"""store/plain.py: state.json and inbox messages checked as plain JSON must say "fits" only where
the pydantic model takes the data and writes it back unchanged, and the plain reads and writes
of state.json must give the bytes the model's own would (issue 33: the steering commands use
them instead of building the models)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autodev import records
from autodev.errors import StateConflictError
from autodev.store import inbox, plain, shapes
from autodev.store.state import BLANK, StateFile
from tests.conftest import examples

FIXTURE = Path(__file__).parent / "fixtures" / "run-2026-12-01-demo" / "state.json"


def test_shapes_file_is_the_models():
    assert (shapes.INBOX, shapes.SHAPES) == plain.derive(), (
        "regenerate: python -m autodev.store.plain > autodev/store/shapes.py && ruff format autodev/store/shapes.py"
    )


def _dump(data: object) -> object:
    return records.RunState.model_validate(data).dump()


# -- data from the shapes: canonical (as autodev writes it), then with one value swapped

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 2**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)


def _value(spec: Any) -> st.SearchStrategy[Any]:
    if isinstance(spec, str):
        return {
            "str": st.text(max_size=4),
            "str+": st.text(min_size=1, max_size=4),
            "int": st.integers(-5, 2**40),
            "float": st.floats(allow_nan=False, allow_infinity=False),
            "bool": st.booleans(),
            "none": st.none(),
            "any": JSON.filter(lambda v: "nan" not in repr(v) and "inf" not in repr(v)),
        }[spec]
    tag = spec[0]
    if tag == "lit":
        return st.sampled_from(spec[1:])
    if tag == "list":
        return st.lists(_value(spec[1]), max_size=2)
    if tag == "dict":
        return st.dictionaries(st.text(max_size=3), _value(spec[1]), max_size=2)
    if tag == "or":
        return st.one_of(*(_value(s) for s in spec[1:]))
    assert tag == "model"
    return _model(spec[1])


def _model(name: str) -> st.SearchStrategy[dict[str, Any]]:
    fields = shapes.SHAPES[name]["fields"]

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, (spec, required) in fields.items():
            if required or draw(st.booleans()):
                out[key] = draw(_value(spec))
        if draw(st.booleans()):  # a field a newer autodev added
            out["newer_" + draw(st.text("abc", max_size=2))] = draw(_value("any"))
        return out

    return build()


@st.composite
def _damaged(draw: st.DrawFn, name: str) -> dict[str, Any]:
    """A canonical record with one value (at the top or one level down) replaced by any JSON,
    a key dropped, or a field given by its Python name."""
    rec = draw(_model(name))
    how = draw(st.sampled_from(["swap", "swap-inner", "drop", "python-name"]))
    if how == "swap" and rec:
        rec[draw(st.sampled_from(sorted(rec)))] = draw(JSON)
    elif how == "swap-inner":
        inner = [k for k, v in rec.items() if isinstance(v, dict) and v]
        if inner:
            k = draw(st.sampled_from(inner))
            rec[k] = {**rec[k], draw(st.sampled_from(sorted(rec[k]))): draw(JSON)}
    elif how == "drop" and rec:
        rec.pop(draw(st.sampled_from(sorted(rec))))
    elif how == "python-name" and shapes.SHAPES[name]["names"]:
        rec[draw(st.sampled_from(shapes.SHAPES[name]["names"]))] = draw(JSON)
    return rec


SETTINGS = settings(max_examples=examples(20), suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(_model("RunState"))
def test_a_state_as_autodev_writes_it_fits_and_the_model_keeps_it(state):
    assert plain.fits("RunState", state)
    assert _dump(state) == state


@SETTINGS
@given(_damaged("RunState"))
def test_a_state_that_fits_is_one_the_model_keeps_unchanged(state):
    if plain.fits("RunState", state):
        assert _dump(state) == state


@SETTINGS
@given(st.sampled_from(sorted(shapes.INBOX)).flatmap(lambda k: _damaged(shapes.INBOX[k])))
def test_an_inbox_message_that_fits_is_one_the_daemon_takes(msg):
    if plain.inbox_fits(msg):
        records.inbox_message(msg)
        assert inbox.problem(msg) is None


@pytest.mark.parametrize(
    "change",
    [
        {"turn": 1.0},  # an int field holding a float: pydantic converts it
        {"schema_": 1},  # a field by its Python name: pydantic takes it as the field
        {"participants": {"a": {"cost": 1}}},  # an int in a float field: written back as 1.0
        {"wait": {"author": "a", "due": math.inf}},  # not finite: not plain JSON
        {"gate": {"id": "1"}},  # the declarer is missing
        {"state": "sleeping"},  # not a state
        {"controls": [{"n": True, "action": "stop"}]},  # a bool is not an int here
    ],
)
def test_what_the_model_would_change_or_refuse_does_not_fit(change):
    assert not plain.fits("RunState", {**BLANK, **change})


def test_the_demo_run_state_fits():
    data = {**BLANK, **json.loads(FIXTURE.read_text())}
    assert plain.fits("RunState", data) and _dump(data) == data


# -- StateFile's plain reads and writes against the model's


def test_read_plain_is_read_dumped(tmp_path):
    s = StateFile(tmp_path / "state.json")
    assert s.read_plain() == s.read().dump() == BLANK  # no file yet
    shutil.copy(FIXTURE, s.path)
    assert s.read_plain() == s.read().dump()
    # An older form the model converts (an int cost) goes through the model: the same dict.
    data = json.loads(FIXTURE.read_text())
    data["audit_usage"] = {"cost": 1, "prompt_tokens": 3}
    s.path.write_text(json.dumps(data))
    assert s.read_plain() == s.read().dump()
    assert s.read_plain()["audit_usage"] == {"cost": 1.0, "prompt_tokens": 3}


@pytest.mark.parametrize("text", ["{half", "[1]", '{"turn": "many"}'])
def test_read_plain_of_a_damaged_file_is_the_models_error(tmp_path, text):
    s = StateFile(tmp_path / "state.json")
    s.path.write_text(text)
    with pytest.raises(StateConflictError) as plain_error:
        s.read_plain()
    with pytest.raises(StateConflictError) as model_error:
        s.read()
    assert (plain_error.value.message, plain_error.value.fix) == (
        model_error.value.message,
        model_error.value.fix,
    )


@pytest.mark.parametrize("start", ["none", "blank", "demo", "older"])
def test_request_plain_writes_the_bytes_request_writes(tmp_path, start):
    a, b = StateFile(tmp_path / "a" / "state.json"), StateFile(tmp_path / "b" / "state.json")
    for s in (a, b):
        s.path.parent.mkdir()
        if start == "blank":
            s.path.write_text(json.dumps(BLANK))
        elif start == "demo":
            shutil.copy(FIXTURE, s.path)
        elif start == "older":
            s.path.write_text(json.dumps({"state": "paused", "turn": 3, "wait": {"author": "x", "due": 5}}))
    for action in ("pause", "stop", "resume"):
        got_a = a.request(action, at=7).dump()
        got_b = b.request_plain(action, at=7)
        assert got_a == got_b
        assert a.path.read_bytes() == b.path.read_bytes()
