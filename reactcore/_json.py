"""Bounded JSON parsing for untrusted text: model answers, streamed events, tool arguments.

``json.loads`` on hostile input fails in ways no caller expects: 200,000 nested brackets
raise ``RecursionError``, a 5,000-digit number ``ValueError`` from deep inside the int
parser, and a huge body costs memory before anything looks at it. ``loads`` checks the
size first, the digits of every number as it is read, and the nesting depth of the
result, and raises one error type, ``JSONLimitError`` (a ``ValueError``), saying which
limit was hit. Malformed JSON still raises ``json.JSONDecodeError`` (also a
``ValueError``).

The limits (documented in ``docs/reliability.md``):

- ``MAX_DEPTH`` = 100 levels of arrays/objects;
- ``MAX_NUMBER_DIGITS`` = 400 characters in one number;
- ``max_length`` characters of text, when the caller gives one.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100
MAX_NUMBER_DIGITS = 400


class JSONLimitError(ValueError):
    """Raised by ``loads`` when the text is too long, too deep or has too long a number."""


def _number(kind: type[int] | type[float]) -> Any:
    def parse(text: str) -> int | float:
        if len(text) > MAX_NUMBER_DIGITS:
            raise JSONLimitError(
                f"a number of {len(text)} characters (at most {MAX_NUMBER_DIGITS} are read)"
            )
        return kind(text)

    return parse


_parse_int = _number(int)
_parse_float = _number(float)


def _depth_problem(value: Any, max_depth: int) -> str | None:
    """Whether ``value`` nests deeper than ``max_depth`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > max_depth:
            return f"nested deeper than {max_depth} levels"
        stack.extend((child, depth + 1) for child in children)
    return None


def loads(text: str | bytes, *, max_length: int | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """``text`` parsed as JSON within the limits of the module docstring.

    Raises ``JSONLimitError`` for a limit, ``json.JSONDecodeError`` for malformed text.
    """
    if max_length is not None and len(text) > max_length:
        raise JSONLimitError(f"{len(text)} characters (at most {max_length} are read)")
    try:
        value = json.loads(text, parse_int=_parse_int, parse_float=_parse_float)
    except RecursionError:
        raise JSONLimitError(f"nested deeper than {max_depth} levels") from None
    problem = _depth_problem(value, max_depth)
    if problem is not None:
        raise JSONLimitError(problem)
    return value
