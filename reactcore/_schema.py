"""JSON Schema for the Python types a tool's parameters (or a structured output) may have.

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``X | None``, ``list[X]``,
``tuple[X, ...]``, ``dict[str, X]``, ``Literal[...]``, ``Enum`` subclasses, attrs classes,
``Any``, and unions the converter can tell apart (attrs classes with distinct required
fields). Anything else is a ``TypeError`` when the tool is defined, not when it is called:
here for a type JSON Schema cannot describe, in ``Tool.from_function`` for a union the
converter cannot read (``int | str``).
"""

from __future__ import annotations

import enum
import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs

from ._serde import converter

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
    if attrs.has(tp):
        return object_schema(attrs.fields(tp), typing.get_type_hints(tp))
    return _generic_schema(tp)


def _generic_schema(tp: Any) -> dict[str, Any]:
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return json_schema(args[0])
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        options = [json_schema(a) for a in args]
        return {"anyOf": options}
    if origin in (list, tuple) and (origin is list or (len(args) == 2 and args[1] is ...)):
        return {"type": "array", "items": json_schema(args[0]) if args else {}}
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
