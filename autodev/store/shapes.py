"""Generated from autodev/records by `python -m autodev.store.plain > autodev/store/shapes.py`
(then `ruff format` it): do not edit; tests/test_plain.py keeps it equal to the models.
autodev/store/plain.py reads it."""

from typing import TypedDict


class Shape(TypedDict):
    """A model: its fields by file name, each [spec, required]; the fields' Python names where
    they differ; whether it keeps extra keys."""

    fields: dict[str, list[object]]
    names: list[str]
    extra: bool


INBOX: dict[str, str] = {
    "answer": "AnswerMessage",
    "approve": "ApproveMessage",
    "deny": "DenyMessage",
    "notice": "NoticeMessage",
    "send": "SendMessage",
}

SHAPES: dict[str, Shape] = {
    "AnswerMessage": {
        "extra": True,
        "fields": {
            "id": ["str+", True],
            "kind": [["lit", "answer"], True],
            "notice_id": ["str", True],
            "text": ["str", True],
            "ts": [["or", "str", "none"], False],
        },
        "names": [],
    },
    "ApproveMessage": {
        "extra": True,
        "fields": {
            "digest": [["or", "str", "none"], False],
            "gate_id": [["or", "str", "none"], False],
            "id": ["str+", True],
            "kind": [["lit", "approve"], True],
            "ts": [["or", "str", "none"], False],
        },
        "names": [],
    },
    "ConfigRefused": {
        "extra": True,
        "fields": {
            "participant": [["or", "str", "none"], False],
            "stamp": [["or", "str", "none"], False],
            "text": [["or", "str", "none"], False],
            "turn": [["or", "int", "none"], False],
        },
        "names": [],
    },
    "Control": {
        "extra": True,
        "fields": {
            "action": [["lit", "pause", "resume", "stop", "rewind"], True],
            "at": ["int", False],
            "n": ["int", True],
            "seq": [["or", "int", "none"], False],
            "undo": ["bool", False],
        },
        "names": [],
    },
    "DenyMessage": {
        "extra": True,
        "fields": {
            "gate_id": [["or", "str", "none"], False],
            "id": ["str+", True],
            "kind": [["lit", "deny"], True],
            "reason": [["or", "str", "none"], False],
            "ts": [["or", "str", "none"], False],
        },
        "names": [],
    },
    "Figures": {
        "extra": True,
        "fields": {
            "cached_tokens": ["int", False],
            "compactions": ["int", False],
            "completion_tokens": ["int", False],
            "cost": ["float", False],
            "credited": ["int", False],
            "last_turn": [["or", "int", "none"], False],
            "prompt_tokens": ["int", False],
            "silent_streak": ["int", False],
            "turns": ["int", False],
        },
        "names": [],
    },
    "ForkedFrom": {
        "extra": True,
        "fields": {"repo": ["str", False], "run": [["or", "str", "none"], False], "seq": ["int", True]},
        "names": [],
    },
    "Gate": {
        "extra": True,
        "fields": {
            "declarer": ["str", True],
            "id": ["str", True],
            "seq": [["or", "int", "none"], False],
            "text": ["str", False],
        },
        "names": [],
    },
    "ModelUsage": {
        "extra": True,
        "fields": {
            "completion_tokens": ["int", False],
            "cost": ["float", False],
            "generations": ["int", False],
            "prompt_tokens": ["int", False],
        },
        "names": [],
    },
    "Next": {
        "extra": True,
        "fields": {
            "rule": [["or", "str", "none"], False],
            "speaker": [["or", "str", "none"], False],
            "why": [["or", "str", "none"], False],
        },
        "names": [],
    },
    "Notice": {
        "extra": True,
        "fields": {
            "answer": [["or", "str", "none"], False],
            "delivered": ["bool", False],
            "from": ["str", True],
            "hold": [["or", "str", "none"], False],
            "id": ["str", True],
            "pinned": ["bool", False],
            "released": [["or", "str", "none"], False],
            "text": ["str", False],
            "ts": [["or", "str", "none"], False],
        },
        "names": ["from_"],
    },
    "NoticeMessage": {
        "extra": True,
        "fields": {
            "action": ["str", True],
            "id": ["str+", True],
            "kind": [["lit", "notice"], True],
            "notice_id": ["str", True],
            "ts": [["or", "str", "none"], False],
        },
        "names": [],
    },
    "PausedFrom": {
        "extra": True,
        "fields": {
            "reason": [["or", ["model", "Reason"], "none"], False],
            "state": [
                [
                    "lit",
                    "running",
                    "waiting",
                    "awaiting_user",
                    "gated",
                    "auditing",
                    "paused",
                    "stopped",
                    "complete",
                    "faulted",
                ],
                True,
            ],
        },
        "names": [],
    },
    "Question": {
        "extra": True,
        "fields": {"from": ["str", True], "seq": ["int", True], "text": ["str", False]},
        "names": ["from_"],
    },
    "Reason": {
        "extra": True,
        "fields": {"code": ["str", True], "continue": ["str", False], "text": ["str", False]},
        "names": ["continue_"],
    },
    "RewindDenied": {
        "extra": True,
        "fields": {
            "error": ["str", True],
            "fix": ["str", False],
            "n": ["int", True],
            "ok": [["lit", False], True],
        },
        "names": [],
    },
    "RewindDone": {
        "extra": True,
        "fields": {
            "n": ["int", True],
            "note_seq": ["int", True],
            "ok": [["lit", True], True],
            "to_seq": ["int", True],
        },
        "names": [],
    },
    "RunState": {
        "extra": True,
        "fields": {
            "accounted_turn": ["int", False],
            "applied_seq": ["int", False],
            "approved_gates": [["list", ["model", "Gate"]], False],
            "audit_pending": [["or", "int", "none"], False],
            "audit_usage": [["or", ["model", "Usage"], "none"], False],
            "audits": ["int", False],
            "base_head": [["or", "str", "none"], False],
            "branch": [["or", "str", "none"], False],
            "config_refused": [["or", ["model", "ConfigRefused"], "none"], False],
            "control_seq": ["int", False],
            "controls": [["list", ["model", "Control"]], False],
            "controls_applied": ["int", False],
            "controls_cancelled": ["int", False],
            "cursors": [["dict", "int"], False],
            "daemon": [["or", ["lit", "running", "stopped"], "none"], False],
            "forked_from": [["or", ["model", "ForkedFrom"], "none"], False],
            "gate": [["or", ["model", "Gate"], "none"], False],
            "last_wait": [["or", ["model", "Wait"], "none"], False],
            "limited_until": [["dict", "float"], False],
            "models": [["dict", ["model", "ModelUsage"]], False],
            "next": [["or", ["model", "Next"], "none"], False],
            "notice_seq": ["int", False],
            "notices": [["dict", ["model", "Notice"]], False],
            "objective": ["str", False],
            "participants": [["dict", ["model", "Figures"]], False],
            "paused_from": [["or", ["model", "PausedFrom"], "none"], False],
            "pid": [["or", "int", "none"], False],
            "question": [["or", ["model", "Question"], "none"], False],
            "reason": [["or", ["model", "Reason"], "none"], False],
            "rebuilt_from_logs": [["or", "str", "none"], False],
            "recovered_turn": [["or", "int", "none"], False],
            "rewind_applied": ["int", False],
            "rewind_result": [["or", ["model", "RewindDone"], ["model", "RewindDenied"], "none"], False],
            "run_id": [["or", "str", "none"], False],
            "schema": ["int", False],
            "sessions": ["int", False],
            "speaking": [["or", "str", "none"], False],
            "started_at": [["or", "str", "none"], False],
            "state": [
                [
                    "lit",
                    "running",
                    "waiting",
                    "awaiting_user",
                    "gated",
                    "auditing",
                    "paused",
                    "stopped",
                    "complete",
                    "faulted",
                ],
                False,
            ],
            "talk_turns": ["int", False],
            "team_error": [["or", "str", "none"], False],
            "turn": ["int", False],
            "user_messages": [["list", "str"], False],
            "version": ["int", False],
            "wait": [["or", ["model", "Wait"], "none"], False],
            "warnings": [["list", "str"], False],
        },
        "names": ["schema_"],
    },
    "SendMessage": {
        "extra": True,
        "fields": {
            "id": ["str+", True],
            "kind": [["lit", "send"], True],
            "text": ["str", True],
            "ts": [["or", "str", "none"], False],
        },
        "names": [],
    },
    "Usage": {
        "extra": True,
        "fields": {
            "completion_tokens": ["int", False],
            "cost": ["float", False],
            "prompt_tokens": ["int", False],
        },
        "names": [],
    },
    "Wait": {
        "extra": True,
        "fields": {
            "author": ["str", True],
            "delay": [["or", "float", "none"], False],
            "due": [["or", "float", "none"], False],
            "seq": [["or", "int", "none"], False],
            "since": [["or", "float", "none"], False],
            "streak": ["int", False],
            "usage_limit": ["bool", False],
        },
        "names": [],
    },
}
