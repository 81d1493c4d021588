"""The messages of a conversation: what the model reads and writes, and what tools answer.

Values are frozen; derive new ones with ``attrs.evolve``. ``metadata`` maps are left out
of hashing (they are plain dicts), but take part in equality.

Fields are type-checked when a message is made (``UserMessage(text=[...])`` is a
``TypeError`` there and then), so a malformed message fails where it is built, not when
a checkpoint holding it is read back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

_Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _got(value: Any) -> str:
    return f"{type(value).__name__} {value!r:.60}"


def _typed(*types: type) -> _Validator:
    """A validator: the field's value is an instance of one of ``types``."""
    names = " or ".join(t.__name__ for t in types)

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, types):
            owner = type(instance).__name__
            raise TypeError(f"{owner}.{attribute.name} must be a {names}, got {_got(value)}")

    return check


def _items(*types: type) -> _Validator:
    """A validator: every item of the field's tuple is an instance of one of ``types``."""
    names = " or ".join(t.__name__ for t in types)

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        for index, item in enumerate(value):
            if not isinstance(item, types):
                owner = type(instance).__name__
                raise TypeError(
                    f"{owner}.{attribute.name}[{index}] must be a {names}, got {_got(item)}"
                )

    return check


_text = _typed(str)
_mapping = _typed(Mapping)


@attrs.frozen
class SystemMessage:
    """Instructions for the model, put first in every request."""

    text: str = attrs.field(validator=_text)


@attrs.frozen
class UserMessage:
    """What the user said."""

    text: str = attrs.field(validator=_text)


@attrs.frozen
class ToolCall:
    """One call the model asked for; ``arguments`` is the model's raw JSON string."""

    id: str = attrs.field(validator=_text)
    name: str = attrs.field(validator=_text)
    arguments: str = attrs.field(default="{}", validator=_text)


def _to_calls(value: Any) -> tuple[ToolCall, ...]:
    return tuple(value)


@attrs.frozen
class AssistantMessage:
    """What the model answered: text, tool calls, or both."""

    text: str = attrs.field(default="", validator=_text)
    tool_calls: tuple[ToolCall, ...] = attrs.field(
        default=(), converter=_to_calls, validator=_items(ToolCall)
    )
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=_mapping)


@attrs.frozen
class ToolResponse:
    """The answer to one ``ToolCall``; ``is_error`` marks errors shown to the model."""

    id: str = attrs.field(validator=_text)
    name: str = attrs.field(validator=_text)
    response_data: str = attrs.field(validator=_text)
    is_error: bool = attrs.field(default=False, validator=_typed(bool))


def _to_responses(value: Any) -> tuple[ToolResponse, ...]:
    return tuple(value)


@attrs.frozen
class ToolResponseMessage:
    """The answers to the calls of one ``AssistantMessage``, in call order.

    ``metadata["finish_reason"] == "return_direct"`` ends the run after the tools.
    """

    responses: tuple[ToolResponse, ...] = attrs.field(
        converter=_to_responses, validator=_items(ToolResponse)
    )
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False, validator=_mapping)


Message = SystemMessage | UserMessage | AssistantMessage | ToolResponseMessage
