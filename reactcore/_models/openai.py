"""``OpenAIChatModel``: a client for OpenAI-compatible chat-completions endpoints, on httpx.

``call`` POSTs ``{base_url}/chat/completions`` and parses the whole answer; ``stream``
asks for server-sent events and yields ``ModelChunk``s inside an async context manager,
so the HTTP response is closed however the block ends, cancellation included.

Retries: a request is sent again, up to ``max_retries`` times, when it could not connect,
timed out, or got 408, 409, 429 or a 5xx — for ``stream`` only before any of the answer
is read. The pause doubles from ``retry_backoff`` (with jitter, at most 8 s). When the
server says how long to wait (``retry-after-ms``, or ``Retry-After`` in seconds or as an
HTTP date) the pause is never shorter; when it asks for longer than ``retry_after_cap``
the call fails at once rather than sleep. Other 4xx are never retried.

Errors, mapped in one place each (``_transport_error``, ``_status_error``)::

    httpx timeout                      → ModelTimeoutError
    other httpx failure                → ModelError (ModelStreamError once streaming)
    HTTP error status                  → ModelHTTPError (status, x-request-id, body excerpt)
    malformed answer                   → ModelError
    stream cut, malformed, or an error → ModelStreamError

The API key travels in the ``Authorization`` header only: it is left out of the repr,
never logged, and blanked out of error bodies that echo it.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC
from typing import Any, Self, TypeVar

import anyio
import attrs
import httpx
from anyio.lowlevel import checkpoint
from cattrs.errors import BaseValidationError

from .._exceptions import ModelError, ModelHTTPError, ModelStreamError, ModelTimeoutError
from .._logging import get_logger
from .._serde import (
    TOOL_MEDIA,
    ToolMedia,
    _wire_hook,
    assistant_from_wire,
    converter,
    describe_error,
    messages_to_wire,
)
from .base import ModelChunk, ModelRequest, ModelResponse, ToolCallDelta, ToolSpec, Usage

_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DEFAULT_TIMEOUT = httpx.Timeout(60, connect=5)
_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_BACKOFF = 8.0
_EXCERPT = 500
_DONE = "[DONE]"
_RUN_OUT_SECONDS = 1.0
_OPTIONS = ("temperature", "top_p", "max_tokens", "tool_choice", "response_format")

_log = get_logger()
_T = TypeVar("_T")


# --- the wire format of answers (requests are built from plain dicts) -------------------


@attrs.frozen
class _WireUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int | None = None


@attrs.frozen
class _WireChoice:
    message: Any
    finish_reason: str | None = None


@attrs.frozen
class _WireCompletion:
    choices: list[_WireChoice]
    usage: _WireUsage | None = None


@attrs.frozen
class _WireFunctionDelta:
    name: str | None = None
    arguments: str | None = None


@attrs.frozen
class _WireToolCallDelta:
    index: int | None = None
    id: str | None = None
    function: _WireFunctionDelta | None = None


@attrs.frozen
class _WireDelta:
    content: str | None = None
    tool_calls: list[_WireToolCallDelta] | None = None


@attrs.frozen
class _WireChunkChoice:
    index: int = 0
    delta: _WireDelta = _WireDelta()
    finish_reason: str | None = None


@attrs.frozen
class _WireChunk:
    choices: list[_WireChunkChoice] = attrs.field(factory=list)
    usage: _WireUsage | None = None
    error: Any = None


for _cls in (
    _WireUsage,
    _WireChoice,
    _WireCompletion,
    _WireFunctionDelta,
    _WireToolCallDelta,
    _WireDelta,
    _WireChunkChoice,
    _WireChunk,
):
    # Objects only, and extra fields (id, created, logprobs, system_fingerprint …) tolerated.
    converter.register_structure_hook(_cls, _wire_hook(_cls))


# --- requests ---------------------------------------------------------------------------


def _tool_to_wire(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": converter.unstructure(dict(spec.parameters)),
        },
    }


def request_body(
    request: ModelRequest, model: str, *, stream: bool, tool_media: ToolMedia = "describe"
) -> dict[str, Any]:
    """The JSON body of a chat-completions request for ``request``.

    The system message goes first; tools are the visible ones (the key is left out when
    there are none); options are sent only when set; ``extra_body`` is merged in last.
    ``tool_media`` says how tools' images and files are sent (see ``messages_to_wire``).
    """
    options = request.options
    system = [request.system_message] if request.system_message is not None else []
    body: dict[str, Any] = {
        "model": options.model or model,
        "messages": messages_to_wire([*system, *request.messages], tool_media=tool_media),
    }
    tools = [_tool_to_wire(spec) for spec in request.visible_tool_specs()]
    if tools:
        body["tools"] = tools
    for name in _OPTIONS:
        value = getattr(options, name)
        if value is not None:
            body[name] = converter.unstructure(value)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(converter.unstructure(dict(options.extra_body)))
    return body


# --- retry decisions --------------------------------------------------------------------


def _retryable_error(exc: httpx.RequestError) -> bool:
    return isinstance(exc, httpx.ConnectError | httpx.TimeoutException)


def _retryable_status(status: int) -> bool:
    return status in _RETRY_STATUSES or status >= 500


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, else ``Retry-After``, else None.

    ``Retry-After`` may be seconds or an HTTP date; a date in the past means no wait.
    """
    millis = _seconds(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _seconds(value)
    if seconds is not None or value is None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - time.time())


# --- errors -----------------------------------------------------------------------------


def _transport_error(exc: httpx.RequestError, *, streaming: bool) -> ModelError:
    """The one mapping of httpx failures: timeouts, then the rest (a stream's: cut)."""
    try:
        where = f"{exc.request.method} {exc.request.url}"
    except RuntimeError:  # httpx raises this when the error has no request attached
        where = "the request"
    detail = f"{type(exc).__name__} on {where}" + (f": {exc}" if str(exc) else "")
    if isinstance(exc, httpx.TimeoutException):
        return ModelTimeoutError(f"timed out: {detail}")
    if streaming:
        return ModelStreamError(f"the stream broke off: {detail}")
    return ModelError(f"the request failed: {detail}")


def _server_message(text: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body itself."""
    try:
        payload = json.loads(text)
    except ValueError:
        return text
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return text


def _decode(fn: Callable[[Any], _T], payload: Any, error: type[ModelError], root: str) -> _T:
    """``fn(payload)``, a structuring error raised as ``error`` saying what is wrong where."""
    try:
        return fn(payload)
    except (BaseValidationError, TypeError, ValueError, KeyError) as exc:
        raise error(f"malformed answer: {describe_error(exc, root)}") from exc


def _json(text: str, error: type[ModelError], what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        # No excerpt: the text is the server's, and nothing it echoes goes into an error.
        raise error(f"{what} is not valid JSON ({exc}; {len(text)} characters)") from exc


def _usage(wire: _WireUsage | None) -> Usage | None:
    if wire is None:
        return None
    total = wire.total_tokens
    if total is None:
        total = wire.prompt_tokens + wire.completion_tokens
    return Usage(wire.prompt_tokens, wire.completion_tokens, total)


# --- answers ----------------------------------------------------------------------------


def parse_completion(payload: Any) -> ModelResponse:
    """A ``ModelResponse`` from a chat-completions JSON answer (its first choice)."""
    wire = _decode(lambda p: converter.structure(p, _WireCompletion), payload, ModelError, "$")
    if not wire.choices:
        raise ModelError("malformed answer: no choices")
    message = _decode(
        assistant_from_wire, wire.choices[0].message, ModelError, "$.choices[0].message"
    )
    finish = wire.choices[0].finish_reason
    return ModelResponse(message, _usage(wire.usage), raw=payload, finish_reason=finish)


def _tool_call_delta(position: int, wire: _WireToolCallDelta) -> ToolCallDelta:
    function = wire.function or _WireFunctionDelta()
    index = wire.index if wire.index is not None else position
    return ToolCallDelta(index, wire.id, function.name, function.arguments or "")


_NO_CHUNK = ModelChunk()


def _text_chunk(payload: Any) -> ModelChunk | None:
    """The chunk of the most common event — one choice, a text delta, no tool calls, no
    usage — read without the converter (it is 2× faster); None for any other shape,
    which then goes the strict way."""
    if type(payload) is not dict or "error" in payload or payload.get("usage") is not None:
        return None
    choices = payload.get("choices")
    if type(choices) is not list or len(choices) != 1 or type(choices[0]) is not dict:
        return None
    choice = choices[0]
    delta, finish = choice.get("delta"), choice.get("finish_reason")
    if choice.get("index", 0) != 0 or type(delta) is not dict or delta.get("tool_calls"):
        return None
    content = delta.get("content")
    if not (content is None or type(content) is str) or not (finish is None or type(finish) is str):
        return None
    return ModelChunk(text=content or "", finish_reason=finish)


def parse_chunk(data: str) -> ModelChunk | None:
    """The ``ModelChunk`` of one SSE ``data`` payload; None when it carries nothing."""
    payload = _json(data, ModelStreamError, "a stream event")
    quick = _text_chunk(payload)
    if quick is not None:
        return None if quick == _NO_CHUNK else quick
    wire = _decode(lambda p: converter.structure(p, _WireChunk), payload, ModelStreamError, "$")
    if wire.error is not None:
        raise ModelStreamError(f"the server sent an error in the stream: {wire.error!r}"[:600])
    choice = next((c for c in wire.choices if c.index == 0), _WireChunkChoice())
    calls = choice.delta.tool_calls or []
    chunk = ModelChunk(
        text=choice.delta.content or "",
        tool_calls=[_tool_call_delta(i, d) for i, d in enumerate(calls)],
        usage=_usage(wire.usage),
        finish_reason=choice.finish_reason,
    )
    return None if chunk == _NO_CHUNK else chunk


@attrs.define
class _SSEDecoder:
    """Turns SSE lines into event data: ``data:`` lines joined, sent on a blank line."""

    data: list[str] = attrs.field(factory=list)

    def feed(self, line: str) -> str | None:
        if not line:
            event = "\n".join(self.data) if self.data else None
            self.data.clear()
            return event
        field, _, value = line.partition(":")
        if field == "data":
            self.data.append(value.removeprefix(" "))
        return None  # comments (":…") and other fields (event, id, retry) are ignored


async def _run_out(lines: AsyncIterator[str]) -> None:
    """Read ``lines`` to their end (for a second at most); a broken connection ends it.

    After ``[DONE]`` this reads the end of the body, so the connection can be reused.
    After the response was closed early the read fails at once, and httpx's nested async
    generators finish instead of being left half-run for the garbage collector, which
    trio warns about (httpx issue #3686).
    """
    with anyio.move_on_after(_RUN_OUT_SECONDS):
        try:
            async for _ in lines:
                pass
        except (httpx.HTTPError, httpx.StreamError) as exc:
            _log.debug("model_stream_run_out", error=type(exc).__name__)


@attrs.define(eq=False)
class _ChunkStream:
    """The chunks of an SSE answer, up to ``[DONE]``; a cut or broken stream raises.

    ``aclose()`` closes the response (the ``stream`` block calls it, shielded).
    """

    response: httpx.Response
    decoder: _SSEDecoder = attrs.field(factory=_SSEDecoder)
    lines: AsyncIterator[str] | None = None
    finished: bool = False

    def __aiter__(self) -> _ChunkStream:
        return self

    async def __anext__(self) -> ModelChunk:
        if self.lines is None:
            self.lines = self.response.aiter_lines()
        while not self.finished:
            data = self.decoder.feed(await self._next_line(self.lines))
            if data == _DONE:
                self.finished = True
                await _run_out(self.lines)
            elif data is not None and (chunk := parse_chunk(data)) is not None:
                return chunk
        raise StopAsyncIteration

    async def _next_line(self, lines: AsyncIterator[str]) -> str:
        """The next line; at the end, a blank one to send a last event (then [DONE] or
        the stream was cut)."""
        try:
            return await anext(lines)
        except StopAsyncIteration:
            self.finished = True
            if self.decoder.data == [_DONE]:
                return ""
            raise ModelStreamError("the stream ended without [DONE]: the answer was cut") from None
        except httpx.RequestError as exc:
            self.finished = True
            raise _transport_error(exc, streaming=True) from exc

    async def aclose(self) -> None:
        await self.response.aclose()
        if self.lines is not None:
            await _run_out(self.lines)


# --- the client -------------------------------------------------------------------------


def _base_url(value: str | None) -> str:
    return (value or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL).rstrip("/")


def _api_key(value: str | None) -> str | None:
    return value or os.environ.get("OPENAI_API_KEY") or None


def _timeout(value: httpx.Timeout | float | None) -> httpx.Timeout:
    return value if isinstance(value, httpx.Timeout) else httpx.Timeout(value)


def _client_for(model: OpenAIChatModel) -> httpx.AsyncClient:
    if model.http_client is not None:
        return model.http_client
    return httpx.AsyncClient(timeout=model.timeout)


@attrs.define(eq=False)
class OpenAIChatModel:
    """A chat model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` and ``api_key`` default to ``OPENAI_BASE_URL`` (else the OpenAI API) and
    ``OPENAI_API_KEY``; ``options.model`` in a request overrides ``model``. ``timeout``
    (an ``httpx.Timeout``, or seconds; ``None`` for none) applies to every request, also
    through a given ``http_client``. ``max_retries``, ``retry_backoff`` (the first pause)
    and ``retry_after_cap`` shape the retries described in the module docstring.

    ``tool_media`` is how what tools return besides text (images, files) reaches the
    model, which takes only text in ``tool`` messages: ``"describe"`` (the default) in
    words in the tool message; ``"user_message"`` also whole in a user message after
    the tool messages, for vision models; ``"parts"`` as the tool message's own content
    parts, for providers that accept them (see ``messages_to_wire``).

    The model owns the HTTP client it makes and closes it in ``aclose()`` (or at the end
    of ``async with``); a given ``http_client`` is left open for its owner.
    """

    model: str
    base_url: str = attrs.field(default=None, converter=_base_url, kw_only=True)
    api_key: str | None = attrs.field(default=None, converter=_api_key, kw_only=True, repr=False)
    timeout: httpx.Timeout = attrs.field(default=_DEFAULT_TIMEOUT, converter=_timeout, kw_only=True)
    max_retries: int = attrs.field(default=2, kw_only=True, validator=attrs.validators.ge(0))
    retry_after_cap: float = attrs.field(default=60.0, kw_only=True)
    retry_backoff: float = attrs.field(default=0.5, kw_only=True)
    http_client: httpx.AsyncClient | None = attrs.field(default=None, kw_only=True, repr=False)
    tool_media: ToolMedia = attrs.field(
        default="describe", kw_only=True, validator=attrs.validators.in_(TOOL_MEDIA)
    )
    _client: httpx.AsyncClient = attrs.field(
        init=False, repr=False, default=attrs.Factory(_client_for, takes_self=True)
    )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client if this model made it; a given one is left open."""
        if self.http_client is None:
            await self._client.aclose()
        else:
            await checkpoint()

    async def call(self, request: ModelRequest) -> ModelResponse:
        """The model's whole answer to ``request`` (retried as the module says)."""
        response = await self._send(self._body(request, stream=False), False)
        payload = _json(response.text, ModelError, "the answer")
        return parse_completion(payload)

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        """The model's answer as chunks; the response is closed when the block ends."""
        response = await self._send(self._body(request, stream=True), True)
        chunks = _ChunkStream(response)
        try:
            yield chunks
        finally:
            with anyio.CancelScope(shield=True):
                await chunks.aclose()

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return request_body(request, self.model, stream=stream, tool_media=self.tool_media)

    @property
    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _build_request(self, body: dict[str, Any], stream: bool) -> httpx.Request:
        headers = {"Accept": "text/event-stream" if stream else "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return self._client.build_request(
            "POST", self._url, json=body, headers=headers, timeout=self.timeout
        )

    async def _send(self, body: dict[str, Any], stream: bool) -> httpx.Response:
        """POST ``body``, retrying as the module says; a success response (body unread
        when ``stream``) or the error of the last attempt."""
        attempt = 0
        while True:
            try:
                response = await self._client.send(self._build_request(body, stream), stream=stream)
                if response.is_success:
                    return response
                error = await self._status_error(response)
            except httpx.RequestError as exc:
                if attempt >= self.max_retries or not _retryable_error(exc):
                    raise _transport_error(exc, streaming=False) from exc
                delay = self._backoff(attempt)
                _log.warning(
                    "model_request_retry",
                    error=type(exc).__name__,
                    attempt=attempt + 1,
                    delay=round(delay, 3),
                )
            else:
                delay = self._status_delay(response, error, attempt)
                _log.warning(
                    "model_request_retry",
                    status=response.status_code,
                    request_id=error.request_id,
                    attempt=attempt + 1,
                    delay=round(delay, 3),
                )
            await anyio.sleep(delay)
            attempt += 1

    def _status_delay(self, response: httpx.Response, error: ModelHTTPError, attempt: int) -> float:
        """The pause before retrying after an error status; raises ``error`` when not to."""
        if attempt >= self.max_retries or not _retryable_status(response.status_code):
            raise error
        asked = retry_after(response.headers)
        if asked is None:
            return self._backoff(attempt)
        if asked > self.retry_after_cap:
            raise ModelHTTPError(
                f"{error} (the server asked to retry after {asked:.1f}s, more than "
                f"retry_after_cap={self.retry_after_cap:.1f}s)",
                status_code=error.status_code,
                request_id=error.request_id,
                body=error.body,
            )
        return max(asked, self._backoff(attempt))

    def _backoff(self, attempt: int) -> float:
        """The pause before retry ``attempt + 1``: doubling from ``retry_backoff``, jittered."""
        return min(self.retry_backoff * 2.0**attempt, _MAX_BACKOFF) * random.uniform(0.75, 1.0)

    async def _status_error(self, response: httpx.Response) -> ModelHTTPError:
        """The ``ModelHTTPError`` for an error status; reads and closes the response."""
        try:
            await response.aread()
        finally:
            await response.aclose()
        text = self._redact(response.text)
        request_id = response.headers.get("x-request-id")
        message = f"HTTP {response.status_code} from {self._url}"
        if request_id:
            message += f" (request id {request_id})"
        message += f": {_server_message(text)[:_EXCERPT]}"
        return ModelHTTPError(
            message,
            status_code=response.status_code,
            request_id=request_id,
            body=text[:_EXCERPT],
        )

    def _redact(self, text: str) -> str:
        """``text`` with the API key blanked out (servers echo it in 401 bodies)."""
        return text.replace(self.api_key, "[api key]") if self.api_key else text
