"""Keep secrets out of every log, the thread and events.

The daemon learns the secret values once (provider key variables it can see) and every record
is passed through `Redactor` before it is written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

_SECRET_NAME = re.compile(
    r"(_API_KEY|_API_TOKEN|_ACCESS_KEY|_SECRET_ACCESS_KEY|_SESSION_TOKEN|_SECRET|_TOKEN)$|^(HF_TOKEN|GITHUB_TOKEN)$"
)


def secret_names(environ: Mapping[str, str], extra: Iterable[str] = ()) -> set[str]:
    names = {n for n in environ if _SECRET_NAME.search(n)}
    names.update(n for n in extra if n)
    return names


class Redactor:
    def __init__(self, values: Iterable[str]):
        # Short values would redact ordinary words; real keys are long.
        self.values = sorted({v for v in values if v and len(v) >= 8}, key=len, reverse=True)

    def learn(self, values: Iterable[str]) -> None:
        """Add secret values (e.g. after a team edit names a new api_key_env)."""
        self.values = sorted(
            set(self.values) | {v for v in values if v and len(v) >= 8}, key=len, reverse=True
        )

    @classmethod
    def from_env(cls, extra_names: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> Redactor:
        env = os.environ if environ is None else environ
        return cls(env[n] for n in secret_names(env, extra_names) if n in env)

    def __call__(self, obj: Any) -> Any:
        if not self.values:
            return obj
        if isinstance(obj, str):
            for v in self.values:
                if v in obj:
                    obj = obj.replace(v, "[redacted]")
            return obj
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self(v) for v in obj]
        return obj
