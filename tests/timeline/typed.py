"""Records for the comparison's own tests, written short: the fields a test does not care about
filled in, then read into their models as replay reads a run's files."""

from __future__ import annotations

from autodev import records
from autodev.records import HarnessRecord, Post
from autodev.records.events import Event

FILLED: dict[str, dict[str, object]] = {
    "turn_started": {"participant": "builder", "baseline": {}, "messages": []},
    "tool_started": {"args": {}, "replay_safe": True},
}


def harness(*recs: dict[str, object]) -> list[HarnessRecord]:
    return [records.harness({"run": "r", **FILLED.get(str(r["type"]), {}), **r}) for r in recs]


def posts(*lines: dict[str, object]) -> list[Post]:
    return [records.post({"ts": "2026-12-01T00:00:00Z", **p}) for p in lines]


def events(*lines: dict[str, object]) -> list[Event]:
    return [records.event({"ts": "2026-12-01T00:00:00Z", "run": "r", **e}) for e in lines]
