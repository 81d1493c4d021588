"""Checked reading of a provider's answer JSON: a field of the right type, or a
``ModelError`` (``ModelStreamError`` in a stream) saying what is missing where."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._exceptions import ModelError


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


def json_object(value: Any, where: str, error: type[ModelError]) -> Mapping[str, Any]:
    """``value``, which must be a JSON object, else ``error``."""
    if not isinstance(value, dict):
        raise malformed("an object", where, error)
    return value


def token_count(payload: Mapping[str, Any], key: str) -> int:
    """``payload[key]`` when it is an int (a token count), else 0."""
    value = payload.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
