"""Public test helpers: a scripted chat model, local OpenAI-compatible, Anthropic,
OpenAI Responses, Gemini, Azure OpenAI and Vertex AI (Gemini and Claude) servers, and
cassettes that record a run's model traffic and tool I/O and replay it offline
(``Cassette``, see ``reactcore._cassettes``; the pytest fixture is in
``reactcore.pytest_plugin``).

``ScriptedChatModel`` answers from a script, with no network (see its module).

``serve_openai_compatible(script)`` runs a real HTTP server — uvicorn, on 127.0.0.1 with
an ephemeral port — in a background thread with its own event loop, so a test on any
anyio backend talks to it over real sockets::

    with serve_openai_compatible([HTTPReply.completion("hi")]) as server:
        model = OpenAIChatModel("test-model", base_url=server.base_url, api_key="sk-test")
        ...
    assert server.requests[0]["messages"] == [...]

``server.request_times`` says when each request arrived, for tests of retry pauses;
``server.request_paths`` the path (and query) each was sent to.

It answers each ``POST …/chat/completions`` with the next reply of the script (a list),
or with what a callable returns for the request's JSON body. Replies:

- ``HTTPReply``: a whole response — a completion, an error status with headers
  (``Retry-After``, ``x-request-id``), or any text (malformed JSON);
- ``SSEReply``: a stream of events (``ModelChunk``s, JSON objects, or raw text), ended
  by ``[DONE]``, by a clean end without it, by cutting the connection, by hanging, or by
  ``[DONE]`` with the body kept open (a server that never closes);
- ``HangReply``: never answers (for client timeouts).

``SSEReply`` and ``HangReply`` set ``client_left`` when the client disconnects. Stopping
the server ends every hanging reply, so leaving the ``with`` block never waits on one.
uvicorn is imported only when a server starts: it is a test dependency.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import anyio
import anyio.from_thread
import attrs
from anyio.lowlevel import EventLoopToken, current_token

from . import _validate as valid
from ._cassettes import Cassette as Cassette
from ._cassettes import CassetteMode as CassetteMode
from ._exceptions import CassetteError as CassetteError
from ._exceptions import CassetteMismatchError as CassetteMismatchError
from ._exceptions import ScriptExhaustedError as ScriptExhaustedError
from ._messages import AssistantMessage
from ._serde import message_to_wire
from ._testing_anthropic import AnthropicEvent as AnthropicEvent
from ._testing_anthropic import AnthropicSSEReply as AnthropicSSEReply
from ._testing_anthropic import anthropic_error_reply as anthropic_error_reply
from ._testing_anthropic import anthropic_events as anthropic_events
from ._testing_anthropic import anthropic_message_json as anthropic_message_json
from ._testing_anthropic import anthropic_message_reply as anthropic_message_reply
from ._testing_azure import AZURE_ROUTE, azure_refusal
from ._testing_azure import azure_completion_json as azure_completion_json
from ._testing_azure import azure_error_reply as azure_error_reply
from ._testing_azure import azure_events as azure_events
from ._testing_azure import azure_prompt_filtered_reply as azure_prompt_filtered_reply
from ._testing_azure import azure_reply as azure_reply
from ._testing_azure import azure_stream_reply as azure_stream_reply
from ._testing_azure import filter_results as filter_results
from ._testing_bedrock import BEDROCK_ROUTE, bedrock_refusal
from ._testing_bedrock import TEST_ACCESS_KEY_ID as TEST_ACCESS_KEY_ID
from ._testing_bedrock import TEST_SECRET_ACCESS_KEY as TEST_SECRET_ACCESS_KEY
from ._testing_bedrock import BedrockStreamReply as BedrockStreamReply
from ._testing_bedrock import bedrock_error_reply as bedrock_error_reply
from ._testing_bedrock import bedrock_events as bedrock_events
from ._testing_bedrock import bedrock_reply as bedrock_reply
from ._testing_bedrock import converse_json as converse_json
from ._testing_bedrock import event_frame as event_frame
from ._testing_bedrock import exception_frame as exception_frame
from ._testing_bedrock import reasoning_signature as reasoning_signature
from ._testing_gemini import GeminiChunk as GeminiChunk
from ._testing_gemini import GeminiSSEReply as GeminiSSEReply
from ._testing_gemini import gemini_chunks as gemini_chunks
from ._testing_gemini import gemini_error_reply as gemini_error_reply
from ._testing_gemini import gemini_reply as gemini_reply
from ._testing_gemini import gemini_response_json as gemini_response_json
from ._testing_gemini import gemini_usage_json as gemini_usage_json
from ._testing_responses import ResponsesEvent as ResponsesEvent
from ._testing_responses import ResponsesSSEReply as ResponsesSSEReply
from ._testing_responses import responses_error_reply as responses_error_reply
from ._testing_responses import responses_events as responses_events
from ._testing_responses import responses_json as responses_json
from ._testing_responses import responses_reply as responses_reply
from ._testing_vertex import (
    TOKEN_PATH,
    VertexServer,
    anthropic_body_refusal,
    checked_script,
    gemini_body_refusal,
    root_of,
    unauthenticated_reply,
)
from ._testing_vertex import make_service_account as make_service_account
from .models.base import ModelChunk, ToolCallDelta, Usage
from .models.scripted import ScriptedChatModel as ScriptedChatModel
from .models.scripted import character_usage as character_usage
from .models.scripted import message_chunks as message_chunks

if TYPE_CHECKING:
    import uvicorn

__all__ = [
    "TEST_ACCESS_KEY_ID",
    "TEST_SECRET_ACCESS_KEY",
    "AnthropicEvent",
    "AnthropicSSEReply",
    "BedrockStreamReply",
    "Cassette",
    "CassetteError",
    "CassetteMismatchError",
    "CassetteMode",
    "Exchange",
    "GeminiChunk",
    "GeminiSSEReply",
    "HTTPReply",
    "HangReply",
    "OpenAICompatibleServer",
    "ResponsesEvent",
    "ResponsesSSEReply",
    "SSEEvent",
    "SSEReply",
    "Script",
    "ScriptExhaustedError",
    "ScriptedChatModel",
    "ServerReply",
    "VertexAIServer",
    "anthropic_error_reply",
    "anthropic_events",
    "anthropic_message_json",
    "anthropic_message_reply",
    "azure_completion_json",
    "azure_error_reply",
    "azure_events",
    "azure_prompt_filtered_reply",
    "azure_reply",
    "azure_stream_reply",
    "bedrock_error_reply",
    "bedrock_events",
    "bedrock_reply",
    "character_usage",
    "chunk_json",
    "completion_json",
    "converse_json",
    "event_frame",
    "exception_frame",
    "filter_results",
    "gemini_chunks",
    "gemini_error_reply",
    "gemini_reply",
    "gemini_response_json",
    "gemini_usage_json",
    "make_service_account",
    "message_chunks",
    "reasoning_signature",
    "responses_error_reply",
    "responses_events",
    "responses_json",
    "responses_reply",
    "serve_anthropic",
    "serve_azure_openai",
    "serve_bedrock",
    "serve_gemini",
    "serve_openai_compatible",
    "serve_openai_responses",
    "serve_vertex_anthropic",
    "serve_vertex_gemini",
]

_ASGIMessage: TypeAlias = MutableMapping[str, Any]
_Receive: TypeAlias = Callable[[], Awaitable[_ASGIMessage]]
_Send: TypeAlias = Callable[[_ASGIMessage], Awaitable[None]]
_MODEL = "test-model"
_START_TIMEOUT = 10.0
_STOP_TIMEOUT = 10.0


# --- the wire JSON the server sends -----------------------------------------------------


def _usage_json(usage: Usage | None) -> dict[str, Any] | None:
    """``usage`` as OpenAI reports it: the details only when they count something."""
    if usage is None:
        return None
    wire: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cached_tokens:
        wire["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    if usage.reasoning_tokens:
        wire["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return wire


def completion_json(message: AssistantMessage | str, *, usage: Usage | None = None) -> Any:
    """A chat-completions answer (``object: chat.completion``) carrying ``message``."""
    if isinstance(message, str):
        message = AssistantMessage(message)
    choice = {
        "index": 0,
        "message": message_to_wire(message, reasoning=True)[0],
        "finish_reason": message.finish_reason or ("tool_calls" if message.tool_calls else "stop"),
        "logprobs": None,
    }
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": _MODEL,
        "choices": [choice],
        "usage": _usage_json(usage),
    }


def _delta_json(delta: ToolCallDelta) -> dict[str, Any]:
    wire: dict[str, Any] = {} if delta.index is None else {"index": delta.index}
    if delta.id is not None:
        wire.update(id=delta.id, type="function")
    function: dict[str, Any] = {}
    if delta.name is not None:
        function["name"] = delta.name
    if delta.arguments or delta.name is not None:
        function["arguments"] = delta.arguments
    if function:
        wire["function"] = function
    return wire


def chunk_json(chunk: ModelChunk) -> Any:
    """A streamed event (``object: chat.completion.chunk``) carrying ``chunk``.

    A chunk with only usage has no choices, as OpenAI sends it with ``include_usage``.
    """
    delta: dict[str, Any] = {}
    if chunk.reasoning:
        delta["reasoning_content"] = chunk.reasoning
    if chunk.text:
        delta["content"] = chunk.text
    if chunk.tool_calls:
        delta["tool_calls"] = [_delta_json(d) for d in chunk.tool_calls]
    choices = []
    if delta or chunk.finish_reason is not None or chunk.usage is None:
        choices.append(
            {"index": 0, "delta": delta, "finish_reason": chunk.finish_reason, "logprobs": None}
        )
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": _MODEL,
        "choices": choices,
        "usage": _usage_json(chunk.usage),
    }


# --- one request and the replies to it -------------------------------------------------


@attrs.define(eq=False)
class Exchange:
    """One request being answered: what a reply uses to send, and to wait for the end."""

    receive: _Receive
    send: _Send
    stopping: anyio.Event

    async def start(self, status: int, headers: Mapping[str, str]) -> None:
        encoded = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        await self.send({"type": "http.response.start", "status": status, "headers": encoded})

    async def body(self, data: bytes, *, more: bool) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": more})

    async def wait_gone(self) -> bool:
        """Wait until the client disconnects (True) or the server stops (False)."""
        left = False
        async with anyio.create_task_group() as tg:

            async def watch_client() -> None:
                nonlocal left
                while (await self.receive())["type"] != "http.disconnect":
                    pass
                left = True
                tg.cancel_scope.cancel()

            tg.start_soon(watch_client)
            await self.stopping.wait()
            tg.cancel_scope.cancel()
        return left


class ServerReply(Protocol):
    """How the server answers one request."""

    async def respond(self, exchange: Exchange) -> None: ...


def _to_bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


_STATUS = valid.satisfies(
    "an int", int, reject=bool, limits=[(lambda v: 100 <= v <= 599, "must be in [100, 599]")]
)
_EVENT = valid.satisfies(
    "a threading.Event (with set and wait)",
    test=lambda v: callable(getattr(v, "set", None)) and callable(getattr(v, "wait", None)),
)


@attrs.frozen
class HTTPReply:
    """A whole response: ``status``, ``body`` (text or bytes) and extra ``headers``."""

    status: int = attrs.field(default=200, validator=_STATUS)
    body: bytes = attrs.field(
        default=b"",
        converter=_to_bytes,
        validator=valid.instance_of(bytes, "bytes or a str"),
    )
    headers: Mapping[str, str] = attrs.field(factory=dict, hash=False, validator=valid.mapping())
    content_type: str = attrs.field(default="application/json", validator=valid.text())

    @classmethod
    def from_json(
        cls, payload: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> HTTPReply:
        """``payload`` as JSON."""
        return cls(status, json.dumps(payload), headers or {})

    @classmethod
    def completion(
        cls,
        message: AssistantMessage | str,
        *,
        usage: Usage | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> HTTPReply:
        """A successful chat-completions answer carrying ``message``."""
        return cls.from_json(completion_json(message, usage=usage), headers=headers)

    @classmethod
    def error(
        cls, status: int, message: str, *, headers: Mapping[str, str] | None = None
    ) -> HTTPReply:
        """An OpenAI-style error body (``{"error": {"message": …}}``) with ``status``."""
        payload = {"error": {"message": message, "type": "test_error", "code": None}}
        return cls.from_json(payload, status=status, headers=headers)

    async def respond(self, exchange: Exchange) -> None:
        await exchange.start(self.status, {"content-type": self.content_type, **self.headers})
        await exchange.body(self.body, more=False)


SSEEvent: TypeAlias = ModelChunk | Mapping[str, Any] | str
"""A streamed event: a ``ModelChunk`` (sent as OpenAI sends it), any JSON object, or raw
text sent as the ``data`` as is (e.g. malformed JSON)."""


def _event_data(event: SSEEvent) -> str:
    if isinstance(event, str):
        return event
    if isinstance(event, ModelChunk):
        return json.dumps(chunk_json(event))
    return json.dumps(dict(event))


def _to_events(value: Sequence[SSEEvent]) -> tuple[SSEEvent, ...]:
    return tuple(value) if valid.ITERABLE.accepts(value) else valid.leave(value)


@attrs.frozen
class SSEReply:
    """A ``text/event-stream`` answer: one ``data:`` event each, then the ``ending``.

    ``"done"``: ``data: [DONE]`` and a clean end; ``"eof"``: a clean end without
    ``[DONE]``; ``"cut"``: the connection is closed mid-body; ``"hang"``: the stream stays
    open until the client leaves; ``"done_then_hang"``: ``data: [DONE]``, then the body
    stays open until the client leaves. ``client_left`` is set when the client disconnects.
    """

    events: tuple[SSEEvent, ...] = attrs.field(
        converter=_to_events,
        validator=valid.each(
            valid.instance_of((ModelChunk, Mapping, str), "a ModelChunk, a mapping or a str")
        ),
    )
    ending: Literal["done", "eof", "cut", "hang", "done_then_hang"] = attrs.field(
        default="done", validator=valid.one_of("done", "eof", "cut", "hang", "done_then_hang")
    )
    client_left: threading.Event = attrs.field(
        factory=threading.Event, eq=False, repr=False, validator=_EVENT
    )

    @classmethod
    def of(
        cls, message: AssistantMessage | str, *, usage: Usage | None = None, chunk_size: int = 4
    ) -> SSEReply:
        """``message`` streamed in small pieces (as ``message_chunks`` splits it)."""
        if isinstance(message, str):
            message = AssistantMessage(message)
        return cls(message_chunks(message, chunk_size=chunk_size, usage=usage))

    async def respond(self, exchange: Exchange) -> None:
        await exchange.start(
            200, {"content-type": "text/event-stream", "cache-control": "no-cache"}
        )
        for event in self.events:
            await exchange.body(f"data: {_event_data(event)}\n\n".encode(), more=True)
        if self.ending == "done":
            await exchange.body(b"data: [DONE]\n\n", more=False)
        elif self.ending == "eof":
            await exchange.body(b"", more=False)
        elif self.ending == "done_then_hang":
            await exchange.body(b"data: [DONE]\n\n", more=True)
            if await exchange.wait_gone():
                self.client_left.set()
        elif self.ending == "hang" and await exchange.wait_gone():
            self.client_left.set()
        # "cut" (and a hang ended by the server stopping): return mid-body, and the
        # server closes the connection without finishing the chunked body.


@attrs.frozen
class HangReply:
    """Never answers: the request stays open until the client leaves (or the server stops).

    ``arrived`` is set when the request has come, ``client_left`` when the client left.
    """

    arrived: threading.Event = attrs.field(
        factory=threading.Event, eq=False, repr=False, validator=_EVENT
    )
    client_left: threading.Event = attrs.field(
        factory=threading.Event, eq=False, repr=False, validator=_EVENT
    )

    async def respond(self, exchange: Exchange) -> None:
        self.arrived.set()
        if await exchange.wait_gone():
            self.client_left.set()


# --- the server -------------------------------------------------------------------------

Script: TypeAlias = Sequence[ServerReply] | Callable[[Any], ServerReply]
Verify: TypeAlias = Callable[[str, str, Mapping[str, str], bytes], ServerReply | None]
"""Checks a request as it arrived (method, URL as sent, headers, body): a refusal or None."""
"""Replies in order, or a callable choosing the reply from the request's JSON body."""


@attrs.define(eq=False)
class OpenAICompatibleServer:
    """A running local server: its ``base_url`` and what it received, in order.

    ``requests`` holds the JSON bodies of the chat-completions requests,
    ``request_headers`` their headers (names in lower case), ``request_times`` when
    each arrived (``time.monotonic()``, for tests of retry pauses) and ``request_paths``
    where each was sent (the path, then ``?`` and the query when there is one).
    """

    base_url: str
    requests: list[Any] = attrs.field(factory=list)
    request_headers: list[dict[str, str]] = attrs.field(factory=list)
    request_times: list[float] = attrs.field(factory=list)
    request_paths: list[str] = attrs.field(factory=list)


def _in_order(replies: Sequence[ServerReply]) -> Callable[[Any], ServerReply]:
    """A script callable replying from ``replies`` in order; past the end, a clear 500."""
    position = 0

    def next_reply(_: Any) -> ServerReply:
        nonlocal position
        position += 1
        if position > len(replies):
            return HTTPReply.error(
                500, f"the test server's script has {len(replies)} replies, no #{position}"
            )
        return replies[position - 1]

    return next_reply


async def _read_body(receive: _Receive) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


@attrs.define(eq=False)
class _App:
    """The ASGI application: routes the provider's requests to the script (``route``: the
    end of their path, or a pattern their path matches)."""

    script: Callable[[Any], ServerReply]
    server: OpenAICompatibleServer
    route: str | re.Pattern[str] = "/chat/completions"
    refuse: Callable[[str, str, Mapping[str, str]], ServerReply | None] | None = None
    other: Callable[[str, bytes], ServerReply | None] | None = None
    """Answers a request off the route (the Vertex token endpoint's form posts), else None."""
    verify: Verify | None = None
    ready: threading.Event = attrs.field(factory=threading.Event)
    stopping: anyio.Event | None = None
    token: EventLoopToken | None = None

    async def __call__(self, scope: _ASGIMessage, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            assert self.stopping is not None  # set at startup, before any request
            await self._http(scope, Exchange(receive, send, self.stopping))

    async def _lifespan(self, receive: _Receive, send: _Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.stopping = anyio.Event()
                self.token = current_token()
                await send({"type": "lifespan.startup.complete"})
                self.ready.set()
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: _ASGIMessage, exchange: Exchange) -> None:
        body = await _read_body(exchange.receive)
        path = scope["path"]
        other = None if self.other is None else self.other(path, body)
        if other is not None:
            await other.respond(exchange)
            return
        routed = (
            self.route.fullmatch(path) is not None
            if isinstance(self.route, re.Pattern)
            else path.endswith(self.route)
        )
        if scope["method"] != "POST" or not routed:
            reply = HTTPReply.error(404, f"no route for {scope['method']} {scope['path']}")
            await reply.respond(exchange)
            return
        try:
            payload = json.loads(body)
        except ValueError:
            await HTTPReply.error(400, "the request body is not JSON").respond(exchange)
            return
        self.server.request_times.append(time.monotonic())
        self.server.requests.append(payload)
        query = scope.get("query_string", b"").decode("latin-1")
        self.server.request_paths.append(f"{path}?{query}" if query else path)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.server.request_headers.append(headers)
        refused = None if self.refuse is None else self.refuse(path, query, headers)
        if refused is None and self.verify is not None:
            raw = scope.get("raw_path") or path.encode()
            url = f"http://{headers.get('host', '')}{raw.decode('latin-1')}"
            refused = self.verify("POST", f"{url}?{query}" if query else url, headers, body)
        await (refused or self.script(payload)).respond(exchange)

    def stop(self) -> None:
        """End every hanging reply (called from outside the server's thread)."""
        if self.token is not None and self.stopping is not None:
            with suppress(anyio.RunFinishedError):  # the server's loop has already ended
                anyio.from_thread.run_sync(self.stopping.set, token=self.token)


def _listening_socket() -> socket.socket:
    """A socket listening on 127.0.0.1 on a free port: clients may connect at once."""
    # IPPROTO_TCP tells uvicorn it is TCP, so it sets TCP_NODELAY on each connection;
    # without it every reply waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextmanager
def serve_openai_compatible(script: Script) -> Iterator[OpenAICompatibleServer]:
    """Run a local OpenAI-compatible server answering from ``script`` for the block.

    The server runs uvicorn in a background thread with its own (asyncio) event loop;
    it has stopped, and its thread has ended, when the block is left.
    """
    with _serve(script, "/v1", "/chat/completions", "OpenAI-compatible") as server:
        yield server


@contextmanager
def serve_anthropic(script: Script) -> Iterator[OpenAICompatibleServer]:
    """Run a local Anthropic Messages server answering ``POST /v1/messages`` from
    ``script`` for the block (replies: ``AnthropicSSEReply``, ``anthropic_message_reply``,
    ``anthropic_error_reply``, ``HangReply`` …); ``base_url`` is what ``AnthropicModel``
    and the official SDK take (without ``/v1``). It runs as ``serve_openai_compatible``
    does."""
    with _serve(script, "", "/v1/messages", "Anthropic") as server:
        yield server


@contextmanager
def serve_openai_responses(script: Script) -> Iterator[OpenAICompatibleServer]:
    """Run a local OpenAI Responses server answering ``POST /v1/responses`` from
    ``script`` for the block (replies: ``ResponsesSSEReply``, ``responses_reply``,
    ``responses_error_reply``, ``HangReply`` …); ``base_url`` ends with ``/v1``, as
    ``OpenAIResponsesModel`` and the official ``openai`` SDK take it. It runs as
    ``serve_openai_compatible`` does."""
    with _serve(script, "/v1", "/responses", "Responses") as server:
        yield server


@contextmanager
def serve_azure_openai(script: Script) -> Iterator[OpenAICompatibleServer]:
    """Run a local Azure OpenAI server for the block: chat completions at
    ``/openai/deployments/{deployment}/chat/completions?api-version=…`` and
    ``/openai/v1/chat/completions``, the Responses API at ``/openai/responses?api-version=…``
    and ``/openai/v1/responses``, answering from ``script`` (replies: ``azure_reply``,
    ``azure_stream_reply`` — whose first chunk has no choices —, ``azure_error_reply``,
    ``azure_prompt_filtered_reply``, ``ResponsesSSEReply`` …). As Azure, it answers 401 to
    a request with neither ``api-key`` nor ``Authorization``, and 404 to a versioned route
    without ``api-version`` (recorded, not given to the script). ``base_url`` is the
    endpoint, what ``azure_model(endpoint=)`` and the SDK's ``azure_endpoint`` take. It
    runs as ``serve_openai_compatible`` does."""
    with _serve(script, "", AZURE_ROUTE, "Azure OpenAI", refuse=azure_refusal) as server:
        yield server


@contextmanager
def serve_bedrock(script: Script) -> Iterator[OpenAICompatibleServer]:
    """Run a local Amazon Bedrock runtime for the block: ``POST /model/{modelId}/converse``
    and ``/converse-stream``, answering from ``script`` (replies: ``bedrock_reply``,
    ``BedrockStreamReply`` — AWS event-stream frames, cut across HTTP chunks with
    ``split=`` —, ``bedrock_error_reply``, ``HangReply`` …). As Bedrock, it recomputes each
    request's SigV4 signature with botocore (credentials ``TEST_ACCESS_KEY_ID`` /
    ``TEST_SECRET_ACCESS_KEY``, any region, service ``bedrock``) and answers 403 to a
    missing or bad one (a ``Bearer`` API key is taken), and 400 to signed reasoning not
    sent back as issued (recorded, not given to the script). ``base_url`` is what
    ``BedrockModel(base_url=)`` and boto3's ``endpoint_url`` take. It runs as
    ``serve_openai_compatible`` does; it needs botocore (the ``bedrock`` extra)."""
    with _serve(script, "", BEDROCK_ROUTE, "Bedrock", verify=bedrock_refusal) as server:
        yield server


# ``generateContent`` and ``streamGenerateContent`` of any model (or tuned model).
_GEMINI_ROUTE = re.compile(r"/v1\w*/(?:models|tunedModels)/[^/:]+:(?:stream)?[gG]enerateContent")


@contextmanager
def serve_gemini(script: Script) -> Iterator[OpenAICompatibleServer]:
    """Run a local Gemini API server answering ``POST
    /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent`` (any API
    version: ``v1``, ``v1alpha`` …) from
    ``script`` for the block (replies: ``GeminiSSEReply``, ``gemini_reply``,
    ``gemini_error_reply``, ``HangReply`` …); ``base_url`` is what ``GeminiModel`` and
    the official ``google-genai`` SDK take (without ``/v1beta``); ``request_paths`` tells
    a streamed request (``…:streamGenerateContent?alt=sse``) from a whole one. It runs as
    ``serve_openai_compatible`` does."""
    with _serve(script, "", _GEMINI_ROUTE, "Gemini") as server:
        yield server


@attrs.define(eq=False)
class VertexAIServer(OpenAICompatibleServer):
    """A running loopback Vertex AI server (``serve_vertex_gemini``,
    ``serve_vertex_anthropic``): what ``OpenAICompatibleServer`` records, and ``auth``,
    its OAuth side — ``auth.service_account`` (a service-account JSON with a fresh RSA key
    whose ``token_uri`` is this server's ``/token``; ``auth.write_service_account(path)``
    writes it), ``auth.token_requests`` (the claims of each JWT assertion exchanged),
    ``auth.tokens`` and ``auth.token_lifetime``."""

    auth: VertexServer = attrs.field(kw_only=True)

    @property
    def project(self) -> str:
        """The service account's project."""
        return self.auth.project


_Refuse: TypeAlias = Callable[[str, str, Mapping[str, str]], ServerReply | None]
_Made: TypeAlias = tuple[
    OpenAICompatibleServer, _Refuse | None, Callable[[str, bytes], ServerReply | None] | None
]


def _vertex_server(base_url: str) -> _Made:
    auth = VertexServer(f"{root_of(base_url)}{TOKEN_PATH}")
    server = VertexAIServer(base_url, auth=auth)

    def refuse(path: str, query: str, headers: Mapping[str, str]) -> ServerReply | None:
        return None if auth.token_valid(headers) else unauthenticated_reply()

    return server, refuse, auth.token_reply


# Vertex's ``generateContent`` / ``streamGenerateContent`` of a Google model, any version.
_VERTEX_GEMINI_ROUTE = re.compile(
    r"/v1\w*/projects/[^/]+/locations/[^/]+/publishers/google/models/[^/:]+"
    r":(?:stream)?[gG]enerateContent"
)
_VERTEX_ANTHROPIC_ROUTE = re.compile(
    r"/v1/projects/[^/]+/locations/[^/]+/publishers/anthropic/models/[^/:]+"
    r":(?:streamRawPredict|rawPredict)"
)


def _script_of(script: Script) -> Callable[[Any], ServerReply]:
    return script if callable(script) else _in_order(script)


@contextmanager
def serve_vertex_gemini(script: Script) -> Iterator[VertexAIServer]:
    """Run a loopback Gemini-on-Vertex server for the block: ``POST /v1/projects/{project}/
    locations/{location}/publishers/google/models/{model}:generateContent`` and
    ``:streamGenerateContent`` (any API version: ``v1beta1`` is ``google-genai``'s)
    answering from ``script`` (the Gemini replies: ``GeminiSSEReply``, ``gemini_reply``,
    ``gemini_error_reply`` …), and Google's token endpoint at ``/token``. As Vertex, it
    answers 401 to a request without a valid bearer token (one the token endpoint issued,
    unexpired) and 400 to one with ``id`` on a ``functionCall`` / ``functionResponse``
    (recorded, not given to the script). ``base_url`` is what ``VertexGeminiModel`` and
    ``google-genai``'s ``http_options.base_url`` take. It runs as
    ``serve_openai_compatible`` does."""
    checked = checked_script(_script_of(script), gemini_body_refusal)
    with _serve(
        checked, "", _VERTEX_GEMINI_ROUTE, "Vertex Gemini", make_server=_vertex_server
    ) as server:
        assert isinstance(server, VertexAIServer)
        yield server


@contextmanager
def serve_vertex_anthropic(script: Script) -> Iterator[VertexAIServer]:
    """Run a loopback Claude-on-Vertex server for the block: ``POST /v1/projects/{project}/
    locations/{region}/publishers/anthropic/models/{model}:rawPredict`` and
    ``:streamRawPredict`` answering from ``script`` (the Anthropic replies:
    ``AnthropicSSEReply``, ``anthropic_message_reply``, ``anthropic_error_reply`` …), and
    Google's token endpoint at ``/token``. As Vertex, it answers 401 to a request without a
    valid bearer token, and 400 to a body with ``model`` or without an
    ``anthropic_version`` (recorded, not given to the script). ``base_url`` ends with
    ``/v1``, as ``VertexAnthropicModel`` and the SDK's ``AnthropicVertex`` take it. It
    runs as ``serve_openai_compatible`` does."""
    checked = checked_script(_script_of(script), anthropic_body_refusal)
    with _serve(
        checked, "/v1", _VERTEX_ANTHROPIC_ROUTE, "Claude on Vertex", make_server=_vertex_server
    ) as server:
        assert isinstance(server, VertexAIServer)
        yield server


@contextmanager
def _serve(
    script: Script,
    prefix: str,
    route: str | re.Pattern[str],
    kind: str,
    refuse: Callable[[str, str, Mapping[str, str]], ServerReply | None] | None = None,
    verify: Verify | None = None,
    *,
    make_server: Callable[[str], _Made] | None = None,
) -> Iterator[OpenAICompatibleServer]:
    """``make_server(base_url)``, when given, makes the server object with its own
    refusals and off-route answers (``_Made``)."""
    import uvicorn  # a test dependency, not a core one

    sock = _listening_socket()
    host, port = sock.getsockname()
    base_url = f"http://{host}:{port}{prefix}"
    other = None
    if make_server is None:
        server = OpenAICompatibleServer(base_url)
    else:
        server, refuse, other = make_server(base_url)
    app = _App(
        script if callable(script) else _in_order(script), server, route, refuse, other, verify
    )
    config = uvicorn.Config(
        app, loop="asyncio", http="h11", ws="none", lifespan="on", log_config=None
    )
    runner = uvicorn.Server(config)
    thread = threading.Thread(
        target=runner.run, kwargs={"sockets": [sock]}, name="openai-test-server", daemon=True
    )
    thread.start()
    try:
        _wait_ready(app, thread)
        yield server
    finally:
        stopped = _stop(app, runner, thread)
        sock.close()
    if not stopped:  # said only when the block itself did not fail
        raise RuntimeError(f"the {kind} test server did not stop")


def _stop(app: _App, runner: uvicorn.Server, thread: threading.Thread) -> bool:
    """Stop the server: end hanging replies, let uvicorn shut down; False if it hangs."""
    app.stop()
    runner.should_exit = True
    thread.join(_STOP_TIMEOUT)
    if thread.is_alive():
        runner.force_exit = True
        thread.join(_STOP_TIMEOUT)
    return not thread.is_alive()


def _wait_ready(app: _App, thread: threading.Thread) -> None:
    deadline = _START_TIMEOUT
    while not app.ready.wait(0.05):
        deadline -= 0.05
        if not thread.is_alive() or deadline <= 0:
            raise RuntimeError("the OpenAI-compatible test server did not start")
