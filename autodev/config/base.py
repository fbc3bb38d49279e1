"""What every config model shares: strict validation, our own rule errors, values in TOML spelling."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, cast

from pydantic import BaseModel, ConfigDict
from pydantic_core import PydanticCustomError

Effort = Literal["low", "medium", "high"]

# strict: TOML already gives real types, so `maxTalkTurns = "3"` is a mistake worth reporting,
# not something to coerce silently. Integers are still accepted where a number is expected.
MODEL_CONFIG = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


def rule_error(message: str, fix: str) -> PydanticCustomError:
    """A validation failure of one of our own rules, carrying its fix through pydantic."""
    return PydanticCustomError("autodev_rule", "{message}", {"message": message, "fix": fix})


def check_env_name(v: str | None) -> str | None:
    if v is not None and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", v):
        raise rule_error(
            f"{as_toml(v)} is not an environment variable name",
            'give the variable\'s name (e.g. "MY_OPENAI_KEY"), not its value',
        )
    return v


def display_path(path: Path) -> str:
    """How a file is named in messages: `.autodev/x.toml` when it sits there, else as given."""
    path = Path(path)
    if path.parent.name == ".autodev":
        return f".autodev/{path.name}"
    return str(path)


def as_toml(value: object) -> str:
    """A value written the way it would appear in a TOML file."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if isinstance(value, (list, tuple)):
        items: Sequence[object] = cast("list[object] | tuple[object, ...]", value)  # any item: shown as is
        return "[" + ", ".join(as_toml(v) for v in items) + "]"
    if isinstance(value, BaseModel):
        return as_toml(value.model_dump(by_alias=True))
    if isinstance(value, Mapping):
        table = cast("Mapping[object, object]", value)  # any key and value: shown as they are
        return "{ " + ", ".join(f"{k} = {as_toml(v)}" for k, v in table.items()) + " }"
    return as_toml(str(value))
