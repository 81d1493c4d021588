"""Messages: frozen values, hashing that leaves metadata out, and the tuple converters."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from reactcore import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

CALL = ToolCall("c1", "search", '{"q": "x"}')
RESPONSE = ToolResponse("c1", "search", "found")

ALL_MESSAGES: list[Any] = [
    SystemMessage("be brief"),
    UserMessage("hi"),
    AssistantMessage("ok", (CALL,), {"k": 1}),
    ToolResponseMessage((RESPONSE,), {"finish_reason": "return_direct"}),
    CALL,
    RESPONSE,
]


@pytest.mark.parametrize("value", ALL_MESSAGES, ids=lambda v: type(v).__name__)
def test_values_are_frozen(value: Any) -> None:
    """Every message class is frozen: assigning any field raises FrozenInstanceError."""
    field = attrs.fields(type(value))[0].name
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(value, field, "changed")


@pytest.mark.parametrize("value", ALL_MESSAGES, ids=lambda v: type(v).__name__)
def test_values_are_hashable_and_equal_by_value(value: Any) -> None:
    """Messages hash (metadata dicts included) and equal copies made with evolve."""
    copy = attrs.evolve(value)
    assert copy == value
    assert hash(copy) == hash(value)
    assert len({value, copy}) == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (AssistantMessage("a", metadata={"x": 1}), AssistantMessage("a", metadata={"x": 2})),
        (ToolResponseMessage([RESPONSE]), ToolResponseMessage([RESPONSE], {"y": 1})),
    ],
)
def test_metadata_is_left_out_of_hash_but_not_of_equality(first: Any, second: Any) -> None:
    """Two messages that differ only in metadata hash alike but are not equal."""
    assert hash(first) == hash(second)
    assert first != second


def test_evolve_derives_a_new_message() -> None:
    """attrs.evolve makes a changed copy and leaves the original as it was."""
    original = AssistantMessage("draft", [CALL])
    changed = attrs.evolve(original, text="final")
    assert changed.text == "final"
    assert changed.tool_calls == (CALL,)
    assert original.text == "draft"


def test_assistant_tool_calls_become_a_tuple() -> None:
    """AssistantMessage turns a list (or any iterable) of tool calls into a tuple."""
    from_list = AssistantMessage("", [CALL])
    from_generator = AssistantMessage("", (c for c in [CALL]))
    assert from_list.tool_calls == (CALL,)
    assert isinstance(from_list.tool_calls, tuple)
    assert from_generator == from_list
    hash(from_list)


def test_tool_responses_become_a_tuple() -> None:
    """ToolResponseMessage turns a list of responses into a tuple."""
    message = ToolResponseMessage([RESPONSE, RESPONSE])
    assert message.responses == (RESPONSE, RESPONSE)
    assert isinstance(message.responses, tuple)


def test_defaults() -> None:
    """Defaults: assistant text "" / no calls / empty metadata; arguments "{}"; not an error."""
    assistant = AssistantMessage()
    assert (assistant.text, assistant.tool_calls, dict(assistant.metadata)) == ("", (), {})
    assert ToolCall("i", "n").arguments == "{}"
    assert ToolResponse("i", "n", "r").is_error is False
    assert dict(ToolResponseMessage([]).metadata) == {}


def test_default_metadata_is_not_shared() -> None:
    """Each message gets its own metadata dict, so one cannot leak into another."""
    assert AssistantMessage().metadata is not AssistantMessage().metadata
    assert ToolResponseMessage([]).metadata is not ToolResponseMessage([]).metadata
