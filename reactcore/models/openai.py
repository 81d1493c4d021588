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

The API key travels in the ``Authorization`` header only: it is left out of the repr
and never logged. Every error leaving ``call`` and ``stream`` has it blanked out (as is,
JSON-escaped, URL-encoded; in the server's text both before and after decoding), in its
message, body excerpt and request id and in every exception chained to it; no error is
chained to an httpx request (whose headers carry it) or to a ``JSONDecodeError`` (whose
``doc`` is the server's text).

Limits on what is read (the README's reliability section): a whole answer at most
``MAX_BODY_BYTES``, one streamed event or line at most ``MAX_EVENT_CHARS``, and every JSON
text within the depth and number limits of ``reactcore._json``; past one, ``ModelError``
(``ModelStreamError`` in a stream), never ``RecursionError``.
"""

from __future__ import annotations

import email.utils
import functools
import json
import math
import os
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC
from typing import Any, Self, TypeVar
from urllib.parse import quote, quote_plus

import anyio
import attrs
import httpx
from anyio.lowlevel import checkpoint
from cattrs.errors import BaseValidationError

from .._exceptions import ModelError, ModelHTTPError, ModelStreamError, ModelTimeoutError
from .._json import MAX_DEPTH, MAX_NUMBER_DIGITS, JSONLimitError
from .._json import loads as bounded_loads
from .._logging import get_logger
from .._serde import (
    TOOL_MEDIA,
    ToolMedia,
    _wire_hook,
    assistant_from_wire,
    clean_text,
    converter,
    describe_error,
    messages_to_wire,
    reasoning_text,
)
from .base import (
    ModelChunk,
    ModelRequest,
    ModelResponse,
    ToolCallDelta,
    ToolSpec,
    Usage,
    ensure_complete,
    report_retry,
)

_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DEFAULT_TIMEOUT = httpx.Timeout(60, connect=5)
_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_BACKOFF = 8.0
_EXCERPT = 500
_DONE = "[DONE]"
_DONE_GRACE_SECONDS = 0.05
MAX_BODY_BYTES = 16 * 1024 * 1024
"""The most of a whole (non-streamed) answer that is read: past it, ``ModelError``."""
MAX_EVENT_CHARS = 4 * 1024 * 1024
"""The most characters of one streamed event (or one line of it): past it, ``ModelStreamError``."""
_MAX_ERROR_BODY_BYTES = 64 * 1024
_LINE_END = re.compile("\r\n|\r|\n")
_OPTIONS = ("temperature", "top_p", "max_tokens", "tool_choice", "response_format")

_log = get_logger()
_T = TypeVar("_T")


# --- the wire format of answers (requests are built from plain dicts) -------------------


@attrs.frozen
class _WirePromptDetails:
    cached_tokens: int | None = None


@attrs.frozen
class _WireCompletionDetails:
    reasoning_tokens: int | None = None


@attrs.frozen
class _WireUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int | None = None
    prompt_tokens_details: _WirePromptDetails | None = None
    completion_tokens_details: _WireCompletionDetails | None = None


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
    reasoning_content: Any = None
    reasoning: Any = None


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
    _WirePromptDetails,
    _WireCompletionDetails,
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
    request: ModelRequest,
    model: str,
    *,
    stream: bool,
    tool_media: ToolMedia = "describe",
    send_reasoning: bool = False,
) -> dict[str, Any]:
    """The JSON body of a chat-completions request for ``request``.

    The system message goes first; tools are the visible ones (the key is left out when
    there are none); options are sent only when set; ``extra_body`` is merged in last.
    ``tool_media`` says how tools' images and files are sent (see ``messages_to_wire``);
    with ``send_reasoning``, assistant messages carry their ``reasoning_content``.
    """
    options = request.options
    system = [request.system_message] if request.system_message is not None else []
    messages = messages_to_wire(
        [*system, *request.messages], tool_media=tool_media, reasoning=send_reasoning
    )
    body: dict[str, Any] = {"model": options.model or model, "messages": messages}
    tools = [_tool_to_wire(spec) for spec in request.visible_tool_specs()]
    if tools:
        body["tools"] = tools
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
    for name in _OPTIONS:
        value = getattr(options, name)
        if value is not None:
            body[name] = converter.unstructure(value)
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(converter.unstructure(dict(options.extra_body)))
    return body


# Compact, as httpx encodes ``json=``; NaN is refused (it is no JSON).
_REQUEST_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _body_bytes(body: dict[str, Any]) -> bytes:
    """``body`` as UTF-8 JSON. Invalid Unicode (a lone surrogate a caller put in a
    message) is repaired rather than raising ``UnicodeEncodeError`` from the encoder: the
    last line of defence after the cleaning where text enters."""
    return clean_text(_REQUEST_ENCODER.encode(body)).encode("utf-8")


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


def _over_the_cap(error: ModelHTTPError, cap: float) -> ModelHTTPError:
    """``error`` saying the server asked to wait longer than ``cap`` (so no retry)."""
    return ModelHTTPError(
        f"{error} (the server asked to retry after {error.retry_after:.1f}s, more than "
        f"retry_after_cap={cap:.1f}s)",
        status_code=error.status_code,
        request_id=error.request_id,
        body=error.body,
        retry_after=error.retry_after,
    )


# --- errors -----------------------------------------------------------------------------


def _detached(exc: httpx.RequestError) -> httpx.RequestError:
    """A copy of ``exc`` without its request, whose headers carry the API key: what a
    ``ModelError`` is chained to."""
    try:
        copy = type(exc)(str(exc))
    except TypeError:  # a subclass with another signature: its class is kept in the text
        copy = httpx.RequestError(f"{type(exc).__name__}: {exc}")
    copy.__traceback__ = None
    return copy


def _transport_error(exc: httpx.RequestError, *, streaming: bool) -> ModelError:
    """The one mapping of httpx failures: timeouts, then the rest (a stream's: cut).

    Chained to a copy of ``exc`` without its request (see ``_detached``); raise it outside
    the ``except`` block, so ``__context__`` does not keep the original either.
    """
    try:
        where = f"{exc.request.method} {exc.request.url}"
    except RuntimeError:  # httpx raises this when the error has no request attached
        where = "the request"
    detail = f"{type(exc).__name__} on {where}" + (f": {exc}" if str(exc) else "")
    if isinstance(exc, httpx.TimeoutException):
        error: ModelError = ModelTimeoutError(f"timed out: {detail}")
    elif streaming:
        error = ModelStreamError(f"the stream broke off: {detail}")
    else:
        error = ModelError(f"the request failed: {detail}")
    error.__cause__ = _detached(exc)
    return error


def _server_message(text: str) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body itself."""
    try:
        payload = _loads(text)
    except ValueError:  # malformed, or past a parsing limit
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
        problem = describe_error(exc, root)
    # Not chained: the structuring error holds the server's values.
    raise error(f"malformed answer: {problem}")


_NUMBER_LIKE_RUN = re.compile(f"[-+.eE0-9]{{{MAX_NUMBER_DIGITS + 1}}}")


def _loads(text: str) -> Any:
    """``text`` parsed within the limits of ``reactcore._json``; the checked parse runs
    only when the text could break one. With at most ``MAX_DEPTH`` opening brackets it
    cannot nest deeper, and without a run of number characters longer than a number may
    be it holds no such number; that is every ordinary event, parsed by the plain C
    decoder (the checked parse is 2–3× slower)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH and not _NUMBER_LIKE_RUN.search(text):
        return json.loads(text)
    return bounded_loads(text)


def _json(text: str, error: type[ModelError], what: str) -> Any:
    """``text`` parsed within the limits of ``reactcore._json`` (depth, number length),
    failures raised as ``error``."""
    try:
        return _loads(text)
    except JSONLimitError as exc:
        problem = f"is past a parsing limit: {exc}"
    except ValueError as exc:
        problem = f"is not valid JSON ({exc}; {len(text)} characters)"
    # Raised outside the handler, so no chained exception keeps the text (``.doc``): it
    # is the server's, and nothing it echoes goes into an error.
    raise error(f"{what} {problem}")


def _usage(wire: _WireUsage | None) -> Usage | None:
    if wire is None:
        return None
    total = wire.total_tokens
    if total is None:
        total = wire.prompt_tokens + wire.completion_tokens
    prompt, completion = wire.prompt_tokens_details, wire.completion_tokens_details
    return Usage(
        wire.prompt_tokens,
        wire.completion_tokens,
        total,
        cached_tokens=(prompt.cached_tokens or 0) if prompt else 0,
        reasoning_tokens=(completion.reasoning_tokens or 0) if completion else 0,
    )


# --- answers ----------------------------------------------------------------------------


def parse_completion(payload: Any) -> ModelResponse:
    """A ``ModelResponse`` from a chat-completions JSON answer (its first choice)."""
    wire = _decode(lambda p: converter.structure(p, _WireCompletion), payload, ModelError, "$")
    if not wire.choices:
        raise ModelError("malformed answer: no choices")
    choice = wire.choices[0]
    message = _decode(assistant_from_wire, choice.message, ModelError, "$.choices[0].message")
    message = attrs.evolve(message, finish_reason=choice.finish_reason)
    return ModelResponse(
        message, _usage(wire.usage), raw=payload, finish_reason=choice.finish_reason
    )


def _tool_call_delta(position: int, wire: _WireToolCallDelta) -> ToolCallDelta:
    function = wire.function or _WireFunctionDelta()
    index = wire.index if wire.index is not None else position
    return ToolCallDelta(
        index,
        None if wire.id is None else clean_text(wire.id),
        None if function.name is None else clean_text(function.name),
        clean_text(function.arguments or ""),
    )


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
    if delta.get("reasoning_content") or delta.get("reasoning"):
        return None
    content = delta.get("content")
    if not (content is None or type(content) is str) or not (finish is None or type(finish) is str):
        return None
    return ModelChunk(text=clean_text(content) if content else "", finish_reason=finish)


def _as_is(text: str) -> str:
    return text


def parse_chunk(data: str, redact: Callable[[str], str] = _as_is) -> ModelChunk | None:
    """The ``ModelChunk`` of one SSE ``data`` payload; None when it carries nothing.

    An error event raises ``ModelStreamError`` with the server's error, passed through
    ``redact`` (before it is cut to length) and never chained to the payload.
    """
    payload = _json(data, ModelStreamError, "a stream event")
    quick = _text_chunk(payload)
    if quick is not None:
        return None if quick == _NO_CHUNK else quick
    wire = _decode(lambda p: converter.structure(p, _WireChunk), payload, ModelStreamError, "$")
    if wire.error is not None:
        said = redact(repr(wire.error))
        raise ModelStreamError(f"the server sent an error in the stream: {said}"[:600])
    choice = next((c for c in wire.choices if c.index == 0), _WireChunkChoice())
    calls = choice.delta.tool_calls or []
    chunk = ModelChunk(
        text=clean_text(choice.delta.content or ""),
        reasoning=reasoning_text(choice.delta.reasoning_content, choice.delta.reasoning),
        tool_calls=[_tool_call_delta(i, d) for i, d in enumerate(calls)],
        usage=_usage(wire.usage),
        finish_reason=choice.finish_reason,
    )
    return None if chunk == _NO_CHUNK else chunk


def _too_long(what: str, size: int) -> ModelStreamError:
    return ModelStreamError(
        f"{what} is longer than {MAX_EVENT_CHARS} characters ({size} read): not parsed"
    )


@attrs.define
class _SSEDecoder:
    """Turns SSE lines into event data: ``data:`` lines joined, sent on a blank line.

    An event longer than ``MAX_EVENT_CHARS`` raises ``ModelStreamError``.
    """

    data: list[str] = attrs.field(factory=list)
    size: int = 0

    def feed(self, line: str) -> str | None:
        if not line:
            event = "\n".join(self.data) if self.data else None
            self.data.clear()
            self.size = 0
            return event
        field, _, value = line.partition(":")
        if field == "data":
            self.data.append(value.removeprefix(" "))
            self.size += len(value)
            if self.size > MAX_EVENT_CHARS:
                raise _too_long("a stream event", self.size)
        return None  # comments (":…") and other fields (event, id, retry) are ignored


@attrs.define
class _LineSplitter:
    """Splits streamed text into SSE lines (ended by CRLF, LF or CR); a line longer than
    ``MAX_EVENT_CHARS`` raises ``ModelStreamError`` before it is all held in memory."""

    lines: list[str] = attrs.field(factory=list)
    rest: list[str] = attrs.field(factory=list)
    rest_size: int = 0
    skip_lf: bool = False  # the last text ended with CR: a leading LF ends the same line

    def feed(self, text: str) -> None:
        if self.skip_lf and text.startswith("\n"):
            text = text[1:]
        self.skip_lf = False
        if "\n" not in text and "\r" not in text:
            self._keep(text)
            return
        data = "".join(self.rest) + text
        self.rest.clear()
        self.rest_size = 0
        if data.endswith("\r"):
            self.skip_lf = True
            self.lines.extend(_LINE_END.split(data[:-1]))
            return
        *complete, tail = _LINE_END.split(data)
        self.lines.extend(complete)
        self._keep(tail)

    def end(self) -> None:
        """The text has ended: an unfinished last line is a line."""
        if self.rest:
            self.lines.append("".join(self.rest))
            self.rest.clear()

    def _keep(self, text: str) -> None:
        if text:
            self.rest.append(text)
            self.rest_size += len(text)
            if self.rest_size > MAX_EVENT_CHARS:
                raise _too_long("a line of the stream", self.rest_size)


async def _run_out(lines: AsyncIterator[str]) -> None:
    """Read what is left of ``lines`` for ``_DONE_GRACE_SECONDS`` at most; a broken
    connection ends it.

    After ``[DONE]`` this reads the end of the body, which a well-behaved server sends at
    once, so the connection can be reused; a server that keeps the body open costs no
    more than the grace (the response is closed then, and its connection with it).
    After the response was closed the read fails at once, and httpx's nested async
    generators finish instead of being left half-run for the garbage collector, which
    trio warns about (httpx issue #3686).
    """
    with anyio.move_on_after(_DONE_GRACE_SECONDS):
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
    redact: Callable[[str], str] = _as_is
    decoder: _SSEDecoder = attrs.field(factory=_SSEDecoder)
    splitter: _LineSplitter = attrs.field(factory=_LineSplitter)
    texts: AsyncIterator[str] | None = None
    position: int = 0
    finished: bool = False

    def __aiter__(self) -> _ChunkStream:
        return self

    async def __anext__(self) -> ModelChunk:
        if self.texts is None:
            self.texts = self.response.aiter_text()
        while not self.finished:
            data = self.decoder.feed(await self._next_line(self.texts))
            if data == _DONE:
                self.finished = True
                await self.aclose()  # nothing after [DONE] is read: release the connection
            elif data is not None and (chunk := parse_chunk(data, self.redact)) is not None:
                return chunk
        raise StopAsyncIteration

    async def _next_line(self, texts: AsyncIterator[str]) -> str:
        """The next line; at the end, a blank one to send a last event (then [DONE] or
        the stream was cut)."""
        lines = self.splitter.lines
        while self.position >= len(lines):
            lines.clear()
            self.position = 0
            try:
                self.splitter.feed(await anext(texts))
            except StopAsyncIteration:
                self.splitter.end()
                if lines:
                    break
                self.finished = True
                if self.decoder.data == [_DONE]:
                    return ""
                raise ModelStreamError(
                    "the stream ended without [DONE]: the answer was cut"
                ) from None
            except httpx.RequestError as exc:
                self.finished = True
                failure = _transport_error(exc, streaming=True)
            else:
                continue
            raise failure
        self.position += 1
        return lines[self.position - 1]

    async def aclose(self) -> None:
        """Close the response: after the rest of a finished body (so the connection goes
        back to the pool) when it comes within the grace, else at once."""
        if self.finished and self.texts is not None and not self.response.is_closed:
            await _run_out(self.texts)
        await self.response.aclose()
        if self.texts is not None:
            await _run_out(self.texts)


async def _read_up_to(response: httpx.Response, limit: int) -> bytes:
    """The body of ``response``, ``limit + 1`` bytes at most (so "too long" shows); the
    response is closed after."""
    body = bytearray()
    try:
        async for data in response.aiter_bytes():
            body += data
            if len(body) > limit:
                break
    finally:
        await response.aclose()
    return bytes(body[: limit + 1])


def _text(response: httpx.Response, body: bytes) -> str:
    """``body`` decoded as the response says (UTF-8 by default); bad bytes become U+FFFD."""
    return body.decode(response.encoding or "utf-8", errors="replace")


async def _whole_text(response: httpx.Response) -> str:
    """The whole body as text; past ``MAX_BODY_BYTES``, ``ModelError`` (not parsed)."""
    body = await _read_up_to(response, MAX_BODY_BYTES)
    if len(body) > MAX_BODY_BYTES:
        raise ModelError(f"the answer is longer than {MAX_BODY_BYTES} bytes: not parsed")
    return _text(response, body)


async def _unread(response: httpx.Response) -> httpx.Response:
    """The response itself, its body left to stream."""
    return response


# --- the client -------------------------------------------------------------------------

_REDACTED = "[api key]"


@functools.cache
def _spellings(key: str | None) -> tuple[str, ...]:
    """The ways a body or header may spell ``key``: as is, JSON-escaped (``/`` also as
    ``\\/``), URL-encoded; longest first."""
    if not key:
        return ()
    escaped = json.dumps(key)[1:-1]
    forms = {key, escaped, escaped.replace("/", "\\/"), quote(key, safe=""), quote_plus(key)}
    return tuple(sorted(forms, key=len, reverse=True))


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

    The model's reasoning (``reasoning_content`` or ``reasoning``) is kept on the
    ``AssistantMessage`` and streamed as its own chunks. ``send_reasoning=True`` sends it
    back, as ``reasoning_content`` on earlier assistant messages, for providers that
    require it (DeepSeek's thinking mode with tool calls, Kimi); by default it is not
    sent, as others reject it.

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
    send_reasoning: bool = attrs.field(default=False, kw_only=True)
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
        try:
            text = await self._send(
                self._body(request, stream=False), False, _whole_text, request.context
            )
            return ensure_complete(parse_completion(_json(text, ModelError, "the answer")))
        except ModelError as exc:
            self._scrub(exc)
            raise

    @asynccontextmanager
    async def stream(self, request: ModelRequest) -> AsyncIterator[AsyncIterator[ModelChunk]]:
        """The model's answer as chunks; the response is closed when the block ends."""
        try:
            response = await self._send(
                self._body(request, stream=True), True, _unread, request.context
            )
        except ModelError as exc:
            self._scrub(exc)
            raise
        chunks = _ChunkStream(response, self._redact)
        try:
            yield chunks
        except ModelError as exc:
            self._scrub(exc)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await chunks.aclose()

    def _body(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        return request_body(
            request,
            self.model,
            stream=stream,
            tool_media=self.tool_media,
            send_reasoning=self.send_reasoning,
        )

    @property
    def _url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def _build_request(self, body: dict[str, Any], stream: bool) -> httpx.Request:
        headers = {
            "Accept": "text/event-stream" if stream else "application/json",
            "Content-Type": "application/json",
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return self._client.build_request(
            "POST", self._url, content=_body_bytes(body), headers=headers, timeout=self.timeout
        )

    async def _send(
        self,
        body: dict[str, Any],
        stream: bool,
        read: Callable[[httpx.Response], Awaitable[_T]],
        context: Mapping[str, Any],
    ) -> _T:
        """POST ``body``, retrying as the module says; what ``read`` makes of a success
        response (reading its body is part of the attempt), or the error of the last one.

        Each retry is reported to the run's retry listener in ``context`` first."""
        attempt = 0
        while True:
            try:
                response = await self._client.send(self._build_request(body, stream), stream=True)
                if response.is_success:
                    return await read(response)
                error = await self._status_error(response)
            except httpx.RequestError as exc:
                failure = _transport_error(exc, streaming=False)
                if attempt >= self.max_retries or not _retryable_error(exc):
                    break
                delay = self._backoff(attempt)
                reason = type(exc).__name__
                _log.warning(
                    "model_request_retry", error=reason, attempt=attempt + 1, delay=round(delay, 3)
                )
            else:
                delay = self._status_delay(response, error, attempt)
                reason = f"HTTP {response.status_code}"
                _log.warning(
                    "model_request_retry",
                    status=response.status_code,
                    request_id=error.request_id,
                    attempt=attempt + 1,
                    delay=round(delay, 3),
                )
            await report_retry(context, attempt + 1, delay, reason)
            await anyio.sleep(delay)
            attempt += 1
        raise failure  # outside the handler: no __context__ holding the request

    def _status_delay(self, response: httpx.Response, error: ModelHTTPError, attempt: int) -> float:
        """The pause before retrying after an error status; raises ``error`` when not to."""
        if attempt >= self.max_retries or not _retryable_status(response.status_code):
            raise error
        asked = error.retry_after
        if asked is None:
            return self._backoff(attempt)
        if asked > self.retry_after_cap:
            raise _over_the_cap(error, self.retry_after_cap)
        return max(asked, self._backoff(attempt))

    def _backoff(self, attempt: int) -> float:
        """The pause before retry ``attempt + 1``: doubling from ``retry_backoff``, jittered."""
        return min(self.retry_backoff * 2.0**attempt, _MAX_BACKOFF) * random.uniform(0.75, 1.0)

    async def _status_error(self, response: httpx.Response) -> ModelHTTPError:
        """The ``ModelHTTPError`` for an error status; reads and closes the response."""
        text = self._redact(_text(response, await _read_up_to(response, _MAX_ERROR_BODY_BYTES)))
        request_id = response.headers.get("x-request-id")
        request_id = None if request_id is None else self._redact(request_id)
        message = f"HTTP {response.status_code} from {self._url}"
        if request_id:
            message += f" (request id {request_id})"
        # Redacted again once decoded: JSON may spell the key with escapes (``\/``).
        message += f": {self._redact(_server_message(text))[:_EXCERPT]}"
        return ModelHTTPError(
            message,
            status_code=response.status_code,
            request_id=request_id,
            body=text[:_EXCERPT],
            retry_after=retry_after(response.headers),
        )

    def _redact(self, text: str) -> str:
        """``text`` with the API key blanked out (servers echo it in 401 bodies), also
        spelled as JSON or a URL would spell it."""
        for spelling in _spellings(self.api_key):
            text = text.replace(spelling, _REDACTED)
        return text

    def _scrub(self, error: ModelError) -> None:
        """Blank the API key out of ``error`` and every exception chained to it: their
        messages and the text attributes of a ``ModelHTTPError``. The last line of
        defence, for every error leaving ``call`` and ``stream``."""
        seen: set[int] = set()
        stack: list[BaseException | None] = [error]
        while stack:
            current = stack.pop()
            if current is None or id(current) in seen:
                continue
            seen.add(id(current))
            current.args = tuple(self._redact(a) if isinstance(a, str) else a for a in current.args)
            if isinstance(current, ModelHTTPError):
                current.body = self._redact(current.body)
                if current.request_id is not None:
                    current.request_id = self._redact(current.request_id)
            stack += [current.__cause__, current.__context__]
