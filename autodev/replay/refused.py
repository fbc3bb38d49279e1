"""The refusal every part of replay raises (its own module: the stand-in CLI and replay both
raise it, and neither imports the other back)."""

from __future__ import annotations

from autodev.errors import UsageError


class ReplayRefused(UsageError):
    """A recording that cannot be replayed as asked (exit 2)."""
