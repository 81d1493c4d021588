"""Messages: frozen values, hashing that leaves metadata out, and the tuple converters."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from reactcore import (
    AssistantMessage,
    AudioPart,
    FilePart,
    ImagePart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)

CALL = ToolCall("c1", "search", '{"q": "x"}')
RESPONSE = ToolResponse("c1", "search", "found")

IMAGE = ImagePart("https://example.com/cat.png", "low")

ALL_MESSAGES: list[Any] = [
    SystemMessage("be brief"),
    SystemMessage("be brief", role="developer"),
    UserMessage("hi"),
    UserMessage("look", [IMAGE, TextPart("and this")]),
    AssistantMessage("ok", (CALL,), {"k": 1}),
    ToolResponseMessage((RESPONSE,), {"finish_reason": "return_direct"}),
    CALL,
    RESPONSE,
    ToolResponse("c1", "chart", "", parts=[IMAGE]),
    TextPart("t"),
    IMAGE,
    AudioPart("UklGRg==", "wav"),
    FilePart(file_id="file-1"),
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


def test_parts_become_a_tuple() -> None:
    """A list of parts becomes a tuple, so the message stays hashable."""
    message = UserMessage("x", [IMAGE])
    assert message.parts == (IMAGE,)
    assert hash(message) == hash(UserMessage("x", (IMAGE,)))


def test_tool_responses_become_a_tuple() -> None:
    """ToolResponseMessage turns a list of responses into a tuple."""
    message = ToolResponseMessage([RESPONSE, RESPONSE])
    assert message.responses == (RESPONSE, RESPONSE)
    assert isinstance(message.responses, tuple)


def test_defaults() -> None:
    """Defaults: assistant text "" / no calls / empty metadata; arguments "{}"; not an
    error; no parts; the system role."""
    assistant = AssistantMessage()
    assert (assistant.text, assistant.tool_calls, dict(assistant.metadata)) == ("", (), {})
    assert ToolCall("i", "n").arguments == "{}"
    assert ToolResponse("i", "n", "r").is_error is False
    assert ToolResponse("i", "n", "r").parts == ()
    assert UserMessage("hi").parts == ()
    assert SystemMessage("s").role == "system"
    assert dict(ToolResponseMessage([]).metadata) == {}


def test_default_metadata_is_not_shared() -> None:
    """Each message gets its own metadata dict, so one cannot leak into another."""
    assert AssistantMessage().metadata is not AssistantMessage().metadata
    assert ToolResponseMessage([]).metadata is not ToolResponseMessage([]).metadata


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SystemMessage(None), "SystemMessage.text must be a str, got NoneType"),
        (lambda: UserMessage(["hi"]), "UserMessage.text must be a str, got list ['hi']"),
        (lambda: AssistantMessage(3), "AssistantMessage.text must be a str, got int 3"),
        (
            lambda: AssistantMessage("", [{"id": "c"}]),
            "AssistantMessage.tool_calls[0] must be a ToolCall, got dict",
        ),
        (lambda: AssistantMessage("", (), None), "AssistantMessage.metadata must be a Mapping"),
        (lambda: ToolCall("c", "f", {"q": 1}), "ToolCall.arguments must be a str, got dict"),
        (lambda: ToolResponse("c", "f", b"png"), "ToolResponse.response_data must be a str"),
        (lambda: ToolResponse("c", "f", "r", 1), "ToolResponse.is_error must be a bool, got int"),
        (
            lambda: ToolResponseMessage(["done"]),
            "ToolResponseMessage.responses[0] must be a ToolResponse, got str 'done'",
        ),
    ],
)
def test_fields_are_type_checked_where_a_message_is_made(make: Any, message: str) -> None:
    """A message with a field of the wrong type fails when it is built, with a TypeError
    naming the class, the field (and item) and what it got; so no malformed message
    reaches a checkpoint that could not be read back."""
    with pytest.raises(TypeError) as info:
        make()
    assert str(info.value).startswith(message)


def test_evolve_checks_types_too() -> None:
    """A changed copy made with attrs.evolve is checked like a new message."""
    with pytest.raises(TypeError, match=r"UserMessage.text must be a str"):
        attrs.evolve(UserMessage("hi"), text=None)
