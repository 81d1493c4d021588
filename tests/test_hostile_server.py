"""OpenAIChatModel against servers that answer oddly or with hostile content, over real HTTP
(the local server of ``reactcore.testing``), on asyncio and trio."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from reactcore._messages import AssistantMessage, ToolCall, UserMessage
from reactcore._models.base import (
    ChunkAssembler,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ToolCallDelta,
)
from reactcore._models.openai import OpenAIChatModel
from reactcore.testing import (
    OpenAICompatibleServer,
    Script,
    SSEReply,
    serve_openai_compatible,
)

KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"
REQUEST = ModelRequest([UserMessage("hi")])

ServerFor = Callable[[Script], OpenAICompatibleServer]


@pytest.fixture
def server_for() -> Iterator[ServerFor]:
    """``server_for(script)`` starts a server that stops when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda script: stack.enter_context(serve_openai_compatible(script))


def model_for(server: OpenAICompatibleServer, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("retry_backoff", 0.01)
    kwargs.setdefault("api_key", KEY)
    return OpenAIChatModel("test-model", base_url=server.base_url, **kwargs)


async def streamed(server: OpenAICompatibleServer, **kwargs: Any) -> ModelResponse:
    """The streamed answer of the server's next reply, assembled."""
    assembler = ChunkAssembler()
    async with model_for(server, **kwargs) as model, model.stream(REQUEST) as chunks:
        async for chunk in chunks:
            assembler.add(chunk)
    return assembler.result()


def calls(*deltas: ToolCallDelta) -> list[ModelChunk]:
    """One chunk per delta, then the finish reason."""
    return [*(ModelChunk(tool_calls=[d]) for d in deltas), ModelChunk(finish_reason="tool_calls")]


# --- tool-call fragments ----------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "pieces", [["wea", "ther"], ["w", "eat", "her"]], ids=["two-parts", "three-parts"]
)
async def test_a_tool_name_sent_in_fragments_is_joined(
    server_for: ServerFor, pieces: list[str]
) -> None:
    """A server that splits ``function.name`` across chunks (as it splits ``arguments``)
    gives the call to ``weather``, not to its last fragment ``ther``."""
    first = ToolCallDelta(0, id="call_1", name=pieces[0])
    rest = [ToolCallDelta(0, name=p) for p in pieces[1:]]
    server = server_for([SSEReply(calls(first, *rest, ToolCallDelta(0, arguments="{}")))])
    response = await streamed(server)
    assert response.message.tool_calls == (ToolCall("call_1", "weather", "{}"),)


@pytest.mark.anyio
@pytest.mark.parametrize("repeat_id", [False, True], ids=["id-once", "id-in-every-chunk"])
async def test_an_id_sent_once_or_in_every_chunk_is_kept_once(
    server_for: ServerFor, repeat_id: bool
) -> None:
    """An id sent in the first fragment only, or repeated in every fragment of the call,
    comes out once (``call_1``, never ``call_1call_1``)."""
    again = "call_1" if repeat_id else None
    server = server_for(
        [
            SSEReply(
                calls(
                    ToolCallDelta(0, id="call_1", name="wea"),
                    ToolCallDelta(0, id=again, name="ther"),
                    ToolCallDelta(0, id=again, arguments='{"city": '),
                    ToolCallDelta(0, id=again, arguments='"Paris"}'),
                )
            )
        ]
    )
    response = await streamed(server)
    assert response.message.tool_calls == (ToolCall("call_1", "weather", '{"city": "Paris"}'),)


@pytest.mark.anyio
async def test_two_calls_interleaved_by_index_are_joined_apart(server_for: ServerFor) -> None:
    """Fragments of two calls interleaved (names and arguments both split) are joined by
    index into two whole calls, in index order."""
    server = server_for(
        [
            SSEReply(
                calls(
                    ToolCallDelta(1, id="call_b", name="ti"),
                    ToolCallDelta(0, id="call_a", name="wea"),
                    ToolCallDelta(1, name="me", arguments='{"tz": '),
                    ToolCallDelta(0, name="ther", arguments='{"city": '),
                    ToolCallDelta(0, arguments='"Paris"}'),
                    ToolCallDelta(1, arguments='"UTC"}'),
                )
            )
        ]
    )
    response = await streamed(server)
    assert response.message == AssistantMessage(
        "",
        [
            ToolCall("call_a", "weather", '{"city": "Paris"}'),
            ToolCall("call_b", "time", '{"tz": "UTC"}'),
        ],
    )


# --- connections ------------------------------------------------------------------------


def open_connections(client: httpx.AsyncClient) -> list[Any]:
    """The connections of the client's pool that are still open (httpx internals)."""
    pool = client._transport._pool  # type: ignore[attr-defined]
    return [c for c in pool.connections if not c.is_closed()]


@pytest.mark.anyio
@pytest.mark.filterwarnings("error::ResourceWarning")
async def test_a_server_keeping_the_stream_open_after_done_costs_nothing(
    server_for: ServerFor,
) -> None:
    """A server that sends ``[DONE]`` and keeps the body open: the stream ends promptly
    at ``[DONE]`` (not after a second of reading on), the answer is whole, and the
    connection is released (the pool holds none open; the server sees the client go)."""
    reply = SSEReply([ModelChunk(text="hel"), ModelChunk(text="lo")], ending="done_then_hang")
    server = server_for([reply])
    async with httpx.AsyncClient() as client:
        start = time.monotonic()
        response = await streamed(server, http_client=client)
        elapsed = time.monotonic() - start
        assert open_connections(client) == []
    assert response.message.text == "hello"
    assert elapsed < 0.8
    assert await anyio.to_thread.run_sync(reply.client_left.wait, 5)
