"""Prompt templates are data files: shipped in prompts/, overridable in .autodev/prompts/.

Rendering is strict: `{{name}}` must be given a value, or rendering fails loudly; a template that
is missing is an error too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from autodev.errors import PromptError
from autodev.store.paths import shipped

_VAR = re.compile(r"\{\{\s*([a-z_][a-z0-9_]*)\s*\}\}")


def load(name: str, overrides: Path | None = None) -> tuple[str, Path]:
    for folder in (overrides, shipped("prompts")):
        if folder is not None and (folder / name).is_file():
            return (folder / name).read_text(), folder / name
    raise PromptError(
        f"prompt template {name!r} not found",
        f"restore prompts/{name} in the autodev package or add .autodev/prompts/{name}",
    )


def render(name: str, values: Mapping[str, object], overrides: Path | None = None) -> str:
    text, where = load(name, overrides)

    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in values:
            raise PromptError(
                f"{where}: template variable {{{{{key}}}}} has no value",
                f"remove {{{{{key}}}}} from {where} or use one of: {', '.join(sorted(values))}",
            )
        return str(values[key])

    return _VAR.sub(sub, text)
