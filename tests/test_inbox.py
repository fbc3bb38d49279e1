"""The inbox: atomic one-file messages, arrival order, concurrent senders, damaged files kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autodev.store import inbox

ROOT = Path(__file__).resolve().parents[1]


def test_drop_pending_done(tmp_path):
    box = tmp_path / "run" / "inbox"
    assert inbox.pending(box) == []  # no folder yet
    msg = inbox.drop(box, "send", text="hello")
    assert msg["kind"] == "send" and msg["text"] == "hello"
    assert msg["id"].startswith("in-") and msg["ts"].endswith("Z")
    got = inbox.pending(box)
    assert len(got) == 1
    path, body = got[0]
    assert body == msg
    assert path.parent == box and path.suffix == ".json"
    assert json.loads(path.read_text()) == msg
    inbox.done(path)
    assert not path.exists()
    assert inbox.pending(box) == []
    inbox.done(path)  # consuming twice is harmless


def test_unknown_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="bogus"):
        inbox.drop(tmp_path / "inbox", "bogus", text="x")
    assert not (tmp_path / "inbox").exists() or list((tmp_path / "inbox").iterdir()) == []


def test_one_senders_order_is_preserved(tmp_path):
    box = tmp_path / "inbox"
    fields = {
        "send": {"text": "t"},
        "answer": {"notice_id": "1", "text": "t"},
        "approve": {"gate_id": None},
        "deny": {"gate_id": "2", "reason": ""},
        "notice": {"notice_id": "1", "action": "hold"},
    }
    kinds = list(fields) * 6
    ids = [inbox.drop(box, k, i=i, **fields[k])["id"] for i, k in enumerate(kinds)]
    got = inbox.pending(box)
    assert [m["id"] for _, m in got] == ids
    assert [m["i"] for _, m in got] == list(range(len(kinds)))
    assert len(set(ids)) == len(ids)


def test_temp_files_are_ignored(tmp_path):
    box = tmp_path / "inbox"
    box.mkdir()
    (box / ".0001-1-abcd.tmp").write_text('{"id": "half')  # a write still in progress
    (box / "notes.txt").write_text("not a message")
    m = inbox.drop(box, "send", text="real")
    assert [b for _, b in inbox.pending(box)] == [m]
    assert (box / ".0001-1-abcd.tmp").exists()


def test_non_json_file_is_set_aside_not_lost(tmp_path):
    box = tmp_path / "inbox"
    first = inbox.drop(box, "send", text="before")
    bad = box / "00000000000000000001-1-dead.json"  # sorts first
    bad.write_text("this is not json {")
    last = inbox.drop(box, "send", text="after")
    # A reader only peeking skips the damaged file and leaves it for the daemon.
    assert [b for _, b in inbox.pending(box)] == [first, last]
    assert bad.exists()
    reported = []
    got = inbox.pending(box, lambda p, why: reported.append((p.name, why)))
    assert [b for _, b in got] == [first, last]
    kept = box / "00000000000000000001-1-dead.bad"
    assert reported == [(kept.name, reported[0][1])] and "not a JSON message" in reported[0][1]
    assert not bad.exists()
    assert kept.read_text() == "this is not json {"
    # The set-aside file is skipped from now on.
    assert [b for _, b in inbox.pending(box)] == [first, last]
    assert kept.exists()


@pytest.mark.parametrize(
    "raw, why",
    [
        (b'{"kind":"send"}', 'no "id"'),
        (b"[1,2,3]", "JSON list"),
        (b"\xff\xfe", "not a JSON message"),
        (b'{"id":"in-x","kind":"send","text":7}', '"text" must be a string'),
        (b'{"id":"in-x","kind":"launch","text":"x"}', "not one of send"),
        (b'{"id":"in-x","kind":"answer","text":"x"}', '"notice_id" must be a string'),
        (b"[" * 100000, "not a JSON message"),
    ],
)
def test_malformed_messages_are_set_aside_with_the_reason(tmp_path, raw, why):
    box = tmp_path / "inbox"
    bad = box / "00000000000000000001-1-dead.json"
    box.mkdir()
    bad.write_bytes(raw)
    good = inbox.drop(box, "send", text="fine")
    reported = []
    got = inbox.pending(box, lambda p, w: reported.append(w))
    assert [b for _, b in got] == [good]
    assert len(reported) == 1 and why in reported[0]
    assert bad.with_suffix(".bad").read_bytes() == raw


def test_undecodable_and_surrogate_text_is_stored_as_valid_utf8(tmp_path):
    box = tmp_path / "inbox"
    msg = inbox.drop(box, "send", text="\udcff\udcfe and \ud800")
    assert msg["text"] == "\\xff\\xfe and \\ud800"
    ((path, body),) = inbox.pending(box)
    assert body == msg
    path.read_bytes().decode("utf-8")  # strictly valid
    assert os.stat(path).st_mode & 0o777 == 0o600


SENDER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from autodev.store import inbox
    box, who, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    for i in range(n):
        inbox.drop(box, "send", text=f"{who} message {i}", who=who, i=i)
""")


@pytest.mark.e2e  # eight processes of ours
def test_concurrent_senders_lose_nothing_and_keep_their_order(tmp_path):
    box = tmp_path / "inbox"
    procs, per = 8, 50
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    running = [
        subprocess.Popen(
            [sys.executable, "-c", SENDER, str(box), f"s{k}", str(per)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(procs)
    ]
    # A consumer polling while the senders write only ever sees whole messages.
    while any(p.poll() is None for p in running):
        for _, m in inbox.pending(box):
            assert m["text"] == f"{m['who']} message {m['i']}"
    for p in running:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    files = sorted(box.iterdir())
    assert len(files) == procs * per
    assert all(f.suffix == ".json" for f in files)  # no temp files or .bad left behind
    got = [m for _, m in inbox.pending(box)]
    assert len(got) == procs * per
    assert len({m["id"] for m in got}) == procs * per
    for k in range(procs):
        assert [m["i"] for m in got if m["who"] == f"s{k}"] == list(range(per))


def test_a_fifo_a_folder_and_a_link_named_json_are_ignored_and_an_oversized_file_set_aside(tmp_path):
    """Issue 20: none of these is a message autodev wrote; none blocks the daemon or crashes it."""
    import os

    from autodev.store import inbox

    box = tmp_path / "inbox"
    box.mkdir()
    os.mkfifo(box / "0-fifo.json")  # read without O_NONBLOCK, this would wait forever
    (box / "1-folder.json").mkdir()
    (box / "2-link.json").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text('{"kind": "send", "text": "from a link"}')
    (box / "3-big.json").write_bytes(
        b'{"kind": "send", "text": "' + b"x" * (inbox.MAX_MESSAGE_BYTES + 10) + b'"}'
    )
    inbox.drop(box, "send", text="hello")
    aside = []
    got = inbox.pending(box, lambda p, why: aside.append((p.name, why)))
    assert [m["text"] for _, m in got] == ["hello"]
    assert [name for name, _ in aside] == ["3-big.bad"] and "bytes" in aside[0][1]
    assert (box / "0-fifo.json").exists() and (box / "1-folder.json").is_dir()
