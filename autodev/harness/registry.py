"""The one tool registry: how a tool is declared, offered to a model, validated and called.

A tool is declared once, as a :class:`Tool`: its name, description, capability, whether it is
safe to replay after a crash, its handler, and its arguments, either as a pydantic model (built-in
tools) or as a raw JSON Schema (tools declared elsewhere, such as an MCP server's). From that one
declaration come the schema sent to the provider (:meth:`Tool.spec`), the usage line, and the
validation of a model's arguments with errors it can read and correct itself from.

A handler is called as ``handler(env, **arguments)``: ``env`` is a :class:`ToolEnv`, the things a
tool may act on during one call (the workspace; within a turn, the turn: ``TurnToolEnv``), so one
declaration serves every turn.

Capabilities are named groups of tools a participant holds or not (``read``, ``write``,
``commands``, ``thread``, ``browser``, an MCP server's); a notice's ``hold`` takes one away.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Generic, TypeGuard, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from autodev.errors import ToolError
from autodev.harness.messages import ToolSpec

if TYPE_CHECKING:
    from autodev.harness.credit import Baseline
    from autodev.harness.scope import Scope

# Capabilities every participant has; a notice cannot hold them (a turn needs its post).
ALWAYS = frozenset({"thread"})


class Args(BaseModel):
    """Base of every tool's argument model: unknown arguments are refused."""

    model_config = ConfigDict(extra="forbid")


def _integer(value: object) -> int:
    # Models often send numbers as strings; a bool is not a number even though Python says so.
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            raise ValueError("not an integer") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("not an integer")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("not an integer")
        return int(value)
    return value


def _number(value: object) -> float:
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError("not a number") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError("not a number")
    return float(value)


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError("not true or false")
    return value


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("not a string")
    return value


# Argument types for tool models: what a model sends as JSON, checked the way we explain it.
Integer = Annotated[int, BeforeValidator(_integer)]
Number = Annotated[float, BeforeValidator(_number)]
Boolean = Annotated[bool, BeforeValidator(_boolean)]
String = Annotated[str, BeforeValidator(_string)]


@dataclass
class ToolEnv:
    """What a handler may act on during one call; each tool uses the parts it needs. Within a
    turn it is harness/context.py's `TurnToolEnv`, which adds the turn and its result (that
    module imports this one: naming them here would close an import circle)."""

    workspace: Scope | None = None  # the turn's Workspace (harness/tools.py)
    baseline: Baseline | None = None  # what a work_done post is credited against
    call_id: str | None = None


R = TypeVar(
    "R", covariant=True
)  # what a tool's handler returns: the text a model reads (a verdict: its parts)


@dataclass(frozen=True)
class Tool(Generic[R]):
    """One tool, declared once. Give ``args`` (a pydantic model) or ``schema`` (raw JSON Schema)."""

    name: str
    description: str
    capability: str
    handler: Callable[..., R]
    args: type[BaseModel] | None = None
    schema: Mapping[str, object] | None = None
    replay_safe: bool = False
    # The handler checks the raw arguments itself with its own refusals (post: SPEC §4; raw-schema
    # tools: their server). The model still gives the provider its schema.
    own_checks: bool = False

    def __post_init__(self) -> None:
        if (self.args is None) == (self.schema is None):
            raise ValueError(f"tool {self.name}: declare its arguments as a model or a schema, not both")

    def parameters(self) -> dict[str, object]:
        """The JSON Schema of the arguments, as providers take it."""
        if self.schema is not None:
            out = dict(self.schema)
            out.setdefault("type", "object")
            out.setdefault("properties", {})
            return out
        assert self.args is not None
        # A copy (a provider's adapter may edit it), from the schema's JSON: a third of deepcopy's time.
        schema: dict[str, object] = json.loads(_schema_json(self.args))
        return schema

    def spec(self) -> ToolSpec:
        """The OpenAI-style tool entry sent to the provider."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters()},
        }

    def usage(self) -> str:
        params = self.parameters()
        listed = params.get("required")
        required = {str(r) for r in listed} if _is_list(listed) else set[str]()
        parts: list[str] = []
        for name, prop in _properties(params).items():
            kind = _kind(prop)
            if name in required:
                parts.append(f"{name}: {kind}")
            else:
                parts.append(f"{name}?: {kind} = {self._default(name, prop)!r}")
        return f"{self.name}({', '.join(parts)})"

    def _default(self, name: str, prop: Mapping[str, object]) -> object:
        if self.args is not None and name in self.args.model_fields:
            return self.args.model_fields[name].default
        return prop.get("default")

    def parse(self, raw: object) -> dict[str, object]:
        """The keyword arguments for the handler; ToolError naming the argument when they are wrong.

        An argument sent as null counts as not sent (its default applies), as models send them.
        """
        if raw is None:
            raw = {}
        if not _is_mapping(raw):
            raise ToolError(f"{self.name}: arguments must be a JSON object; usage: {self.usage()}")
        if self.args is None or self.own_checks:
            return {str(k): v for k, v in raw.items()}
        given = {str(k): v for k, v in raw.items() if v is not None}
        try:
            parsed = self.args.model_validate(given)
        except ValidationError as e:
            raise ToolError(self._explain(e)) from None
        return {k: getattr(parsed, k) for k in self.args.model_fields}

    def _explain(self, error: ValidationError) -> str:
        errors = error.errors()
        usage = f"usage: {self.usage()}"
        extra: list[str] = []
        for e in errors:  # pydantic's errors, told by their `type` (its error code)
            match e:
                case {"type": "extra_forbidden", "loc": (key, *_)}:
                    extra.append(str(key))
                case _:
                    pass  # an argument that does not fit: the first error is explained below
        if extra:
            return f"{self.name}: unknown argument(s) {', '.join(sorted(extra))}; {usage}"
        props = _properties(self.parameters())
        first = errors[0]
        name = str(first["loc"][0]) if first["loc"] else "?"
        prop = props.get(name, {})
        match first:
            case {"type": "missing"}:
                return f"{self.name}: missing argument '{name}' ({_kind(prop)}); {usage}"
            case _:
                got = _short(repr(first.get("input")), 60)
                return f"{self.name}: argument '{name}' must be {_expected(prop)}, got {got}; {usage}"

    def call(self, env: ToolEnv, raw: object) -> R:
        """Validate ``raw`` and run the handler."""
        return self.handler(env, **self.parse(raw))


class Registry:
    """Tools by name, in declaration order. Names are unique: they are a public contract."""

    def __init__(self, tools: Iterable[Tool[str]] = (), capabilities: Iterable[str] = ()):
        self._tools: dict[str, Tool[str]] = {}
        self._capabilities = set(capabilities)  # known even while no tool of theirs is present
        for t in tools:
            self.add(t)

    def add(self, tool: Tool[str]) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is declared twice")
        self._tools[tool.name] = tool
        self._capabilities.add(tool.capability)

    def __iter__(self) -> Iterator[Tool[str]]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool[str] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def capabilities(self) -> dict[str, frozenset[str]]:
        """Capability name -> the names of its tools."""
        out: dict[str, set[str]] = {c: set() for c in self._capabilities}
        for t in self._tools.values():
            out[t.capability].add(t.name)
        return {c: frozenset(names) for c, names in sorted(out.items())}

    def holdable(self) -> list[str]:
        """Capabilities a notice may hold."""
        return sorted(c for c in self._capabilities if c not in ALWAYS)

    def withheld(self, held: Iterable[str]) -> frozenset[str]:
        """Names of the tools of the held capabilities."""
        caps = self.capabilities()
        return frozenset(name for c in held for name in caps.get(c, ()))


def _properties(schema: Mapping[str, object]) -> dict[str, Mapping[str, object]]:
    """A JSON Schema's `properties`, by name (a malformed entry left out)."""
    props = schema.get("properties")
    if not _is_mapping(props):
        return {}
    return {str(k): v for k, v in props.items() if _is_schema(v)}


def _is_mapping(value: object) -> TypeGuard[Mapping[object, object]]:
    return isinstance(value, Mapping)


def _is_schema(value: object) -> TypeGuard[Mapping[str, object]]:
    # a JSON Schema read from JSON or built by pydantic: its keys are strings
    return isinstance(value, Mapping)


def _is_list(value: object) -> TypeGuard[list[object]]:
    return isinstance(value, list)


@functools.cache
def _schema_of(args: type[BaseModel]) -> dict[str, object]:
    """The cleaned schema of a tool's argument model, built once: pydantic builds it anew on
    every call, and every generation sends every offered tool's schema (a profile of the daemon
    put this at a third of its own time per turn)."""
    return _clean(args.model_json_schema())


@functools.cache
def _schema_json(args: type[BaseModel]) -> str:
    return json.dumps(_schema_of(args))


def _clean(schema: Mapping[str, object]) -> dict[str, object]:
    """pydantic's schema, as plain as a provider needs: no titles, optional means not required."""
    props: dict[str, object] = {}
    for name, given in _properties(schema).items():
        prop = dict(given)
        prop.pop("title", None)
        options = prop.pop("anyOf", None)
        if _is_list(options):  # X | None: the model omits it instead of sending null
            typed = [o for o in options if _is_schema(o) and not _is_null(o)]
            if len(typed) == 1:
                prop = {**typed[0], **prop}
        if prop.get("default", 0) is None:
            del prop["default"]
        for short, keyword in _BOUNDS.items():  # pydantic leaves bounds of X | None unnamed
            if short in prop:
                prop[keyword] = prop.pop(short)
        props[name] = prop
    out: dict[str, object] = {"type": "object", "properties": props, "required": schema.get("required", [])}
    out["additionalProperties"] = False
    return out


def _is_null(schema: Mapping[str, object]) -> bool:
    """The schema pydantic writes for the None of X | None."""
    match schema:
        case {"type": "null"}:
            return True
        case _:
            return False


_BOUNDS = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}


def _kind(prop: Mapping[str, object]) -> str:
    return str(prop.get("type", "value"))


def _expected(prop: Mapping[str, object]) -> str:
    enum = prop.get("enum")
    if _is_list(enum):
        return "one of " + ", ".join(map(str, enum))
    kind = prop.get("type")
    if kind == "integer":
        if "minimum" in prop:
            return f"an integer >= {prop['minimum']:g}"
        return "an integer"
    if kind == "number":
        if "exclusiveMinimum" in prop:
            return f"a number > {prop['exclusiveMinimum']:g}"
        if "minimum" in prop:
            return f"a number >= {prop['minimum']:g}"
        return "a number"
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        return "a string"
    return f"a {kind}" if kind else "a valid value"


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
