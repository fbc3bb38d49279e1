"""The one secret policy: which variables are secrets, how a command's environment is scrubbed
of them, and how their values are masked in every log, the thread, events and state.json.

One list of names (`is_secret_name`), one scrubber (`scrubbed_env`) and one masker (`Redactor`):
the command runner, the audit's check and every journal use these, so the rules cannot drift
apart. The masker also catches the common encodings of a known value (reversed, base64 at any
alignment, base32, hex, `od -x` words, rot13, reversed, any case, spread out by blanks or cut by
line wraps): a second line of defence behind the sandbox, which keeps the values out of reach in
the first place. Compressed forms (`gzip | base64`) cannot be matched: files that hold keys
(config `secretFiles`, guard/secrets.py) are kept from commands and the file tools instead.
"""

from __future__ import annotations

import base64
import bisect
import codecs
import os
import re
from collections.abc import Iterable, Mapping
from typing import TypeGuard, TypeVar, overload

K = TypeVar("K")  # the keys of a mapping, kept as they are

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


def only_named(
    names: Iterable[str], keys: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
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


# The masker looks in a folded copy of the text: ASCII case folded (offsets stay put), so `tr a-z
# A-Z`, a swapped case or hex in capitals is the same key; and blanks and line breaks left out,
# so a value cut by line wraps (base64, xxd) or spread out (`s k - t e s t`, `od -c`) is too.
_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# blanks, line breaks, and the offsets `od`, `xxd` and `hexdump` start their lines with
_BLANKS = re.compile(r"(?:[ \t\r]*\n[0-9a-fA-F]{6,8}:?(?=[ \t]))+[ \t]*|[ \t\r\n]+")


def _folded(text: str) -> str:
    return _BLANKS.sub("", text.translate(_FOLD))


def _base64_cores(value: bytes) -> set[str]:
    """The base64 characters that depend only on `value`, at each of the three alignments it
    can have inside a longer encoded stream (e.g. `cat /proc/x/environ | base64`)."""
    out: set[str] = set()
    for shift in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            text = enc(b"\0" * shift + value).decode()
            start = 4 if shift else 0
            end = 4 * ((shift + len(value)) // 3)
            core = text[start:end]
            if len(core) >= MIN_SECRET_LEN:
                out.add(core)
    return out


def _base32_cores(value: bytes) -> set[str]:
    """Like `_base64_cores`, for base32 (5-byte groups, five alignments)."""
    out: set[str] = set()
    for shift in range(5):
        text = base64.b32encode(b"\0" * shift + value).decode()
        start = 8 if shift else 0
        end = 8 * ((shift + len(value)) // 5)
        core = text[start:end]
        if len(core) >= MIN_SECRET_LEN:
            out.add(core)
    return out


def _swapped_words(raw: bytes) -> set[str]:
    """The hex `od -x` prints: 2-byte little-endian words, at both alignments."""
    out: set[str] = set()
    for shift in range(2):
        data = raw[shift:]
        data = data[: len(data) - len(data) % 2]
        out.add("".join(data[i + 1 : i + 2].hex() + data[i : i + 1].hex() for i in range(0, len(data), 2)))
    return out


def encodings(value: str) -> set[str]:
    """The literal forms of `value` the masker looks for: itself, rot13 and hex, each also
    reversed, and its base64, base32 and `od -x` forms (the masker folds case, so lower-, upper-
    and swapped-case forms match too)."""
    raw = value.encode("utf-8", errors="surrogateescape")
    forms = {value, codecs.encode(value, "rot13"), raw.hex()}
    forms |= {f[::-1] for f in forms}
    forms |= _base64_cores(raw) | _base32_cores(raw) | _swapped_words(raw)
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


_FEW_FORMS = 64  # up to this many forms, one `find` each is faster than the lookup by head


class Redactor:
    """Masks known secret values (and their encodings) in strings, nested dicts and lists."""

    def __init__(self, values: Iterable[str]):
        self.values: list[str] = []
        self._forms: list[str] = []
        self._by_head: dict[str, list[str]] = {}
        self.learn(values)

    def learn(self, values: Iterable[object]) -> None:
        """Add secret values (e.g. after a team edit names a new api_key_env); what is not a
        string (a key store read from JSON may hold anything) is no secret value."""
        new = {v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN}
        if new <= set(self.values):
            return
        self.values = sorted(set(self.values) | new, key=len, reverse=True)
        forms: set[str] = set()
        for v in self.values:
            forms |= {f for f in map(_folded, encodings(v)) if len(f) >= MIN_SECRET_LEN}
        self._forms = sorted(forms, key=len, reverse=True)
        # Many forms (the lines of key files learned from a repository): looked up by their
        # first MIN_SECRET_LEN characters at each position, not searched for one by one.
        self._by_head = {}
        for f in self._forms:
            self._by_head.setdefault(f[:MIN_SECRET_LEN], []).append(f)

    @classmethod
    def from_env(cls, extra_names: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> Redactor:
        env = os.environ if environ is None else environ
        return cls(secret_values(env, extra_names).values())

    def text(self, s: str) -> str:
        if not self._forms or not s:
            return s
        lowered = s.translate(_FOLD)
        folded = _BLANKS.sub("", lowered)
        spans: list[tuple[int, int]] = []
        if len(self._forms) <= _FEW_FORMS:
            for form in self._forms:
                i = folded.find(form)
                while i >= 0:
                    spans.append((i, i + len(form)))
                    i = folded.find(form, i + 1)
        else:
            heads = self._by_head
            for i in range(len(folded) - MIN_SECRET_LEN + 1):
                for form in heads.get(folded[i : i + MIN_SECRET_LEN], ()):
                    if folded.startswith(form, i):
                        spans.append((i, i + len(form)))
        if not spans:
            return s
        # where each blank-free piece of the folded text starts in `s`
        starts: list[int] = []
        origins: list[int] = []
        at = kept = 0
        for m in [*_BLANKS.finditer(lowered), None]:
            end = m.start() if m else len(s)
            if end > at:
                starts.append(kept)
                origins.append(at)
                kept += end - at
            if m:
                at = m.end()

        def origin(k: int) -> int:
            p = bisect.bisect_right(starts, k) - 1
            return origins[p] + (k - starts[p])

        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        out: list[str] = []
        done = 0
        for a, b in merged:
            lo, hi = origin(a), origin(b - 1) + 1
            out += [s[done:lo], MASK]
            done = hi
        out.append(s[done:])
        return "".join(out)

    @overload
    def __call__(self, obj: str) -> str: ...
    @overload
    def __call__(self, obj: Mapping[K, object]) -> dict[K, object]: ...
    @overload
    def __call__(self, obj: list[object] | tuple[object, ...]) -> list[object]: ...
    @overload
    def __call__(self, obj: object) -> object: ...
    def __call__(self, obj: object) -> object:
        if not self._forms:
            return obj
        if isinstance(obj, str):
            return self.text(obj)
        if _is_dict(obj):
            return {k: self(v) for k, v in obj.items()}
        if _is_sequence(obj):
            return [self(v) for v in obj]
        return obj


# The masker only reads what it walks: to it any dict holds objects, and so does any list or tuple.
def _is_dict(obj: object) -> TypeGuard[dict[object, object]]:
    return isinstance(obj, dict)


def _is_sequence(obj: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return isinstance(obj, (list, tuple))
