"""telemetry.jsonl: the cursor of what a collector accepted (autodev/telemetry/sent.py), one line
per exported turn or run root."""

from __future__ import annotations

from typing import Literal

from autodev.records.base import Open


class Exported(Open):
    """`part` ("t3", or "root") of `run` went to the collector `dest` (a hash of its URL)."""

    id: str  # dest:run:part
    type: Literal["exported"]
    dest: str
    run: str
    part: str
    spans: int
    ts: float
