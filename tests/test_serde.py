"""The OpenAI chat-completions wire format, and tool results as JSON text."""

from __future__ import annotations

import enum
import json
import string
from typing import Any

import attrs
import cattrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reactcore import (
    AssistantMessage,
    AudioPart,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    messages_from_wire,
    messages_to_wire,
)
from reactcore._results import to_json_text
from reactcore._serde import assistant_from_wire, describe_error

# --- strategies -------------------------------------------------------------------------

texts = st.text(max_size=30)
identifiers = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=10)


optional_texts = st.none() | texts
content_parts = st.one_of(
    st.builds(TextPart, texts),
    st.builds(ImagePart, texts, st.none() | st.sampled_from(["auto", "low", "high"])),
    st.builds(AudioPart, texts, st.sampled_from(["wav", "mp3"])),
    st.builds(FilePart, texts, optional_texts, optional_texts),
    st.builds(FilePart, optional_texts, texts, optional_texts),
)


@st.composite
def text_and_parts(draw: st.DrawFn) -> tuple[str, list[Any]]:
    """A text and content parts as the wire tells them apart: an empty text is followed
    by no text part (on the wire, a first text part is the text)."""
    text = draw(texts)
    parts = draw(st.lists(content_parts, max_size=3))
    while not text and parts and isinstance(parts[0], TextPart):
        parts = parts[1:]
    return text, parts


@st.composite
def turns(draw: st.DrawFn) -> list[Message]:
    """One turn: a system, user or assistant message; an assistant's calls get answers."""
    kind = draw(st.sampled_from(["system", "user", "assistant", "calls"]))
    if kind == "system":
        return [SystemMessage(draw(texts), draw(st.sampled_from(["system", "developer"])))]
    if kind == "user":
        return [UserMessage(*draw(text_and_parts()))]
    if kind == "assistant":
        return [AssistantMessage(draw(texts))]
    ids = draw(st.lists(identifiers, min_size=1, max_size=4, unique=True))
    calls = [ToolCall(i, draw(identifiers), draw(texts)) for i in ids]
    answered = draw(st.permutations(calls))[: draw(st.integers(1, len(calls)))]
    # The wire carries neither is_error nor metadata: generate their defaults only.
    responses = []
    for c in answered:
        text, parts = draw(text_and_parts())
        responses.append(ToolResponse(c.id, c.name, text, parts=parts))
    return [AssistantMessage(draw(texts), calls), ToolResponseMessage(responses)]


conversations = st.lists(turns(), max_size=6).map(lambda ts: [m for t in ts for m in t])

# Other test sessions may load the machine: judge correctness, not speed.
relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- round trips ------------------------------------------------------------------------


@relaxed
@given(conversations)
def test_messages_round_trip_through_the_wire(messages: list[Message]) -> None:
    """messages → wire → messages gives the same messages, for every message kind, with
    the developer role and content parts (tools' parts as content parts of the tool
    items, ``tool_media="parts"``: the API's own tool messages take text only)."""
    assert messages_from_wire(messages_to_wire(messages, tool_media="parts")) == messages


@relaxed
@given(conversations)
def test_wire_round_trip_through_messages(messages: list[Message]) -> None:
    """A well-formed wire list (as JSON) → messages → wire gives the same list back."""
    wire = json.loads(json.dumps(messages_to_wire(messages, tool_media="parts")))
    assert messages_to_wire(messages_from_wire(wire), tool_media="parts") == wire


def test_wire_shape_of_each_message_kind() -> None:
    """Each message kind has the documented wire shape; a tool message has one item per answer."""
    call = ToolCall("c1", "add", '{"a": 1}')
    messages: list[Message] = [
        SystemMessage("sys"),
        UserMessage("hi"),
        AssistantMessage("", [call, ToolCall("c2", "sub")]),
        ToolResponseMessage([ToolResponse("c1", "add", "2"), ToolResponse("c2", "sub", "0")]),
        AssistantMessage("done"),
    ]
    assert messages_to_wire(messages) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "sub", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
        {"role": "tool", "tool_call_id": "c2", "content": "0"},
        {"role": "assistant", "content": "done"},
    ]


def test_empty_assistant_content_is_null_only_beside_tool_calls() -> None:
    """Empty text is written as null next to tool calls, but as "" without them.

    The chat-completions API requires ``content`` on an assistant message that has no
    tool calls, so an empty answer must not be sent as null.
    """
    with_calls = messages_to_wire([AssistantMessage("", [ToolCall("c", "f")])])
    without_calls = messages_to_wire([AssistantMessage("")])
    assert with_calls[0]["content"] is None
    assert without_calls == [{"role": "assistant", "content": ""}]


@pytest.mark.parametrize("content", [None, ""])
def test_null_and_empty_assistant_content_both_read_as_empty_text(content: Any) -> None:
    """An assistant's content null or "" reads as text ""."""
    wire = [{"role": "assistant", "content": content}]
    assert messages_from_wire(wire) == [AssistantMessage("")]


def test_missing_content_reads_as_empty_text() -> None:
    """An assistant message with tool calls and no content key at all reads as text ""."""
    wire = [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}]
    assert messages_from_wire(wire) == [AssistantMessage("", [ToolCall("c", "f", "{}")])]


def test_consecutive_tool_items_form_one_message_named_from_the_calls() -> None:
    """Consecutive tool items become one ToolResponseMessage; names come from the calls."""
    wire = [
        {
            "role": "assistant",
            "content": "thinking",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "alpha", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "beta", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "b", "content": "B"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "user", "content": "next"},
        {"role": "tool", "tool_call_id": "a", "content": "again"},
    ]
    messages = messages_from_wire(wire)
    assert messages[1:] == [
        ToolResponseMessage([ToolResponse("b", "beta", "B"), ToolResponse("a", "alpha", "A")]),
        UserMessage("next"),
        ToolResponseMessage([ToolResponse("a", "alpha", "again")]),
    ]


def test_tool_item_name_on_the_wire_wins_and_unknown_ids_have_no_name() -> None:
    """A tool item's own ``name`` is used; an id no assistant called gets the name ""."""
    wire = [
        {"role": "tool", "tool_call_id": "x", "content": "1", "name": "given"},
        {"role": "tool", "tool_call_id": "y", "content": "2"},
    ]
    assert messages_from_wire(wire) == [
        ToolResponseMessage([ToolResponse("x", "given", "1"), ToolResponse("y", "", "2")])
    ]


def test_developer_role_is_kept_as_its_own_role() -> None:
    """The "developer" role (newer OpenAI models) reads as a SystemMessage that keeps the
    role, and is written back as "developer"; a plain system message stays "system"."""
    wire = [{"role": "developer", "content": "rules"}, {"role": "system", "content": "be kind"}]
    messages = messages_from_wire(wire)
    assert messages == [SystemMessage("rules", role="developer"), SystemMessage("be kind")]
    assert messages_to_wire(messages) == wire


def test_is_error_and_metadata_are_dropped_on_the_wire() -> None:
    """The wire has no is_error flag and no metadata: they come back as their defaults."""
    call = ToolCall("c", "f")
    messages: list[Message] = [
        AssistantMessage("", [call], metadata={"usage": 3}),
        ToolResponseMessage(
            [ToolResponse("c", "f", "Error: boom", is_error=True)],
            metadata={"finish_reason": "return_direct"},
        ),
    ]
    wire = messages_to_wire(messages)
    assert all("metadata" not in w and "is_error" not in w for w in wire)
    back = messages_from_wire(wire)
    assert back == [
        AssistantMessage("", [call]),
        ToolResponseMessage([ToolResponse("c", "f", "Error: boom", is_error=False)]),
    ]


@pytest.mark.parametrize("role", ["system", "developer", "assistant"])
def test_content_part_lists_read_as_text(role: str) -> None:
    """A content list of {"type": "text"} parts of a system, developer or assistant item
    reads as the parts' texts joined."""
    parts = [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]
    [message] = messages_from_wire([{"role": role, "content": parts}])
    assert message.text == "Hello, world"  # type: ignore[union-attr]


def test_user_and_tool_content_lists_keep_their_parts() -> None:
    """A user or tool item's content list keeps its parts: the first text part is the
    text, the others follow as parts, in order (so the item is written back as it was)."""
    content = [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "world"}]
    wire = [
        {"role": "user", "content": content},
        {"role": "tool", "tool_call_id": "c", "content": content},
    ]
    user, tools = messages_from_wire(wire)
    assert user == UserMessage("Hello, ", [TextPart("world")])
    assert tools == ToolResponseMessage(
        [ToolResponse("c", "", "Hello, ", parts=[TextPart("world")])]
    )
    assert messages_to_wire([user, tools], tool_media="parts") == wire


def test_provider_extra_keys_are_tolerated() -> None:
    """Keys a provider adds (refusal, annotations, index …) are ignored, at every level."""
    wire = [
        {
            "role": "assistant",
            "content": "hi",
            "refusal": None,
            "annotations": [],
            "audio": None,
            "tool_calls": [
                {
                    "id": "c",
                    "type": "function",
                    "index": 0,
                    "function": {"name": "f", "arguments": "{}", "parsed": None},
                }
            ],
        }
    ]
    assert messages_from_wire(wire) == [AssistantMessage("hi", [ToolCall("c", "f", "{}")])]


def test_assistant_from_wire_reads_a_response_message() -> None:
    """assistant_from_wire reads one response ``message`` dict, extra keys and all."""
    payload = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}],
    }
    assert assistant_from_wire(payload) == AssistantMessage("", [ToolCall("c", "f", "{}")])


def test_messages_from_wire_accepts_a_tuple() -> None:
    """Any sequence of wire dicts is accepted, not only a list."""
    assert messages_from_wire(({"role": "user", "content": "x"},)) == [UserMessage("x")]


# --- malformed wire ---------------------------------------------------------------------

_CALL = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        pytest.param([{"content": "x"}], ["messages[0].role", "missing"], id="missing-role"),
        pytest.param(
            [{"role": "wizard", "content": "x"}],
            ["messages[0].role", "'wizard'", '"assistant"'],
            id="unknown-role",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": {"id": "c"}}],
            ["messages[0].tool_calls", "expected an array", "dict"],
            id="tool-calls-dict",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": "abc"}],
            ["messages[0].tool_calls", "expected an array", "str"],
            id="tool-calls-string",
        ),
        pytest.param(
            [{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}],
            ["messages[1]", "tool_call_id"],
            id="tool-without-id",
        ),
        pytest.param(
            [{"role": "tool", "tool_call_id": 7, "content": "r"}],
            ["messages[0].tool_call_id", "expected a string"],
            id="tool-call-id-not-string",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": [{"id": "c"}]}],
            ["messages[0].tool_calls[0].function", "missing"],
            id="call-without-function",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": [{**_CALL, "type": "custom"}]}],
            ["messages[0].tool_calls[0].type", "'custom'"],
            id="call-wrong-type",
        ),
        pytest.param(
            [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": 3}}]}],
            ["messages[0].tool_calls[0].function.name", "expected a string"],
            id="function-name-not-string",
        ),
        pytest.param(
            [{"role": "user", "content": 42}], ["messages[0].content", "42"], id="content-number"
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": "text", "text": 1}]}],
            ["messages[0].content"],
            id="content-part-text-not-string",
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            ["messages[0].content[0].image_url.url", "missing"],
            id="image-part-without-url",
        ),
        pytest.param(
            [{"role": "user", "content": [{"type": "video", "video": {}}]}],
            ["messages[0].content[0]", '"image_url"', "'video'"],
            id="unknown-part-type",
        ),
        pytest.param(
            [{"role": "tool", "tool_call_id": "c", "content": [{"type": "file", "file": {}}]}],
            ["messages[0].content[0]", "file_data or file_id"],
            id="file-part-without-data-or-id",
        ),
        pytest.param(
            [{"role": "user", "content": ["hi"]}],
            ["messages[0].content", "['hi']"],
            id="part-not-object",
        ),
        pytest.param(["hello"], ["messages[0]", "expected an object"], id="item-not-object"),
        pytest.param("hello", ["expected an array", "str"], id="payload-not-list"),
    ],
)
def test_malformed_wire_is_a_value_error_saying_what_and_where(
    payload: Any, expected: list[str]
) -> None:
    """Malformed wire → ValueError whose message names the path and what is wrong."""
    with pytest.raises(ValueError, match="malformed chat-completions messages") as info:
        messages_from_wire(payload)
    for fragment in expected:
        assert fragment in str(info.value)


def test_malformed_response_message_is_described_under_the_callers_path() -> None:
    """assistant_from_wire raises the converter's error, which describe_error words under
    the path the model client gives (so it can say ``$.choices[0].message``)."""
    with pytest.raises(cattrs.BaseValidationError) as info:
        assistant_from_wire({"role": "assistant", "tool_calls": {"x": 1}})
    assert describe_error(info.value, "$.choices[0].message") == (
        "expected an array, got dict @ $.choices[0].message.tool_calls"
    )


# --- tool results as JSON text ------------------------------------------------------------


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


@attrs.frozen
class Reading:
    sensor: str
    value: float
    mood: Mood = Mood.HAPPY


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": 1, "b": [True, None]}, {"a": 1, "b": [True, None]}),
        ([1, "two", 3.5], [1, "two", 3.5]),
        ((1, 2), [1, 2]),
        (42, 42),
        (None, None),
        (False, False),
        (Reading("t1", 20.5), {"sensor": "t1", "value": 20.5, "mood": "happy"}),
        ([Reading("t2", 1.0, Mood.SAD)], [{"sensor": "t2", "value": 1.0, "mood": "sad"}]),
        (Mood.SAD, "sad"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_to_json_text_turns_values_into_json(value: Any, expected: Any) -> None:
    """Non-string results become JSON text (attrs instances as objects, enums as values)."""
    text = to_json_text(value)
    assert isinstance(text, str)
    assert json.loads(text) == expected


@pytest.mark.parametrize("text", ["plain", "", '{"looks": "like json"}', "42"])
def test_to_json_text_passes_strings_through(text: str) -> None:
    """A string result is the text itself, never re-encoded as a JSON string."""
    assert to_json_text(text) == text


def test_to_json_text_keeps_non_ascii() -> None:
    """Non-ASCII characters are kept as they are, not \\u-escaped."""
    assert to_json_text({"city": "Zürich", "greeting": "你好"}) == (
        '{"city": "Zürich", "greeting": "你好"}'
    )
