"""Bounded JSON parsing of untrusted text: every limit raises ``JSONLimitError`` (a
``ValueError``) saying which one, never ``RecursionError`` or an int-parser error."""

from __future__ import annotations

import json

import pytest

from reactcore._json import MAX_DEPTH, MAX_NUMBER_DIGITS, JSONLimitError, loads


def test_ordinary_json_parses() -> None:
    """Values within the limits come back as ``json.loads`` gives them."""
    text = '{"a": [1, 2.5, -3e2, "x", null, true], "b": {"c": {}}}'
    assert loads(text) == json.loads(text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_deep_nesting_is_a_limit_error(depth: int) -> None:
    """Arrays nested past the limit — a little, or far past the interpreter's stack."""
    with pytest.raises(JSONLimitError, match=f"nested deeper than {MAX_DEPTH} levels"):
        loads("[" * depth + "]" * depth)


def test_depth_at_the_limit_parses() -> None:
    """Exactly ``MAX_DEPTH`` levels is allowed."""
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


@pytest.mark.parametrize("number", ["9" * 5_000, "1." + "5" * 5_000, "-" + "7" * 401])
def test_huge_numbers_are_a_limit_error(number: str) -> None:
    """A number longer than ``MAX_NUMBER_DIGITS`` characters is refused before parsing it."""
    with pytest.raises(JSONLimitError, match="a number of"):
        loads(f'{{"x": {number}}}')
    assert loads("9" * MAX_NUMBER_DIGITS) == int("9" * MAX_NUMBER_DIGITS)


def test_length_limit() -> None:
    """Text longer than ``max_length`` is refused before parsing."""
    with pytest.raises(JSONLimitError, match="12 characters"):
        loads('"0123456789"', max_length=10)


def test_malformed_json_is_still_a_decode_error() -> None:
    """Malformed text is ``json.JSONDecodeError``, as from ``json.loads``."""
    with pytest.raises(json.JSONDecodeError):
        loads("{nope")
