"""OpenAIChatModel against servers that answer oddly or with hostile content, over real HTTP
(the local server of ``reactcore.testing``), on asyncio and trio."""

from __future__ import annotations

import json
import logging
import socket
import struct
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import attrs
import httpx
import pytest
import structlog

from reactcore import ModelDelta, ReactAgent, RunnableConfig, SqliteSaver, tool
from reactcore._exceptions import ModelError, ModelHTTPError, ModelStreamError
from reactcore._messages import AssistantMessage, ToolCall, UserMessage
from reactcore._results import to_json_text
from reactcore._serde import clean_arguments
from reactcore.models import _http as http_module
from reactcore.models._http import LineSplitter
from reactcore.models.base import (
    ChunkAssembler,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ToolCallDelta,
)
from reactcore.models.openai import OpenAIChatModel
from reactcore.testing import (
    HangReply,
    HTTPReply,
    OpenAICompatibleServer,
    ServerReply,
    SSEReply,
    chunk_json,
    completion_json,
)
from tests.test_openai_model import (
    REQUEST,
    ServerFor,
    assemble,
    model_for,
    open_connections,
    stream_all,
)
from tests.test_openai_model import server_for as server_for  # the fixture, shared


async def stream_into(model: OpenAIChatModel, received: list[ModelChunk]) -> None:
    """Every chunk of a streamed answer to ``REQUEST``, gathered in ``received``."""
    await stream_all(model, REQUEST, received)


async def streamed(server: OpenAICompatibleServer, **kwargs: Any) -> ModelResponse:
    """The streamed answer of the server's next reply, assembled."""
    async with model_for(server, **kwargs) as model:
        return assemble(await stream_all(model, REQUEST))


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
@pytest.mark.parametrize(
    "ids",
    [("call_1", None, None, None), ("call_1", "call_1", "call_1", "call_1")],
    ids=["id-once", "id-in-every-chunk"],
)
async def test_an_id_sent_once_or_in_every_chunk_is_kept_once(
    server_for: ServerFor, ids: tuple[str | None, ...]
) -> None:
    """An id sent in the first fragment only, or repeated in every fragment of the call,
    comes out once (``call_1``, never ``call_1call_1``, where the SDK would double it).
    (Another id at the same index is another call: see the parallel-call tests below.)"""
    pieces = [{"name": "wea"}, {"name": "ther"}, {"arguments": '{"city": '}]
    pieces.append({"arguments": '"Paris"}'})
    deltas = [ToolCallDelta(0, id=i, **p) for i, p in zip(ids, pieces, strict=True)]
    server = server_for([SSEReply(calls(*deltas))])
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


# Parallel calls sent at one index (Ollama through LiteLLM, proxies in front of Gemini) or
# without one, each with its own id; fragments of one call split as servers split them.
PARALLEL = (
    ToolCall("call_a", "search", '{"q": "a"}'),
    ToolCall("call_b", "search", '{"q": "b"}'),
    ToolCall("call_c", "clock", "{}"),
)


PLACED = {("call_a", 0), ("call_b", 1), ("call_c", 2)}  # each call's fragments, re-indexed


def parallel_fragments(index: int | None) -> list[ModelChunk]:
    """``PARALLEL`` streamed with every fragment at ``index``: call_a whole in one
    fragment, call_b in three (its id only in the first), call_c with its id in every
    fragment; without an index, a late piece of call_b names its id."""
    late = ToolCallDelta(index, arguments='"b"}')
    deltas = [
        ToolCallDelta(index, id="call_a", name="search", arguments='{"q": "a"}'),
        ToolCallDelta(index, id="call_b", name="sea"),
        ToolCallDelta(index, name="rch", arguments='{"q": '),
        *([late] if index is not None else []),
        ToolCallDelta(index, id="call_c", name="clock"),
        ToolCallDelta(index, id="call_c", arguments="{}"),
        *([] if index is not None else [attrs.evolve(late, id="call_b")]),
    ]
    return calls(*deltas)


def parallel_completion(index: int | None) -> HTTPReply:
    """``PARALLEL`` as a whole answer whose tool calls carry ``index`` (or none)."""
    payload = completion_json(AssistantMessage("", PARALLEL))
    for wire in payload["choices"][0]["message"]["tool_calls"]:
        if index is not None:
            wire["index"] = index
    return HTTPReply.from_json(payload)


@pytest.mark.anyio
@pytest.mark.parametrize("index", [0, None], ids=["all-at-index-0", "no-index"])
async def test_parallel_calls_at_one_index_or_none_stay_apart(
    server_for: ServerFor, index: int | None
) -> None:
    """Parallel calls streamed all at index 0, or without an index, each with its own id,
    are separate calls with their own arguments (not one call with
    ``{"q": "a"}{"q": "b"}``), exactly as the same calls answered whole; the chunks come
    back from the assembler with one index per call."""
    server = server_for([SSEReply(parallel_fragments(index)), parallel_completion(index)])
    async with model_for(server) as model:
        chunks = await stream_all(model, REQUEST)
        whole = await model.call(REQUEST)
    assembler = ChunkAssembler()
    placed = [d for chunk in chunks for d in assembler.add(chunk).tool_calls]
    streamed_answer = assembler.result()
    assert streamed_answer.message.tool_calls == PARALLEL
    assert whole.message.tool_calls == PARALLEL
    assert {(d.id, d.index) for d in placed if d.id} == PLACED


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_an_agent_runs_each_parallel_call_sent_at_index_0(
    server_for: ServerFor, stream: bool
) -> None:
    """Through a whole agent run: each of the parallel calls a server sent at index 0 runs
    with its own arguments and answers under its own id, streamed or not; the streamed
    ``ModelDelta`` events put each call's fragments at that call's index."""
    ran: list[str] = []

    @tool
    async def search(q: str) -> str:
        """Search."""
        ran.append(q)
        return f"found {q}"

    @tool
    async def clock() -> str:
        """The time."""
        ran.append("clock")
        return "noon"

    first = SSEReply(parallel_fragments(0)) if stream else parallel_completion(0)
    finish = SSEReply.of("done") if stream else HTTPReply.completion("done")
    server = server_for([first, finish])
    async with model_for(server) as model:
        agent = ReactAgent("parallel", model, tools=[search, clock])
        config = RunnableConfig(metadata={"_stream_": stream})
        async with agent.stream("go", config) as events:
            seen = [e async for e in events]
    assert sorted(ran) == ["a", "b", "clock"]
    answers = server.requests[1]["messages"][-3:]
    assert [(m["tool_call_id"], m["content"]) for m in answers] == [
        ("call_a", "found a"),
        ("call_b", "found b"),
        ("call_c", "noon"),
    ]
    deltas = [e.tool_call for e in seen if isinstance(e, ModelDelta) and e.tool_call]
    if stream:
        assert {(d.id, d.index) for d in deltas if d.id} == PLACED


@pytest.mark.anyio
@pytest.mark.parametrize("given", ["", None], ids=["empty", "null"])
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_calls_with_empty_ids_are_rekeyed_streamed_or_whole(
    server_for: ServerFor, stream: bool, given: str | None
) -> None:
    """Two calls whose id is empty (``""``), or null (left out of the stream's
    fragments), are read the same streamed or whole, as the official SDK reads them: the
    answer keeps them with an empty id (no ``ModelStreamError`` for the stream, no
    ``ModelError`` for a null), and the LLM node re-keys both as they enter the state,
    ``call_0`` and ``call_1``, unique within the turn; each runs and is answered under its
    id on the next request."""
    ran: list[str] = []

    @tool
    async def search(q: str) -> str:
        """Search."""
        ran.append(q)
        return f"found {q}"

    asks = [ToolCall("", "search", '{"q": "a"}'), ToolCall("", "search", '{"q": "b"}')]
    fragments = calls(
        ToolCallDelta(0, id=given, name="search", arguments='{"q": "a"}'),
        ToolCallDelta(1, id=given, name="search", arguments='{"q": "b"}'),
    )
    whole = completion_json(AssistantMessage("", asks))
    for wire in whole["choices"][0]["message"]["tool_calls"]:
        wire["id"] = given
    first = SSEReply(fragments) if stream else HTTPReply.from_json(whole)
    finish = SSEReply.of("done") if stream else HTTPReply.completion("done")
    server = server_for([first, first, finish])
    async with model_for(server) as model:
        if stream:
            answer = assemble(await stream_all(model, REQUEST))
        else:
            answer = await model.call(REQUEST)
        assert answer.message.tool_calls == tuple(asks)
        agent = ReactAgent("empty-ids", model, tools=[search])
        result = await agent.invoke("go", RunnableConfig(metadata={"_stream_": stream}))
    assert result.text == "done" and sorted(ran) == ["a", "b"]
    assert [c.id for c in result.messages[1].tool_calls] == ["call_0", "call_1"]
    answers = server.requests[2]["messages"][-2:]
    assert [(m["tool_call_id"], m["content"]) for m in answers] == [
        ("call_0", "found a"),
        ("call_1", "found b"),
    ]


# --- connections ------------------------------------------------------------------------


@pytest.mark.anyio
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


async def _read_request(stream: anyio.abc.SocketStream, buffer: bytes) -> bytes:
    """Read one HTTP request (head and ``content-length`` body) from ``stream`` after
    ``buffer``; what was read past it."""
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
    head, _, rest = buffer.partition(b"\r\n\r\n")
    length = next(
        int(value)
        for name, _, value in (line.partition(b":") for line in head.split(b"\r\n")[1:])
        if name.strip().lower() == b"content-length"
    )
    while len(rest) < length:
        rest += await stream.receive()
    return rest[length:]


def _http_answer(stream: bool, text: str) -> bytes:
    """A whole HTTP/1.1 answer (kept alive) carrying ``text`` as a completion or an SSE
    stream."""
    if stream:
        kind = "text/event-stream"
        body = f"data: {json.dumps(chunk_json(ModelChunk(text=text)))}\n\ndata: [DONE]\n\n"
    else:
        kind, body = "application/json", json.dumps(completion_json(text))
    data = body.encode()
    head = f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {len(data)}\r\n\r\n"
    return head.encode() + data


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("drop", ["closed", "reset", "cut-mid-body"])
async def test_a_request_on_a_connection_the_server_dropped_is_sent_again(
    stream: bool, drop: str
) -> None:
    """A raw server answers a first request on a kept-alive connection, then reads the
    second one on it and drops the connection without a byte of answer — closed
    (httpx's ``RemoteProtocolError``) or reset (``ReadError``) — as a server does that
    times an idle connection out just as the pool reuses it. The request is sent again,
    after the layer's backoff, on a new connection, and answered. Once an answer has
    begun (the connection cut mid-body), nothing is sent again: the server answered."""
    connections: list[int] = []
    requests: list[int] = []

    async def handle(conn: anyio.abc.SocketStream) -> None:
        connections.append(len(connections))
        async with conn:
            rest = await _read_request(conn, b"")
            requests.append(len(requests))
            if len(connections) > 1:
                await conn.send(_http_answer(stream, "again"))
                return
            await conn.send(_http_answer(stream, "first"))
            await _read_request(conn, rest)
            requests.append(len(requests))
            if drop == "reset":
                raw = conn.extra(anyio.abc.SocketAttribute.raw_socket)
                raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif drop == "cut-mid-body":
                await conn.send(_http_answer(stream, "cut short")[:-8])

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, handle)
        model = OpenAIChatModel(
            "m", base_url=f"http://127.0.0.1:{port}/v1", api_key="k", retry_backoff=0.01
        )
        async with model:
            ask = (lambda: stream_all(model, REQUEST)) if stream else (lambda: model.call(REQUEST))
            first = await ask()
            if drop == "cut-mid-body":
                with pytest.raises(ModelError):
                    await (assemble(await ask()) if stream else ask())
            else:
                second = await ask()
        tg.cancel_scope.cancel()
    texts = [assemble(first).message.text if stream else first.message.text]
    if drop == "cut-mid-body":
        assert (len(connections), len(requests)) == (1, 2)
        return
    texts.append(assemble(second).message.text if stream else second.message.text)
    assert texts == ["first", "again"]
    assert (len(connections), len(requests)) == (2, 3)


# --- bounded parsing --------------------------------------------------------------------

DEEP = "[" * 200_000 + "]" * 200_000


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (DEEP, "the answer is past a parsing limit: nested deeper than 100 levels"),
        ('{"choices": ' + "1" * 5000 + "}", "the answer is past a parsing limit: a number"),
    ],
    ids=["200k-brackets", "5000-digit-number"],
)
async def test_a_hostile_answer_body_is_a_model_error(
    server_for: ServerFor, body: str, problem: str
) -> None:
    """A whole answer of 200,000 nested brackets, or with a 5,000-digit number, raises
    ``ModelError`` saying which limit it hit, not ``RecursionError`` or a bare
    ``ValueError``."""
    server = server_for([HTTPReply(200, body)])
    async with model_for(server) as model:
        with pytest.raises(ModelError) as caught:
            await model.call(REQUEST)
    assert str(caught.value).startswith(problem)


@pytest.mark.anyio
async def test_a_hostile_stream_event_is_a_stream_error(server_for: ServerFor) -> None:
    """A streamed event of 200,000 nested brackets raises ``ModelStreamError`` (the text
    before it was passed on), not ``RecursionError``."""
    server = server_for([SSEReply([ModelChunk(text="a"), DEEP])])
    received: list[ModelChunk] = []
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match="a stream event is past a parsing limit"):
            await stream_into(model, received)
    assert received == [ModelChunk(text="a")]


@pytest.mark.anyio
async def test_an_answer_past_the_body_limit_is_not_parsed(
    server_for: ServerFor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the body limit set to 1,000 bytes, a 5,000-byte answer raises ``ModelError``
    ("longer than 1000 bytes") without being parsed; a shorter one is read as usual."""
    monkeypatch.setattr(http_module, "MAX_BODY_BYTES", 1000)
    server = server_for([HTTPReply.completion("x" * 5000), HTTPReply.completion("short")])
    async with model_for(server) as model:
        with pytest.raises(ModelError, match="the answer is longer than 1000 bytes: not parsed"):
            await model.call(REQUEST)
        assert (await model.call(REQUEST)).message.text == "short"


@pytest.mark.anyio
@pytest.mark.parametrize("shape", ["one-line", "many-lines"])
async def test_a_stream_event_past_the_event_limit_is_not_parsed(
    server_for: ServerFor, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    """With the event limit set to 1,000 characters, an event of 5,000 (on one ``data:``
    line, or on many) raises ``ModelStreamError`` saying so; smaller events pass."""
    monkeypatch.setattr(http_module, "MAX_EVENT_CHARS", 1000)
    big = "x" * 5000 if shape == "one-line" else "\ndata: ".join(["x" * 100] * 50)
    body = f'data: {{"choices": []}}\n\ndata: {big}\n\ndata: [DONE]\n\n'
    server = server_for([HTTPReply(200, body, content_type="text/event-stream")])
    async with model_for(server) as model:
        with pytest.raises(ModelStreamError, match="longer than 1000 characters"):
            await stream_into(model, [])


@pytest.mark.parametrize(
    ("pieces", "lines"),
    [
        (["a\nb", "\n"], ["a", "b"]),
        (["a\r", "\nb\r\n"], ["a", "b"]),
        (["a\r", "b\r", "\r\n"], ["a", "b", ""]),
        (["da", "ta: x", "\n\n"], ["data: x", ""]),
        (["a\u2028b\n"], ["a\u2028b"]),
        (["tail"], ["tail"]),
    ],
)
def test_stream_lines_end_at_crlf_lf_or_cr_across_pieces(
    pieces: list[str], lines: list[str]
) -> None:
    """SSE lines end at CRLF, LF or CR, also when the CR and the LF come in different
    pieces of text (one line end, not two); U+2028 inside JSON text ends no line; an
    unfinished last line counts at the end."""
    splitter = LineSplitter()
    for piece in pieces:
        splitter.feed(piece)
    splitter.end()
    assert splitter.lines == lines


# --- the API key never leaks ------------------------------------------------------------

SECRET = "sk-pr/oj+ab=cd/ef=="
"""A key with the characters JSON, URLs and base64 treat specially."""


def key_places(error: BaseException, key: str = SECRET) -> list[str]:
    """Where ``key`` shows in ``error``: its text and repr, every exception chained to it
    (``__cause__``, ``__context__``), and their attributes (an httpx request's headers, a
    ``JSONDecodeError``'s ``doc`` …), walked all the way down."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("error", error)]
    while stack:
        path, value = stack.pop()
        if value is None or id(value) in seen:
            continue
        seen.add(id(value))
        children: list[tuple[str, Any]] = []
        if isinstance(value, BaseException):
            texts = [str(value), repr(value)]
            children = [("__cause__", value.__cause__), ("__context__", value.__context__)]
            children += [(f"args[{i}]", a) for i, a in enumerate(value.args)]
            children += list(vars(value).items())
        elif isinstance(value, httpx.Request | httpx.Response):
            texts = [repr(value), *(f"{k!r}: {v!r}" for k, v in value.headers.raw)]
            if isinstance(value, httpx.Request):
                texts.append(str(value.url))
        elif isinstance(value, str | bytes):
            texts = [value.decode("latin-1") if isinstance(value, bytes) else value]
        elif isinstance(value, dict):
            texts, children = [], [(repr(k), v) for k, v in value.items()]
        elif isinstance(value, list | tuple):
            texts, children = [], [(f"[{i}]", v) for i, v in enumerate(value)]
        else:
            texts = [repr(value)]
        if any(key in text for text in texts):
            found.append(path)
        stack += [(f"{path}.{name}", child) for name, child in children]
    return found


def refused_url() -> str:
    """The base URL of a port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


ESCAPED_401 = json.dumps({"error": {"message": f"Incorrect API key provided: {SECRET}."}})
LEAKY: dict[str, tuple[str, list[ServerReply]]] = {
    "sse-error-event": (
        "stream",
        [SSEReply([ModelChunk(text="a"), {"error": {"message": f"bad key {SECRET}"}}])],
    ),
    "401-body-escaping-slashes": (
        "call",
        [HTTPReply(401, ESCAPED_401.replace("/", "\\/"))],
    ),
    "x-request-id-with-the-key": (
        "call",
        [
            HTTPReply.error(429, "slow down", headers={"x-request-id": SECRET, "retry-after": "0"}),
            HTTPReply.error(401, "no", headers={"x-request-id": f"req-{SECRET}"}),
        ],
    ),
    "answer-not-json": ("call", [HTTPReply(200, f"oops {SECRET}")]),
    "answer-of-the-wrong-shape": (
        "call",
        [HTTPReply.from_json({"choices": [{"message": {"role": SECRET}}]})],
    ),
    "stream-event-not-json": ("stream", [SSEReply([f"not json {SECRET}"])]),
    "stream-cut": ("stream", [SSEReply([ModelChunk(text="a")], ending="cut")]),
    "timeout": ("call", [HangReply(), HangReply()]),
    "connection-refused": ("call", []),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(LEAKY))
async def test_the_api_key_is_nowhere_in_errors_or_logs(
    server_for: ServerFor, caplog: pytest.LogCaptureFixture, case: str
) -> None:
    """A key with ``/``, ``+`` and ``=`` is sent, and yet appears nowhere in the error the
    caller gets — not in its text or repr, the server's message (also when JSON spells the
    key ``\\/``), the request id, a chained httpx error's request headers, a JSON error's
    document — nor in the library's logs (the ``reactcore`` logger at DEBUG, structlog),
    whatever the server did. (httpcore's own DEBUG log prints the response headers the
    server sent; that is outside the library.)"""
    how, replies = LEAKY[case]
    server = server_for(replies)
    base_url = refused_url() if case == "connection-refused" else server.base_url
    model = OpenAIChatModel(
        "m", base_url=base_url, api_key=SECRET, max_retries=1, retry_backoff=0.01, timeout=0.3
    )
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as logs, pytest.raises(ModelError) as caught:
        async with model:
            await (model.call(REQUEST) if how == "call" else stream_into(model, []))
    if case != "connection-refused":
        assert server.request_headers[0]["authorization"] == f"Bearer {SECRET}"
    assert key_places(caught.value) == []
    assert SECRET not in repr(logs)
    assert [r for r in caplog.records if r.name == "reactcore" and SECRET in r.getMessage()] == []
    if case == "x-request-id-with-the-key":
        assert [e["request_id"] for e in logs if e["event"] == "model_request_retry"] == [
            "[api key]"
        ]
        assert isinstance(caught.value, ModelHTTPError)
        assert caught.value.request_id == "req-[api key]"
    if case == "401-body-escaping-slashes":
        assert "Incorrect API key provided: [api key]." in str(caught.value)


def test_the_key_finder_finds_what_it_must() -> None:
    """The walk above is no empty check: it finds the key in a chained request's headers,
    in a ``JSONDecodeError``'s document, and in an attribute."""
    request = httpx.Request("POST", "http://x/v1", headers={"Authorization": f"Bearer {SECRET}"})
    transport = httpx.ConnectError("refused", request=request)
    decoding = json.JSONDecodeError("bad", f"x {SECRET}", 0)
    error = ModelHTTPError("HTTP 401", status_code=401, body=SECRET)
    error.__cause__ = transport
    error.__context__ = decoding
    assert sorted(key_places(error)) == [
        "error.__cause__._request",
        "error.__context__.doc",
        "error.body",
    ]


# --- invalid Unicode ---------------------------------------------------------------------

LONE = "\ud800"
"""A lone surrogate: a str may hold it, UTF-8 cannot encode it."""


@tool
async def echo(x: str) -> str:
    """Say ``x`` back."""
    return f"echo: {x}"


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["escaped-in-arguments", "raw-in-the-event"])
async def test_a_lone_surrogate_from_the_model_leaves_the_thread_usable(
    server_for: ServerFor, tmp_path: Path, where: str
) -> None:
    """The model sends text and tool-call arguments holding a lone surrogate (as the
    JSON escape ``\\ud800`` inside the arguments, or raw once the event is decoded) and
    the tool echoes its argument: the surrogate becomes U+FFFD where it enters, so the
    next request carries ``echo: \\ufffd`` to the model and succeeds, and the thread
    goes on from its SQLite checkpoint with a new turn."""
    arguments = '{"x": "\\ud800"}' if where == "escaped-in-arguments" else f'{{"x": "{LONE}"}}'
    asking = AssistantMessage(f"look {LONE}", [ToolCall("c1", "echo", arguments)])
    server = server_for([SSEReply.of(asking), SSEReply.of("done"), SSEReply.of("again")])
    config = RunnableConfig(thread_id="t")
    async with model_for(server) as model, SqliteSaver(tmp_path / "cp.db") as saver:
        agent = ReactAgent("a", model, tools=[echo], saver=saver)
        assert (await agent.invoke("go", config)).text == "done"
        later = ReactAgent("a", model, tools=[echo], saver=saver)
        assert (await later.invoke("and now?", config)).text == "again"
    second, third = server.requests[1], server.requests[2]
    assert second["messages"][1]["content"] == "look \ufffd"
    assert json.loads(second["messages"][1]["tool_calls"][0]["function"]["arguments"]) == {
        "x": "\ufffd"
    }
    assert second["messages"][2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "echo: \ufffd",
    }
    assert third["messages"][:3] == second["messages"][:3]


@pytest.mark.anyio
async def test_a_lone_surrogate_in_user_input_does_not_break_the_request(
    server_for: ServerFor,
) -> None:
    """A caller's message holding a lone surrogate is sent with U+FFFD in its place,
    not refused with ``UnicodeEncodeError`` by the HTTP client."""
    server = server_for([HTTPReply.completion("ok")])
    async with model_for(server) as model:
        response = await model.call(ModelRequest([UserMessage(f"hi {LONE}")]))
    assert response.message.text == "ok"
    assert server.requests[0]["messages"] == [{"role": "user", "content": "hi \ufffd"}]


def test_tool_results_and_arguments_are_cleaned_of_invalid_unicode() -> None:
    """Every tool result passes through ``to_json_text``: a lone surrogate in a string or
    inside a structure comes out as U+FFFD; a surrogate pair held as two code points comes
    out as its character; arguments escaping a valid pair, or a backslash, are kept as
    sent."""
    assert to_json_text(f"a{LONE}b") == "a\ufffdb"
    assert to_json_text({"k": [LONE]}) == '{"k": ["\ufffd"]}'
    assert to_json_text("\ud83d\ude00") == "\U0001f600"
    assert clean_arguments('{"x": "\\ud800"}') == '{"x": "\ufffd"}'
    assert clean_arguments('{"x": "\\ud83d\\ude00"}') == '{"x": "\\ud83d\\ude00"}'
    assert clean_arguments('{"x": "\\\\ud800"}') == '{"x": "\\\\ud800"}'


SPLIT_NAMES = calls(  # index 0 first: the SDK's accumulator needs it
    ToolCallDelta(0, id="call_a", name="w"),
    ToolCallDelta(1, id="call_b", name="ti"),
    ToolCallDelta(0, name="eat"),
    ToolCallDelta(1, name="me", arguments='{"tz": '),
    ToolCallDelta(0, name="her", arguments='{"city": '),
    ToolCallDelta(0, arguments='"Paris"}'),
    ToolCallDelta(1, arguments='"UTC"}'),
)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_split_names_are_joined_as_the_official_sdk_joins_them(
    server_for: ServerFor,
) -> None:
    """The official ``openai`` SDK's stream accumulator (asyncio only, hence this test
    runs on asyncio only) and ``ChunkAssembler`` make the same calls of a stream whose
    names come in fragments, two calls interleaved by index."""
    from openai import AsyncOpenAI

    server = server_for([SSEReply(SPLIT_NAMES), SSEReply(SPLIT_NAMES)])
    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    async with (
        client,
        client.chat.completions.stream(
            model="test-model", messages=[{"role": "user", "content": "hi"}]
        ) as stream,
    ):
        final = await stream.get_final_completion()
    sdk = [
        (c.id, c.function.name, c.function.arguments)
        for c in final.choices[0].message.tool_calls or []
        if c.type == "function"
    ]
    ours = [(c.id, c.name, c.arguments) for c in (await streamed(server)).message.tool_calls]
    assert (
        ours
        == sdk
        == [
            ("call_a", "weather", '{"city": "Paris"}'),
            ("call_b", "time", '{"tz": "UTC"}'),
        ]
    )
