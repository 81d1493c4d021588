"""AWS event-stream framing (``application/vnd.amazon.eventstream``), as Bedrock's
``ConverseStream`` sends its answer: read incrementally over the HTTP body's byte chunks,
CRC-checked and bounded.

A frame (a "message")::

    total length (4) | headers length (4) | prelude CRC32 (4)
    headers | payload | message CRC32 (4)

all integers big-endian; the prelude CRC covers the first 8 bytes, the message CRC all
bytes before it. A header is its name (1-byte length, UTF-8), a type byte and a value
(``7``: a string with a 2-byte length; the other types are read and kept as Python
values). A frame may be cut anywhere across chunks: ``FrameDecoder`` keeps the unfinished
rest. A frame longer than ``MAX_FRAME_BYTES`` (said by its prelude, before it is held in
memory), a CRC that does not match, or headers that do not parse are a
``ModelStreamError``.

``EventStreamReader`` is the shared layer's stream reader for such answers: each event
frame (``:message-type: event``) goes to the provider's parser as the JSON text
``{"<:event-type>": <payload>}`` (the shape boto3 gives); an ``exception`` or ``error``
frame is a ``ModelStreamError`` naming the server's type and message (the key blanked
out by the endpoint).
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import attrs
import httpx

from .._exceptions import ModelStreamError
from ._http import EventParser, run_out, transport_error
from .base import ModelChunk

MAX_FRAME_BYTES = 4 * 1024 * 1024
"""The longest frame read: past it, ``ModelStreamError`` (Bedrock's events are small)."""
_PRELUDE = 12
_MIN_FRAME = _PRELUDE + 4
_EXCERPT = 500

Frame = tuple[dict[str, Any], bytes]
"""A decoded frame: its headers and its payload."""


def _crc(data: bytes | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def encode_frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One frame carrying string ``headers`` and ``payload`` (what a server sends)."""
    encoded = bytearray()
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += struct.pack(">B", len(raw_name)) + raw_name
        encoded += struct.pack(">BH", 7, len(raw_value)) + raw_value
    total = _PRELUDE + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    body = prelude + struct.pack(">I", _crc(prelude)) + bytes(encoded) + payload
    return body + struct.pack(">I", _crc(body))


_FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


def _headers(data: bytes) -> dict[str, Any]:
    """The headers of a frame; ``ValueError`` (or ``struct.error``) when they do not parse."""
    out: dict[str, Any] = {}
    at = 0
    while at < len(data):
        size = data[at]
        name = data[at + 1 : at + 1 + size].decode()
        at += 1 + size
        kind = data[at]
        at += 1
        value: Any
        if kind in (0, 1):
            value = kind == 0
        elif kind in _FIXED:
            fmt = _FIXED[kind]
            (value,) = struct.unpack_from(fmt, data, at)
            at += struct.calcsize(fmt)
        elif kind in (6, 7):
            (length,) = struct.unpack_from(">H", data, at)
            raw = data[at + 2 : at + 2 + length]
            if len(raw) != length:
                raise ValueError("a header value runs past the headers")
            value = raw.decode() if kind == 7 else raw
            at += 2 + length
        elif kind == 9:
            value = str(uuid.UUID(bytes=data[at : at + 16]))
            at += 16
        else:
            raise ValueError(f"unknown header type {kind}")
        out[name] = value
    return out


@attrs.define
class FrameDecoder:
    """Frames out of byte chunks cut anywhere; bounded and CRC-checked (see the module)."""

    buffer: bytearray = attrs.field(factory=bytearray)

    def feed(self, data: bytes) -> list[Frame]:
        """The frames ``data`` completes, in order."""
        self.buffer += data
        frames: list[Frame] = []
        while len(self.buffer) >= _PRELUDE:
            total, header_size, prelude_crc = struct.unpack_from(">III", self.buffer)
            if _crc(memoryview(self.buffer)[:8]) != prelude_crc:
                raise ModelStreamError("a stream frame's prelude fails its CRC check")
            if total > MAX_FRAME_BYTES:
                raise ModelStreamError(
                    f"a stream frame is longer than {MAX_FRAME_BYTES} bytes ({total}): not read"
                )
            if total < _MIN_FRAME or header_size > total - _MIN_FRAME:
                raise ModelStreamError(f"a stream frame has impossible lengths ({total})")
            if len(self.buffer) < total:
                break
            frame = bytes(self.buffer[:total])
            del self.buffer[:total]
            if _crc(frame[:-4]) != struct.unpack_from(">I", frame, total - 4)[0]:
                raise ModelStreamError("a stream frame fails its CRC check")
            try:
                headers = _headers(frame[_PRELUDE : _PRELUDE + header_size])
            except (ValueError, IndexError, struct.error) as exc:
                problem = str(exc)
            else:
                frames.append((headers, frame[_PRELUDE + header_size : -4]))
                continue
            raise ModelStreamError(f"a stream frame's headers do not parse: {problem}")
        return frames

    @property
    def pending(self) -> bool:
        """Whether part of a frame is held (the stream must not end here)."""
        return bool(self.buffer)


def _event_text(headers: Mapping[str, Any], payload: bytes, redact: Callable[[str], str]) -> str:
    """A frame as the parser's JSON text, or the ``ModelStreamError`` it stands for."""
    kind = headers.get(":message-type")
    text = payload.decode("utf-8", errors="replace")
    if kind == "event":
        name = headers.get(":event-type")
        if not isinstance(name, str):
            raise ModelStreamError("a stream event frame has no :event-type")
        return f"{{{json.dumps(name)}:{text or '{}'}}}"
    if kind == "exception":
        name = str(headers.get(":exception-type"))
        said = text
    else:
        name = str(headers.get(":error-code"))
        said = str(headers.get(":error-message", text))
    message = f"the server sent {name} in the stream: {redact(said)}"
    raise ModelStreamError(message[: _EXCERPT + 100])


@attrs.define(eq=False)
class EventStreamReader:
    """The chunks of an event-stream answer, up to the parser's last event; a cut, broken
    or malformed stream raises ``ModelStreamError``. ``aclose()`` closes the response."""

    response: httpx.Response
    parser: EventParser
    redact: Callable[[str], str] = attrs.field(default=str, repr=False)
    decoder: FrameDecoder = attrs.field(factory=FrameDecoder)
    chunks: AsyncIterator[bytes] | None = None
    frames: list[Frame] = attrs.field(factory=list)
    finished: bool = False

    def __aiter__(self) -> EventStreamReader:
        return self

    async def __anext__(self) -> ModelChunk:
        if self.chunks is None:
            self.chunks = self.response.aiter_bytes()
        while not self.finished:
            if not self.frames:
                await self._read(self.chunks)
                continue
            headers, payload = self.frames.pop(0)
            try:
                chunk = self.parser.feed(_event_text(headers, payload, self.redact))
            except ModelStreamError:
                self.finished = True
                raise
            if self.parser.done:
                self.finished = True
                await self.aclose()
            if chunk is not None:
                return chunk
        raise StopAsyncIteration

    async def _read(self, chunks: AsyncIterator[bytes]) -> None:
        try:
            self.frames += self.decoder.feed(await anext(chunks))
            return
        except StopAsyncIteration:
            failure: Exception = ModelStreamError(
                "the stream ended before its last event: the answer was cut"
            )
        except httpx.RequestError as exc:
            failure = transport_error(exc, streaming=True)
        except ModelStreamError as exc:
            failure = exc
        self.finished = True
        raise failure

    async def aclose(self) -> None:
        """Close the response (after the rest of a finished body, within the grace)."""
        if self.finished and self.chunks is not None and not self.response.is_closed:
            await run_out(self.chunks)
        await self.response.aclose()
        if self.chunks is not None:
            await run_out(self.chunks)
