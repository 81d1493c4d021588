"""The HTTP layer every provider module shares: each provider is only its wire mapping.

An ``Endpoint`` POSTs a JSON body and either reads the whole answer (``Endpoint.call``)
or opens a server-sent-event stream (``Endpoint.stream``) whose events a provider's
``EventParser`` turns into ``ModelChunk``s. The stream is an async context manager, so
the HTTP response is closed however the block ends, cancellation included (shielded).

Retries: a request is sent again, up to ``max_retries`` times, when it could not connect,
timed out, lost its connection before any response came (a pooled connection the server
had closed or reset: ``RemoteProtocolError``, ``ReadError``, ``WriteError``), or got 408,
409, 429 or a 5xx (Anthropic's 529 ``overloaded`` among them) — for a stream only before
any of the answer is read. The pause doubles from
``retry_backoff`` (with jitter, at most 8 s). When the server says how long to wait
(``retry-after-ms``, or ``Retry-After`` in seconds or as an HTTP date; else what the
provider's ``retry_hint`` reads in the error body, as Gemini's ``RetryInfo.retryDelay``)
the pause is never shorter; when it asks for longer than ``retry_after_cap`` the call
fails at once rather than sleep. Other 4xx are never retried. Each retry is reported to
the run's retry listener (``ModelCallRetried``) before the pause.

Errors, mapped in one place each (``transport_error``, ``Endpoint.status_error``)::

    httpx timeout                      → ModelTimeoutError
    other httpx failure                → ModelError (ModelStreamError once streaming)
    HTTP error status                  → ModelHTTPError (status, request id, body excerpt)
    malformed answer                   → ModelError
    stream cut, malformed, or an error → ModelStreamError

The API key travels in a header only (``secret``). Every error leaving ``call`` and
``stream`` has it blanked out (as is, JSON-escaped, URL-encoded; in the server's text both
before and after decoding), in its message, body excerpt and request id and in every
exception chained to it; no error is chained to an httpx request (whose headers carry it)
or to a ``JSONDecodeError`` (whose ``doc`` is the server's text).

Limits on what is read (the README's reliability section): a whole answer at most
``MAX_BODY_BYTES``, one streamed event or line at most ``MAX_EVENT_CHARS``, and every JSON
text within the depth and number limits of ``reactcore._json``; past one, ``ModelError``
(``ModelStreamError`` in a stream), never ``RecursionError``. Text read from a provider is
repaired of invalid Unicode (``clean_text``) by the provider modules; request bodies are
repaired here (``body_bytes``).
"""

from __future__ import annotations

import email.utils
import functools
import json
import math
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC
from typing import Any, Protocol, TypeVar
from urllib.parse import quote, quote_plus

import anyio
import attrs
import httpx
from cattrs.errors import BaseValidationError

from .._exceptions import ModelError, ModelHTTPError, ModelStreamError, ModelTimeoutError
from .._json import MAX_DEPTH, MAX_NUMBER_DIGITS, JSONLimitError
from .._json import loads as bounded_loads
from .._logging import get_logger
from .._serde import clean_text, describe_error
from .base import ModelChunk, ModelResponse, ensure_complete, report_retry

_RETRY_STATUSES = frozenset({408, 409, 429})
_MAX_BACKOFF = 8.0
_EXCERPT = 500
_DONE_GRACE_SECONDS = 0.05
MAX_BODY_BYTES = 16 * 1024 * 1024
"""The most of a whole (non-streamed) answer that is read: past it, ``ModelError``."""
MAX_EVENT_CHARS = 4 * 1024 * 1024
"""The most characters of one streamed event (or one line of it): past it, ``ModelStreamError``."""
_MAX_ERROR_BODY_BYTES = 64 * 1024
_LINE_END = re.compile("\r\n|\r|\n")

_log = get_logger()
_T = TypeVar("_T")

Credentials = Callable[[], Awaitable[tuple[Mapping[str, str], str]]]
"""Asked before each attempt: the credential headers and the token they carry."""


# --- requests ---------------------------------------------------------------------------

# Compact, as httpx encodes ``json=``; NaN is refused (it is no JSON).
_REQUEST_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def body_bytes(body: Mapping[str, Any]) -> bytes:
    """``body`` as UTF-8 JSON. Invalid Unicode (a lone surrogate a caller put in a
    message) is repaired rather than raising ``UnicodeEncodeError`` from the encoder: the
    last line of defence after the cleaning where text enters."""
    return clean_text(_REQUEST_ENCODER.encode(body)).encode("utf-8")


# --- retry decisions --------------------------------------------------------------------


def _retryable_error(exc: httpx.RequestError, *, answered: bool) -> bool:
    """Whether a request that failed with ``exc`` is sent again: it could not connect or
    timed out; or, before any of a response came (``answered`` false), the connection
    broke under it — the server closed or reset it (``RemoteProtocolError`` "Server
    disconnected without sending a response", ``ReadError``, ``WriteError``), as it does
    to a kept-alive connection it drops just as the pool reuses it. Once a response has
    begun, a broken connection is not retried: the server answered."""
    if isinstance(exc, httpx.ConnectError | httpx.TimeoutException):
        return True
    return not answered and isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError)


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


def transport_error(exc: httpx.RequestError, *, streaming: bool) -> ModelError:
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


def server_message(text: str) -> str:
    """The ``error.message`` of an error body (OpenAI's and Anthropic's shape), or its
    top-level ``message`` (AWS's), else the body itself."""
    try:
        payload = loads(text)
    except ValueError:  # malformed, or past a parsing limit
        return text
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    if isinstance(payload, dict):  # AWS: {"message": …} (or "Message")
        said = payload.get("message", payload.get("Message"))
        if isinstance(said, str):
            return said
    return text


def decode(fn: Callable[[Any], _T], payload: Any, error: type[ModelError], root: str) -> _T:
    """``fn(payload)``, a structuring error raised as ``error`` saying what is wrong where."""
    try:
        return fn(payload)
    except (BaseValidationError, TypeError, ValueError, KeyError) as exc:
        problem = describe_error(exc, root)
    # Not chained: the structuring error holds the server's values.
    raise error(f"malformed answer: {problem}")


_NUMBER_LIKE_RUN = re.compile(f"[-+.eE0-9]{{{MAX_NUMBER_DIGITS + 1}}}")


def loads(text: str) -> Any:
    """``text`` parsed within the limits of ``reactcore._json``; the checked parse runs
    only when the text could break one. With at most ``MAX_DEPTH`` opening brackets it
    cannot nest deeper, and without a run of number characters longer than a number may
    be it holds no such number; that is every ordinary event, parsed by the plain C
    decoder (the checked parse is 2–3× slower)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH and not _NUMBER_LIKE_RUN.search(text):
        return json.loads(text)
    return bounded_loads(text)


def parse_json(text: str, error: type[ModelError], what: str) -> Any:
    """``text`` parsed within the limits of ``reactcore._json`` (depth, number length),
    failures raised as ``error``."""
    try:
        return loads(text)
    except JSONLimitError as exc:
        problem = f"is past a parsing limit: {exc}"
    except ValueError as exc:
        problem = f"is not valid JSON ({exc}; {len(text)} characters)"
    # Raised outside the handler, so no chained exception keeps the text (``.doc``): it
    # is the server's, and nothing it echoes goes into an error.
    raise error(f"{what} {problem}")


# --- server-sent events -----------------------------------------------------------------


def _too_long(what: str, size: int) -> ModelStreamError:
    return ModelStreamError(
        f"{what} is longer than {MAX_EVENT_CHARS} characters ({size} read): not parsed"
    )


@attrs.define
class SSEDecoder:
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
        # Comments (":…") and other fields (event, id, retry) are ignored: every provider
        # names the event inside its data too.
        return None


@attrs.define
class LineSplitter:
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


class EventParser(Protocol):
    """A provider's reading of its stream: the chunk of each event's data (None when it
    carries nothing); ``done`` once the provider's last event came (``[DONE]``,
    ``message_stop``). A stream that ends before is cut (``ModelStreamError``)."""

    done: bool

    def feed(self, data: str) -> ModelChunk | None: ...


async def run_out(lines: AsyncIterator[Any]) -> None:
    """Read what is left of ``lines`` (text or bytes) for ``_DONE_GRACE_SECONDS`` at most; a broken
    connection ends it.

    After the last event this reads the end of the body, which a well-behaved server
    sends at once, so the connection can be reused; a server that keeps the body open
    costs no more than the grace (the response is closed then, and its connection with
    it). After the response was closed the read fails at once, and httpx's nested async
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
class ChunkStream:
    """The chunks of an SSE answer, up to the parser's last event; a cut or broken stream
    raises.

    ``aclose()`` closes the response (``Endpoint.stream`` calls it, shielded).
    """

    response: httpx.Response
    parser: EventParser
    decoder: SSEDecoder = attrs.field(factory=SSEDecoder)
    splitter: LineSplitter = attrs.field(factory=LineSplitter)
    texts: AsyncIterator[str] | None = None
    position: int = 0
    finished: bool = False
    flushed: bool = False

    def __aiter__(self) -> ChunkStream:
        return self

    async def __anext__(self) -> ModelChunk:
        if self.texts is None:
            self.texts = self.response.aiter_text()
        while not self.finished:
            data = self.decoder.feed(await self._next_line(self.texts))
            if data is None:
                continue
            chunk = self.parser.feed(data)
            if self.parser.done:
                self.finished = True
                await self.aclose()  # nothing after the last event is read
            if chunk is not None:
                return chunk
        raise StopAsyncIteration

    async def _next_line(self, texts: AsyncIterator[str]) -> str:
        """The next line; at the end, a blank one to send a last event (which may be the
        parser's last), and after it the stream was cut."""
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
                if self.decoder.data and not self.flushed:
                    self.flushed = True
                    return ""
                self.finished = True
                raise ModelStreamError(
                    "the stream ended before its last event: the answer was cut"
                ) from None
            except httpx.RequestError as exc:
                self.finished = True
                failure = transport_error(exc, streaming=True)
            else:
                continue
            raise failure
        self.position += 1
        return lines[self.position - 1]

    async def aclose(self) -> None:
        """Close the response: after the rest of a finished body (so the connection goes
        back to the pool) when it comes within the grace, else at once."""
        if self.finished and self.texts is not None and not self.response.is_closed:
            await run_out(self.texts)
        await self.response.aclose()
        if self.texts is not None:
            await run_out(self.texts)


class StreamReader(Protocol):
    """The chunks of one streamed answer (``ChunkStream`` for SSE, the event-stream reader
    for AWS); ``aclose()`` closes the response."""

    def __aiter__(self) -> AsyncIterator[ModelChunk]: ...

    async def __anext__(self) -> ModelChunk: ...

    async def aclose(self) -> None: ...


Reader = Callable[[httpx.Response, EventParser, Callable[[str], str]], StreamReader]
"""Makes the ``StreamReader`` of a response from the provider's parser and the redaction."""


def sse_reader(
    response: httpx.Response, parser: EventParser, redact: Callable[[str], str]
) -> ChunkStream:
    """The reader of a server-sent-event answer (the providers' usual streams)."""
    return ChunkStream(response, parser)


Signer = Callable[[httpx.Request], Awaitable[Sequence[str]]]
"""Signs a built request before each attempt (its headers changed in place: AWS SigV4)
and gives the secrets it used, which are blanked out of errors as the key is."""


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


# --- key redaction ----------------------------------------------------------------------

_REDACTED = "[api key]"


@functools.lru_cache(maxsize=64)
def _spellings(key: str | None) -> tuple[str, ...]:
    """The ways a body or header may spell ``key``: as is, JSON-escaped (``/`` also as
    ``\\/``), URL-encoded; longest first. The cache is bounded: a token provider's tokens
    change, and the cache must not grow (nor hold every token) with them."""
    if not key:
        return ()
    escaped = json.dumps(key)[1:-1]
    forms = {key, escaped, escaped.replace("/", "\\/"), quote(key, safe=""), quote_plus(key)}
    return tuple(sorted(forms, key=len, reverse=True))


def redact(text: str, secret: str | None, *, mark: str = _REDACTED) -> str:
    """``text`` with ``secret`` replaced by ``mark`` (servers echo it in 401 bodies), also
    spelled as JSON or a URL would spell it."""
    for spelling in _spellings(secret):
        text = text.replace(spelling, mark)
    return text


def scrub(error: BaseException, secret: str | None) -> None:
    """Blank ``secret`` out of ``error`` and every exception chained to it: their messages
    and the text attributes of a ``ModelHTTPError``. The last line of defence, for every
    error leaving a model's ``call`` and ``stream``."""
    if not secret:
        return
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        current.args = tuple(redact(a, secret) if isinstance(a, str) else a for a in current.args)
        if isinstance(current, ModelHTTPError):
            current.body = redact(current.body, secret)
            if current.request_id is not None:
                current.request_id = redact(current.request_id, secret)
        stack += [current.__cause__, current.__context__]


# --- the endpoint -----------------------------------------------------------------------


@attrs.frozen
class Endpoint:
    """Where one provider's requests go and how they are retried.

    ``headers`` carry the credentials, ``secret`` is the key kept out of every error;
    ``request_id_header`` names the header the provider's request id comes in;
    ``retry_hint``, when given, reads the wait an error body asks for (seconds, else
    None), for a provider that says it in the body rather than in ``Retry-After``: the
    header wins when both are there. ``credentials``, when given, is asked before every
    attempt (retries too, as the official SDKs ask a token provider) for the credential
    headers and the token in them, which joins ``secret`` among what is blanked out.
    ``signer``, when given, signs each attempt's built request (AWS SigV4: the signature
    covers the time), the secrets it used blanked out as well. ``reader`` reads a streamed
    answer (server-sent events unless the provider frames it otherwise), asked for as
    ``stream_media_type``.
    """

    client: httpx.AsyncClient = attrs.field(repr=False)
    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    timeout: httpx.Timeout
    max_retries: int = 2
    retry_backoff: float = 0.5
    retry_after_cap: float = 60.0
    secret: str | None = attrs.field(default=None, repr=False)
    request_id_header: str = "x-request-id"
    retry_hint: Callable[[str], float | None] | None = attrs.field(default=None, repr=False)
    credentials: Credentials | None = attrs.field(default=None, repr=False)
    signer: Signer | None = attrs.field(default=None, repr=False)
    reader: Reader = attrs.field(default=sse_reader, repr=False)
    stream_media_type: str = "text/event-stream"
    _issued: list[str] = attrs.field(factory=list, init=False, repr=False)

    async def call(
        self,
        body: Mapping[str, Any],
        context: Mapping[str, Any],
        parse: Callable[[Any], ModelResponse],
    ) -> ModelResponse:
        """``parse`` of the whole JSON answer to ``body`` (retried as the module says);
        cut tool calls raise ``ModelTruncatedError`` (``ensure_complete``)."""
        try:
            text = await self._send(body, False, _whole_text, context)
            return ensure_complete(parse(parse_json(text, ModelError, "the answer")))
        except ModelError as exc:
            self._scrub(exc)
            raise

    @asynccontextmanager
    async def stream(
        self,
        body: Mapping[str, Any],
        context: Mapping[str, Any],
        parser: Callable[[Callable[[str], str]], EventParser],
    ) -> AsyncIterator[StreamReader]:
        """The streamed answer to ``body`` as chunks, read by ``parser(redact)``; the
        response is closed when the block ends."""
        try:
            response = await self._send(body, True, _unread, context)
        except ModelError as exc:
            self._scrub(exc)
            raise
        chunks = self.reader(response, parser(self.redact), self.redact)
        try:
            yield chunks
        except ModelError as exc:
            self._scrub(exc)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await chunks.aclose()

    def _secrets(self) -> list[str]:
        return [s for s in (self.secret, *self._issued) if s]

    def redact(self, text: str) -> str:
        """``text`` with the key and every token issued so far blanked out (see ``redact``)."""
        for secret in self._secrets():
            text = redact(text, secret)
        return text

    def _scrub(self, error: BaseException) -> None:
        for secret in self._secrets():
            scrub(error, secret)

    async def _credential_headers(self) -> Mapping[str, str]:
        if self.credentials is None:
            return {}
        headers, token = await self.credentials()
        self._remember([token])
        return headers

    def _remember(self, secrets: Sequence[str]) -> None:
        """Keep ``secrets`` to blank out (once each: a signer gives the same ones)."""
        self._issued.extend(s for s in secrets if s and s not in self._issued)

    def _build_request(
        self, body: Mapping[str, Any], stream: bool, credentials: Mapping[str, str]
    ) -> httpx.Request:
        headers = {
            "Accept": self.stream_media_type if stream else "application/json",
            "Content-Type": "application/json",
            **self.headers,
            **credentials,
        }
        return self.client.build_request(
            "POST", self.url, content=body_bytes(body), headers=headers, timeout=self.timeout
        )

    async def _send(
        self,
        body: Mapping[str, Any],
        stream: bool,
        read: Callable[[httpx.Response], Awaitable[_T]],
        context: Mapping[str, Any],
    ) -> _T:
        """POST ``body``, retrying as the module says; what ``read`` makes of a success
        response (reading its body is part of the attempt), or the error of the last one.

        Each retry is reported to the run's retry listener in ``context`` first."""
        attempt = 0
        while True:
            answered = False
            try:
                request = self._build_request(body, stream, await self._credential_headers())
                if self.signer is not None:
                    self._remember(await self.signer(request))
                response = await self.client.send(request, stream=True)
                answered = True
                if response.is_success:
                    return await read(response)
                error = await self.status_error(response)
            except httpx.RequestError as exc:
                failure = transport_error(exc, streaming=False)
                if attempt >= self.max_retries or not _retryable_error(exc, answered=answered):
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

    async def status_error(self, response: httpx.Response) -> ModelHTTPError:
        """The ``ModelHTTPError`` for an error status; reads and closes the response."""
        text = self.redact(_text(response, await _read_up_to(response, _MAX_ERROR_BODY_BYTES)))
        request_id = response.headers.get(self.request_id_header)
        request_id = None if request_id is None else self.redact(request_id)
        message = f"HTTP {response.status_code} from {self.url}"
        if request_id:
            message += f" (request id {request_id})"
        # Redacted again once decoded: JSON may spell the key with escapes (``\/``).
        message += f": {self.redact(server_message(text))[:_EXCERPT]}"
        return ModelHTTPError(
            message,
            status_code=response.status_code,
            request_id=request_id,
            body=text[:_EXCERPT],
            retry_after=self._asked_wait(response.headers, text),
        )

    def _asked_wait(self, headers: httpx.Headers, text: str) -> float | None:
        """The wait the server asked for: its headers' (``retry_after``), else what
        ``retry_hint`` reads in the error body."""
        asked = retry_after(headers)
        if asked is None and self.retry_hint is not None:
            asked = self.retry_hint(text)
        return asked
