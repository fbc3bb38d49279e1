"""state.json: atomic whole-file writes, compare-and-swap, and no lost control requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autodev.errors import StateConflictError
from autodev.store.state import BLANK, StateFile, blank_state


def test_missing_file_reads_as_blank_state(tmp_path):
    s = StateFile(tmp_path / "run" / "state.json")
    assert s.read() == blank_state()
    assert s.read().version == 0
    assert not s.path.exists()


def test_update_bumps_version_and_writes_whole_file(tmp_path):
    s = StateFile(tmp_path / "run" / "state.json")

    new = s.update(lambda st: st.but(state="running"))
    assert new.version == 1 and new.state == "running"
    on_disk = json.loads(s.path.read_text())
    assert on_disk == new.dump() == {**BLANK, "version": 1, "state": "running"}
    # A change that changes nothing still counts as a write.
    again = s.update(lambda st: st)
    assert again.state == "running" and again.version == 2
    assert s.read().version == 2
    # No temp files are left behind.
    assert sorted(p.name for p in s.path.parent.iterdir()) == ["state.json", "state.json.lock"]


def test_update_that_raises_writes_nothing(tmp_path):
    s = StateFile(tmp_path / "state.json")
    s.update(lambda st: st.but(state="running"))
    before = s.path.read_bytes()

    def boom(st):
        st.but(state="faulted")
        raise RuntimeError("change failed")

    with pytest.raises(RuntimeError):
        s.update(boom)
    assert s.path.read_bytes() == before


def test_corrupt_state_file_is_reported(tmp_path):
    s = StateFile(tmp_path / "state.json")
    s.path.write_text("{half")
    with pytest.raises(StateConflictError, match="not valid JSON") as e:
        s.read()
    assert str(s.path) in e.value.message


def test_old_state_files_gain_new_keys(tmp_path):
    s = StateFile(tmp_path / "state.json")
    s.path.write_text(json.dumps({"version": 7, "state": "running"}))
    st = s.read()
    assert st.version == 7 and st.controls == [] and st.control_seq == 0
    s.update(lambda st: st)  # and write them: every state.json holds them
    assert json.loads(s.path.read_text()) == {**BLANK, "version": 8, "state": "running"}


def test_a_wrongly_typed_state_names_the_file_the_field_and_the_repair(tmp_path):
    s = StateFile(tmp_path / "state.json")
    s.path.write_text(json.dumps({"version": 3, "state": "running", "gate": {"id": "1", "declarer": 7}}))
    with pytest.raises(StateConflictError) as e:
        s.read()
    assert str(s.path) in e.value.message and "'gate.declarer'" in e.value.message
    assert "mv " in e.value.fix and "autodev start" in e.value.fix


def test_keys_a_newer_autodev_wrote_survive_a_read_modify_write(tmp_path):
    s = StateFile(tmp_path / "state.json")
    newer = {
        **BLANK,
        "version": 4,
        "state": "gated",
        "lane": {"x": [1, 2]},  # a field this version does not know
        "gate": {"id": "2", "declarer": "bob", "text": "push", "seq": 2, "risk": "high"},
        "participants": {"bob": {"turns": 1, "cost": 0.25, "energy_wh": 3}},
        "controls": [{"n": 1, "action": "pause", "at": 5, "origin": "panel"}],
        "control_seq": 1,
    }
    s.path.write_text(json.dumps(newer))
    got = s.update(lambda st: st.but(speaking="bob"))
    assert json.loads(s.path.read_text()) == {**newer, "version": 5, "speaking": "bob"}
    assert got.gate and got.gate.declarer == "bob" and got.participants["bob"].turns == 1


def test_request_queues_controls_in_order(tmp_path):
    s = StateFile(tmp_path / "state.json")
    s.request("pause", reason="user")
    s.request("resume")
    st = s.request("stop")
    assert [(c.n, c.action) for c in st.controls] == [(1, "pause"), (2, "resume"), (3, "stop")]
    assert st.controls[0].dump()["reason"] == "user"
    assert st.control_seq == 3


ROOT = Path(__file__).resolve().parents[1]

WORKER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from autodev.store.state import StateFile
    s = StateFile(Path(sys.argv[1]))
    who = sys.argv[2]
    for i in range(int(sys.argv[3])):
        s.request("pause", who=who, i=i)
""")


@pytest.mark.e2e  # eight processes of ours
def test_concurrent_requests_from_many_processes_lose_nothing(tmp_path):
    path = tmp_path / "state.json"
    procs, per = 8, 25
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    running = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(path), f"w{k}", str(per)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(procs)
    ]
    # Readers never lock; while the writers race, every read sees a whole state and the
    # version never goes backwards.
    seen = 0
    while any(p.poll() is None for p in running):
        v = StateFile(path).read().version
        assert v >= seen
        seen = v
    for p in running:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    st = StateFile(path).read()
    controls = [c.dump() for c in st.controls]
    assert len(controls) == procs * per
    assert [c["n"] for c in controls] == list(range(1, procs * per + 1))
    assert st.control_seq == procs * per
    assert st.version == procs * per
    for k in range(procs):
        mine = [c["i"] for c in controls if c["who"] == f"w{k}"]
        assert mine == list(range(per))  # each writer's own order is kept


def test_any_text_is_written_as_valid_utf8_and_privately(tmp_path):
    s = StateFile(tmp_path / "run" / "state.json")
    s.update(
        lambda st: st.but(objective="caf\udce9", question={"from": "bob", "seq": 1, "text": "\ud83d alone"})
    )
    raw = s.path.read_bytes().decode("utf-8")  # strictly valid
    assert "\\udce9" not in raw
    got = s.read()
    assert got.objective == "caf\\xe9" and got.question and got.question.text == "\\ud83d alone"
    assert s.path.stat().st_mode & 0o777 == 0o600


PREVIOUS = Path(__file__).parent / "fixtures" / "state-gated-a47bad2.json"


def test_a_state_the_previous_release_wrote_reads_typed_and_writes_back_byte_for_byte(tmp_path):
    """tests/fixtures/state-gated-a47bad2.json is what a real run of a47bad2 (before the records
    became the code's types) left: gated on a push, a notice holding `commands`, a queued pause."""
    from autodev import records
    from autodev.records.state import ModelUsage

    raw = PREVIOUS.read_text()
    st = records.run_state(json.loads(raw))
    assert st.state == "gated" and st.gate and st.gate.text == "git push origin main"
    assert st.notices["1"].hold == "commands" and [c.action for c in st.controls] == ["pause"]
    assert st.model_dump(mode="json", by_alias=True, exclude_unset=True) == json.loads(raw)  # nothing lost
    one = ModelUsage(generations=1, prompt_tokens=10, completion_tokens=2, cost=0.5)
    assert (st.models["scripted"] + one).plain() == {
        "generations": 6,
        "prompt_tokens": 8605,
        "completion_tokens": 76,
        "cost": 0.5,
    }
    path = tmp_path / "state.json"
    path.write_text(raw)
    StateFile(path).update(lambda s: s)
    assert path.read_text() == raw.replace('"version": 21,', '"version": 22,')


def test_a_state_write_fsyncs_the_logs_before_it(tmp_path, monkeypatch):
    """The daemon's group commit (issue 33): log lines appended without their own fsync are
    fsynced before state.json is replaced, so state.json is never ahead of its logs."""
    from autodev.store.journal import Journal

    log = Journal(tmp_path / "events.jsonl", idempotent=False)
    s = StateFile(tmp_path / "state.json")
    s.sync_first(log.sync)
    order: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        order.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst) -> None:
        order.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    log.append({"type": "turn_ended"}, durable=False)
    s.update(lambda st: st.but(state="running"))
    assert order[0] == ("fsync", str(log.path))
    assert order.index(("replace", str(s.path))) > 0
    order.clear()
    s.update(lambda st: st.but(turn=1))  # nothing pending in the log: no fsync of it
    assert ("fsync", str(log.path)) not in order
    log.close()


def test_a_state_change_names_every_field_a_change_can_set(tmp_path):
    from typing import get_type_hints

    from autodev.records.state import RunState, StateChange

    assert set(get_type_hints(StateChange)) == set(RunState.model_fields) - {"schema_"}
    path = tmp_path / "state.json"
    path.write_text(json.dumps({**BLANK, "from_a_newer_autodev": {"x": 1}}))
    sf = StateFile(path)
    sf.update(lambda s: s.changed(speaking="a", warnings=["w"]))
    data = json.loads(path.read_text())
    assert data["from_a_newer_autodev"] == {"x": 1} and data["speaking"] == "a"


def test_a_write_that_is_not_durable_fsyncs_its_bytes_and_leaves_the_rename_to_the_next(
    tmp_path, monkeypatch
):
    """`durable=False` (the scheduled turn's write): the new file's bytes reach the disk before it
    is renamed into place, so a power cut leaves the old state or the new one, never a torn one;
    the rename is made durable by the next durable write's directory fsync."""
    s = StateFile(tmp_path / "state.json")
    s.update(lambda st: st.changed(state="running"))
    order: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        order.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src, dst) -> None:
        order.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    s.update(lambda st: st.changed(turn=1), durable=False)
    assert [op for op, _ in order] == ["fsync", "replace"]
    assert order[0][1].endswith(".tmp")
    assert s.read().turn == 1
    order.clear()
    s.update(lambda st: st.changed(speaking=None))
    assert order[-1] == ("fsync", str(tmp_path))


def test_a_state_read_again_unchanged_is_not_parsed_again_and_any_other_write_is_seen(tmp_path):
    """The daemon reads state.json several times a turn (issue 33): an unchanged file is not read
    again, while a write by another process (a `pause` from the CLI), by this one, or an edit in
    place is seen at the next read. The state handed out is frozen, so sharing it is safe."""
    from pydantic import ValidationError

    daemon = StateFile(tmp_path / "state.json")
    daemon.update(lambda st: st.but(state="running"))
    first = daemon.read()
    assert daemon.read() is first  # unchanged: the same frozen state
    with pytest.raises(ValidationError):
        first.turn = 5  # pyright: ignore[reportAttributeAccessIssue]
    StateFile(tmp_path / "state.json").request("pause")  # the CLI's own StateFile, as `autodev pause`
    seen = daemon.read()
    assert seen is not first and [c.action for c in seen.controls] == ["pause"]
    daemon.update(lambda st: st.changed(turn=7))
    assert daemon.read().turn == 7
    text = daemon.path.read_text()
    with open(daemon.path, "r+") as f:  # by hand, in place: the same inode, another size
        f.write(text.replace('"turn": 7', '"turn": 712'))
    assert daemon.read().turn == 712
