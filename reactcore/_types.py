"""Python types beyond JSON's that tools take and return, on the project's converter.

Each type here has three things: a strict structure hook (a tool argument or a structured
output is read from JSON, never coerced: ``"5"`` is no ``int``, ``5`` no ``datetime``), an
unstructure hook (a tool's result of that type becomes JSON), and its JSON Schema
(``schema_of``, which ``_schema.json_schema`` asks first).

- ``datetime`` / ``date`` / ``time``: ISO 8601 strings (``format`` date-time, date, time);
- ``UUID``: a string (``format`` uuid);
- ``Decimal``: a JSON number or a decimal string, kept exact; the result is a string;
- ``tuple[X, Y]``: an array of exactly those items (``prefixItems``);
- pydantic v2 models, when pydantic is installed (found by duck typing, never imported
  here): pydantic's own schema (``$ref``s inlined) and strict validation.

Stdlib dataclasses and ``TypedDict``s need no hooks here: cattrs reads them field by field
through the strict hooks of ``_serde``; ``_schema`` describes them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
import uuid
from collections.abc import Callable
from typing import Any, get_args, get_origin

import cattrs
from cattrs.errors import IterableValidationError, IterableValidationNote

from ._serde import StrictTypeError, converter

_ISO: dict[type, tuple[str, str]] = {
    dt.datetime: ("date-time", "an ISO 8601 date-time string"),
    dt.date: ("date", "an ISO 8601 date string"),
    dt.time: ("time", "an ISO 8601 time string"),
}


def _iso(value: Any, tp: type[dt.date] | type[dt.time]) -> Any:
    expected = _ISO[tp][1]
    if not isinstance(value, str):
        raise StrictTypeError(f"expected {expected}, got {type(value).__name__} {value!r}")
    try:
        parsed = tp.fromisoformat(value)
    except ValueError:
        raise StrictTypeError(f"expected {expected}, got {value!r}") from None
    # ``date.fromisoformat`` never gives a datetime, but a datetime is a date: be exact.
    if type(parsed) is not tp:
        raise StrictTypeError(f"expected {expected}, got {value!r}")
    return parsed


def _uuid(value: Any, _: Any) -> uuid.UUID:
    if not isinstance(value, str):
        raise StrictTypeError(f"expected a UUID string, got {type(value).__name__} {value!r}")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise StrictTypeError(f"expected a UUID string, got {value!r}") from None


_DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def _decimal(value: Any, _: Any) -> decimal.Decimal:
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return decimal.Decimal(repr(value))  # the shortest text of the float, not its binary
    if isinstance(value, str) and _DECIMAL.fullmatch(value):
        return decimal.Decimal(value)
    raise StrictTypeError(f"expected a finite decimal number, got {value!r}")


def _is_fixed_tuple(tp: Any) -> bool:
    args = get_args(tp)
    return get_origin(tp) is tuple and not (len(args) == 2 and args[1] is Ellipsis)


def _fixed_tuple(tp: Any, conv: cattrs.BaseConverter) -> Callable[[Any, Any], Any]:
    items = get_args(tp)
    hooks = [conv.get_structure_hook(item) for item in items]

    def structure(value: Any, _: Any) -> tuple[Any, ...]:
        if not isinstance(value, list | tuple):
            raise StrictTypeError(f"expected an array, got {type(value).__name__}")
        if len(value) != len(items):
            raise StrictTypeError(f"expected an array of {len(items)} items, got {len(value)}")
        out: list[Any] = []
        errors: list[Exception] = []
        for index, (item, hook, item_type) in enumerate(zip(value, hooks, items, strict=True)):
            try:
                out.append(hook(item, item_type))
            except Exception as exc:
                exc.add_note(IterableValidationNote(f"@ index {index}", index, item_type))
                errors.append(exc)
        if errors:
            raise IterableValidationError(f"While structuring {tp!r}", errors, tp)
        return tuple(out)

    return structure


def is_pydantic_model(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic v2 model class (by its methods: no import)."""
    return isinstance(tp, type) and all(
        callable(getattr(tp, name, None))
        for name in ("model_validate_json", "model_json_schema", "model_dump")
    )


def _pydantic(value: Any, tp: Any) -> Any:
    # JSON-mode strict validation: ISO strings are dates, "5" is still no int.
    try:
        return tp.model_validate_json(json.dumps(value, allow_nan=False), strict=True)
    except ValueError as exc:
        errors = getattr(exc, "errors", None)
        if not callable(errors):
            raise StrictTypeError(f"expected {tp.__name__}: {exc}") from None
        found = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in errors()
        )
        raise StrictTypeError(f"expected {tp.__name__}: {found}") from None


converter.register_structure_hook(dt.datetime, _iso)
converter.register_structure_hook(dt.date, _iso)
converter.register_structure_hook(dt.time, _iso)
converter.register_structure_hook(uuid.UUID, _uuid)
converter.register_structure_hook(decimal.Decimal, _decimal)
converter.register_structure_hook_factory(_is_fixed_tuple, _fixed_tuple)
converter.register_structure_hook_func(is_pydantic_model, _pydantic)

for _iso_type in _ISO:
    converter.register_unstructure_hook(_iso_type, lambda value: value.isoformat())
converter.register_unstructure_hook(uuid.UUID, str)
converter.register_unstructure_hook(decimal.Decimal, str)
converter.register_unstructure_hook_func(is_pydantic_model, lambda m: m.model_dump(mode="json"))


def _inline_refs(schema: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """``schema`` with every ``{"$ref": "#/$defs/X"}`` replaced by ``X``'s schema."""
    if isinstance(schema, list):
        return [_inline_refs(item, defs, seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.removeprefix("#/$defs/")
        if name in seen:
            raise TypeError(f"cannot describe the recursive model {name} as JSON Schema")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {**_inline_refs(defs[name], defs, (*seen, name)), **rest}
    return {k: _inline_refs(v, defs, seen) for k, v in schema.items() if k != "$defs"}


def schema_of(tp: Any) -> dict[str, Any] | None:
    """The JSON Schema of one of this module's types, or ``None`` for any other type."""
    if tp in _ISO:
        return {"type": "string", "format": _ISO[tp][0]}
    if tp is uuid.UUID:
        return {"type": "string", "format": "uuid"}
    if tp is decimal.Decimal:
        text = {"type": "string", "pattern": f"^{_DECIMAL.pattern}$"}
        return {"anyOf": [{"type": "number"}, text]}
    if is_pydantic_model(tp):
        schema: dict[str, Any] = tp.model_json_schema()
        inlined: dict[str, Any] = _inline_refs(schema, schema.get("$defs", {}), ())
        return inlined
    return None
