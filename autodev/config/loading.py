"""Reading config.toml and team.toml, with pydantic's errors rewritten in TOML terms.

A user reading pydantic's own wording would have to know our Python field names, so every error
names the file, the key path, what was wrong and the fix.
"""

from __future__ import annotations

import difflib
import re
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from autodev.config.base import as_toml, display_path
from autodev.config.run import RunConfig
from autodev.config.team import Team
from autodev.errors import ConfigError


def load_config(path: Path) -> RunConfig:
    """The run settings in `path`; a missing file means every default."""
    path = Path(path)
    if not path.exists():
        return RunConfig()
    return _validate(RunConfig, _read_toml(path), path)


def load_team(path: Path) -> Team:
    """The team in `path`, checked, including that a scripted team's script exists."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(
            f"{display_path(path)} not found",
            "run `autodev init` (or `autodev init --team pair`) to create it",
        )
    team = _validate(Team, _read_toml(path), path)
    if team.uses_scripted():
        script = team.script_path(path)
        if not script.is_file():
            assert team.scripted is not None  # script_path raised without a [scripted] table
            raise ConfigError(
                f"{display_path(path)}: scripted.path: the script {team.scripted.path!r} "
                f"does not exist (looked for {script})",
                "create the script, or point scripted.path at it (relative to the team file)",
            )
    return team


def _read_toml(path: Path) -> dict[str, object]:
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise ConfigError(
            f"{display_path(path)}: cannot be read ({e.strerror or e})", "check that it is a readable file"
        ) from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{display_path(path)}: is not UTF-8 text", "save it as UTF-8") from e
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        # tomllib's message already ends with "(at line N, column M)"
        raise ConfigError(
            f"{display_path(path)}: TOML syntax error: {e}", "fix the syntax at that line"
        ) from e


M = TypeVar("M", bound=BaseModel)
Loc = tuple[int | str, ...]  # where pydantic places an error: keys and list indexes


def _validate(model: type[M], data: Mapping[str, object], path: Path) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as e:
        found = explain(model, list(e.errors()), data)
        name = display_path(path)
        if len(found) == 1:
            problem, fix = found[0]
            raise ConfigError(f"{name}: {problem}", fix) from None
        lines = [f"{name}: {len(found)} problems"]
        for problem, fix in found:
            lines.append(f"  - {problem}" + (f"\n    fix: {fix}" if fix else ""))
        raise ConfigError("\n".join(lines), f"correct each key listed in {name}") from None


# ---------------------------------------------------------------------------------------------
# turning pydantic errors into TOML words


def explain(
    root: type[BaseModel], errors: Sequence[ErrorDetails], data: Mapping[str, object]
) -> list[tuple[str, str]]:
    """(problem, fix) for each of pydantic's `errors` against `root`, in the words of the TOML
    file. Used for config.toml, team.toml and the scripted model's scripts alike."""
    found = [_describe(root, err, data) for err in errors]
    # `modle = ...` also makes `model` missing; the suggestion already covers it
    suggested = {fix for _p, fix in found if fix.startswith("did you mean")}
    return [
        (p, f)
        for p, f in found
        if not (
            p.startswith("missing required key")
            and any(p.split('"')[1] == s.split('"')[1] for s in suggested)
        )
    ]


def _key_path(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _unwrap(annotation: object) -> object:
    """The model type inside `X | None` or `list[X]`, else the annotation itself."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else annotation
    if origin is list:
        return _unwrap(typing.get_args(annotation)[0])
    return annotation


def _field_by_key(model: type[BaseModel], key: str) -> tuple[str, FieldInfo] | None:
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return name, info
    return None


def _model_at(root: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class whose table holds the key at the end of `loc`."""
    model: object = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        found = (
            _field_by_key(model, part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        )
        if found is None:
            return None
        model = _unwrap(found[1].annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _toml_key(info: FieldInfo, name: str) -> str:
    return info.alias or name


def _participant_hint(loc: Loc, data: Mapping[str, object]) -> str:
    """`(participant "x")` for errors inside a participants[i] table that has a usable name."""
    if len(loc) >= 3 and loc[0] == "participants" and isinstance(loc[1], int):
        items = data.get("participants")
        rows = cast("list[object]", items) if isinstance(items, list) else []  # TOML: any values
        table = rows[loc[1]] if loc[1] < len(rows) else None
        if isinstance(table, Mapping):
            name = cast("Mapping[str, object]", table).get("name")  # a TOML table: string keys
            if isinstance(name, str) and name:
                return f' (participant "{name}")'
    return ""


_TYPE_WORDS = {
    "float_type": "a number",
    "float_parsing": "a number",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "string_type": "a string",
    "bool_type": "true or false",
    "list_type": "a list",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "dict_type": "a table",
}


_BOUND_WORDS = {
    "greater_than": "greater than",
    "greater_than_equal": "at least",
    "less_than": "less than",
    "less_than_equal": "at most",
}


def _unknown_key(root: type[BaseModel], loc: Loc, data: Mapping[str, object]) -> tuple[str, str]:
    """(problem, fix) for a key the model does not know: the close match, or the known keys."""
    key = str(loc[-1])
    owner = _model_at(root, loc)
    known = [_toml_key(i, n) for n, i in owner.model_fields.items()] if owner else []
    table = _key_path(loc[:-1])
    place = f" in {table}" if table else ""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if not close:  # snake_case for camelCase and the like
        close = [k for k in known if k.replace("_", "").lower() == key.replace("_", "").lower()]
    fix = f'did you mean "{close[0]}"?' if close else f"remove it; known keys{place}: {', '.join(known)}"
    return f'unknown key "{key}"{place}{_participant_hint(loc, data)}', fix


def _describe(root: type[BaseModel], err: ErrorDetails, data: Mapping[str, object]) -> tuple[str, str]:
    """(problem, fix) for one pydantic error, in the words of the TOML file."""
    loc = tuple(err["loc"])
    kind = err["type"]
    where = _key_path(loc)
    where = (where + _participant_hint(loc, data)) if where else ""
    prefix = f"{where}: " if where else ""
    got = err.get("input")
    ctx = err.get("ctx") or {}

    if kind == "extra_forbidden":
        return _unknown_key(root, loc, data)

    if kind == "autodev_rule":
        return prefix + ctx["message"], ctx.get("fix", "")

    if kind == "missing":
        key = str(loc[-1])
        table = _key_path(loc[:-1])
        place = f" in {table}" if table else ""
        if loc == ("participants",):
            return (
                "missing [[participants]]: a team needs at least one participant",
                "add a [[participants]] table with name and model",
            )
        return f'missing required key "{key}"{place}', f"add {key} = ... to that table"

    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        listed = ", ".join(choices)
        return (f"{prefix}must be one of {listed} (got {as_toml(got)})", f"set {loc[-1]} to one of {listed}")

    if kind in _BOUND_WORDS:
        words = _BOUND_WORDS[kind]
        bound = next(iter(ctx.values()), "")
        return (
            f"{prefix}must be {words} {as_toml(bound)} (got {as_toml(got)})",
            f"set {loc[-1]} to a number {words} {as_toml(bound)}",
        )

    if kind in ("too_short", "string_too_short"):
        if kind == "string_too_short":
            return f"{prefix}must not be empty", f"give {loc[-1]} a value"
        return f"{prefix}must not be empty", f"add at least one entry to {loc[-1]}"

    if kind in _TYPE_WORDS:
        want = _TYPE_WORDS[kind]
        example = _example_for(root, loc)
        fix = f"write it as {want}" + (f", e.g. {example}" if example else "")
        return f"{prefix}must be {want} (got {as_toml(got)})", fix

    # anything else: pydantic's sentence, lowercased into ours
    msg = str(err.get("msg", "is invalid"))
    msg = msg.removeprefix("Value error, ")
    return f"{prefix}{msg[:1].lower()}{msg[1:]} (got {as_toml(got)})", ""


def _example_for(root: type[BaseModel], loc: Loc) -> str:
    """`key = default` for the key at `loc`, when it has a default worth showing."""
    owner = _model_at(root, loc)
    key = loc[-1]
    if isinstance(key, int):
        return ""
    found = _field_by_key(owner, key) if owner else None
    if not found:
        return ""
    name, info = found
    default = info.get_default(call_default_factory=True)
    if default is None or (default == "" and info.is_required()):
        return ""
    try:
        return f"{_toml_key(info, name)} = {as_toml(default)}"
    except TypeError:
        return ""
