"""Where the system's Chromium is: one answer for the browser tools and `autodev doctor`
(`AUTODEV_CHROMIUM` first, so doctor passes exactly where `start` can drive a browser)."""

from __future__ import annotations

import os
import shutil

__all__ = ["chromium_path"]


def chromium_path() -> str | None:
    """The Chromium executable to drive, or None."""
    given = os.environ.get("AUTODEV_CHROMIUM")
    if given:
        return given if os.access(given, os.X_OK) else None
    for name in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.access(name, os.X_OK):
            return name
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None
