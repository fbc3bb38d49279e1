"""The one secret policy: which variables are secrets, how a command's environment is scrubbed
of them, and how their values are masked in every log, the thread, events and state.json.

One list of names (`is_secret_name`), one scrubber (`scrubbed_env`) and one masker (`Redactor`):
the command runner, the audit's check and every journal use these, so the rules cannot drift
apart. The masker also catches the common encodings of a known value (reversed, base64 at any
alignment, hex, with line wraps): a second line of defence behind the sandbox, which keeps the
values out of reach in the first place.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

# Whole names that are secrets but match no rule below. Compared upper-cased.
SECRET_NAMES: frozenset[str] = frozenset(
    {
        "AWS_ACCESS_KEY_ID",  # not secret alone, but half of a credential pair
        "GOOGLE_APPLICATION_CREDENTIALS",
        "VERTEX_CREDENTIALS",
        # an OTLP collector's headers usually carry its key (autodev/telemetry)
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    }
)
# A name is a secret when one of its words (split on "_", "-" and ".") is one of these ...
SECRET_WORDS: frozenset[str] = frozenset(
    {"SECRET", "SECRETS", "TOKEN", "TOKENS", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIALS", "PAT"}
)
# ... or when its last word is one of these (`*_API_KEY`, `*_SECRET_KEY`, `LITELLM_MASTER_KEY`).
SECRET_LAST_WORDS: frozenset[str] = frozenset({"KEY", "KEYS"})

MIN_SECRET_LEN = 8  # shorter values would mask ordinary words
MASK = "[redacted]"

_WORD_SPLIT = re.compile(r"[_\-.]+")


def is_secret_name(name: str, extra: Iterable[str] = ()) -> bool:
    """True when the variable `name` holds a secret. Case does not matter (`db_token` is one).

    `extra` adds names the team declares (its `api_key_env` variables).
    """
    upper = name.upper()
    if upper in SECRET_NAMES or upper in {e.upper() for e in extra if e}:
        return True
    words = [w for w in _WORD_SPLIT.split(upper) if w]
    if not words:
        return False
    return bool(SECRET_WORDS.intersection(words)) or (len(words) > 1 and words[-1] in SECRET_LAST_WORDS)


def secret_names(environ: Mapping[str, str], extra: Iterable[str] = ()) -> set[str]:
    """The names in `environ` that hold secrets, plus the `extra` names (set or not)."""
    extra = [n for n in extra if n]
    return {n for n in environ if is_secret_name(n, extra)} | set(extra)


def secret_values(environ: Mapping[str, str], extra: Iterable[str] = ()) -> dict[str, str]:
    """name -> value of every secret set in `environ`."""
    return {n: environ[n] for n in secret_names(environ, extra) if n in environ and environ[n]}


def scrubbed_env(extra: Iterable[str] = (), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of `base` (default: this process's environment) without any secret variable."""
    extra = [n for n in extra if n]
    source = os.environ if base is None else base
    return {k: v for k, v in source.items() if not is_secret_name(k, extra)}


def only_named(names: Iterable[str], keys: Mapping[str, str], base: Mapping[str, str] | None = None) -> dict:
    """The environment for a process that may see exactly the secrets `names` (an MCP server's
    `env` list, an agent CLI's key): the scrubbed base plus those variables, from the key store
    `keys` first, else from `base`."""
    source = os.environ if base is None else base
    env = scrubbed_env((), source)
    for n in names:
        if n in keys:
            env[n] = keys[n]
        elif n in source:
            env[n] = source[n]
    return env


# ---------------------------------------------------------------------------- the masker


def _wrapped(literal: str) -> str:
    """A pattern for `literal` that also matches it cut by line breaks (base64 and xxd wrap)."""
    return r"(?:\r?\n)?".join(re.escape(c) for c in literal)


def _base64_cores(value: bytes) -> set[str]:
    """The base64 characters that depend only on `value`, at each of the three alignments it
    can have inside a longer encoded stream (e.g. `cat /proc/x/environ | base64`)."""
    out = set()
    for shift in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * shift + value).decode()
            start = 4 if shift else 0
            end = 4 * ((shift + len(value)) // 3)
            core = text[start:end]
            if len(core) >= MIN_SECRET_LEN:
                out.add(core)
    return out


def encodings(value: str) -> set[str]:
    """The literal forms of `value` the masker looks for: itself and its common encodings."""
    raw = value.encode("utf-8", errors="surrogateescape")
    forms = {value, value[::-1], raw.hex(), raw.hex().upper()}
    forms |= _base64_cores(raw)
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


class Redactor:
    """Masks known secret values (and their encodings) in strings, nested dicts and lists."""

    def __init__(self, values: Iterable[str]):
        self.values: list[str] = []
        self._rx: re.Pattern | None = None
        self.learn(values)

    def learn(self, values: Iterable[str]) -> None:
        """Add secret values (e.g. after a team edit names a new api_key_env)."""
        new = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN}
        if new <= set(self.values):
            return
        self.values = sorted(set(self.values) | new, key=len, reverse=True)
        forms = set()
        for v in self.values:
            forms |= encodings(v)
        # Longest first, so a value wins over its own prefix.
        self._rx = re.compile("|".join(_wrapped(f) for f in sorted(forms, key=len, reverse=True)))

    @classmethod
    def from_env(cls, extra_names: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> Redactor:
        env = os.environ if environ is None else environ
        return cls(secret_values(env, extra_names).values())

    def text(self, s: str) -> str:
        return s if self._rx is None else self._rx.sub(MASK, s)

    def __call__(self, obj: Any) -> Any:
        if self._rx is None:
            return obj
        if isinstance(obj, str):
            return self._rx.sub(MASK, obj)
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self(v) for v in obj]
        return obj
