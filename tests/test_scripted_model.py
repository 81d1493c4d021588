"""ScriptedChatModel: a deterministic model for tests, whole and streamed, on asyncio and trio."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reactcore._exceptions import ModelHTTPError, ModelTruncatedError, ReactcoreError
from reactcore._messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.models.base import (
    ChatModel,
    ChunkAssembler,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    Usage,
)
from reactcore.testing import (
    ScriptedChatModel,
    ScriptExhaustedError,
    character_usage,
    message_chunks,
)

REPLY = AssistantMessage(
    "Adding now.", [ToolCall("c1", "add", '{"a": 1, "b": 2}'), ToolCall("c2", "now")]
)


def request(text: str) -> ModelRequest:
    return ModelRequest([UserMessage(text)])


async def stream_all(model: ScriptedChatModel, req: ModelRequest) -> list[ModelChunk]:
    async with model.stream(req) as chunks:
        return [chunk async for chunk in chunks]


def assemble(chunks: list[ModelChunk]) -> ModelResponse:
    assembler = ChunkAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.result()


@pytest.mark.anyio
async def test_replies_in_order_and_records_requests() -> None:
    """Each call gets the next reply; ``requests`` holds the requests, in order."""
    model = ScriptedChatModel([REPLY, "done"])
    first = await model.call(request("one"))
    second = await model.call(request("two"))
    assert (first.message, second.message) == (REPLY, AssistantMessage("done"))
    assert model.requests == [request("one"), request("two")]
    assert first.usage is None


@pytest.mark.anyio
async def test_callables_make_replies_from_the_request() -> None:
    """Sync and async callables are given the request and their message is the reply."""

    def echo(req: ModelRequest) -> AssistantMessage:
        return AssistantMessage(f"echo: {req.messages[-1]}")

    async def later(req: ModelRequest) -> AssistantMessage:
        await anyio.lowlevel.checkpoint()
        return AssistantMessage(f"{len(req.messages)} messages")

    model = ScriptedChatModel([echo, later])
    assert (await model.call(request("a"))).message.text == f"echo: {UserMessage('a')}"
    assert (await model.call(request("b"))).message.text == "1 messages"


@pytest.mark.anyio
async def test_exception_items_are_raised() -> None:
    """An exception in the script is raised for that request; the script goes on."""
    error = ModelHTTPError("busy", status_code=503)
    model = ScriptedChatModel([error, "ok"])
    with pytest.raises(ModelHTTPError) as caught:
        await model.call(request("a"))
    assert caught.value is error
    assert (await model.call(request("b"))).message.text == "ok"


@pytest.mark.anyio
async def test_exhausted_script_says_how_many_replies_it_had() -> None:
    """A request past the last reply raises ScriptExhaustedError (a ReactcoreError and a
    RuntimeError) naming the count, whole or streamed; the request is still recorded."""
    model = ScriptedChatModel(["only"])
    await model.call(request("a"))
    with pytest.raises(ScriptExhaustedError, match="has 1 replies and got request #2"):
        await model.call(request("b"))
    with pytest.raises(ScriptExhaustedError, match="#3"):
        await stream_all(model, request("c"))
    assert len(model.requests) == 3
    assert issubclass(ScriptExhaustedError, ReactcoreError)
    assert issubclass(ScriptExhaustedError, RuntimeError)


@pytest.mark.anyio
async def test_stream_splits_text_and_tool_calls_into_small_chunks() -> None:
    """Streaming sends text in pieces of at most ``chunk_size`` characters and each call's
    arguments over several deltas; assembled, the chunks are the scripted reply."""
    model = ScriptedChatModel([REPLY], chunk_size=3)
    chunks = await stream_all(model, request("a"))
    assert [c.text for c in chunks if c.text] == ["Add", "ing", " no", "w."]
    deltas = [d for c in chunks for d in c.tool_calls if d.index == 0]
    assert [(d.id, d.name, d.arguments) for d in deltas[:2]] == [
        ("c1", "add", ""),
        (None, None, '{"a'),
    ]
    assert len(deltas) == 1 + len('{"a": 1, "b": 2}') // 3 + 1
    assert chunks[-1].finish_reason == "tool_calls"
    assert assemble(chunks) == ModelResponse(REPLY)
    assert model.requests == [request("a")]


@pytest.mark.anyio
async def test_usage_fixed_or_counted_in_characters() -> None:
    """``usage`` is a fixed Usage per reply, or computed by ``character_usage``; streamed,
    it comes alone in the last chunk."""
    fixed = ScriptedChatModel(["hi", "hi"], usage=Usage(1, 2, 3))
    assert (await fixed.call(request("a"))).usage == Usage(1, 2, 3)
    chunks = await stream_all(fixed, request("a"))
    assert chunks[-1] == ModelChunk(usage=Usage(1, 2, 3))
    assert all(c.usage is None for c in chunks[:-1])

    counted = ScriptedChatModel([REPLY], usage=character_usage)
    conversation = ModelRequest(
        [
            UserMessage("add"),
            AssistantMessage("", [ToolCall("c0", "add", "{}")]),
            ToolResponseMessage([ToolResponse("c0", "add", "3")]),
        ],
        system_message=SystemMessage("be nice"),
    )
    prompt = len("be nice") + len("add") + len("add{}") + len("3")
    completion = len("Adding now.") + len('add{"a": 1, "b": 2}') + len("now{}")
    response = await counted.call(conversation)
    assert response.usage == Usage(prompt, completion, prompt + completion)


@pytest.mark.anyio
async def test_stream_can_be_cancelled_between_chunks() -> None:
    """Every chunk is a checkpoint: cancelling the scope stops the stream at once."""
    model = ScriptedChatModel(["a long reply, in many chunks"], chunk_size=2)
    received: list[ModelChunk] = []
    with anyio.CancelScope() as scope:
        async with model.stream(request("a")) as chunks:
            async for chunk in chunks:
                received.append(chunk)
                scope.cancel()
    assert scope.cancelled_caught
    assert received == [ModelChunk(text="a ")]


def test_is_a_chat_model() -> None:
    """ScriptedChatModel satisfies the ChatModel protocol; chunk_size must be positive."""
    assert isinstance(ScriptedChatModel([]), ChatModel)
    with pytest.raises(ValueError, match="chunk_size"):
        ScriptedChatModel([], chunk_size=0)


_text = st.text(max_size=40)
_calls = st.lists(
    st.builds(ToolCall, st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8), _text),
    max_size=4,
)


@given(text=_text, calls=_calls, size=st.integers(1, 10))
def test_message_chunks_assemble_back_to_the_message(
    text: str, calls: list[ToolCall], size: int
) -> None:
    """For any message and chunk size, ``message_chunks`` assembles back to the message
    (empty arguments come back as ``{}``, as from any stream)."""
    message = AssistantMessage(text, calls)
    expected = AssistantMessage(text, [ToolCall(c.id, c.name, c.arguments or "{}") for c in calls])
    chunks = message_chunks(message, chunk_size=size)
    assert all(len(c.text) <= size for c in chunks)
    assert assemble(chunks) == ModelResponse(expected)


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["call", "stream"])
async def test_tool_calls_cut_by_length_raise_in_both_modes(how: str) -> None:
    """A scripted answer with tool calls and ``finish_reason="length"`` raises
    ``ModelTruncatedError`` whole or streamed (assembled), as a provider's would; cut text
    alone comes back with its finish reason."""
    cut_calls = AssistantMessage("", [ToolCall("c1", "save", '{"te')], finish_reason="length")
    cut_text = AssistantMessage("once upon a ti", finish_reason="length")
    model = ScriptedChatModel([cut_calls, cut_text])
    request = ModelRequest([UserMessage("go")])

    async def answer() -> ModelResponse:
        if how == "call":
            return await model.call(request)
        assembler = ChunkAssembler()
        async with model.stream(request) as chunks:
            async for chunk in chunks:
                assembler.add(chunk)
        return assembler.result()

    with pytest.raises(ModelTruncatedError) as caught:
        await answer()
    assert caught.value.message.tool_calls == cut_calls.tool_calls
    text = (await answer()).message
    assert (text.text, text.finish_reason) == ("once upon a ti", "length")
