"""What the provider modules' wire mappings share: checked reading of an answer's JSON (a
field of the right type, or a ``ModelError`` — ``ModelStreamError`` in a stream — saying
what is missing where), a call's arguments as a JSON object, and joining a request's
consecutive turns of one role."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._exceptions import ModelError
from ._http import loads


def malformed(what: str, where: str, error: type[ModelError]) -> ModelError:
    """``error`` saying the answer has no ``what`` at JSON path ``where``."""
    return error(f"malformed answer: expected {what} @ {where}")


def field(
    payload: Mapping[str, Any], key: str, kind: type, where: str, error: type[ModelError]
) -> Any:
    """``payload[key]``, which must be a ``kind`` (a bool is no int), else ``error``."""
    value = payload.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise malformed(f"{kind.__name__} {key!r}", where, error)
    return value


def json_object(value: Any, where: str, error: type[ModelError]) -> dict[str, Any]:
    """``value``, which must be a JSON object, else ``error``."""
    if type(value) is not dict:
        raise malformed("an object", where, error)
    return value


def token_count(payload: Mapping[str, Any], key: str) -> int:
    """``payload[key]`` when it is an int (a token count), else 0."""
    value = payload.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def call_arguments(arguments: str) -> dict[str, Any]:
    """A call's JSON arguments as an object (``{}`` when they are not one: the tool node
    has told the model so already)."""
    try:
        value = loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def join_turn(turns: list[dict[str, Any]], role: str, key: str, items: list[Any]) -> None:
    """Add a turn of ``role`` holding ``items`` (under ``key``: ``content``, ``parts``) to
    ``turns``, joined to the last one when it has the same role; none when it is empty."""
    if not items:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1][key].extend(items)
    else:
        turns.append({"role": role, key: items})
