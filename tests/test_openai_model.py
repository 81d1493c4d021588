"""OpenAIChatModel against a real local HTTP server (reactcore.testing), on asyncio and trio."""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

import anyio
import httpx
import pytest
import structlog

from reactcore._exceptions import (
    ModelError,
    ModelHTTPError,
    ModelStreamError,
    ModelTimeoutError,
    ReactcoreError,
)
from reactcore._messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponse,
    ToolResponseMessage,
    UserMessage,
)
from reactcore.models._http import retry_after
from reactcore.models.base import (
    ChatModel,
    ChatOptions,
    ChunkAssembler,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ToolCallDelta,
    ToolSpec,
    Usage,
)
from reactcore.models.openai import OpenAIChatModel
from reactcore.testing import (
    HangReply,
    HTTPReply,
    OpenAICompatibleServer,
    Script,
    SSEReply,
    completion_json,
    serve_openai_compatible,
)

KEY = "sk-test-7f3a9c1e5b2d4f6a8c0e"
REQUEST = ModelRequest([UserMessage("hi")])
TOOL_REPLY = AssistantMessage(
    "Let me look.",
    [ToolCall("call_1", "add", '{"a": 1, "b": 2}'), ToolCall("call_2", "now", "{}")],
)


ServerFor = Callable[[Script], OpenAICompatibleServer]


@pytest.fixture
def server_for() -> Iterator[ServerFor]:
    """``server_for(script)`` starts a server that stops when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda script: stack.enter_context(serve_openai_compatible(script))


def model_for(server: OpenAICompatibleServer, **kwargs: Any) -> OpenAIChatModel:
    kwargs.setdefault("retry_backoff", 0.01)
    return OpenAIChatModel("test-model", base_url=server.base_url, api_key=KEY, **kwargs)


async def stream_all(
    model: OpenAIChatModel, request: ModelRequest, into: list[ModelChunk] | None = None
) -> list[ModelChunk]:
    """Every chunk of a streamed answer, gathered in ``into`` as they come."""
    received = [] if into is None else into
    async with model.stream(request) as chunks:
        async for chunk in chunks:
            received.append(chunk)
    return received


def assemble(chunks: list[ModelChunk]) -> ModelResponse:
    assembler = ChunkAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.result()


# --- the wire format ------------------------------------------------------------------


@pytest.mark.anyio
async def test_call_parses_text_tool_calls_and_usage(server_for: ServerFor) -> None:
    """A non-streaming answer becomes an AssistantMessage with its tool calls and usage."""
    server = server_for([HTTPReply.completion(TOOL_REPLY, usage=Usage(11, 7, 18))])
    async with model_for(server) as model:
        response = await model.call(REQUEST)
    assert response.message == TOOL_REPLY
    assert response.usage == Usage(11, 7, 18)
    assert response.raw["object"] == "chat.completion"


@pytest.mark.anyio
async def test_call_sends_the_conversation_tools_and_options(server_for: ServerFor) -> None:
    """The JSON sent: system first, echoed tool calls, tool results by id, visible tool
    schemas only, set options only, extra_body merged, the key as a Bearer token."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    request = ModelRequest(
        [
            UserMessage("add 1"),
            AssistantMessage("", [ToolCall("call_1", "add", '{"a": 1}')]),
            ToolResponseMessage([ToolResponse("call_1", "add", "2")]),
        ],
        system_message=SystemMessage("be brief"),
        tools=("add",),
        tool_specs=(ToolSpec("add", "Adds.", schema), ToolSpec("hidden", "No.", {})),
        options=ChatOptions(
            model="other-model",
            temperature=0.0,
            max_tokens=50,
            tool_choice="auto",
            response_format={"type": "json_object"},
            extra_body={"seed": 7},
        ),
    )
    server = server_for([HTTPReply.completion("3")])
    async with model_for(server) as model:
        await model.call(request)
    assert server.requests == [
        {
            "model": "other-model",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "add 1"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 1}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "2"},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "add", "description": "Adds.", "parameters": schema},
                }
            ],
            "temperature": 0.0,
            "max_tokens": 50,
            "tool_choice": "auto",
            "response_format": {"type": "json_object"},
            "seed": 7,
        }
    ]
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("base_url", "field", "sent"),
    [
        ("https://api.openai.com/v1", None, "max_completion_tokens"),
        ("http://localhost:11434/v1", None, "max_tokens"),
        ("https://api.openai.com/v1", "max_tokens", "max_tokens"),
        ("http://vllm.internal:8000/v1", "max_completion_tokens", "max_completion_tokens"),
    ],
    ids=["openai", "compatible", "openai-forced-old", "compatible-forced-new"],
)
async def test_max_tokens_goes_in_the_field_the_server_knows(
    base_url: str, field: Literal["max_completion_tokens", "max_tokens"] | None, sent: str
) -> None:
    """``ChatOptions.max_tokens`` goes to the OpenAI API as ``max_completion_tokens`` (its
    o-series and GPT-5 refuse ``max_tokens``), to other servers as ``max_tokens`` (what
    every compatible server knows), or in the field ``max_tokens_field`` names; never in
    both. (The requests go to an in-process transport: nothing leaves the machine.)"""
    bodies: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json=completion_json("ok"))

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        model = OpenAIChatModel(
            "o3", base_url=base_url, api_key=KEY, http_client=client, max_tokens_field=field
        )
        await model.call(ModelRequest([UserMessage("hi")], options=ChatOptions(max_tokens=50)))
    assert bodies[0][sent] == 50
    assert {"max_tokens", "max_completion_tokens"} & bodies[0].keys() == {sent}
    with pytest.raises(ValueError, match="max_tokens_field"):
        OpenAIChatModel("o3", max_tokens_field="max_output_tokens")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_a_user_message_between_calls_and_their_results_goes_after_them(
    server_for: ServerFor,
) -> None:
    """A user message sent between an assistant's calls and their results (steering, a
    hook) goes after the ``tool`` messages, which must follow the calls; with a result
    missing (a hand-built history), it still goes, in order, before the next answer."""
    calls = AssistantMessage("", [ToolCall("c1", "add", "{}"), ToolCall("c2", "now", "{}")])
    results = ToolResponseMessage([ToolResponse("c1", "add", "2"), ToolResponse("c2", "now", "9")])
    answered = [UserMessage("go"), calls, UserMessage("hey"), results, UserMessage("thanks")]
    unanswered = [UserMessage("go"), calls, UserMessage("hey"), AssistantMessage("ok")]
    server = server_for([HTTPReply.completion("a"), HTTPReply.completion("b")])
    async with model_for(server) as model:
        await model.call(ModelRequest(answered))
        await model.call(ModelRequest(unanswered))
    sent = [
        [(m["role"], m.get("tool_call_id") or m.get("content")) for m in body["messages"]]
        for body in server.requests
    ]
    assert sent[0] == [
        ("user", "go"),
        ("assistant", None),
        ("tool", "c1"),
        ("tool", "c2"),
        ("user", "hey"),
        ("user", "thanks"),
    ]
    assert sent[1] == [("user", "go"), ("assistant", None), ("user", "hey"), ("assistant", "ok")]


@pytest.mark.anyio
async def test_call_leaves_out_unset_options_and_empty_tools(server_for: ServerFor) -> None:
    """Without tools or options, the body has only the client's model and the messages."""
    server = server_for([HTTPReply.completion("hello")])
    async with model_for(server) as model:
        await model.call(REQUEST)
    assert server.requests == [
        {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
    ]


@pytest.mark.anyio
async def test_parallel_tool_calls_is_sent_only_with_tools(server_for: ServerFor) -> None:
    """``ChatOptions(parallel_tool_calls=False)`` is sent as ``parallel_tool_calls: false``
    beside the tools, and left out of a request without tools (providers reject it)."""
    server = server_for([HTTPReply.completion("a"), HTTPReply.completion("b")])
    spec = ToolSpec("now", "The time.", {"type": "object", "properties": {}})
    options = ChatOptions(parallel_tool_calls=False)
    with_tools = ModelRequest(
        [UserMessage("hi")], tools=["now"], tool_specs=[spec], options=options
    )
    async with model_for(server) as model:
        await model.call(with_tools)
        await model.call(ModelRequest([UserMessage("hi")], options=options))
    assert server.requests[0]["parallel_tool_calls"] is False
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["now"]
    assert "parallel_tool_calls" not in server.requests[1]


PARALLEL_CALLS = [
    ModelChunk(text="Let me "),
    ModelChunk(text="check."),
    ModelChunk(tool_calls=[ToolCallDelta(0, id="call_a")]),
    ModelChunk(
        tool_calls=[
            ToolCallDelta(0, name="weather"),
            ToolCallDelta(1, id="call_b", name="time"),
        ]
    ),
    ModelChunk(tool_calls=[ToolCallDelta(1, arguments='{"tz": ')]),
    ModelChunk(tool_calls=[ToolCallDelta(0, arguments='{"city": "Pa')]),
    ModelChunk(
        tool_calls=[ToolCallDelta(0, arguments='ris"}'), ToolCallDelta(1, arguments='"UTC"}')]
    ),
    ModelChunk(tool_calls=[ToolCallDelta(2, id="call_c", name="noop")]),
    ModelChunk(finish_reason="tool_calls"),
    ModelChunk(usage=Usage(12, 30, 42)),
]


@pytest.mark.anyio
async def test_stream_assembles_split_parallel_tool_calls(server_for: ServerFor) -> None:
    """Ids, names and argument pieces of several calls, interleaved across chunks, come
    out as deltas that assemble into complete calls; usage comes in the last chunk only."""
    server = server_for([SSEReply(PARALLEL_CALLS)])
    async with model_for(server) as model:
        chunks = await stream_all(model, REQUEST)
    assert chunks == PARALLEL_CALLS
    assert [c.usage for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert assemble(chunks) == ModelResponse(
        AssistantMessage(
            "Let me check.",
            [
                ToolCall("call_a", "weather", '{"city": "Paris"}'),
                ToolCall("call_b", "time", '{"tz": "UTC"}'),
                ToolCall("call_c", "noop", "{}"),
            ],
        ),
        Usage(12, 30, 42),
    )
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert server.request_headers[0]["accept"] == "text/event-stream"


def _openai_chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-9x",
        "object": "chat.completion.chunk",
        "created": 1718000000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_abc",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        "usage": None,
    }


VERBATIM = [
    _openai_chunk({"role": "assistant", "content": None, "refusal": None}),
    _openai_chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_Q1",
                    "type": "function",
                    "function": {"name": "add", "arguments": ""},
                }
            ]
        }
    ),
    _openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
    _openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
    _openai_chunk({}, finish_reason="tool_calls"),
    {
        "id": "chatcmpl-9x",
        "object": "chat.completion.chunk",
        "created": 1718000000,
        "model": "gpt-4o-2024-08-06",
        "choices": [],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    },
]


@pytest.mark.anyio
async def test_stream_reads_openai_chunks_as_sent(server_for: ServerFor) -> None:
    """Chunks exactly as OpenAI sends them (extra fields, role-only and empty deltas,
    usage with details and no choices) parse into one call and its usage."""
    server = server_for([SSEReply(VERBATIM)])
    async with model_for(server) as model:
        chunks = await stream_all(model, REQUEST)
    assert assemble(chunks) == ModelResponse(
        AssistantMessage("", [ToolCall("call_Q1", "add", '{"a": 1}')]), Usage(10, 5, 15)
    )
    assert chunks[-2].finish_reason == "tool_calls"


@pytest.mark.anyio
async def test_stream_reads_sse_framing(server_for: ServerFor) -> None:
    """SSE framing: comments and other fields are skipped, ``data:`` without a space and
    multi-line data are read, and a final ``[DONE]`` without its blank line ends it."""
    first = json.dumps(_openai_chunk({"content": "Hel"}), indent=1).replace("\n", "\ndata: ")
    body = (
        ": keep-alive\n\n"
        f"data: {first}\n\n"
        "event: message\n"
        f"data:{json.dumps(_openai_chunk({'content': 'lo'}))}\n"
        "id: 2\n\n"
        "data: [DONE]"
    )
    server = server_for([HTTPReply(200, body, content_type="text/event-stream")])
    async with model_for(server) as model:
        chunks = await stream_all(model, REQUEST)
    assert [c.text for c in chunks] == ["Hel", "lo"]


@pytest.mark.anyio
async def test_stream_of_a_scripted_message_round_trips(server_for: ServerFor) -> None:
    """``SSEReply.of`` splits a message in small pieces; the client assembles it back."""
    server = server_for([SSEReply.of(TOOL_REPLY, usage=Usage(1, 2, 3), chunk_size=3)])
    async with model_for(server) as model:
        chunks = await stream_all(model, REQUEST)
    assert len(chunks) > 10
    assert assemble(chunks) == ModelResponse(TOOL_REPLY, Usage(1, 2, 3))


# --- retries --------------------------------------------------------------------------


@pytest.mark.anyio
async def test_429_waits_at_least_retry_after_then_succeeds(server_for: ServerFor) -> None:
    """After a 429 with ``Retry-After: 0.2`` the client waits at least 0.2 s, logs
    ``model_request_retry`` with status and delay, and the retry succeeds."""
    server = server_for(
        [
            HTTPReply.error(429, "slow down", headers={"retry-after": "0.2"}),
            HTTPReply.completion("ok"),
        ]
    )
    async with model_for(server) as model:
        with structlog.testing.capture_logs() as logs:
            start = time.monotonic()
            response = await model.call(REQUEST)
            elapsed = time.monotonic() - start
    assert response.message.text == "ok"
    assert len(server.requests) == 2
    assert 0.2 <= elapsed < 10
    [retry] = [e for e in logs if e["event"] == "model_request_retry"]
    assert retry["log_level"] == "warning"
    assert retry["status"] == 429
    assert retry["delay"] >= 0.2


@pytest.mark.anyio
async def test_retry_after_ms_is_honoured(server_for: ServerFor) -> None:
    """``retry-after-ms`` (which takes precedence over ``Retry-After``) is waited out."""
    server = server_for(
        [
            HTTPReply.error(503, "busy", headers={"retry-after-ms": "250", "retry-after": "0"}),
            HTTPReply.completion("ok"),
        ]
    )
    async with model_for(server) as model:
        start = time.monotonic()
        await model.call(REQUEST)
        elapsed = time.monotonic() - start
    assert 0.25 <= elapsed < 10


def test_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    """``retry_after``: seconds, ``retry-after-ms`` first, HTTP dates, junk ignored."""
    in_3s = email.utils.formatdate(time.time() + 3, usegmt=True)
    assert retry_after(httpx.Headers({"retry-after": "2"})) == 2.0
    assert retry_after(httpx.Headers({"retry-after": "1.5"})) == 1.5
    assert retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert 1.0 < (retry_after(httpx.Headers({"retry-after": in_3s})) or 0) <= 3.0
    assert retry_after(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after(httpx.Headers({"retry-after": "-1"})) is None
    assert retry_after(httpx.Headers({})) is None


@pytest.mark.anyio
async def test_retry_after_over_the_cap_fails_fast(server_for: ServerFor) -> None:
    """A server asking to wait longer than ``retry_after_cap`` fails at once, with its
    message, instead of sleeping."""
    server = server_for(
        [
            HTTPReply.error(429, "quota exceeded", headers={"retry-after": "120"}),
            HTTPReply.completion("never"),
        ]
    )
    async with model_for(server, retry_after_cap=1.0) as model:
        start = time.monotonic()
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(REQUEST)
        elapsed = time.monotonic() - start
    assert elapsed < 10
    assert caught.value.status_code == 429
    assert "quota exceeded" in str(caught.value)
    assert "retry_after_cap" in str(caught.value)
    assert caught.value.retry_after == 120
    assert len(server.requests) == 1


RETRYABLE = (408, 409, 429, 500, 502, 503, 504)
NOT_RETRYABLE = (400, 401, 403, 404, 422)


@pytest.mark.anyio
async def test_retryable_statuses_are_retried(server_for: ServerFor) -> None:
    """408, 409, 429 and 5xx are retried; the next answer is returned."""
    script = [
        r for n in RETRYABLE for r in (HTTPReply.error(n, "again"), HTTPReply.completion(f"{n}"))
    ]
    server = server_for(script)
    async with model_for(server) as model:
        for status in RETRYABLE:
            sent = len(server.requests)
            response = await model.call(REQUEST)
            assert (status, response.message.text) == (status, f"{status}")
            assert (status, len(server.requests) - sent) == (status, 2)


@pytest.mark.anyio
async def test_500s_fail_after_max_retries_with_status_request_id_and_body(
    server_for: ServerFor,
) -> None:
    """After ``max_retries`` retries of a 500 the error carries the status, the last
    ``x-request-id`` and an excerpt of the body."""
    server = server_for(
        [
            HTTPReply.error(500, f"boom {n} " + "x" * 1000, headers={"x-request-id": f"req-{n}"})
            for n in range(3)
        ]
    )
    async with model_for(server, max_retries=2) as model:
        with pytest.raises(ModelHTTPError) as caught:
            await model.call(REQUEST)
    error = caught.value
    assert len(server.requests) == 3
    assert (error.status_code, error.request_id) == (500, "req-2")
    assert "boom 2" in error.body
    assert 400 <= len(error.body) <= 500
    assert "req-2" in str(error)
    assert "boom 2" in str(error)


@pytest.mark.anyio
async def test_other_4xx_are_not_retried(server_for: ServerFor) -> None:
    """A 4xx other than 408/409/429 fails at once: the server saw exactly one request."""
    server = server_for([HTTPReply.error(n, "bad request") for n in NOT_RETRYABLE])
    async with model_for(server) as model:
        for status in NOT_RETRYABLE:
            with pytest.raises(ModelHTTPError) as caught:
                await model.call(REQUEST)
            assert caught.value.status_code == status
    assert len(server.requests) == len(NOT_RETRYABLE)


@pytest.mark.anyio
async def test_stream_is_retried_before_the_answer_starts(server_for: ServerFor) -> None:
    """A stream whose request got a 500 is sent again; the second answer is streamed."""
    server = server_for([HTTPReply.error(500, "hiccup"), SSEReply.of("fine")])
    async with model_for(server) as model:
        chunks = await stream_all(model, REQUEST)
    assert assemble(chunks).message.text == "fine"
    assert len(server.requests) == 2


@pytest.mark.anyio
async def test_connection_refused_is_retried_then_raised() -> None:
    """A refused connection is retried (``model_request_retry`` logs the error type) and
    then raised as a ModelError, not an HTTP error."""
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = OpenAIChatModel(
        "m", base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY, max_retries=1, retry_backoff=0.01
    )
    async with model:
        with structlog.testing.capture_logs() as logs, pytest.raises(ModelError) as caught:
            await model.call(REQUEST)
    assert type(caught.value) is ModelError
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert [e["error"] for e in logs if e["event"] == "model_request_retry"] == ["ConnectError"]


# --- malformed, cut and slow answers --------------------------------------------------


@pytest.mark.anyio
async def test_malformed_json_answer_raises_model_error(server_for: ServerFor) -> None:
    """An answer that is not JSON raises a ModelError (and is not retried)."""
    server = server_for([HTTPReply(200, '{"choices": [', content_type="application/json")])
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="not valid JSON"):
            await model.call(REQUEST)
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_answer_of_the_wrong_shape_names_the_field(server_for: ServerFor) -> None:
    """A JSON answer of the wrong shape raises a ModelError saying where it is wrong."""
    payload = {"choices": [{"message": {"role": "assistant", "content": 5}}]}
    server = server_for([HTTPReply.from_json({"choices": []}), HTTPReply.from_json(payload)])
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="no choices"):
            await model.call(REQUEST)
        with pytest.raises(ModelError, match=r"\$\.choices\[0\]\.message"):
            await model.call(REQUEST)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("event", "match"),
    [
        ('{"choices": [{"index": 0, "delta": {"content": "a"', "not valid JSON"),
        ({"choices": [{"index": 0, "delta": {"content": 5}}]}, "delta.content"),
        ({"error": {"message": "overloaded"}}, "overloaded"),
    ],
)
async def test_malformed_stream_event_raises_stream_error(
    server_for: ServerFor, event: Any, match: str
) -> None:
    """An event that is not JSON, has the wrong shape, or is an error raises
    ModelStreamError after the good chunks before it."""
    server = server_for([SSEReply([ModelChunk(text="ok"), event])])
    received: list[ModelChunk] = []
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match=match):
            await stream_all(model, REQUEST, received)
    assert received == [ModelChunk(text="ok")]


@pytest.mark.anyio
@pytest.mark.parametrize("ending", ["cut", "eof"])
async def test_stream_without_done_raises_stream_error(
    server_for: ServerFor, ending: Literal["cut", "eof"]
) -> None:
    """A stream cut mid-body, or ended cleanly but without ``[DONE]``, raises
    ModelStreamError: the half message is never taken for a whole one."""
    server = server_for([SSEReply(PARALLEL_CALLS[:5], ending=ending)])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError):
            await stream_all(model, REQUEST)


@pytest.mark.anyio
async def test_hanging_answer_times_out_after_retries(server_for: ServerFor) -> None:
    """A server that never answers makes the client time out; the timeout is retried,
    then raised as ModelTimeoutError."""
    replies = [HangReply(), HangReply()]
    server = server_for(replies)
    model = model_for(server, timeout=httpx.Timeout(0.3), max_retries=1)
    async with model:
        start = time.monotonic()
        with pytest.raises(ModelTimeoutError):
            await model.call(REQUEST)
        elapsed = time.monotonic() - start
    assert 0.6 <= elapsed < 10
    assert len(server.requests) == 2
    for reply in replies:  # the client hung up on both
        assert await anyio.to_thread.run_sync(reply.client_left.wait, 5)


@pytest.mark.anyio
async def test_stream_stalling_mid_way_times_out(server_for: ServerFor) -> None:
    """A stream that stops sending after its first chunk raises ModelTimeoutError once
    the read timeout passes (not retried: part of the answer was read)."""
    server = server_for([SSEReply([ModelChunk(text="a")], ending="hang")])
    received: list[ModelChunk] = []
    async with model_for(server, timeout=httpx.Timeout(0.3)) as model:
        with pytest.raises(ModelTimeoutError):
            await stream_all(model, REQUEST, received)
    assert received == [ModelChunk(text="a")]
    assert len(server.requests) == 1


# --- connections ----------------------------------------------------------------------


def open_connections(client: httpx.AsyncClient) -> list[Any]:
    """The connections of the client's pool that are still open (httpx internals)."""
    pool = client._transport._pool  # type: ignore[attr-defined]
    return [c for c in pool.connections if not c.is_closed()]


class Stop(Exception):
    pass


@pytest.mark.anyio
@pytest.mark.filterwarnings("error::ResourceWarning")
@pytest.mark.parametrize("how", ["cancel", "break", "raise"])
async def test_leaving_a_stream_early_closes_its_connection(
    server_for: ServerFor, how: str
) -> None:
    """Leaving a stream mid-way (cancelled, ``break``, or an exception in the block)
    closes the response: no connection stays open in the pool, the server sees the
    client hang up, and no half-run async generator is left behind (trio warns)."""
    reply = SSEReply([ModelChunk(text="a"), ModelChunk(text="b")], ending="hang")
    server = server_for([reply])
    async with httpx.AsyncClient() as client:
        model = model_for(server, http_client=client)
        with anyio.CancelScope() as scope:
            try:
                async with model.stream(REQUEST) as chunks:
                    async for _ in chunks:
                        assert len(open_connections(client)) == 1
                        if how == "cancel":
                            scope.cancel()
                        elif how == "raise":
                            raise Stop
                        else:
                            break
            except Stop:
                pass
        assert scope.cancelled_caught == (how == "cancel")
        assert open_connections(client) == []
        assert await anyio.to_thread.run_sync(reply.client_left.wait, 5)


@pytest.mark.anyio
async def test_a_finished_stream_leaves_its_connection_for_reuse(server_for: ServerFor) -> None:
    """After ``[DONE]`` the rest of the body is read, so the connection goes back to the
    pool idle and the next request reuses it."""
    server = server_for([SSEReply.of("one"), SSEReply.of("two")])
    async with httpx.AsyncClient() as client:
        model = model_for(server, http_client=client)
        await stream_all(model, REQUEST)
        [first] = open_connections(client)
        assert first.is_idle()
        await stream_all(model, REQUEST)
        assert open_connections(client) == [first]


@pytest.mark.anyio
async def test_owned_client_is_closed_given_client_is_not(server_for: ServerFor) -> None:
    """The model closes the HTTP client it made, and leaves a given one open."""
    server = server_for([HTTPReply.completion("a"), HTTPReply.completion("b")])
    async with model_for(server) as owning:
        await owning.call(REQUEST)
    assert owning._client.is_closed
    async with httpx.AsyncClient() as client:
        async with model_for(server, http_client=client) as borrowing:
            await borrowing.call(REQUEST)
        assert not client.is_closed
        assert borrowing._client is client


# --- configuration and secrets --------------------------------------------------------


def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Base URL and key default to OPENAI_BASE_URL / OPENAI_API_KEY, else the OpenAI API;
    the model is a ChatModel."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    plain = OpenAIChatModel("m")
    assert (plain.base_url, plain.api_key) == ("https://api.openai.com/v1", None)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.local/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    configured = OpenAIChatModel("m")
    assert (configured.base_url, configured.api_key) == ("http://proxy.local/v1", KEY)
    assert OpenAIChatModel("m", base_url="http://x/v1", api_key="k").api_key == "k"
    assert isinstance(configured, ChatModel)


@pytest.mark.anyio
async def test_api_key_never_leaks(
    server_for: ServerFor, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The key is sent, yet absent from the repr, the error (message, body, repr), the
    structlog events and the stdlib logs (httpx at DEBUG), even when the server echoes it."""
    server = server_for(
        [
            HTTPReply.error(429, f"slow down, {KEY}", headers={"retry-after": "0"}),
            HTTPReply.error(401, f"Incorrect API key provided: {KEY}."),
        ]
    )
    model = model_for(server)
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs, pytest.raises(ModelHTTPError) as caught:
        async with model:
            await model.call(REQUEST)
    assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"
    error = caught.value
    assert "Incorrect API key provided" in str(error)
    texts = [repr(model), str(error), repr(error), error.body, repr(logs), caplog.text]
    texts.append(capsys.readouterr().out)
    assert [KEY in text for text in texts] == [False] * len(texts)
    assert any(e["event"] == "model_request_retry" for e in logs)


@pytest.mark.anyio
async def test_errors_share_the_model_error_root(server_for: ServerFor) -> None:
    """Every failure is a ReactcoreError; an exhausted test-server script says so."""
    server = server_for([])
    async with model_for(server, max_retries=0) as model:
        with pytest.raises(ReactcoreError, match="script has 0 replies"):
            await model.call(REQUEST)


# --- the official SDK against the test server -----------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_official_openai_sdk_talks_to_the_test_server(server_for: ServerFor) -> None:
    """The official ``openai`` SDK (asyncio only, hence this test runs on asyncio only)
    reads the test server's answers: whole, and streamed with split tool-call deltas
    and usage, accumulated by the SDK's own stream helper."""
    from openai import AsyncOpenAI

    server = server_for(
        [
            HTTPReply.completion(TOOL_REPLY, usage=Usage(5, 6, 11)),
            SSEReply.of(TOOL_REPLY, usage=Usage(5, 6, 11), chunk_size=3),
        ]
    )
    tool: Any = {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            "strict": True,
        },
    }
    client = AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    async with client:
        whole = await client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": "hi"}]
        )
        async with client.chat.completions.stream(
            model="test-model", messages=[{"role": "user", "content": "hi"}], tools=[tool]
        ) as stream:
            streamed = await stream.get_final_completion()
    for completion in (whole, streamed):
        message = completion.choices[0].message
        assert message.content == "Let me look."
        calls = [
            (c.id, c.function.name, c.function.arguments)
            for c in message.tool_calls or []
            if c.type == "function"
        ]
        assert calls == [(c.id, c.name, c.arguments) for c in TOOL_REPLY.tool_calls]
        assert completion.usage is not None
        assert completion.usage.total_tokens == 11
    assert server.requests[1]["stream"] is True


# --- the test server itself -----------------------------------------------------------


@pytest.mark.anyio
async def test_test_server_stops_while_a_request_hangs() -> None:
    """Leaving the server's block while a request hangs ends that reply and stops the
    server promptly, instead of waiting for the client."""
    reply = HangReply()
    failures: list[BaseException] = []

    async def call(model: OpenAIChatModel) -> None:
        try:
            await model.call(REQUEST)
        except ModelError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as tg:
        with serve_openai_compatible([reply]) as server:
            model = model_for(server, max_retries=0)
            tg.start_soon(call, model)
            assert await anyio.to_thread.run_sync(reply.arrived.wait, 5)
            start = time.monotonic()
        assert time.monotonic() - start < 5
    await model.aclose()
    assert len(failures) == 1
    assert not reply.client_left.is_set()
