"""Usage limits in an agent CLI's output: whether a text names one, and when it ends."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

from autodev.agents.events import AgentEvent

LIMIT_WAIT_SEC = 900.0  # a limit without a readable reset time is retried after this


def reset_from_text(text: str, now: float | None = None) -> float:
    """When a limit named in `text` ends, as epoch seconds: "try again at 3:05 PM", "resets
    7pm", "in 2 hours", "retry after 30s", a trailing epoch ("limit reached|1767290000");
    else now + LIMIT_WAIT_SEC."""
    now = time.time() if now is None else now
    m = re.search(r"\|(\d{10})\b", text)
    if m:
        return float(m.group(1))
    m = re.search(r"(?:in|after)\s+(\d+)\s*(s|sec|second|m|min|minute|h|hour|d|day)s?\b", text, re.I)
    if m:
        unit = m.group(2).lower()[0]
        return now + int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]
    m = re.search(r"(?:at|resets?)\s+(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)", text, re.I)
    if m:
        hour, minute = int(m.group(1)) % 12, int(m.group(2) or 0)
        if m.group(3).lower().startswith("p"):
            hour += 12
        base = datetime.fromtimestamp(now)
        at = base.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if at.timestamp() <= now:
            at += timedelta(days=1)
        return at.timestamp()
    return now + LIMIT_WAIT_SEC


_LIMIT_WORDS = re.compile(
    r"usage limit|rate limit|rate-limit|quota|resource_exhausted|too many requests|\b429\b|limit reached",
    re.I,
)


def is_limit_text(text: str) -> bool:
    return bool(_LIMIT_WORDS.search(text or ""))


def error_events(text: str) -> list[AgentEvent]:
    if is_limit_text(text):
        return [AgentEvent("limit", text=text[:500], reset_at=reset_from_text(text))]
    return [AgentEvent("error", text=text[:500], is_error=True)]
