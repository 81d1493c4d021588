"""Cassettes: a run's model traffic and tool I/O recorded to a file, replayed offline.

A ``Cassette`` records at the HTTP layer every provider shares: its ``http_client`` (give
it to a model as ``http_client=``) sends through a transport that, recording, passes each
request to the network and keeps the request and its answer — whole, or a stream's text
chunk by chunk, so a replay streams the same frames — and, replaying, answers from the
file and never opens a connection. Used as a tool interceptor (``interceptors=[cassette]``)
it records what each tool call answered — content parts (an image, a file) and a pause
for approval included (``reactcore._cassette_tools``) — and replays it without running
the tool, so a test can replay a run whose tools call real services.

The file is JSON, indented, one interaction per list item in the order they happened;
keys and secrets never get in (``reactcore._cassette_match``). A replayed request is
matched by the hash of its canonical method, path and body; identical requests (or tool
calls) replay their recordings in recorded order, a tool call preferring the recording
of its own call id, so parallel batches replay the same on asyncio and trio. A request or
call that matches nothing raises ``CassetteMismatchError`` naming the first field where it
differs from the nearest recording.

Modes: ``"record"`` always sends and overwrites the file on ``save()``; ``"replay"`` never
sends (a missing file is a ``CassetteError``); ``"once"`` replays when the file exists,
else records.
"""

from __future__ import annotations

import codecs
import json
import os
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self, get_args

import attrs
import httpx
from anyio.lowlevel import checkpoint

from . import _validate as valid
from ._cassette_match import (
    RESPONSE_HEADERS,
    describe,
    kept_headers,
    key_of,
    learn_secrets,
    matched,
    nearest,
    plain,
    redact_json,
    redact_text,
    request_record,
)
from ._cassette_tools import answer_of, answer_record, call_record
from ._exceptions import CassetteError, CassetteMismatchError
from ._interceptors import ToolCallRequest, ToolCallResponse, ToolHandler

CassetteMode = Literal["record", "replay", "once"]
"""How a ``Cassette`` works: always record, only replay, or replay once recorded."""

_FORMAT = 1
_JSON_TYPES = ("application/json", "+json")
# Not replayed: the recorded body is the decoded one, and its length is what the chunks make.
_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def _path(value: Any) -> Any:
    """A ``Cassette.path``: a ``Path`` of a str or path-like (else left for the check)."""
    return Path(value) if isinstance(value, str | os.PathLike) else valid.leave(value)


def _secrets(value: Any) -> Any:
    """``Cassette.secrets``: one string, or a collection of them, as a tuple."""
    if isinstance(value, str):
        return (value,)
    return tuple(value) if isinstance(value, list | tuple | set | frozenset) else value


@attrs.define(eq=False)
class Cassette:
    """One cassette file (see the module): ``with Cassette(path, mode="once") as
    cassette:`` loads it (replaying) and, when the block ends without an exception,
    writes what was recorded (recording).

    ``secrets`` are strings kept out of the file besides the credentials requests carry
    (which are found by themselves). ``transport``, when recording, is where requests
    really go (default: a fresh ``httpx.AsyncHTTPTransport`` per request, closed with
    its response, so nothing outlives a call).
    """

    path: Path = attrs.field(converter=_path, validator=valid.instance_of(Path, "a path"))
    mode: CassetteMode = attrs.field(
        default="once",
        kw_only=True,
        validator=valid.one_of(*get_args(CassetteMode)),
    )
    secrets: tuple[str, ...] = attrs.field(
        default=(),
        kw_only=True,
        converter=_secrets,
        validator=valid.each(valid.text(non_empty=True)),
    )
    transport: httpx.AsyncBaseTransport | None = attrs.field(
        default=None,
        kw_only=True,
        repr=False,
        validator=valid.instance_of(httpx.AsyncBaseTransport, "an httpx transport", optional=True),
    )
    _recording: bool | None = attrs.field(default=None, init=False)
    _interactions: list[dict[str, Any]] = attrs.field(factory=list, init=False, repr=False)
    _open: list[_Recorder] = attrs.field(factory=list, init=False, repr=False)
    _queues: dict[str, deque[int]] = attrs.field(factory=dict, init=False, repr=False)
    _client: httpx.AsyncClient | None = attrs.field(default=None, init=False, repr=False)
    # ``secrets`` and every credential a request carried so far: kept out of every record.
    _known: tuple[str, ...] = attrs.field(default=(), init=False, repr=False)

    # --- life -----------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.begin()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None:
            self.save()

    @property
    def recording(self) -> bool:
        """Whether this cassette records (else it replays): ``mode`` resolved, for
        ``"once"``, by whether the file exists."""
        self.begin()
        assert self._recording is not None
        return self._recording

    def begin(self) -> None:
        """Resolve the mode and, replaying, load the file; once (``with`` does it, and so
        does the first request or tool call)."""
        if self._recording is not None:
            return
        if self.mode == "record" or (self.mode == "once" and not self.path.exists()):
            self._recording = True
            return
        self._interactions = _load(self.path)
        for number, interaction in enumerate(self._interactions):
            self._queues.setdefault(_key(interaction), deque()).append(number)
        self._recording = False

    def save(self) -> None:
        """Write what was recorded (nothing when replaying): the whole file, replaced."""
        if not self.recording:
            return
        for recorder in self._open:
            recorder.finish()
        self._open.clear()
        kept = [i for i in self._interactions if "response" in i or "error" in i]
        document = {"reactcore_cassette": _FORMAT, "interactions": kept}
        try:
            text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # bytes that were no UTF-8, kept as escapes
            data = (json.dumps(document, indent=2) + "\n").encode("ascii")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_bytes(data)
        except OSError as exc:
            raise CassetteError(f"cannot write the cassette {self.path}: {exc}") from exc

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The client to give a model (``http_client=``): its requests go through this
        cassette. It reads no proxy settings from the environment (a replay never
        connects); closing it is not needed (it holds no connection)."""
        if self._client is None:
            self._client = httpx.AsyncClient(transport=_CassetteTransport(self), trust_env=False)
        return self._client

    # --- model traffic --------------------------------------------------------------------

    async def _handle(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        self._known = secrets = learn_secrets(request.headers, (*self.secrets, *self._known))
        record = request_record(request, secrets)
        if self.recording:
            return await self._record(request, record, secrets)
        interaction = self._take(record, matched(record), "path", "request")
        await checkpoint()
        return _replayed(request, interaction)

    async def _record(
        self, request: httpx.Request, record: dict[str, Any], secrets: tuple[str, ...]
    ) -> httpx.Response:
        interaction: dict[str, Any] = {"kind": "http", "request": record}
        self._interactions.append(interaction)
        transport = self.transport or httpx.AsyncHTTPTransport()
        owned = self.transport is None
        try:
            answer = await transport.handle_async_request(request)
        except httpx.TransportError as exc:
            interaction["error"] = _error_record(exc, secrets)
            if owned:
                await transport.aclose()
            raise
        recorder = _Recorder(
            interaction,
            httpx.Response(answer.status_code, headers=answer.headers, stream=answer.stream),
            secrets,
            transport if owned else None,
        )
        self._open.append(recorder)
        headers = [
            (name, value)
            for name, value in answer.headers.multi_items()
            if name.lower() not in _DROPPED_HEADERS
        ]
        return httpx.Response(answer.status_code, headers=headers, stream=recorder, request=request)

    # --- tool I/O ---------------------------------------------------------------------------

    async def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolCallResponse:
        """Record the call's answer, or replay it without running the tool."""
        call = request.call
        secrets = self._known or self.secrets
        what = call_record(request, secrets)
        if not self.recording:
            recorded = self._take(what, what, "tool", "tool call", call_id=call.id)
            await checkpoint()
            return answer_of(recorded["response"], str(self.path))
        interaction: dict[str, Any] = {"kind": "tool", "call": {"id": call.id, **what}}
        self._interactions.append(interaction)
        response = await handler(request)
        interaction["response"] = answer_record(call.name, response, secrets)
        return response

    # --- matching ---------------------------------------------------------------------------

    def _take(
        self,
        record: dict[str, Any],
        what: dict[str, Any],
        same: str,
        noun: str,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """The recording ``what`` matches, taken from its queue (a tool call's own id
        first); else ``CassetteMismatchError`` against the nearest recording."""
        queue = self._queues.get(key_of(what))
        if queue:
            number = next(
                (n for n in queue if self._interactions[n].get("call", {}).get("id") == call_id),
                queue[0],
            )
            queue.remove(number)
            return self._interactions[number]
        raise self._mismatch(record, what, same, noun)

    def _mismatch(
        self, record: dict[str, Any], what: dict[str, Any], same: str, noun: str
    ) -> CassetteMismatchError:
        kind = "tool" if noun == "tool call" else "http"
        sent = f"{record['method']} {record['path']}" if kind == "http" else f"'{what['tool']}'"
        candidates = [
            (n, _matched_of(i)) for n, i in enumerate(self._interactions) if i["kind"] == kind
        ]
        # A call resumed after a pause is compared with resumed calls (its decisions).
        alike = [(n, c) for n, c in candidates if ("decisions" in c) == ("decisions" in what)]
        candidates = alike or candidates
        if key_of(what) in self._queues:
            return CassetteMismatchError(
                f"the {noun} {sent} was recorded in {self.path} fewer times than the replay "
                f"sends it: the run went further than the recorded one (record again: "
                f"mode='record')",
                field="$",
            )
        found = nearest(candidates, what, same)
        if found is None:
            return CassetteMismatchError(
                f"{self.path} holds no {noun} to replay the {noun} {sent} from (record "
                "it: mode='record' or 'once')",
                field="$",
            )
        number, fields = found
        field, recorded, given = fields[0]
        return CassetteMismatchError(
            f"the {noun} {sent} matches no recording in {self.path}; the nearest (#{number}) "
            f"differs first at {describe(field, recorded, given)} ({len(fields)} field"
            f"{'' if len(fields) == 1 else 's'} differ)",
            field=field,
            recorded=plain(recorded),
            sent=plain(given),
        )


def _matched_of(interaction: dict[str, Any]) -> dict[str, Any]:
    if interaction["kind"] == "http":
        return matched(interaction["request"])
    call = interaction["call"]
    kept = {"tool": call["tool"], "arguments": call.get("arguments")}
    if "decisions" in call:  # a call run again after it paused the run
        kept["decisions"] = call["decisions"]
    return kept


def _key(interaction: dict[str, Any]) -> str:
    return key_of(_matched_of(interaction))


# --- the file -----------------------------------------------------------------------------


def _load(path: Path) -> list[dict[str, Any]]:
    """The interactions of the cassette at ``path``; ``CassetteError`` saying what is wrong."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CassetteError(
            f"no cassette at {path} to replay (record it first: mode='record' or 'once')"
        ) from None
    except OSError as exc:
        raise CassetteError(f"cannot read the cassette {path}: {exc}") from exc
    try:
        document = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise CassetteError(f"{path} is no cassette: not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("reactcore_cassette") != _FORMAT:
        raise CassetteError(f"{path} is no cassette of format {_FORMAT}")
    interactions = document.get("interactions")
    if not isinstance(interactions, list) or not all(_well_formed(i) for i in interactions):
        raise CassetteError(f"{path} is a damaged cassette: malformed 'interactions'")
    return interactions


def _well_formed(interaction: Any) -> bool:
    if not isinstance(interaction, dict):
        return False
    if interaction.get("kind") == "http":
        request = interaction.get("request")
        return (
            isinstance(request, dict)
            and isinstance(request.get("method"), str)
            and isinstance(request.get("path"), str)
            and (isinstance(interaction.get("response"), dict) or "error" in interaction)
        )
    call = interaction.get("call")
    return (
        interaction.get("kind") == "tool"
        and isinstance(call, dict)
        and isinstance(call.get("tool"), str)
        and isinstance(interaction.get("response"), dict)
    )


# --- recording and replaying answers ------------------------------------------------------


def _error_record(exc: BaseException, secrets: tuple[str, ...]) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": redact_text(str(exc), secrets)}


def _error(record: dict[str, Any], request: httpx.Request) -> httpx.TransportError:
    """The httpx error a recording says the request met (a transport error, by name)."""
    found = getattr(httpx, str(record.get("type")), None)
    cls = (
        found
        if isinstance(found, type) and issubclass(found, httpx.TransportError)
        else httpx.TransportError
    )
    return cls(str(record.get("message", "")), request=request)


def _is_json(headers: dict[str, str]) -> bool:
    kind = headers.get("content-type", "").split(";")[0].strip().lower()
    return kind.endswith(_JSON_TYPES)


@attrs.define(eq=False)
class _Recorder(httpx.AsyncByteStream):
    """A recorded response's body: passed on to the client as it comes (decoded, so the
    file holds text), kept chunk by chunk; ``finish`` writes it into the interaction."""

    interaction: dict[str, Any]
    answer: httpx.Response
    secrets: tuple[str, ...]
    transport: httpx.AsyncBaseTransport | None
    chunks: list[str] = attrs.field(factory=list)
    complete: bool = False
    error: dict[str, str] | None = None
    decoder: codecs.IncrementalDecoder = attrs.field(
        factory=lambda: codecs.getincrementaldecoder("utf-8")("surrogateescape")
    )

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for data in self.answer.aiter_bytes():
                text = self.decoder.decode(data)
                if text:
                    self.chunks.append(text)
                yield data
        except httpx.TransportError as exc:
            self.error = _error_record(exc, self.secrets)
            raise
        tail = self.decoder.decode(b"", final=True)
        if tail:
            self.chunks.append(tail)
        self.complete = True

    async def aclose(self) -> None:
        try:
            await self.answer.aclose()
        finally:
            if self.transport is not None:
                await self.transport.aclose()
            self.finish()

    def finish(self) -> None:
        """Write the response into the interaction (once): a whole JSON answer as JSON,
        anything else as its chunks."""
        if "response" in self.interaction:
            return
        headers = kept_headers(self.answer.headers, RESPONSE_HEADERS, self.secrets)
        response: dict[str, Any] = {"status": self.answer.status_code, "headers": headers}
        text = "".join(self.chunks)
        body: Any = None
        if self.complete and _is_json(headers):
            try:
                body = json.loads(text)
            except ValueError:
                body = None
        if body is not None:
            response["body"] = redact_json(body, self.secrets)
        else:
            response["chunks"] = _redacted_chunks(self.chunks, self.secrets)
        if self.error is not None:
            response["error"] = self.error
        self.interaction["response"] = response


def _redacted_chunks(chunks: list[str], secrets: tuple[str, ...]) -> list[str]:
    """Each chunk redacted; when a secret straddles two chunks, the whole text as one."""
    redacted = [redact_text(c, secrets) for c in chunks]
    joined = "".join(redacted)
    if redact_text(joined, secrets) != joined:
        return [redact_text("".join(chunks), secrets)]
    return redacted


@attrs.define(eq=False)
class _Replay(httpx.AsyncByteStream):
    """A recorded body, chunk for chunk as it came, then the error it met (if any)."""

    chunks: list[bytes]
    error: httpx.TransportError | None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            await checkpoint()
            yield chunk
        if self.error is not None:
            raise self.error


def _replayed(request: httpx.Request, interaction: dict[str, Any]) -> httpx.Response:
    response = interaction.get("response")
    if response is None:
        raise _error(interaction["error"], request)
    if "body" in response:
        chunks = [json.dumps(response["body"], ensure_ascii=False).encode("utf-8")]
    else:
        chunks = [c.encode("utf-8", "surrogateescape") for c in response.get("chunks", [])]
    error = _error(response["error"], request) if "error" in response else None
    return httpx.Response(
        response["status"],
        headers=response.get("headers", {}),
        stream=_Replay(chunks, error),
        request=request,
    )


class _CassetteTransport(httpx.AsyncBaseTransport):
    """The transport of a cassette's ``http_client``: every request through the cassette."""

    def __init__(self, cassette: Cassette) -> None:
        self._cassette = cassette

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self._cassette._handle(request)
