"""The records (autodev/records/): files an older autodev wrote still load through them, and the
journals refuse a line that does not fit, naming its file and line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import get_args

import pytest

from autodev import records
from autodev.errors import CorruptLogError, RecordError
from autodev.rules.moves import MOVES
from autodev.store import events, inbox, state
from autodev.store.events import Events
from autodev.store.journal import Journal
from autodev.store.state import StateFile
from autodev.store.thread import Thread

FIXTURES = Path(__file__).parent / "fixtures"
# Written by `autodev demo --keep` at 7bff5e2 (2026-12-01), before the records existed: the run
# folder's logs and state.json as that code left them (a complete run of the scripted trio).
DEMO = FIXTURES / "run-2026-12-01-demo"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_old_run_folder_loads_through_the_models():
    posts = [records.post(r) for r in lines(DEMO / "thread.jsonl")]
    assert [p.seq for p in posts] == list(range(1, len(posts) + 1))
    assert {p.kind for p in posts} >= {"say", "work_done", "handoff", "done"}
    assert any(p.credit and p.credit.commits for p in posts)
    assert any(p.verdict == "reopen" for p in posts) and any(p.verdict == "accept" for p in posts)

    harness = [records.harness(r) for r in lines(DEMO / "harness.jsonl")]
    kinds = {type(h) for h in harness}
    assert {
        records.TurnStarted,
        records.GenerationFinished,
        records.ToolStarted,
        records.TurnFinished,
    } <= kinds

    events = [records.event(r) for r in lines(DEMO / "events.jsonl")]
    assert any(isinstance(e, records.PostEvent) for e in events)
    assert any(isinstance(e, records.GenerationEvent) for e in events)
    assert any(isinstance(e, records.StateEvent) and e.state == "complete" for e in events)

    st = records.run_state(json.loads((DEMO / "state.json").read_text()))
    assert st.state == "complete" and st.reason and st.reason.code == "complete"
    assert st.participants["builder"].credited == 3
    assert st.models["scripted"].generations == 20
    assert st.model_extra == {}, "every key today's daemon writes has a field"


def test_an_old_run_folder_opens_through_the_journals(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    t = Thread(run / "thread.jsonl")
    assert t.last_seq == len(lines(DEMO / "thread.jsonl"))
    t.close()
    Events(run / "events.jsonl", "r").close()
    Journal(run / "harness.jsonl", schema=records.check_harness).close()
    assert StateFile(run / "state.json").read().run_id


def test_extra_fields_are_kept_where_files_are_additive():
    p = records.post({"seq": 1, "from": "a", "kind": "say", "text": "x", "ts": "t", "mood": "calm"})
    assert p.model_extra == {"mood": "calm"}
    st = records.run_state({"state": "running", "new_key": [1]})
    assert st.model_extra == {"new_key": [1]}
    assert isinstance(records.event({"type": "brand_new", "ts": "t", "run": "r", "x": 1}), records.Event)


@pytest.mark.parametrize(
    "rec, where",
    [
        (
            {"type": "tool_started", "run": "r", "turn": 1, "call_id": "c", "name": "x", "args": {}},
            "replay_safe",
        ),
        ({"type": "teleported", "run": "r", "turn": 1}, "teleported"),  # unknown: recovery cannot skip it
        ({"type": "turn_finished", "run": "r", "turn": "three"}, "turn"),
    ],
)
def test_a_harness_record_that_does_not_fit_is_refused_on_open_with_its_line(tmp_path, rec, where):
    p = tmp_path / "harness.jsonl"
    good = {"type": "generation_failed", "run": "r", "turn": 1, "error": "x"}
    p.write_text("\n".join(json.dumps(r) for r in (good, rec, good)) + "\n")
    before = p.read_bytes()
    with pytest.raises(RecordError) as e:
        Journal(p, schema=records.check_harness)
    assert isinstance(e.value, CorruptLogError)  # the CLI edge reports it like any damaged log
    assert f"{p}: line 2 does not fit its schema" in e.value.message and where in e.value.message
    assert p.read_bytes() == before


def test_a_post_that_does_not_fit_is_refused_before_it_reaches_the_disk(tmp_path):
    t = Thread(tmp_path / "thread.jsonl")
    t.append(records.Post.draft("builder", "say", "fine"))
    with pytest.raises(records.ValidationError, match="kind"):
        records.Post.draft("builder", "shout", "not a move")  # not even a draft: nothing to append
    with pytest.raises(RecordError, match="kind"):
        line = {"seq": 2, "from": "builder", "kind": "shout", "text": "x", "handoff": None, "ts": "t"}
        t.journal.append(line)  # below the thread, the journal's check refuses it too
    t.close()
    assert [r["kind"] for r in lines(tmp_path / "thread.jsonl")] == ["say"]


def test_inbox_messages_are_a_union_on_kind():
    m = records.inbox_message({"id": "in-1", "kind": "deny", "gate_id": None, "reason": "no"})
    assert isinstance(m, records.DenyMessage)
    with pytest.raises(ValueError):
        records.inbox_message({"id": "in-1", "kind": "answer", "text": "x"})  # no notice_id


def test_the_records_name_the_same_kinds_as_the_code():
    assert get_args(records.Move) == MOVES
    assert tuple(records.INBOX) == inbox.KINDS
    assert {get_args(m.model_fields["kind"].annotation)[0] for m in records.INBOX.values()} == set(
        inbox.KINDS
    )
    assert records.SCHEMA == state.SCHEMA == events.SCHEMA


def test_every_event_kind_is_one_member_of_the_union():
    from autodev.records import events as ev

    members = get_args(get_args(ev.AnyEvent)[0])
    tags = {m.__metadata__[0].tag: get_args(m)[0] for m in members}
    assert tags == {**ev.EVENTS, "unknown": ev.UnknownEvent}
    assert len(ev.EVENTS) == len(ev.KINDS)
    for kind, model in ev.EVENTS.items():
        core = {"state": {"state": "running"}, "post": {"seq": 1, "from": "a", "kind": "say", "text": "x"}}
        read = records.event({"type": kind, "ts": "t", "run": "r", **core.get(kind, {})})
        assert type(read) is model and read.type == kind
    old = [records.event(r) for r in lines(DEMO / "events.jsonl")]
    assert not [e for e in old if isinstance(e, records.UnknownEvent)], (
        "every kind an older run wrote is known"
    )


def test_emit_writes_the_envelope_and_the_fields_the_emitter_set(tmp_path):
    from autodev.records.events import GenerationEvent, PostEvent, StateEvent, TurnEndedEvent

    log = Events(tmp_path / "events.jsonl", "run-1")
    ended = log.emit(TurnEndedEvent(participant="builder", turn=3, steps=2, posted=None, reason=None))
    gen = log.emit(GenerationEvent(participant="builder", step=1, model="m", prompt_tokens=5))
    post = {
        "seq": 4,
        "from": "builder",
        "kind": "say",
        "text": "hi",
        "handoff": None,
        "ts": "t",
        "id": "r:t3:post",
    }
    copied = log.posted(records.Post.model_validate(post))
    state = log.emit(StateEvent.model_validate({"state": "paused", "reason": {"code": "user", "text": "x"}}))
    log.close()
    assert lines(tmp_path / "events.jsonl") == [ended, gen, copied, state]
    assert list(ended) == ["type", "ts", "run", "schema", "participant", "turn", "steps", "posted", "reason"]
    assert ended["posted"] is None and "cost" not in gen and gen["prompt_tokens"] == 5
    # the post's own id is `post_id` in events, and its `ts` is the event's
    assert copied["post_id"] == "r:t3:post" and "id" not in copied and copied["ts"] != "t"
    assert state["reason"] == {"code": "user", "text": "x"}  # as given: no defaults added
    assert [type(records.event(r)) for r in (ended, gen, copied, state)] == [
        TurnEndedEvent,
        GenerationEvent,
        PostEvent,
        StateEvent,
    ]


def test_an_event_of_a_newer_autodev_is_read_not_refused(tmp_path):
    p = tmp_path / "events.jsonl"
    line = {"type": "teleported", "ts": "t", "run": "r", "schema": 1, "participant": "b", "where": "mars"}
    p.write_text(json.dumps(line) + "\n")
    Events(p, "r").close()  # the journal's check on open accepts it
    read = records.event(line)
    assert isinstance(read, records.UnknownEvent) and read.participant == "b"
    assert read.model_extra == {"where": "mars"}
    with pytest.raises(ValueError, match="ts"):
        records.check_event({"type": "control", "run": "r", "action": "pause"})  # no time: refused


def test_credit_rewind_note_and_rewind_result_keep_their_bytes(tmp_path):
    """Typed sub-models write what the free dicts wrote: the same keys, in the writer's order,
    and no default the line did not have (a rewrite's `removed` stays an extra)."""
    t = Thread(tmp_path / "thread.jsonl")
    credit = {"commits": ["b2", "a1"], "files": ["x.py"], "removed": ["c3"]}
    note = {"n": 2, "to_seq": 1, "from_seq": 2, "head": "a1", "ref": "refs/autodev/rewind-2", "undo_of": 1}
    t.append(records.Post.draft("builder", "work_done", "did", credit=credit))
    t.append(records.Post.draft("system", "say", "rewound", id="rewind-2", rewind=note))
    t.append(records.Post.draft("system", "say", "an older note", rewind={"n": 1, "to_seq": 1}))
    t.close()
    text = re.sub(r'"ts":"[^"]+"', '"ts":"T"', (tmp_path / "thread.jsonl").read_text())
    assert text.splitlines()[1:] == [
        '{"seq":2,"from":"system","kind":"say","text":"rewound","handoff":null,"ts":"T","id":"rewind-2",'
        '"rewind":{"n":2,"to_seq":1,"from_seq":2,"head":"a1","ref":"refs/autodev/rewind-2","undo_of":1}}',
        '{"seq":3,"from":"system","kind":"say","text":"an older note","handoff":null,"ts":"T",'
        '"rewind":{"n":1,"to_seq":1}}',
    ]
    first = lines(tmp_path / "thread.jsonl")[0]
    assert list(first["credit"]) == ["commits", "files", "removed"] and first["credit"] == credit
    for line in lines(tmp_path / "thread.jsonl"):
        assert json.dumps(records.post(line).dump()) == json.dumps(line)
    done = {"n": 3, "ok": True, "note_seq": 4, "to_seq": 2}
    denied = {"n": 4, "ok": False, "error": "no such post", "fix": ""}
    for result in (done, denied):
        st = records.run_state({"state": "paused", "rewind_result": result})
        assert json.dumps(st.dump()["rewind_result"]) == json.dumps(result)
    error = {"type": "error", "ts": "t", "run": "r", "message": "m", "detail": {"raw": [1, "x", None]}}
    assert records.event(error).dump() == error
