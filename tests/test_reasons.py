"""Reason codes (rules/reasons.py): one Literal names them, and each has its sentence."""

from __future__ import annotations

from typing import cast, get_args

import pytest

from autodev.rules.reasons import CONTINUE, MAX_REASON_CHARS, REASONS, ReasonCode, reason


def test_every_reason_code_has_its_sentence_and_no_sentence_lacks_a_code():
    assert list(REASONS) == list(get_args(ReasonCode))
    assert set(CONTINUE) <= set(REASONS)


def test_a_reason_carries_its_code_sentence_and_way_on():
    assert reason("talk_limit", n=12) == {
        "code": "talk_limit",
        "text": "12 turns passed without credited work, even after the talk limit applied",
        "continue": 'autodev resume  (or autodev send "...")',
    }
    assert reason("stopped")["continue"] == "autodev start"
    assert len(reason("budget", text="x" * 5000)["text"]) == MAX_REASON_CHARS


def test_a_code_outside_the_literal_is_refused():
    with pytest.raises(KeyError):
        reason(cast(ReasonCode, "tired"))  # what the type check refuses before it runs


def test_the_continue_line_never_says_start_twice_nor_resume_where_start_does_it():
    from autodev.rules.reasons import continue_line, reason

    fault = reason("fault", error="disk full")
    assert continue_line(fault, daemon_running=False) == "fix the cause, then autodev start"
    rewound = reason("rewound", seq=4)
    assert continue_line(rewound, daemon_running=False) == "autodev start"
    assert continue_line(rewound, daemon_running=True) == "autodev resume"
    refused = reason("refused", error="x", fix="y")
    assert continue_line(refused, daemon_running=False) == "the fix above, then autodev start"
    assert (
        continue_line(reason("user"), daemon_running=False)
        == 'autodev start, then autodev resume  (or autodev send "...")'
    )
    for code in ("fault", "rewound", "refused", "question", "gated", "stopped", "user", "wait"):
        kw = {"error": "e", "fix": "f", "seq": 1, "who": "b", "text": "t"}
        line = continue_line(reason(code, **kw), daemon_running=False)  # pyright: ignore[reportArgumentType]
        assert line.count("autodev start") <= 1 and "when no daemon runs" not in line, (code, line)
