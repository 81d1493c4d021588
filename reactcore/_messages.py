"""The messages of a conversation: what the model reads and writes, and what tools answer.

Values are frozen; derive new ones with ``attrs.evolve``. ``metadata`` maps are left out
of hashing (they are plain dicts), but take part in equality.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class SystemMessage:
    """Instructions for the model, put first in every request."""

    text: str


@attrs.frozen
class UserMessage:
    """What the user said."""

    text: str


@attrs.frozen
class ToolCall:
    """One call the model asked for; ``arguments`` is the model's raw JSON string."""

    id: str
    name: str
    arguments: str = "{}"


def _to_calls(value: Any) -> tuple[ToolCall, ...]:
    return tuple(value)


@attrs.frozen
class AssistantMessage:
    """What the model answered: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_to_calls)
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False)


@attrs.frozen
class ToolResponse:
    """The answer to one ``ToolCall``; ``is_error`` marks errors shown to the model.

    ``data`` (JSON values, or ``None``) is what the tool gave beyond the text, for callers:
    the model sees ``response_data`` only.
    """

    id: str
    name: str
    response_data: str
    is_error: bool = False
    data: Any = attrs.field(default=None, eq=False)


def _to_responses(value: Any) -> tuple[ToolResponse, ...]:
    return tuple(value)


@attrs.frozen
class ToolResponseMessage:
    """The answers to the calls of one ``AssistantMessage``, in call order.

    ``metadata["finish_reason"] == "return_direct"`` ends the run after the tools.
    """

    responses: tuple[ToolResponse, ...] = attrs.field(converter=_to_responses)
    metadata: Mapping[str, Any] = attrs.field(factory=dict, hash=False)


Message = SystemMessage | UserMessage | AssistantMessage | ToolResponseMessage
