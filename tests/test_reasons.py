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
