"""state.json and inbox messages checked as plain JSON, without pydantic: the steering commands
(`send`, `pause`, `approve`, ...) must start in a few tens of milliseconds, and building the
records' pydantic models costs more than the whole of that (issue 33).

`fits(name, data)` says that the model `name` (records.RunState, records.SendMessage, ...) takes
`data` as it is and writes it back unchanged (`Open.dump`). It is conservative: a value pydantic
would convert (an int in a float field, a field given by its Python name), a missing required
field or anything it does not know fails it, and the caller then goes through the model itself,
so a damaged file gets the model's own error and an older form the model's own conversion.

The shapes are generated from the models into autodev/store/shapes.py
(`python -m autodev.store.plain > autodev/store/shapes.py`, then `ruff format` it);
tests/test_plain.py keeps the file equal to the models and checks `fits` against pydantic.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeGuard, cast

from autodev.store.shapes import INBOX, SHAPES

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["INBOX", "derive", "fits", "inbox_fits", "source"]


def fits(name: str, data: object) -> bool:
    """`data` is what model `name` would validate and dump back unchanged."""
    return _model(name, data)


def inbox_fits(msg: object) -> bool:
    """An inbox message the daemon takes as it is (records.inbox_message would accept it)."""
    if not _is_object(msg):
        return False
    kind = msg.get("kind")
    return type(kind) is str and kind in INBOX and _model(INBOX[kind], msg)


def _is_object(v: object) -> TypeGuard[dict[object, object]]:
    """Exactly a dict (a subclass pydantic may treat otherwise fails it); its keys are checked
    where they matter."""
    return type(v) is dict


def _is_list(v: object) -> TypeGuard[list[object]]:
    return type(v) is list


def _model(name: str, v: object) -> bool:
    if not _is_object(v):
        return False
    shape = SHAPES[name]
    fields = shape["fields"]
    for k, x in v.items():
        if isinstance(k, str) and k in fields:
            if not _fits(fields[k][0], x):
                return False
        elif k in shape["names"] or not shape["extra"] or not _json(x):
            return False  # a field by its Python name (pydantic would take it), or a refused extra
    return all(k in v for k, (_, required) in fields.items() if required)


def _fits(spec: object, v: object) -> bool:
    if isinstance(spec, str):
        if spec == "str":
            return type(v) is str
        if spec == "str+":
            return type(v) is str and v != ""
        if spec == "int":
            return type(v) is int
        if spec == "float":
            return type(v) is float and math.isfinite(v)
        if spec == "bool":
            return type(v) is bool
        if spec == "none":
            return v is None
        if spec == "any":
            return _json(v)
        return False
    assert isinstance(spec, list)
    spec = cast("list[object]", spec)
    tag = spec[0]
    if tag == "lit":
        return any(type(v) is type(x) and v == x for x in spec[1:])
    if tag == "list":
        return _is_list(v) and all(_fits(spec[1], x) for x in v)
    if tag == "dict":
        return _is_object(v) and all(type(k) is str and _fits(spec[1], x) for k, x in v.items())
    if tag == "or":
        return any(_fits(s, v) for s in spec[1:])
    if tag == "model":
        return _model(str(spec[1]), v)
    return False


def _json(v: object) -> bool:
    """Plain JSON that pydantic keeps as it is (a non-finite float it may not)."""
    t = type(v)
    if t is str or t is int or t is bool or v is None:
        return True
    if isinstance(v, float) and t is float:
        return math.isfinite(v)
    if _is_list(v):
        return all(_json(x) for x in v)
    if _is_object(v):
        return all(type(k) is str and _json(x) for k, x in v.items())
    return False


# -- generating shapes.py from the models (imports pydantic; never on a command's path)


Models = dict[str, "dict[str, object] | None"]  # name -> shape (None while it is being made)


def _spec(annotation: object, metadata: list[object], models: Models) -> object:
    import types
    import typing

    from pydantic import BaseModel, JsonValue

    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "none"
    if annotation is JsonValue:
        return "any"
    if annotation is int or annotation is float or annotation is bool:
        return annotation.__name__
    if annotation is str:
        lengths = [getattr(m, "min_length", None) for m in metadata if getattr(m, "min_length", None)]
        if lengths and lengths != [1]:
            raise ValueError(f"str with min_length {lengths}: teach autodev/store/plain.py")
        return "str+" if lengths else "str"
    if origin is typing.Literal:
        return ["lit", *args]
    if origin in (typing.Union, types.UnionType):
        return ["or", *(_spec(a, [], models) for a in args)]
    if origin is list:
        return ["list", _spec(args[0], [], models)]
    if origin is dict and args[0] is str:
        return ["dict", _spec(args[1], [], models)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        _add(annotation, models)
        return ["model", annotation.__name__]
    raise ValueError(f"{annotation!r}: a type autodev/store/plain.py does not know; teach it")


def _add(model: type[BaseModel], models: Models) -> None:
    name = model.__name__
    if name in models:
        known = models[name]
        if known is not None and known["cls"] is not model:
            raise ValueError(f"two record models are called {name}")
        return
    decorators = model.__pydantic_decorators__
    if any(getattr(decorators, k) for k in ("validators", "field_validators", "model_validators")):
        raise ValueError(f"{name} has validators: plain JSON cannot check it; teach autodev/store/plain.py")
    models[name] = None  # a model that refers to itself
    fields: dict[str, object] = {}
    names: list[str] = []
    for fname, f in model.model_fields.items():
        key = f.alias or fname
        if key != fname:
            names.append(fname)
        fields[key] = [_spec(f.annotation, f.metadata, models), f.is_required()]
    extra = model.model_config.get("extra")
    models[name] = {"cls": model, "fields": fields, "names": sorted(names), "extra": extra == "allow"}


def derive() -> tuple[dict[str, str], dict[str, dict[str, object]]]:
    """(INBOX, SHAPES) as the models make them: what shapes.py must hold."""
    from autodev import records

    models: Models = {}
    _add(records.RunState, models)
    for m in records.INBOX.values():
        _add(m, models)
    inbox = {kind: m.__name__ for kind, m in sorted(records.INBOX.items())}
    return inbox, {n: {k: v for k, v in (m or {}).items() if k != "cls"} for n, m in sorted(models.items())}


def source() -> str:
    """shapes.py's text (then `ruff format` it)."""
    import pprint

    inbox, shapes = derive()
    return (
        '"""Generated from autodev/records by `python -m autodev.store.plain > autodev/store/shapes.py`\n'
        "(then `ruff format` it): do not edit; tests/test_plain.py keeps it equal to the models.\n"
        'autodev/store/plain.py reads it."""\n\n'
        "from typing import TypedDict\n\n\n"
        "class Shape(TypedDict):\n"
        '    """A model: its fields by file name, each [spec, required]; the fields\' Python names where\n'
        '    they differ; whether it keeps extra keys."""\n\n'
        "    fields: dict[str, list[object]]\n"
        "    names: list[str]\n"
        "    extra: bool\n\n\n"
        f"INBOX: dict[str, str] = {pprint.pformat(inbox, width=100)}\n\n"
        f"SHAPES: dict[str, Shape] = {pprint.pformat(shapes, width=100)}\n"
    )


if __name__ == "__main__":
    print(source(), end="")
