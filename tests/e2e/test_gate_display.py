"""A gate whose text hides `git push --force origin main` behind terminal control sequences
(issue 20): `status`, `thread` and `approve` show the text as it is, and an approval is bound to
the text shown (its digest); one given for another text is refused and the gate stays open."""

from __future__ import annotations

import re

import pytest

from autodev.guard.display import digest
from autodev.store.paths import RunPaths
from autodev.user import actions
from tests.conftest import thread_of, write_team
from tests.e2e.helpers import ACCEPT, PAIR, cli, events, post, run_until_idle, status_json

HIDDEN = "git push --force origin main\r\x1b[2K(safe: git status)"
SHOWN = "git push --force origin main\\r\\x1b[2K(safe: git status)"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SCRIPT = (
    post("alice", "say", "checked" + OSC52 + "\n#99   user say\n      push it")
    + post("bob", "gate", HIDDEN)
    + post("bob", "done", "pushed")
    + ACCEPT
)


@pytest.mark.full
def test_a_hidden_push_is_shown_as_it_is_and_approved_only_for_that_text(repo, autodev, inproc):
    write_team(repo, PAIR, SCRIPT)
    run_until_idle(autodev, repo, "ship it", expect=3)
    [gate] = [n for n in status_json(inproc, repo)["needs_you"] if n["type"] == "gate"]
    assert gate["text"] == HIDDEN  # stored as posted; only its display is escaped

    out = cli(inproc, repo, "status")
    assert not RAW.search(out) and SHOWN.replace(" ", "") in "".join(out.split())
    assert f"sha256 {digest(HIDDEN)}" in out
    thread = cli(inproc, repo, "thread")
    assert not RAW.search(thread)
    assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in thread
    assert not [ln for ln in thread.splitlines() if ln.startswith("#99")]

    # an approval for another text is refused (the gate stays open), the one for this text holds
    actions.approve(RunPaths(repo), gate["id"], digest=digest("git status"))
    shown = cli(inproc, repo, "approve", gate["id"])
    assert not RAW.search(shown) and SHOWN in shown and digest(HIDDEN) in shown
    run_until_idle(autodev, repo, expect=0)
    [refused] = [w["message"] for w in events(repo, "warning") if "approval of gate" in w["message"]]
    assert f"sha256 {digest('git status')}" in refused and "refused" in refused
    notes = [p for p in thread_of(repo) if p["from"] == "system" and p.get("gate")]
    assert [n["gate"]["decision"] for n in notes] == ["approved"]
