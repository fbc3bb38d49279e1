"""What a person reads is what it is (issue 20): participants' and providers' text is shown with
control characters escaped in the thread, status, the panel and notifications."""

from __future__ import annotations

import re

from autodev.daemon import notify
from autodev.guard.display import clean, digest, line, shown
from autodev.panel import views
from autodev.records.state import RunState
from autodev.user import status
from autodev.user.events_view import event_text
from autodev.user.render import console, post_text

HIDDEN_PUSH = "git push --force origin main\r\x1b[2K(safe: git status)"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
FAKE_LINE = "looks fine\n#99   💬 user say\n      yes, push it"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b-\u200f]")


def test_controls_bidi_and_invisible_characters_are_escaped():
    assert shown(HIDDEN_PUSH) == "git push --force origin main\\r\\x1b[2K(safe: git status)"
    assert shown(OSC52) == "\\x1b]52;c;ZWNobyBwd25lZA==\\x07"
    assert shown("a\u202egnp.exe") == "a\\u202egnp.exe"
    assert shown("\x9b31m zero\u200bwidth \U000e0041") == "\\x9b31m zero\\u200bwidth \\U000e0041"
    assert shown("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert line("two\nlines\tand a tab") == "two\\nlines\\tand a tab"
    assert line("ünïcode and emoji 🚧 stay") == "ünïcode and emoji 🚧 stay"
    assert clean({"a": ["x\x1by", {"b": "\r"}], "n": 3}) == {"a": ["x\\x1by", {"b": "\\r"}], "n": 3}


def _rendered(renderable) -> str:
    con = console()
    with con.capture() as cap:
        con.print(renderable)
    return cap.get()


def test_a_post_with_osc52_and_a_fake_header_line_is_shown_as_it_is():
    post = {"seq": 7, "from": "builder", "kind": "say", "text": OSC52 + FAKE_LINE, "handoff": "user\x1b[8m"}
    out = _rendered(post_text(post))
    assert not RAW.search(out)
    assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in out and "user\\x1b[8m" in out
    # the fake header is indented under the real one, as every line of a body is
    assert [ln for ln in out.splitlines() if ln.startswith("#")] == [out.splitlines()[0]]
    assert "      #99   💬 user say" in out


def test_feed_events_are_escaped_on_one_line():
    ev = {"type": "gate_open", "id": "3", "declarer": "builder", "text": HIDDEN_PUSH}
    out = _rendered(event_text(ev))
    assert not RAW.search(out) and "git push --force origin main\\r\\x1b[2K(safe: git status)" in out
    err = {"type": "retry", "participant": "p", "attempt": 1, "delay": 2, "error": "bad\x1b]0;title\x07"}
    assert "bad\\x1b]0;title\\x07" in _rendered(event_text(err))


def _status_data() -> dict:
    return {
        "state": "gated",
        "daemon_pid": None,
        "turn": 3,
        "objective": "ship",
        "reason": {"code": "gated", "text": "builder declared a gate: " + HIDDEN_PUSH},
        "continue": "",
        "budget": None,
        "speaking": None,
        "next": None,
        "wait": None,
        "needs_you": [
            {
                "type": "gate",
                "id": "3",
                "from": "builder",
                "text": HIDDEN_PUSH,
                "digest": digest(HIDDEN_PUSH),
                "do": "autodev approve 3",
            },
            {
                "type": "notice",
                "id": "1",
                "from": "b",
                "text": "[link=http://x]click[/link]" + OSC52,
                "do": "-",
            },
        ],
        "sandbox": None,
        "config_refused": None,
        "team_error": None,
        "warnings": ["handoff to 'x\x1b[31m' ignored"],
        "participants": [],
        "totals": {"turns": 0, "credited": 0, "tokens": 0, "cached_tokens": 0, "compactions": 0, "cost": 0},
    }


def test_status_shows_the_hidden_push_its_digest_and_no_markup_or_controls(capsys):
    status.render(status.Status.model_validate(_status_data()))
    out = capsys.readouterr().out
    assert not RAW.search(out)
    flat = " ".join(out.split())
    assert "git push --force origin main\\r\\x1b[2K(safe: git status)" in flat
    assert f"[text sha256 {digest(HIDDEN_PUSH)}]" in flat
    assert "[link=http://x]click[/link]\\x1b]52;c;" in flat  # markup shown as text, not a link
    assert "x\\x1b[31m" in flat


def test_the_panel_shows_the_same_escaped_text():
    d = _status_data()
    gate = views.need_text(status.Status.model_validate(d).needs_you[0]).plain
    assert "git push --force origin main\\r\\x1b[2K(safe: git status)" in gate
    assert digest(HIDDEN_PUSH) in gate
    assert not RAW.search(views.header(status.Status.model_validate(d), RunState(), None).plain)


def test_notifications_carry_the_text_escaped_on_one_line():
    data = notify.payload("gated", {"text": HIDDEN_PUSH + "\nsecond"}, "/r", "run")
    assert data["text"] == "git push --force origin main\\r\\x1b[2K(safe: git status)\\nsecond"


def test_a_digest_names_the_stored_text():
    assert digest(HIDDEN_PUSH) == digest(HIDDEN_PUSH) != digest("git push --force origin main")
    assert re.fullmatch(r"[0-9a-f]{12}", digest(HIDDEN_PUSH))
