"""JSON Schema for the Python types a tool's parameters (or a structured output) may have.

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``X | None``, ``list[X]``,
``tuple[X, ...]``, ``tuple[X, Y]`` (``prefixItems``), ``dict[str, X]``, ``Literal[...]``,
``Enum`` subclasses, attrs classes, stdlib dataclasses, ``TypedDict``s, ``Any``, the types
of ``_types`` (``datetime``, ``date``, ``time``, ``UUID``, ``Decimal``, pydantic models),
``Annotated[X, "description"]`` (the text becomes the ``description``), and unions the
converter can tell apart (attrs classes with distinct required fields). Anything else is a
``TypeError`` when the tool is defined, not when it is called: here for a type JSON Schema
cannot describe, in ``Tool.from_function`` for a union the converter cannot read
(``int | str``).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs

from ._serde import converter
from ._types import schema_of

_PRIMITIVES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def json_schema(tp: Any) -> dict[str, Any]:
    """The JSON Schema of ``tp``; ``TypeError`` names an unsupported type."""
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if tp is Any:
        return {}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    known = schema_of(tp)
    if known is not None:
        return known
    if attrs.has(tp):
        return object_schema(attrs.fields(tp), typing.get_type_hints(tp, include_extras=True))
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return object_schema(_dataclass_fields(tp), typing.get_type_hints(tp, include_extras=True))
    if typing.is_typeddict(tp):
        return _typeddict_schema(tp)
    return _generic_schema(tp)


@attrs.frozen
class _Field:
    """What ``object_schema`` reads of a field: its name and default (``attrs.NOTHING``:
    required; an ``attrs.Factory``: optional, no default shown)."""

    name: str
    default: Any


def _dataclass_fields(tp: type) -> list[_Field]:
    out = []
    for f in dataclasses.fields(tp):
        if f.default is not dataclasses.MISSING:
            default: Any = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = attrs.Factory(f.default_factory)
        else:
            default = attrs.NOTHING
        out.append(_Field(f.name, default))
    return out


def _typeddict_schema(tp: Any) -> dict[str, Any]:
    hints = typing.get_type_hints(tp, include_extras=True)
    optional: Any = attrs.Factory(dict)
    fields = [
        _Field(name, attrs.NOTHING if name in tp.__required_keys__ else optional) for name in hints
    ]
    return object_schema(fields, hints)


def _description(metadata: tuple[Any, ...]) -> str | None:
    """The text of ``Annotated`` metadata: strings, or objects with a string
    ``description`` (such as pydantic's ``Field(description=...)``)."""
    texts = [m if isinstance(m, str) else getattr(m, "description", None) for m in metadata]
    found = [t for t in texts if isinstance(t, str) and t]
    return " ".join(found) if found else None


def _generic_schema(tp: Any) -> dict[str, Any]:
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        schema = json_schema(args[0])
        description = _description(args[1:])
        return {**schema, "description": description} if description else schema
    if origin in (typing.Required, typing.NotRequired):
        return json_schema(args[0])
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [json_schema(a) for a in args]
        return {"anyOf": options}
    if origin in (list, tuple) and (origin is list or (len(args) == 2 and args[1] is ...)):
        return {"type": "array", "items": json_schema(args[0]) if args else {}}
    if origin is tuple:
        items = [json_schema(a) for a in args]
        fixed = {"minItems": len(items), "maxItems": len(items)}
        return (
            {"type": "array", "prefixItems": items, **fixed}
            if items
            else {"type": "array", "maxItems": 0}
        )
    if origin is dict and (not args or args[0] is str):
        return {"type": "object", "additionalProperties": json_schema(args[1]) if args else {}}
    raise TypeError(f"cannot describe {type_name(tp)} as JSON Schema")


def type_name(tp: Any) -> str:
    """``datetime`` for a class, ``set[int]`` / ``int | str`` for other hints."""
    if isinstance(tp, type) and not get_args(tp):
        return tp.__qualname__
    return repr(tp)


def object_schema(fields: Any, hints: dict[str, Any]) -> dict[str, Any]:
    """An object schema from attrs fields (name, default) and their type hints."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for field in fields:
        prop = json_schema(hints[field.name])
        if field.default is attrs.NOTHING:
            required.append(field.name)
        elif not isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            prop["default"] = converter.unstructure(field.default)
        properties[field.name] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def is_strict(schema: Any) -> bool:
    """Whether ``schema`` is in the subset OpenAI's strict mode accepts (structured outputs,
    strict function tools): every object closed with all its properties required, and no
    defaults."""
    if isinstance(schema, list):
        return all(is_strict(s) for s in schema)
    if not isinstance(schema, dict):
        return True
    if "default" in schema:
        return False
    if schema.get("type") == "object":
        properties = schema.get("properties", {})
        closed = schema.get("additionalProperties") is False
        if not closed or set(schema.get("required", ())) != set(properties):
            return False
    return all(is_strict(v) for k, v in schema.items() if k != "enum")
