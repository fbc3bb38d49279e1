"""Issue 20's files in the run folder that autodev did not write, tried again through the real
CLI and daemon (issue 29 re-run): a FIFO, a folder or a link named like an inbox message never
stalls the daemon nor is followed, and a damaged state.json is one message naming the repair."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import run_dir, thread_of, write_team
from tests.e2e.helpers import ACCEPT, SOLO, post, run_until_idle


def test_a_fifo_a_folder_and_a_link_in_the_inbox_neither_stall_the_daemon_nor_are_followed(
    repo, autodev, inproc, tmp_path
):
    write_team(repo, SOLO, post("solo", "done", "said hello") + ACCEPT)
    assert inproc(repo, "send", "hello").returncode == 0
    box = run_dir(repo) / "inbox"
    os.mkfifo(box / "00000000000000000000-1-fifo.json")  # read with a blocking open: waits forever
    (box / "00000000000000000000-1-folder.json").mkdir()
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"kind": "send", "text": "from a link"}))
    (box / "00000000000000000000-1-link.json").symlink_to(elsewhere)
    run_until_idle(autodev, repo, expect=0)  # a stalled daemon would end in the 60 s timeout
    texts = [p["text"] for p in thread_of(repo)]
    assert texts[0] == "hello" and "from a link" not in texts, texts
    assert (box / "00000000000000000000-1-fifo.json").exists()
    assert elsewhere.read_text() == json.dumps({"kind": "send", "text": "from a link"})


@pytest.mark.parametrize(
    "bad",
    ["not json {", "[1, 2]", '{"turn": "seven", "participants": []}', "[" * 200_000, '{"turn": 1e999}'],
    ids=["not-json", "a-list", "mistyped", "deep", "infinite"],
)
def test_a_damaged_state_json_is_one_message_naming_the_repair(repo, inproc, bad):
    write_team(repo, SOLO)
    run_dir(repo).mkdir(parents=True, exist_ok=True)
    (run_dir(repo) / "state.json").write_text(bad)
    for command in (["status"], ["status", "--json"], ["send", "hi"]):
        r = inproc(repo, *command)
        assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout, (command, r.stderr)
        assert "state.json" in r.stderr and "rebuilds the run's state from its logs" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) <= 3, r.stderr
