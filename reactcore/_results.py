"""What a tool returns, as what the model reads: the one serialiser of tool results, and
the check of a tool's return annotation when it is defined.

``tool_output`` turns a return value into the text and content parts of the response:
``bytes`` and content parts (alone, or in a list with strings) are parts; anything else is
JSON text (``to_json_text``), through the project's converter, which sends

- ``set`` / ``frozenset`` as an array, sorted when its items can be ordered; ``tuple`` as
  an array;
- ``datetime``, ``date``, ``time`` as ISO 8601 strings; ``Decimal`` as its exact decimal
  string; ``UUID`` and paths (``pathlib.PurePath``) as strings; an ``Enum`` member as its
  value;
- attrs and dataclass instances as objects of their fields; pydantic models as
  ``model_dump(mode="json")`` (when pydantic is installed: no dependency);
- ``bytes`` inside a JSON value (a field, an item) as base64 text (alone, bytes are a
  part, above).

A value none of these can send is a developer's bug the model cannot fix, so it is refused
where it is written: ``Tool.from_function`` raises ``TypeError`` for a return annotation
naming such a type (``unsendable``). A result that slips past (no annotation, ``Any``)
still fails at the call, as an error response naming the tool and the type.
"""

from __future__ import annotations

import base64
import collections.abc
import dataclasses
import datetime as dt
import decimal
import enum
import functools
import json
import pathlib
import types
import typing
import uuid
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import is_any_set

from ._messages import PART_TYPES, ContentPart, TextPart, part_from_bytes
from ._schema import type_name
from ._serde import clean_text, converter, split_parts
from ._types import is_pydantic_model
from ._validate import a_or_an

_BYTES = (bytes, bytearray, memoryview)


def _is_set_type(tp: Any) -> bool:
    return is_any_set(tp) or (isinstance(tp, type) and issubclass(tp, collections.abc.Set))


@functools.cache
def _results_converter() -> cattrs.Converter:
    """The one converter, copied (at first use, once every module has registered its
    hooks) with what only a tool's result may do: a set becomes an array. A result goes
    one way, to the model; state and events keep the converter's strictness, where a set
    turned into a list would not load back as what was stored."""
    results = converter.copy()

    def sorted_items(value: collections.abc.Set[Any]) -> list[Any]:
        """A set's items, unstructured, in order when they can be ordered."""
        items = [results.unstructure(item) for item in value]
        try:
            return sorted(items)
        except TypeError:  # mixed types, or objects without an order
            return items

    results.register_unstructure_hook_func(_is_set_type, sorted_items)
    results.register_unstructure_hook(pathlib.PurePath, str)  # (cattrs knows only Path)
    return results


def _leftover(value: Any) -> Any:
    """What the encoder meets that the converter left as is: bytes (base64 text), or a
    ``TypeError`` naming the type."""
    if isinstance(value, _BYTES):
        return base64.b64encode(bytes(value)).decode("ascii")
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    raise TypeError(
        f"{a_or_an(kind)} cannot be sent to the model as JSON "
        "(see docs/tools.md#what-a-tool-returns)"
    )


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=_leftover)


def to_json_text(value: Any) -> str:
    """A tool's result as text for the model: strings pass through, the rest is JSON (see
    the module docstring); invalid Unicode is repaired (``clean_text``).

    A value JSON cannot hold (NaN, an object of no known kind) raises ``TypeError`` /
    ``ValueError``, which the tool node turns into an error response naming the tool.
    """
    if isinstance(value, str):
        return clean_text(value)
    if value is None:
        return "null"
    return clean_text(_ENCODER.encode(_results_converter().unstructure(value)))


def _is_content(value: Any) -> bool:
    return isinstance(value, _BYTES) or type(value) in PART_TYPES


def _as_part(value: Any) -> ContentPart:
    if isinstance(value, str):
        return TextPart(value)
    if isinstance(value, _BYTES):
        return part_from_bytes(bytes(value))
    part: ContentPart = value
    return part


def _is_content_list(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and any(_is_content(v) for v in value)
        and all(isinstance(v, str) or _is_content(v) for v in value)
    )


def tool_output(value: Any) -> tuple[str, tuple[ContentPart, ...]]:
    """A tool's return value as the text and the content parts of its response.

    ``bytes`` become an ``ImagePart`` (PNG, JPEG, GIF, WebP, by their magic number) or a
    ``FilePart``; a part stays a part; a list or tuple of parts, bytes and strings, with
    at least one part or bytes among them, is that content in order (a leading string is
    the text). Anything else is JSON text (``to_json_text``), with no parts.
    """
    if _is_content(value):
        return split_parts([_as_part(value)])
    if _is_content_list(value):
        return split_parts([_as_part(v) for v in value])
    return to_json_text(value), ()


# --- the return annotation, checked when a tool is defined -------------------------------

# Classes whose instances (and subclasses') are sent as they are, or by a converter hook.
_SENDABLE: tuple[type, ...] = (
    str,
    int,
    float,
    bool,
    *_BYTES,
    list,
    tuple,
    dict,
    set,
    frozenset,
    enum.Enum,
    dt.date,  # datetime too
    dt.time,
    decimal.Decimal,
    uuid.UUID,
    pathlib.PurePath,
    *PART_TYPES,
)
# Generic containers whose type arguments say what they hold.
_CONTAINERS = {
    list,
    tuple,
    dict,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Collection,
    collections.abc.Set,
    collections.abc.MutableSet,
    collections.abc.Mapping,
    collections.abc.MutableMapping,
    collections.abc.Iterable,  # a list, most often; a generator fails at the call
}
_ANYTHING = (Any, object, None, type(None))


def unsendable(hint: Any) -> str | None:
    """The type in the return annotation ``hint`` that cannot be sent to the model (its
    name), or ``None`` when every type it names can be (see the module docstring).
    ``Any`` and ``object`` are taken on trust (checked at the call)."""
    return _unsendable(hint, frozenset())


def _unsendable(hint: Any, seen: frozenset[type]) -> str | None:
    if hint in _ANYTHING or isinstance(hint, typing.TypeVar) or hint in seen:
        return None
    origin = get_origin(hint)
    if origin is Annotated:
        return _unsendable(get_args(hint)[0], seen)
    if origin is Literal:
        return None
    if origin in (Union, types.UnionType) or origin in _CONTAINERS:
        args = [a for a in get_args(hint) if a is not Ellipsis]
        return next((p for a in args if (p := _unsendable(a, seen)) is not None), None)
    if isinstance(hint, typing.NewType):
        return _unsendable(hint.__supertype__, seen)
    if not isinstance(hint, type) or origin is not None:
        return type_name(hint)  # Callable[...], type[X], a generic of another class …
    if issubclass(hint, _SENDABLE) or hint in _CONTAINERS or is_pydantic_model(hint):
        return None
    if attrs.has(hint) or dataclasses.is_dataclass(hint) or typing.is_typeddict(hint):
        return _fields_unsendable(hint, seen | {hint})
    return type_name(hint)


def _fields_unsendable(cls: type, seen: frozenset[type]) -> str | None:
    """The first field type of ``cls`` that cannot be sent, named as ``Class.field: type``."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except (NameError, TypeError):  # a forward reference that does not resolve: at the call
        return None
    if attrs.has(cls):
        names = [f.name for f in attrs.fields(cls)]
    elif dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
    else:  # a TypedDict: every annotation is a key
        names = list(hints)
    for name in names:
        problem = _unsendable(hints.get(name, Any), seen)
        if problem is not None:
            return f"{cls.__qualname__}.{name}: {problem}"
    return None
