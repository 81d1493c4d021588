"""Content parts end to end: what messages hold besides text (images, audio, files), their
OpenAI wire shapes, what a tool's bytes or parts become and what the model is sent of
them, the developer role, checkpoints, and runs over HTTP and through a SQLite resume."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from reactcore import (
    AssistantMessage,
    AudioPart,
    Checkpoint,
    FilePart,
    ImagePart,
    ModelCallFinished,
    ModelCallStarted,
    ModelDelta,
    OpenAIChatModel,
    OverAllState,
    ReactAgent,
    RunFinished,
    RunnableConfig,
    SqliteSaver,
    StateUpdated,
    SystemMessage,
    TextPart,
    ToolCallFinished,
    ToolCallStarted,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
    dump_checkpoint,
    load_checkpoint,
    messages_from_wire,
    messages_to_wire,
    part_from_bytes,
    tool,
)
from reactcore._results import tool_output
from reactcore.testing import OpenAICompatibleServer, SSEReply, serve_openai_compatible
from tests.helpers import asks

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(range(40))
PNG_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
PDF = b"%PDF-1.7\n" + b"x" * 30
WAV_BASE64 = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()


# --- the parts ----------------------------------------------------------------------------


def test_image_from_bytes_is_a_base64_data_url_described_by_type_and_size() -> None:
    """ImagePart.from_bytes builds a ``data:`` URL; describe() says type and size (what a
    model that reads text only is told), or the URL for a linked image."""
    image = ImagePart.from_bytes(PNG, "image/png", detail="low")
    assert image == ImagePart(PNG_URL, "low")
    assert base64.b64decode(image.url.partition(",")[2]) == PNG
    assert image.describe() == f"[image: image/png, {len(PNG)} bytes]"
    assert ImagePart("https://example.com/cat.jpg").describe() == (
        "[image: https://example.com/cat.jpg]"
    )
    assert AudioPart(WAV_BASE64, "wav").describe() == "[audio: wav, 16 bytes]"
    assert FilePart.from_bytes(PDF, "application/pdf", "a.pdf").describe() == (
        f"[file: a.pdf, application/pdf, {len(PDF)} bytes]"
    )
    assert FilePart(file_id="file-abc").describe() == "[file: file-abc]"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(PNG, "image/png", id="png"),
        pytest.param(b"\xff\xd8\xff\xe0" + b"j" * 20, "image/jpeg", id="jpeg"),
        pytest.param(b"GIF89a" + b"g" * 20, "image/gif", id="gif89a"),
        pytest.param(b"GIF87a" + b"g" * 20, "image/gif", id="gif87a"),
        pytest.param(b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"w" * 8, "image/webp", id="webp"),
    ],
)
def test_image_bytes_become_an_image_part_by_their_magic_number(data: bytes, expected: str) -> None:
    """PNG, JPEG, GIF and WebP bytes become an ImagePart with their media type."""
    assert part_from_bytes(data) == ImagePart.from_bytes(data, expected)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(PDF, "application/pdf", id="pdf"),
        pytest.param(b"just some bytes", "application/octet-stream", id="other"),
        pytest.param(b"RIFF\x10\x00\x00\x00WAVEfmt ", "application/octet-stream", id="wav"),
    ],
)
def test_other_bytes_become_a_file_part(data: bytes, expected: str) -> None:
    """Bytes that are no known image become a FilePart with a data URL."""
    part = part_from_bytes(data, filename="blob")
    assert part == FilePart(
        f"data:{expected};base64,{base64.b64encode(data).decode()}", None, "blob"
    )


def test_long_inline_data_is_abbreviated_in_reprs() -> None:
    """A data URL of many bytes shows as its type and size in a repr, not as base64."""
    image = ImagePart.from_bytes(PNG * 10, "image/png")
    assert (
        repr(image)
        == f"ImagePart(url='data:image/png;base64,…' ({len(PNG) * 10} bytes), detail=None)"
    )
    audio = AudioPart(base64.b64encode(b"a" * 200).decode(), "wav")
    assert repr(audio) == "AudioPart(data_base64=<200 bytes>, format='wav')"


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: UserMessage("x", [{"type": "image_url"}]), TypeError, "UserMessage.parts[0]"),
        (lambda: UserMessage("x", ["more text"]), TypeError, "must be one of TextPart"),
        (lambda: ToolResponse("c", "f", "", parts=[PNG]), TypeError, "ToolResponse.parts[0]"),
        (lambda: ImagePart(None), TypeError, "ImagePart.url must be a str"),  # type: ignore[arg-type]
        (lambda: AudioPart(b"x", "wav"), TypeError, "AudioPart.data_base64 must be a str"),  # type: ignore[arg-type]
        (lambda: FilePart(), ValueError, "FilePart needs file_data"),
        (lambda: SystemMessage("x", "admin"), ValueError, "'system' or 'developer', got 'admin'"),
    ],
)
def test_malformed_parts_fail_where_they_are_made(make: Any, error: type, message: str) -> None:
    """A part list holding something that is no part, a part field of the wrong type, a
    file with neither data nor id, an unknown system role: an error at construction."""
    with pytest.raises(error) as info:
        make()
    assert message in str(info.value)


# --- the wire ---------------------------------------------------------------------------------


def test_user_parts_on_the_wire_in_order() -> None:
    """A user message with parts is a content list: its text first, then the parts in
    order, each in the OpenAI shape; without parts it is the plain string; with an empty
    text the list starts with the first part."""
    message = UserMessage(
        "What is in these?",
        [
            ImagePart("https://example.com/cat.jpg", "high"),
            TextPart("and"),
            ImagePart(PNG_URL),
            AudioPart(WAV_BASE64, "wav"),
            FilePart("data:application/pdf;base64,JVBERi0=", None, "a.pdf"),
            FilePart(file_id="file-abc"),
        ],
    )
    assert messages_to_wire([message]) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in these?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://example.com/cat.jpg", "detail": "high"},
                },
                {"type": "text", "text": "and"},
                {"type": "image_url", "image_url": {"url": PNG_URL}},
                {"type": "input_audio", "input_audio": {"data": WAV_BASE64, "format": "wav"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": "data:application/pdf;base64,JVBERi0=",
                        "filename": "a.pdf",
                    },
                },
                {"type": "file", "file": {"file_id": "file-abc"}},
            ],
        }
    ]
    assert messages_from_wire(messages_to_wire([message])) == [message]
    assert messages_to_wire([UserMessage("hi")]) == [{"role": "user", "content": "hi"}]
    assert messages_to_wire([UserMessage("", [ImagePart(PNG_URL)])])[0]["content"] == [
        {"type": "image_url", "image_url": {"url": PNG_URL}}
    ]


def test_an_openai_content_list_reads_into_text_and_parts() -> None:
    """A user item as the OpenAI SDK documents it reads as text plus parts (extra keys a
    provider adds are ignored); a list that starts with an image has text ""."""
    wire = [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": PNG_URL, "detail": "auto"}},
                {"type": "text", "text": "Which animal?", "prompt_cache_breakpoint": None},
            ],
        }
    ]
    assert messages_from_wire(wire) == [
        UserMessage("", [ImagePart(PNG_URL, "auto"), TextPart("Which animal?")])
    ]


def tool_answers() -> list[Any]:
    """An assistant asking for two calls, answered with an image and with plain text."""
    return [
        asks(("c1", "chart", {}), ("c2", "count", {})),
        ToolResponseMessage(
            [
                ToolResponse("c1", "chart", "Sales by month", parts=[ImagePart(PNG_URL)]),
                ToolResponse("c2", "count", "42"),
            ]
        ),
    ]


def test_tool_media_is_described_in_the_tool_message_by_default() -> None:
    """The API takes text only in tool messages: by default a tool's parts are described
    there, after its text, one a line; the response keeps the image whole."""
    wire = messages_to_wire(tool_answers())
    assert wire[1:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": f"Sales by month\n[image: image/png, {len(PNG)} bytes]",
        },
        {"role": "tool", "tool_call_id": "c2", "content": "42"},
    ]
    assert tool_answers()[1].responses[0].parts == (ImagePart(PNG_URL),)


def test_tool_media_as_a_user_message_for_vision_models() -> None:
    """With ``tool_media="user_message"`` the image is also sent whole, in one user
    message after all the tool messages, saying which call it came from."""
    wire = messages_to_wire(tool_answers(), tool_media="user_message")
    assert [w["role"] for w in wire] == ["assistant", "tool", "tool", "user"]
    assert wire[1]["content"] == f"Sales by month\n[image: image/png, {len(PNG)} bytes]"
    assert wire[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The result of tool call c1 (chart):"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
        ],
    }


def test_tool_media_as_parts_reads_back_exactly() -> None:
    """With ``tool_media="parts"`` the tool message's content is a part list, which
    ``messages_from_wire`` reads back into the same responses."""
    wire = messages_to_wire(tool_answers(), tool_media="parts")
    assert wire[1]["content"] == [
        {"type": "text", "text": "Sales by month"},
        {"type": "image_url", "image_url": {"url": PNG_URL}},
    ]
    assert messages_from_wire(wire) == tool_answers()


def test_an_unknown_tool_media_is_refused() -> None:
    """An unknown tool_media is a ValueError, from messages_to_wire and at construction
    of OpenAIChatModel."""
    with pytest.raises(ValueError, match="tool_media must be one of describe, user_message, parts"):
        messages_to_wire([], tool_media="inline")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool_media"):
        OpenAIChatModel("m", api_key="k", tool_media="inline")  # type: ignore[arg-type]


# --- what a tool returns ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(PNG, ("", (ImagePart(PNG_URL),)), id="png-bytes"),
        pytest.param(bytearray(PNG), ("", (ImagePart(PNG_URL),)), id="bytearray"),
        pytest.param(
            ImagePart("https://x/y.png"), ("", (ImagePart("https://x/y.png"),)), id="part"
        ),
        pytest.param(TextPart("plain"), ("plain", ()), id="text-part"),
        pytest.param(
            ["Chart:", PNG, "done"],
            ("Chart:", (ImagePart(PNG_URL), TextPart("done"))),
            id="list-of-text-and-bytes",
        ),
        pytest.param(
            (ImagePart(PNG_URL), FilePart(file_id="f")),
            ("", (ImagePart(PNG_URL), FilePart(file_id="f"))),
            id="tuple-of-parts",
        ),
        pytest.param(["a", "b"], ('["a", "b"]', ()), id="list-of-strings-is-json"),
        pytest.param({"n": 1}, ('{"n": 1}', ()), id="dict-is-json"),
    ],
)
def test_what_a_tool_returns_becomes_text_and_parts(value: Any, expected: Any) -> None:
    """bytes become an image (or file) part, parts stay parts, a list holding parts or
    bytes is content in order with a leading string as the text; the rest is JSON."""
    assert tool_output(value) == expected


# --- checkpoints ------------------------------------------------------------------------


def test_parts_and_roles_in_the_checkpoint_json() -> None:
    """Parts are stored tagged by type with their fields, the developer role as "role";
    a message without them is written exactly as schema version 1 wrote it."""
    history = [
        SystemMessage("rules", role="developer"),
        SystemMessage("plain"),
        UserMessage("look", [ImagePart(PNG_URL, "low"), AudioPart(WAV_BASE64, "mp3")]),
        UserMessage("hi"),
        ToolResponseMessage([ToolResponse("c", "f", "", parts=[FilePart(file_id="x")])]),
    ]
    original = Checkpoint("t", OverAllState({"messages": history}), "end", 0, "r")
    stored = json.loads(dump_checkpoint(original))["state"]["values"]["messages"]["value"]
    assert stored[:4] == [
        {"type": "system", "text": "rules", "role": "developer"},
        {"type": "system", "text": "plain"},
        {
            "type": "user",
            "text": "look",
            "parts": [
                {"type": "image", "url": PNG_URL, "detail": "low"},
                {"type": "audio", "data_base64": WAV_BASE64, "format": "mp3"},
            ],
        },
        {"type": "user", "text": "hi"},
    ]
    assert stored[4]["responses"][0]["parts"] == [
        {"type": "file", "file_data": None, "file_id": "x", "filename": None}
    ]
    assert load_checkpoint(dump_checkpoint(original)) == original


def test_a_part_subclass_is_refused_where_it_is_made() -> None:
    """A subclass of a part would not come back as itself: a message refuses it."""

    @attrs.frozen
    class Thumbnail(ImagePart):
        pass

    with pytest.raises(TypeError) as info:
        UserMessage("x", [Thumbnail(PNG_URL)])
    assert str(info.value).startswith("UserMessage.parts[0] must be one of TextPart, ImagePart")


# --- end to end over HTTP -------------------------------------------------------------------


@tool
def render_chart(title: str) -> bytes:
    """Render a chart as a PNG image."""
    return PNG


def model_on(server: OpenAICompatibleServer, **kwargs: Any) -> OpenAIChatModel:
    """A model client talking to the local server."""
    return OpenAIChatModel("test-model", base_url=server.base_url, api_key="sk-test", **kwargs)


QUESTION = [
    SystemMessage("Answer in one word.", role="developer"),
    UserMessage("Which animal?", [ImagePart(PNG_URL, "low"), TextPart("Then chart it.")]),
]


def chart_script() -> list[Any]:
    """The model asks for a chart, then answers "Cat."."""
    return [SSEReply.of(asks(("call_1", "render_chart", {"title": "cats"}))), SSEReply.of("Cat.")]


@pytest.mark.anyio
async def test_parts_developer_role_and_tool_image_over_http() -> None:
    """Over HTTP the server gets the developer message as "developer", the user parts in
    order, and the tool's PNG described in the tool message; the run's messages keep the
    image whole, and the events are the usual ones."""
    with serve_openai_compatible(chart_script()) as server:
        async with model_on(server) as model:
            agent = ReactAgent("a", model, tools=[render_chart])
            async with agent.stream(QUESTION) as stream:
                events = [event async for event in stream]
    first, second = server.requests
    assert first["messages"] == [
        {"role": "developer", "content": "Answer in one word."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Which animal?"},
                {"type": "image_url", "image_url": {"url": PNG_URL, "detail": "low"}},
                {"type": "text", "text": "Then chart it."},
            ],
        },
    ]
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": f"[image: image/png, {len(PNG)} bytes]",
    }
    assert len(second["messages"]) == 4
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [(e.call_id, e.name, e.is_error) for e in finished] == [
        ("call_1", "render_chart", False)
    ]
    assert "".join(e.text for e in events if isinstance(e, ModelDelta)) == "Cat."
    kinds = {type(e) for e in events}
    assert {ModelCallStarted, ModelCallFinished, ToolCallStarted, StateUpdated} <= kinds
    result = events[-1]
    assert isinstance(result, RunFinished)
    assert result.result.text == "Cat."
    answer = result.result.messages[3]
    assert isinstance(answer, ToolResponseMessage)
    assert answer.responses == (
        ToolResponse("call_1", "render_chart", "", parts=[ImagePart(PNG_URL)]),
    )


@pytest.mark.anyio
async def test_tool_image_as_a_user_message_over_http() -> None:
    """With ``OpenAIChatModel(tool_media="user_message")`` the server also gets the
    tool's image whole in a user message right after the tool message."""
    with serve_openai_compatible(chart_script()) as server:
        async with model_on(server, tool_media="user_message") as model:
            await ReactAgent("a", model, tools=[render_chart]).invoke(QUESTION)
    tool_item, media = server.requests[1]["messages"][3:]
    assert tool_item["content"] == f"[image: image/png, {len(PNG)} bytes]"
    assert media == {
        "role": "user",
        "content": [
            {"type": "text", "text": "The result of tool call call_1 (render_chart):"},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
        ],
    }


@pytest.mark.anyio
async def test_a_thread_with_parts_goes_on_after_a_sqlite_reopen(tmp_path: Path) -> None:
    """A thread whose history holds user parts, the developer role and a tool's image is
    checkpointed to SQLite; a new saver on the same file loads it whole, and the next
    turn sends the whole history again, parts and all."""
    config = RunnableConfig(thread_id="pets")
    path = tmp_path / "threads.db"
    with serve_openai_compatible([*chart_script(), SSEReply.of("Dog.")]) as server:
        async with model_on(server) as model:
            async with SqliteSaver(path) as saver:
                agent = ReactAgent("a", model, tools=[render_chart], saver=saver)
                first = await agent.invoke(QUESTION, config)
            async with SqliteSaver(path) as reopened:
                latest = await reopened.get("pets")
                assert latest is not None
                assert latest.state["messages"] == first.messages
                agent = ReactAgent("a", model, tools=[render_chart], saver=reopened)
                second = await agent.invoke("And this one?", config)
    assert second.text == "Dog."
    assert second.messages[:5] == first.messages
    assert second.messages[3] == ToolResponseMessage(
        [ToolResponse("call_1", "render_chart", "", parts=[ImagePart(PNG_URL)])]
    )
    assert isinstance(second.messages[4], AssistantMessage)
    sent = server.requests[2]["messages"]
    assert sent[:2] == server.requests[0]["messages"]
    assert sent[3]["content"] == f"[image: image/png, {len(PNG)} bytes]"
    assert sent[-1] == {"role": "user", "content": "And this one?"}


def test_the_output_schema_note_keeps_the_user_parts() -> None:
    """With an output type, the schema note is added to the last user message's text and
    its parts stay as they were."""
    from reactcore._llm_node import with_output_schema

    [noted] = with_output_schema([UserMessage("Which?", [ImagePart(PNG_URL)])], '{"type": "x"}')
    assert isinstance(noted, UserMessage)
    assert noted.text.startswith("Which?\n\nAnswer with JSON only")
    assert noted.parts == (ImagePart(PNG_URL),)
