"""SHA-256 from CPython's own module, as hashlib falls back to it: a steering command hashes
the repository's path (its run folder) and an approval the gate's text, and hashlib's import
loads OpenSSL first, 3 ms of a 40 ms start (issue 33). The same digests either way."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.11
        except ImportError:
            from hashlib import sha256

__all__ = ["sha256"]
