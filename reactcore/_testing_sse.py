"""Streams of typed server-sent events, as the Anthropic Messages API and OpenAI's
Responses API send them (an ``event:`` line naming the type, then the ``data:`` line),
for the loopback servers of ``reactcore.testing``; the official SDKs need both lines.
A server that frames its events otherwise (Gemini's ``data:`` lines alone) gives
``send_events`` its own framing."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from . import _validate as valid

if TYPE_CHECKING:
    from .testing import Exchange

TypedEvent: TypeAlias = Mapping[str, Any] | str
"""A streamed event: a JSON object (sent under ``event: <its type>``) or raw text sent as
the ``data`` of an untyped event as is (e.g. malformed JSON)."""

Ending: TypeAlias = Literal["eof", "cut", "hang"]
ENDINGS: tuple[Ending, ...] = ("eof", "cut", "hang")


def frame(event: TypedEvent) -> bytes:
    """``event`` framed as the APIs frame it."""
    if isinstance(event, str):
        return f"event: message\ndata: {event}\n\n".encode()
    return f"event: {event.get('type')}\ndata: {json.dumps(dict(event))}\n\n".encode()


def to_events(value: Sequence[TypedEvent]) -> tuple[TypedEvent, ...]:
    return tuple(value) if valid.ITERABLE.accepts(value) else valid.leave(value)


EVENTS = valid.each(valid.instance_of((Mapping, str), "a mapping or a str"))
THREADING_EVENT = valid.satisfies(
    "a threading.Event (with set and wait)",
    test=lambda v: callable(getattr(v, "set", None)) and callable(getattr(v, "wait", None)),
)


async def send_events(
    exchange: Exchange,
    events: Sequence[TypedEvent],
    ending: Ending,
    client_left: threading.Event,
    framed: Callable[[TypedEvent], bytes] = frame,
) -> None:
    """Send ``events`` (each ``framed``), then the ``ending``: ``"eof"`` a clean end,
    ``"cut"`` the connection closed mid-body, ``"hang"`` the stream kept open until the
    client leaves (``client_left`` is set then)."""
    await exchange.start(200, {"content-type": "text/event-stream", "cache-control": "no-cache"})
    for event in events:
        await exchange.body(framed(event), more=True)
    if ending == "eof":
        await exchange.body(b"", more=False)
    elif ending == "hang" and await exchange.wait_gone():
        client_left.set()
    # "cut": return mid-body; the server closes the connection.
